"""`import paddle` in a user's own script prints nothing, in every flavor built here (the cpu image and gpu-cu118,
without a GPU): no 'No ccache found' UserWarning, no OMP_NUM_THREADS note, no fall-back-to-CPU UserWarning (the
entrypoint says each once, in the banner or its GPU warning). Also where the entrypoint does not run
(`docker run --entrypoint python`, as `docker exec` does): the filters are the image's PYTHONWARNINGS. And Paddle
computes on the CPU threads the banner names (MKL_NUM_THREADS, which Paddle's MKL reads; Paddle's own bootstrap
writes OMP_NUM_THREADS=1 into its environment when none is set, which does not undo them)."""

import pytest

from tests.integration.conftest import docker

SCRIPT = "import paddle, nvidia.dali; paddle.to_tensor([1.0]) + 1"
# How many threads compute a matmul in Paddle: those with a third of the busiest thread's CPU time, or more
# (/proc/self/task/*/stat utime + stime, read before and after). A count, not a speed.
BUSY_THREADS = """
import os, paddle
m = paddle.randn([768, 768])
def ticks():
    out = {}
    for t in os.listdir('/proc/self/task'):
        f = open(f'/proc/self/task/{t}/stat').read().rsplit(')', 1)[1].split()
        out[t] = int(f[11]) + int(f[12])
    return out
paddle.matmul(m, m)
before = ticks()
for _ in range(40):
    paddle.matmul(m, m)
used = sorted((v - before.get(t, 0) for t, v in ticks().items()), reverse=True)
print(sum(1 for v in used if v * 3 >= used[0]), os.environ.get('NGC_PADDLE_THREADS'))
"""


def image_of(flavor: str, request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("built").image if flavor == "cpu" else request.getfixturevalue("built_cu118")


@pytest.mark.parametrize("flavor", ["cpu", "gpu-cu118"])
def test_import_paddle_prints_no_warning(flavor: str, request: pytest.FixtureRequest) -> None:
    image = image_of(flavor, request)
    # The entrypoint's own start-up messages go to the container's stderr; the script's stderr is what we read.
    proc = docker("run", "--rm", "--network", "none", image, "bash", "-c",
                  f'python -c "{SCRIPT}" 2>/tmp/err; code=$?; cat /tmp/err; exit $code', check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-1500:]
    assert proc.stdout == "", f"import paddle in {image} printed: {proc.stdout[:1500]}"
    assert "CPU threads" in proc.stderr  # the banner ran: the entrypoint was in the way, as for a user
    bare = docker("run", "--rm", "--network", "none", "--entrypoint", "python", image, "-c", "import paddle",
                  check=False)
    assert bare.returncode == 0 and (bare.stdout + bare.stderr) == "", \
        f"import paddle without the entrypoint in {image} printed: {(bare.stdout + bare.stderr)[:1500]}"


def test_paddle_computes_on_the_threads_the_banner_names(request: pytest.FixtureRequest) -> None:
    image = request.getfixturevalue("built").image
    proc = docker("run", "--rm", "--network", "none", "-e", "NGC_PADDLE_QUIET=1", image, "python", "-c", BUSY_THREADS,
                  check=False)
    assert proc.returncode == 0, proc.stderr[-1500:]
    busy, banner = proc.stdout.split()
    assert busy == banner, f"the banner names {banner} CPU threads, Paddle computed on {busy}"
