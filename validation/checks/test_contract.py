"""Container contract: entrypoint banner and warnings, commands, NVIDIA variables, labels, user, locale."""

import json
import re
import shlex
import subprocess

import pytest

from ngc_common import emulation, image_paths

COMMANDS = ("validate", "bench-rn50", "bench-hgnet")
ENTRYPOINT = image_paths.ENTRYPOINT


@pytest.mark.check("contract.banner", component="suite")
def test_entrypoint_banner_names_release_and_versions(host, manifest, components) -> None:
    result = host.run(f"env -u NGC_PADDLE_QUIET {ENTRYPOINT} true")
    assert result.rc == 0, f"expected the entrypoint to run 'true', found exit {result.rc}"
    banner = result.stderr
    title = f"{manifest['product']} {manifest['release']} ({manifest['flavor']})"
    assert title in banner, f"expected '{title}' in the banner, found {banner.strip().splitlines()[:2]}"
    for key in ("paddle", "dali", "cudnn", "tensorrt"):
        if key in components:
            assert components[key]["version"] in banner, f"expected {key} {components[key]['version']} in the banner"


@pytest.mark.check("contract.shm-warning", component="suite")
def test_shm_warning_matches_dev_shm(host) -> None:
    shm_kb = int(host.run("df -k /dev/shm | awk 'NR==2 {print $2}'").stdout.strip() or 0)
    banner = host.run(f"env -u NGC_PADDLE_QUIET {ENTRYPOINT} true").stderr
    warned = "SHMEM allocation limit is set to the default of 64MB" in banner
    expected = shm_kb == 65536
    assert warned == expected, (
        f"expected the /dev/shm note {'shown' if expected else 'absent'} for {shm_kb} KB, "
        f"found it {'shown' if warned else 'absent'}"
    )


@pytest.mark.check("contract.driver-warning", component="suite")
def test_driver_warning_in_gpu_flavors(host, is_gpu_flavor) -> None:
    from conftest import gpu_missing_reason

    banner = host.run(f"env -u NGC_PADDLE_QUIET {ENTRYPOINT} true").stderr
    warned = "NVIDIA Driver was not detected" in banner
    expected = is_gpu_flavor and gpu_missing_reason(host) is not None
    assert warned == expected, f"expected the driver warning {'shown' if expected else 'absent'}, " \
                               f"found it {'shown' if warned else 'absent'}"


@pytest.mark.check("contract.commands-on-path", component="suite")
def test_commands_on_path(host) -> None:
    missing = [c for c in COMMANDS if host.run(f"command -v {c}").rc != 0]
    assert not missing, f"expected {', '.join(COMMANDS)} on PATH, found {', '.join(missing)} missing"


SMOKE_TIMEOUT_S = 240


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.check("contract.command-starts.{command}", component="suite")
def test_shipped_command_starts(host, command, budget) -> None:
    """Every command the image ships runs through in its smoke mode (one tiny step), in every flavor:
    a missing run-time dependency (e.g. PyYAML reaching only some flavors) fails here, not at a user's."""
    output = "" if command == "validate" else '--output "$d/out"'
    script = (f'd=$(mktemp -d) && cd "$d" && timeout {budget(SMOKE_TIMEOUT_S)} {command} --smoke {output}; rc=$?; '
              'cd / && rm -rf "$d"; exit $rc')
    result = host.run("bash -c %s", script)
    tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
    assert result.rc == 0, f"expected '{command} --smoke' to run through, found exit {result.rc}: {tail[0][-200:]}"


@pytest.mark.check("contract.nvidia-env", component="cuda-runtime")
def test_nvidia_container_variables(host, manifest, is_gpu_flavor) -> None:
    env = {k: host.environment().get(k) for k in ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
                                                   "NVIDIA_REQUIRE_CUDA")}
    if not is_gpu_flavor:
        assert not any(env.values()), f"expected no NVIDIA_* variables in a cpu flavor, found {env}"
        return
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all", f"expected NVIDIA_VISIBLE_DEVICES=all, found {env}"
    assert "compute" in (env["NVIDIA_DRIVER_CAPABILITIES"] or ""), f"expected compute capability, found {env}"
    assert env["NVIDIA_REQUIRE_CUDA"] == manifest["cuda"]["nvidia_require_cuda"], (
        f"expected NVIDIA_REQUIRE_CUDA={manifest['cuda']['nvidia_require_cuda']!r}, "
        f"found {env['NVIDIA_REQUIRE_CUDA']!r}"
    )


REQUIRE_TERM = re.compile(r"^(cuda>=\d+\.\d+|brand=[a-z]+(,driver[<>]=?\d+(\.\d+)*)+|driver>=\d+(\.\d+)*)$")


@pytest.mark.check("contract.require-cuda-syntax", component="cuda-runtime")
def test_nvidia_require_cuda_syntax(host, is_gpu_flavor) -> None:
    if not is_gpu_flavor:
        pytest.skip("cpu flavor: no NVIDIA_REQUIRE_CUDA")
    value = host.environment().get("NVIDIA_REQUIRE_CUDA", "")
    bad = [term for term in value.split() if not REQUIRE_TERM.match(term)]
    assert value and not bad, f"expected terms like driver>=525.60.13 or cuda>=12.6, found {bad}"


@pytest.mark.check("contract.oci-labels", component="suite")
def test_oci_labels(docker_container, manifest) -> None:
    if docker_container is None:
        pytest.skip("image labels are visible from the build host only: run `ngc-paddle validate --container`")
    out = subprocess.run(["docker", "inspect", "--format", "{{json .Config.Labels}}", docker_container],
                         capture_output=True, text=True, check=True).stdout
    labels = json.loads(out) or {}
    for key in ("version", "revision", "created", "source", "title"):
        label = f"org.opencontainers.image.{key}"
        assert labels.get(label), f"expected label {label}, found none"
    assert labels["org.opencontainers.image.version"] == manifest["release"]
    assert labels.get("ngc-paddle.flavor") == manifest["flavor"], f"expected flavor label {manifest['flavor']}"


def configured_user(docker_container: str) -> tuple[str, str]:
    """The user the image runs as by default (its config's USER, `docker inspect`), and which image that is."""
    image = subprocess.run(["docker", "inspect", "--format", "{{.Config.Image}}", docker_container],
                           capture_output=True, text=True, check=True).stdout.strip()
    user = subprocess.run(["docker", "image", "inspect", "--format", "{{.Config.User}}", image],
                          capture_output=True, text=True, check=True).stdout.strip()
    return user or "root", image


@pytest.mark.check("contract.non-root-user", component="suite")
def test_image_runs_as_non_root_paddle(host, docker_container) -> None:
    """The image's configured USER is paddle (uid 1000), with its home; not only that the account exists."""
    paddle = host.user("paddle")
    assert paddle.exists and paddle.uid == 1000, "expected the account paddle with uid 1000, found none"
    home = host.file(paddle.home)
    assert home.is_directory and home.uid == 1000, f"expected paddle's home {paddle.home} owned by uid 1000"
    if docker_container is None:
        pytest.skip("the image's configured USER is visible from the build host only (a container started with "
                    "--user hides it): run `ngc-paddle validate IMAGE`")
    user, image = configured_user(docker_container)
    assert user.split(":")[0] in ("paddle", "1000"), (
        f"expected image {image} to run as paddle (uid 1000) by default, found USER {user!r} (docker inspect)")


def _as_uid(host, uid: int, script: str):
    """Run a script as another uid the way `docker run --user UID:UID` does (HOME=/, no account), through
    the image's entrypoint; as a non-root check, as this uid."""
    wrapped = f"cd /workspace && {ENTRYPOINT} bash -c {shlex.quote(script)}"
    if host.run("id -u").stdout.strip() == "0":
        wrapped = f"env HOME=/ setpriv --reuid {uid} --regid {uid} --clear-groups bash -c {shlex.quote(wrapped)}"
    return host.run(wrapped)


@pytest.mark.check("contract.any-uid", component="suite")
def test_stack_runs_as_paddle_and_as_an_arbitrary_uid(host, components) -> None:
    """As paddle and as a uid without an account, the stack imports, /workspace and HOME are writable."""
    modules = "paddle, matplotlib, nvidia.dali" if "dali" in components else "paddle, matplotlib"
    script = (f"NGC_PADDLE_QUIET=1 python -W ignore -c 'import {modules}' "
              "&& command -v bench-rn50 bench-hgnet validate >/dev/null && touch .w-$$ && rm .w-$$ "
              '&& test -w "$HOME" && echo "home=$HOME"')
    me = int(host.run("id -u").stdout.strip())
    for uid in (1000, 4321) if me == 0 else (me,):
        result = _as_uid(host, uid, script)
        assert result.rc == 0 and "home=" in result.stdout, (
            f"expected uid {uid} to import the stack and write /workspace and its HOME, found exit {result.rc}: "
            f"{(result.stderr.strip() or result.stdout.strip())[-200:]}")


@pytest.mark.check("contract.workdir-writable", component="suite")
def test_workdir_is_writable(host) -> None:
    workdir = host.file("/workspace")
    assert workdir.is_directory and workdir.mode & 0o1777 == 0o1777, (
        f"expected /workspace writable by all with the sticky bit, found mode {oct(workdir.mode)}"
    )


@pytest.mark.check("contract.locale", component="os")
def test_locale_is_utf8(host) -> None:
    enc = host.run("python -c 'import locale; print(locale.getpreferredencoding())'").stdout.strip()
    assert enc == "UTF-8", f"expected UTF-8 as the preferred encoding, found {enc}"


@pytest.mark.check("contract.timezone", component="os")
def test_timezone_is_utc(host) -> None:
    tz = host.environment().get("TZ")
    assert tz == "Etc/UTC" and host.file("/usr/share/zoneinfo/Etc/UTC").exists, (
        f"expected TZ=Etc/UTC with tzdata installed, found TZ={tz}"
    )


@pytest.mark.check("contract.init", component="tini")
def test_pid1_is_the_locked_tini(host, components) -> None:
    """PID 1 is the image's init (ENTRYPOINT tini -g --), at the manifest's version: without it `docker stop` and
    `timeout` never reach the command (the kernel drops SIGTERM sent to a PID 1 without a handler)."""
    if not (host.file("/.dockerenv").exists or host.file("/run/.containerenv").exists):
        pytest.skip("not a Docker or Podman container: the runtime (Apptainer, enroot under Slurm) picks PID 1")
    expected = components["tini"]["version"]
    argv = emulation.guest_argv(host.file("/proc/1/cmdline").content.split(b"\0"))  # under qemu: qemu's argv
    assert argv[:2] == [image_paths.INIT.encode(), b"-g"], (
        f"expected PID 1 to be {image_paths.INIT} -g (the image's ENTRYPOINT), found {b' '.join(argv).decode()!r}; "
        "a container started with --entrypoint or --init gets no signal forwarding of the image's")
    shown = host.run(f"{image_paths.INIT} --version").stdout.split()  # "tini version 0.19.0 - git.de40ad0"
    assert shown[2:3] == [expected], f"expected tini {expected}, found {' '.join(shown)!r}"
    packaged = host.run("dpkg-query -W -f '${Version}' tini").stdout.strip()  # 0.19.0-1+b3: the lock's
    upstream = packaged.split(":", 1)[-1].rsplit("-", 1)[0]
    assert upstream == expected, f"expected Debian's tini {expected}-*, found {packaged!r}"
