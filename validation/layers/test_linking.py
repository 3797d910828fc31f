"""Linking: every shared object of the stack resolves, and the libraries Paddle opens at run time open.

`link.<component>`: each shared object of the component (its wheel's RECORD, and a vendor archive's library
folder) resolves its DT_NEEDED as the loader would (probes/linking.py says exactly what that proves).
`link.runtime.<component>`: the names Paddle's loader dlopen()s for the component open, in the image, by exactly
those names (probes/dlopen.py), so a missing unversioned link (libcudnn.so, libnvinfer.so) fails here, on a host
without a GPU, instead of at the first convolution on a GPU host.

Shared by every layer: each check runs once per component and counts as a check of the layer the
manifest puts that component in (see conftest.check_layer).
"""

import pytest

from ngc_common.paddle_dlopen import UNVERSIONED, paddle_opens, paddle_uses_pip_cuda

pytestmark = pytest.mark.fast


def native_layers(manifest: dict) -> set[str]:
    """The layers whose wheels ship native code the loader must resolve: every layer of the image's manifest
    between the base layer (Debian packages) and the suite on top (the checks' own tools)."""
    return set(manifest["layers"][1:-1])


def native_components(manifest: dict) -> list[str]:
    layers = native_layers(manifest)
    return sorted(n for n, c in manifest["components"].items()
                  if c["kind"] in ("pip", "archive") and c["layer"] in layers)


def targets(component: dict) -> list[str]:
    """What the linking probe walks for a component: its distribution, and an archive's library folder."""
    return [component["package"], *([component["libraries"]] if component["kind"] == "archive" else [])]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    m = metafunc.config._ngc_manifest
    if "native_component" in metafunc.fixturenames:
        names = native_components(m)
        metafunc.parametrize("native_component", names, ids=names)
    if "runtime_lib" in metafunc.fixturenames:
        names = sorted(n for n in UNVERSIONED if n in m["components"]) if m.get("cuda") else []
        metafunc.parametrize("runtime_lib", names or ["none"], ids=names or ["none"])


@pytest.fixture(scope="session")
def linking(run_probe, manifest) -> dict:
    return run_probe("linking", *(t for n in native_components(manifest) for t in targets(manifest["components"][n])))


@pytest.fixture(scope="session")
def opened(run_probe, manifest) -> dict:
    names = sorted({name for n in UNVERSIONED if n in manifest["components"] for name in paddle_opens(manifest, n)})
    return run_probe("dlopen", *names) if names and manifest.get("cuda") else {"libraries": {}}


@pytest.mark.check("link.{native_component}", component="{native_component}")
def test_shared_objects_resolve(native_component, components, linking, record_property) -> None:
    comp = components[native_component]
    results = [(target, linking[target]) for target in targets(comp)]
    for target, result in results:
        assert result["installed"], f"expected {target} installed, found it missing"
        assert not result["absent"], f"expected every library {target} installed, found {result['absent'][0]} " \
                                     "missing from disk"
    if sum(result["checked"] for _t, result in results) == 0:
        pytest.skip(f"{comp['package']} is pure Python: no shared objects to resolve")
    unresolved = {path: libs for _t, result in results for path, libs in result["unresolved"].items()}
    # a file of another machine cannot load at all: it counts as unresolved, named by what it is built for
    foreign = {path: arch for _t, result in results for path, arch in result["foreign"].items()}
    unresolved.update({path: [f"a build for this platform (it is {arch} code)"] for path, arch in foreign.items()})
    # a library the manifest names for this platform, with why (the upstream wheel's defect): waived, never passed
    known = comp.get("known_unresolved") or {}
    waived = {path: libs for path, libs in unresolved.items() if path.rsplit("/", 1)[-1] in known}
    unresolved = {path: libs for path, libs in unresolved.items() if path not in waived}
    first = next(iter(sorted(unresolved.items())), None)
    assert not unresolved, (
        f"expected every library of {native_component} to resolve, found {len(unresolved)} that do not, "
        f"e.g. {first[0].rsplit('/', 1)[-1]} needs {', '.join(first[1])}" if first else ""
    )
    if waived:
        record_property("waived", True)
        by_reason: dict[str, list[str]] = {}
        for path, libs in sorted(waived.items()):
            name = path.rsplit("/", 1)[-1]
            by_reason.setdefault(known[name], []).append(f"{name} needs {', '.join(libs)}")
        pytest.skip("waived by the manifest on this platform: "
                    + "; ".join(f"{', '.join(files)}: {why}" for why, files in by_reason.items()))


@pytest.mark.check("link.runtime.{runtime_lib}", component="{runtime_lib}")
def test_paddle_opens_the_runtime_library(runtime_lib, components, manifest, opened) -> None:
    if runtime_lib == "none":
        pytest.skip("flavor ships no CUDA libraries that Paddle opens at run time")
    uses_pip = paddle_uses_pip_cuda(manifest)
    installed = opened.get("paddle_with_pip_cuda_libraries")
    assert installed is None or (installed == "ON") == uses_pip, (
        f"expected the installed Paddle {'with' if uses_pip else 'without'} pip's CUDA libraries (it opens "
        f"{'versioned' if uses_pip else 'unversioned'} names), found paddle.version.with_pip_cuda_libraries "
        f"{installed}; fix: FIRST_PIP_CUDA_PADDLE in ngc_common/paddle_dlopen.py")
    package = components[runtime_lib]["package"]
    for name in paddle_opens(manifest, runtime_lib):
        result = opened["libraries"][name]
        assert result["ok"], (
            f"expected Paddle's loader to open {name} (from {package}), found: {result['error']}; fix: the layer "
            f"registers its library folder and the unversioned names (layers/lib/register-libs.sh)")
