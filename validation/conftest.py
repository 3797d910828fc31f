"""Fixtures and hooks of the validation suite: the manifest's expectations, the image under test, check layers.

Why: every expectation comes from the manifest baked into the image, and every check reaches the
system under test through testinfra's `host`, so the same checks run inside the image (local
backend) or from the build host against a running container (`--hosts docker://NAME`).

Checks belong to layers: a file in `layers/<layer>/` holds that layer's own checks; a file directly
in `layers/` runs once per component, and each of its checks belongs to the layer the manifest puts
that component in; `checks/` holds the suite layer's own (contract, hygiene). An image runs the
checks of every layer of its flavor up to its own (NGC_PADDLE_LAYER, default: the flavor's last),
so an intermediate layer image (no pytest, no /opt/ngc-paddle) is checked from the host with the
manifest passed in (NGC_PADDLE_MANIFEST_FILE) and the probes copied into it (NGC_PADDLE_PROBES).
"""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import testinfra

from ngc_common import emulation, image_paths, suite_record
from ngc_common.exit_codes import ExitCode

pytest_plugins = ["ngc_report"]

# Where the probes are in the system under test (an intermediate layer image gets them copied in).
PROBES = os.environ.get("NGC_PADDLE_PROBES", image_paths.PROBES)
HERE = Path(__file__).resolve().parent
SUITE_LAYER = "suite"


def _docker_target(config: pytest.Config) -> str | None:
    hosts = config.getoption("hosts", default=None) or ""
    for spec in hosts.split(","):
        if spec.startswith("docker://"):
            return spec.removeprefix("docker://").split("@")[-1]
    return None


def read_manifest(config: pytest.Config) -> dict:
    """The image's manifest, read where the checks will run (needed at collection time).

    NGC_PADDLE_MANIFEST_FILE names one on this machine instead: the host passes the flavor's resolved
    manifest for a layer image, which has none baked in.
    """
    passed_in = os.environ.get("NGC_PADDLE_MANIFEST_FILE")
    if passed_in:
        return json.loads(Path(passed_in).read_text())
    path = os.environ.get("NGC_PADDLE_MANIFEST", image_paths.MANIFEST)
    container = _docker_target(config)
    if container:
        out = subprocess.run(["docker", "exec", container, "cat", path], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    return json.loads(Path(path).read_text())


def read_emulation(config: pytest.Config) -> str | None:
    """Why the system under test runs emulated (ngc_common.emulation, read where the checks run: in the container
    for `--hosts docker://`), or None natively; the report's fact `emulated`, and a NOT PROVEN verdict."""
    container = _docker_target(config)
    if not container:
        return emulation.detect().reason()
    out = subprocess.run(["docker", "exec", container, "sh", "-c", "uname -m; cat /proc/cpuinfo"],
                         capture_output=True, text=True, check=False)
    machine, _, cpuinfo = out.stdout.partition("\n")
    return emulation.detect(cpuinfo, machine.strip()).reason() if out.returncode == 0 and machine.strip() else None


def component_marker(name: str) -> str:
    return "component_" + name.replace("-", "_")


def layer_marker(name: str) -> str:
    return "layer_" + name.replace("-", "_")


def image_layers(manifest: dict, top: str | None) -> list[str]:
    """The flavor's layers from the bottom up to `top` (the image's own layer; default: all of them)."""
    layers = list(manifest["layers"])
    if top is None:
        return layers
    if top not in layers:
        raise pytest.UsageError(f"layer {top!r} is not in flavor {manifest['flavor']}'s layers {layers}")
    return layers[: layers.index(top) + 1]


def check_layer(item: pytest.Item, component: str, manifest: dict) -> str | None:
    """The layer a check belongs to: its folder's, or for the shared files in layers/ its component's.

    None: a shared check of a component the flavor does not ship.
    """
    parts = Path(str(item.path)).resolve().relative_to(HERE).parts
    if parts[0] != "layers":
        return SUITE_LAYER
    if len(parts) > 2:
        return parts[1]
    comp = manifest["components"].get(component)
    return comp["layer"] if comp else None


def pytest_configure(config: pytest.Config) -> None:
    if (refused := suite_record.refusal(__file__)) is not None:  # pytest run directly on a changed suite
        pytest.exit(refused, returncode=ExitCode.NOT_PROVEN)
    config._ngc_manifest = read_manifest(config)
    config._ngc_emulated = read_emulation(config)
    config._ngc_layers = image_layers(config._ngc_manifest, os.environ.get("NGC_PADDLE_LAYER") or None)
    for name in [*config._ngc_manifest["components"], "suite"]:
        config.addinivalue_line("markers", f"{component_marker(name)}: checks of component {name}")
    for name in config._ngc_manifest["layers"]:
        config.addinivalue_line("markers", f"{layer_marker(name)}: checks of layer {name}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tag each check with its component and layer (`-m component_dali`, `-m layer_dali`), and leave out
    the checks of layers the image does not have (the layers above it, or not in its flavor)."""
    from ngc_report import check_identity

    registered = set(config.getini("markers"))
    present = config._ngc_layers
    keep, dropped = [], []
    for item in items:
        _check_id, component = check_identity(item)
        layer = check_layer(item, component, config._ngc_manifest)
        if layer not in present:
            dropped.append(item)
            continue
        keep.append(item)
        item.add_marker(layer_marker(layer))
        item.user_properties.append(("layer", layer))
        if component and component != "-":
            marker = component_marker(component)
            line = f"{marker}: checks of component {component}"
            if line not in registered:  # a check may name a component this flavor does not ship
                config.addinivalue_line("markers", line)
                registered.add(line)
            item.add_marker(marker)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(scope="session")
def manifest(pytestconfig: pytest.Config) -> dict:
    return pytestconfig._ngc_manifest


@pytest.fixture(scope="session")
def components(manifest: dict) -> dict:
    return manifest["components"]


@pytest.fixture(scope="session")
def is_gpu_flavor(manifest: dict) -> bool:
    return manifest.get("cuda") is not None


@pytest.fixture(scope="session")
def docker_container(pytestconfig: pytest.Config) -> str | None:
    return _docker_target(pytestconfig)


def gpu_missing_reason(host) -> str | None:
    """Why GPU checks cannot run here, or None when a GPU and its driver are visible."""
    if not any(host.file(node).exists for node in ("/dev/nvidiactl", "/dev/dxg", "/dev/nvgpu")):
        return "no NVIDIA GPU visible (/dev/nvidiactl missing): run on a GPU host with --gpus all"
    if host.run("ldconfig -p | grep -q 'libcuda\\.so\\.1'").rc != 0:
        return "no NVIDIA driver library (libcuda.so.1 not on the loader path): install the NVIDIA Container Toolkit"
    return None


@pytest.fixture(autouse=True)
def _needs_components(request: pytest.FixtureRequest, components: dict) -> None:
    """`@pytest.mark.needs("dali", ...)`: skip when the flavor ships none of those components.

    Autouse, so it runs before any probe fixture of the check.
    """
    marker = request.node.get_closest_marker("needs")
    if marker is not None:
        absent = [name for name in marker.args if name not in components]
        if absent:
            request.node.user_properties.append(("not_applicable", True))  # not missing evidence: see verdict()
            manifest = request.config._ngc_manifest
            left_out = [f"layer {layer} left out of this image: {entry['reason']}"
                        for layer, entry in (manifest.get("left_out") or {}).items()
                        if set(absent) & set(entry["components"])]
            pytest.skip(f"flavor {manifest['flavor']} ships no {', '.join(absent)}"
                        + (f" ({'; '.join(left_out)})" if left_out else ""))


@pytest.fixture
def gpu(host, is_gpu_flavor: bool) -> None:
    if not is_gpu_flavor:
        pytest.skip("cpu flavor: the image has no CUDA stack")
    reason = gpu_missing_reason(host)
    if reason:
        pytest.skip(reason)


def probe(host, name: str, *args: str, timeout: int = 300, user: str | None = None) -> dict:
    """Run validation/probes/<name>.py in the image and return its JSON output."""
    cmd = " ".join(shlex.quote(a) for a in ["timeout", str(timeout), "python", f"{PROBES}/{name}.py", *args])
    if user:
        cmd = f"su {user} -s /bin/bash -c {shlex.quote(cmd)}"
    result = host.run(cmd)
    if result.rc != 0:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
        raise AssertionError(f"probe {name} failed (exit {result.rc}): {' | '.join(tail)}")
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def session_host(pytestconfig: pytest.Config):
    """The same target as testinfra's (module-scoped) `host`, for probes shared across modules."""
    spec = (pytestconfig.getoption("hosts", default=None) or "local://").split(",")[0]
    return testinfra.get_host(spec)


@pytest.fixture(scope="session")
def budget(pytestconfig: pytest.Config):
    """A check's time budget (seconds to catch a hang) for this run: longer under emulation (ngc_common.emulation)."""
    emulated = bool(getattr(pytestconfig, "_ngc_emulated", None))
    return lambda seconds: emulation.budget(seconds, emulated)


@pytest.fixture(scope="session")
def run_probe(session_host, budget):
    def run(name: str, *args: str, timeout: int = 300, user: str | None = None) -> dict:
        return probe(session_host, name, *args, timeout=budget(timeout), user=user)

    return run


@pytest.fixture(scope="session")
def dists(run_probe) -> dict:
    """Every installed distribution: version, top-level modules, duplicates (probes/distributions.py)."""
    return run_probe("distributions")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise checks over the manifest: `pip_component` (the components pip installs: pip ones, and the
    wheel a vendor archive carries), `any_component`."""
    m = metafunc.config._ngc_manifest
    if "pip_component" in metafunc.fixturenames:
        names = sorted(n for n, c in m["components"].items() if c["kind"] in ("pip", "archive"))
        metafunc.parametrize("pip_component", names, ids=names)
    if "any_component" in metafunc.fixturenames:
        names = sorted(m["components"])
        metafunc.parametrize("any_component", names, ids=names)
