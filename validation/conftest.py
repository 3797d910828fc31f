"""Fixtures and hooks of the in-image validation suite.

Why: every expectation comes from the manifest baked into the image, and every check reaches the
system under test through testinfra's `host`, so the same checks run inside the image (local
backend) or from the build host against a running container (`--hosts docker://NAME`).
"""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import testinfra

pytest_plugins = ["ngc_report"]

MANIFEST_PATH = "/opt/ngc-paddle/manifest.json"
VALIDATION_HOME = "/opt/ngc-paddle/validation"
PROBES = f"{VALIDATION_HOME}/probes"


def _docker_target(config: pytest.Config) -> str | None:
    hosts = config.getoption("hosts", default=None) or ""
    for spec in hosts.split(","):
        if spec.startswith("docker://"):
            return spec.removeprefix("docker://").split("@")[-1]
    return None


def read_manifest(config: pytest.Config) -> dict:
    """The image's manifest, read where the checks will run (needed at collection time)."""
    path = os.environ.get("NGC_PADDLE_MANIFEST", MANIFEST_PATH)
    container = _docker_target(config)
    if container:
        out = subprocess.run(["docker", "exec", container, "cat", path], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    return json.loads(Path(path).read_text())


def component_marker(name: str) -> str:
    return "component_" + name.replace("-", "_")


def pytest_configure(config: pytest.Config) -> None:
    config._ngc_manifest = read_manifest(config)
    for name in [*config._ngc_manifest["components"], "suite"]:
        config.addinivalue_line("markers", f"{component_marker(name)}: checks of component {name}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tag each check with its component so `-m component_dali` selects a component's checks."""
    from ngc_report import check_identity

    registered = set(config.getini("markers"))
    for item in items:
        _check_id, component = check_identity(item)
        if component and component != "-":
            marker = component_marker(component)
            line = f"{marker}: checks of component {component}"
            if line not in registered:  # a check may name a component this flavor does not ship
                config.addinivalue_line("markers", line)
                registered.add(line)
            item.add_marker(marker)


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
            pytest.skip(f"flavor {request.config._ngc_manifest['flavor']} ships no {', '.join(absent)}")


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
def run_probe(session_host):
    def run(name: str, *args: str, timeout: int = 300, user: str | None = None) -> dict:
        return probe(session_host, name, *args, timeout=timeout, user=user)

    return run


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise checks over the manifest: `component` (pip components), `layer_package`."""
    m = metafunc.config._ngc_manifest
    if "pip_component" in metafunc.fixturenames:
        names = sorted(n for n, c in m["components"].items() if c["kind"] == "pip")
        metafunc.parametrize("pip_component", names, ids=names)
    if "any_component" in metafunc.fixturenames:
        names = sorted(m["components"])
        metafunc.parametrize("any_component", names, ids=names)
