"""`import paddle` in a user's own script prints nothing, in every flavor built here (the cpu image and gpu-cu118,
without a GPU): no 'No ccache found' UserWarning, no OMP_NUM_THREADS note, no fall-back-to-CPU UserWarning (the
entrypoint says each once, in the banner or its GPU warning)."""

import pytest

from tests.integration.conftest import docker

SCRIPT = "import paddle, nvidia.dali; paddle.to_tensor([1.0]) + 1"


@pytest.mark.parametrize("flavor", ["cpu", "gpu-cu118"])
def test_import_paddle_prints_no_warning(flavor: str, request: pytest.FixtureRequest) -> None:
    image = request.getfixturevalue("built").image if flavor == "cpu" else request.getfixturevalue("built_cu118")
    # The entrypoint's own start-up messages go to the container's stderr; the script's stderr is what we read.
    proc = docker("run", "--rm", "--network", "none", image, "bash", "-c",
                  f'python -c "{SCRIPT}" 2>/tmp/err; code=$?; cat /tmp/err; exit $code', check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-1500:]
    assert proc.stdout == "", f"import paddle in {image} printed: {proc.stdout[:1500]}"
    assert "CPU threads" in proc.stderr  # the banner ran: the entrypoint was in the way, as for a user
