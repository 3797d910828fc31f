"""Every layer's build arguments and every bake target and group come from the manifest."""

import copy
import dataclasses
import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import MappingProxyType

import hcl2
import pytest
from packaging.utils import canonicalize_name

from ngc_paddle.driver import nvidia_require_cuda
from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.image_build.bakefile import (
    BELOW,
    OVERRIDE,
    bake_command,
    bake_definition,
    override_text,
    registry_cache,
    write_build_inputs,
)
from ngc_paddle.layers import bake_target, dockerfile_for
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.loader import latest_release
from ngc_paddle.manifest.resolve import apply_source_overrides, image_manifest


@pytest.fixture
def manifest(current_manifest_data, write_manifest):
    return load_manifest(write_manifest(current_manifest_data))


def resolved(manifest, root: Path) -> ResolvedRelease:
    """The release as a run resolves it from `root`'s releases/."""
    return ResolvedRelease(root.resolve(), manifest, MappingProxyType({}))


def resolved_flavor(manifest, name: str, lock=None, pending: str = "") -> ResolvedFlavor:
    """One flavor of `manifest`, resolved, with the lock given (or none, `pending` saying why)."""
    unlocked = resolved(manifest, Path(__file__).parent).flavor(name)  # no releases/ there: no lock of its own
    return dataclasses.replace(unlocked, lock=lock, pending=pending, lock_problem="")


def committed_locks(repo: Path):
    manifest = load_manifest(repo / "releases" / "26.12.yaml")
    locks = {name: f.lock for name, f in resolved(manifest, repo).flavors().items() if f.lock}
    assert {"cpu", "gpu-cu118"} <= set(locks)
    return manifest, locks


def test_pip_layer_spec_installs_exactly_the_lock(repo: Path) -> None:
    """Each pip layer gets its lock entries; together they are the lock's whole set, every pin at its version."""
    manifest, locks = committed_locks(repo)
    for flavor_name, lock in locks.items():
        flavor = manifest.flavors[flavor_name]
        installed = []
        for layer in flavor.layers:
            if layer == "os":
                continue
            spec = json.loads(resolved_flavor(manifest, flavor_name, lock).layer_args(layer)["LAYER_SPEC"])
            assert spec["pending"] is None
            # An optional layer the lock leaves pending installs nothing and says why (gpu-cu118's TensorRT).
            assert spec["left_out"] == lock.pending_layers.get(layer)
            assert not (spec["left_out"] and spec["packages"])
            installed += [(p["name"], p["version"], p["sha256"]) for p in spec["packages"]]
            for entry in spec["packages"]:
                source = manifest.sources[entry["source"]]
                assert spec["sources"][entry["source"]]["location"] == (source.url or source.path)
        assert sorted(installed) == sorted((e.name, e.version, e.sha256) for e in lock.pip)
        for comp in flavor.components.values():
            if comp.kind == "pip" and comp.layer not in lock.pending_layers:
                assert (canonicalize_name(str(comp.package)), comp.version) in {(n, v) for n, v, _ in installed}
        os_args = resolved_flavor(manifest, flavor_name, lock).layer_args("os")
        assert os_args["APT_PACKAGES"].split() == [f"{d.package}={d.version}" for d in lock.debian]


def test_a_flavor_without_a_lock_gets_no_entries(manifest) -> None:
    gpu = resolved_flavor(manifest, "gpu", pending="needs NVIDIA's index")
    spec = json.loads(gpu.layer_args("paddle")["LAYER_SPEC"])
    assert spec["packages"] == [] and spec["pending"] == "needs NVIDIA's index"


def test_os_layer_args(manifest) -> None:
    args = resolved_flavor(manifest, "cpu").layer_args("os", base_image="ngc-paddle-base:bookworm")
    python, init = manifest.flavors["cpu"].components["python"], manifest.flavors["cpu"].components["tini"]
    assert args["BASE_IMAGE"] == "ngc-paddle-base:bookworm"
    assert args["PYTHON_VERSION"] == python.version
    # Unlocked (only `ngc-paddle lock` builds it so): every apt component's packages, the init's too.
    assert args["APT_PACKAGES"].split() == [python.package, *python.extra_packages, init.package]
    assert args["APT_SUITE"] == manifest.sources["debian"].suite


def test_gpu_cuda_layer_carries_the_driver_constraint(manifest) -> None:
    args = resolved_flavor(manifest, "gpu").layer_args("cuda")
    cuda = manifest.flavors["gpu"].cuda
    assert args["CUDA_VERSION"] == cuda.version
    assert args["NVIDIA_REQUIRE_CUDA"] == nvidia_require_cuda(cuda)
    assert args["NVIDIA_REQUIRE_CUDA"] == "driver>=525.60.13"  # CUDA 12.x minor-version compatibility


def test_nvidia_require_cuda_syntax(manifest) -> None:
    cuda = manifest.flavors["gpu"].cuda.model_copy(update={"version": "11.8.0"})
    assert nvidia_require_cuda(cuda) == "driver>=450.80.02"


def test_source_override_points_at_mirror(manifest, repo: Path) -> None:
    _, locks = committed_locks(repo)
    mirrored = apply_source_overrides(manifest, {"pypi": "https://mirror.example/simple"})
    spec = json.loads(resolved_flavor(mirrored, "cpu", locks["cpu"]).layer_args("paddle")["LAYER_SPEC"])
    assert spec["sources"] == {"pypi": {"kind": "pip-index", "location": "https://mirror.example/simple"}}
    with pytest.raises(ManifestError, match="has no source 'nope'"):
        apply_source_overrides(manifest, {"nope": "https://x"})


def test_image_manifest_lists_every_component(manifest) -> None:
    resolved = image_manifest(manifest, "gpu")
    assert resolved["release"] == manifest.release and resolved["flavor"] == "gpu"
    assert set(resolved["components"]) == set(manifest.flavors["gpu"].components)
    assert resolved["cuda"]["nvidia_require_cuda"] == "driver>=525.60.13"
    assert image_manifest(manifest, "cpu")["cuda"] is None


def test_bake_hcl_holds_no_structure(repo: Path, current_manifest_data) -> None:
    """docker-bake.hcl keeps only templates: no group, no flavor's target, no flavor named at all."""
    with (repo / "docker-bake.hcl").open() as fh:
        hcl = _unquote(hcl2.load(fh))
    assert "group" not in hcl
    targets = {name: body for block in hcl["target"] for name, body in block.items()}
    assert set(targets) == {"_common", "_final"}
    assert all("dockerfile" not in body and "args" not in body for body in targets.values())
    text = (repo / "docker-bake.hcl").read_text()
    for flavor_name in current_manifest_data["flavors"]:
        assert not re.search(rf"(?<![\w-]){re.escape(flavor_name)}(?![\w-])", text), flavor_name


def test_bake_definition_carries_each_flavors_structure(manifest, tmp_path: Path) -> None:
    """A target per layer, each FROM the target below (a named context), the top one the release image (make image
    adds the candidate suffix); a group per flavor."""
    definition = bake_definition(resolved(manifest, tmp_path))
    for flavor_name, spec in manifest.flavors.items():
        expected = [bake_target(layer, flavor_name) for layer in spec.layers]
        assert definition["group"][flavor_name]["targets"] == expected
        for index, layer in enumerate(spec.layers):
            body = definition["target"][bake_target(layer, flavor_name)]
            assert body["dockerfile"] == str(dockerfile_for(layer))
            assert body["labels"] == {"ngc-paddle.flavor": flavor_name, "ngc-paddle.layer": layer}
            top = index == len(spec.layers) - 1
            assert body["inherits"] == ["_final" if top else "_common"]
            assert body["tags"] == ([f'${{candidate_tag("{flavor_name}")}}'] if top
                                    else [f'${{layer_tag("{flavor_name}", "{layer}")}}'])
            if index:
                assert body["args"]["BASE_IMAGE"] == BELOW
                assert body["contexts"] == {BELOW: f"target:{bake_target(spec.layers[index - 1], flavor_name)}"}
            else:
                assert body["args"]["BASE_IMAGE"] == str(spec.components["os"].image)
    assert definition["group"]["default"] == {"targets": [manifest.default_flavor]}


def _slim_flavor(data: dict) -> dict:
    """The manifest with a new default flavor `cpu-slim`: the cpu flavor without its dali layer."""
    slim = copy.deepcopy(data["flavors"]["cpu"])
    slim["layers"] = [layer for layer in slim["layers"] if layer != "dali"]
    slim["components"] = {name: comp for name, comp in slim["components"].items() if comp["layer"] != "dali"}
    data = {**data, "default_flavor": "cpu-slim", "flavors": {**data["flavors"], "cpu-slim": slim}}
    data["flavors"]["cpu"] = {**data["flavors"]["cpu"], "layers": ["os", "paddle", "suite"],
                              "components": slim["components"]}
    return data


def test_changing_a_flavors_layers_in_the_manifest_changes_the_bake_file(current_manifest_data, write_manifest,
                                                                         tmp_path: Path) -> None:
    manifest = load_manifest(write_manifest(_slim_flavor(current_manifest_data)))
    definition = json.loads(write_build_inputs(resolved(manifest, tmp_path)).read_text())
    for flavor_name in ("cpu", "cpu-slim"):
        assert definition["group"][flavor_name]["targets"] == [f"os-{flavor_name}", f"paddle-{flavor_name}",
                                                               f"suite-{flavor_name}"]
        assert f"dali-{flavor_name}" not in definition["target"]
        assert definition["target"][f"paddle-{flavor_name}"]["args"]["BASE_IMAGE"] == BELOW
        assert definition["target"][f"paddle-{flavor_name}"]["contexts"] == {BELOW: f"target:os-{flavor_name}"}
    assert definition["group"]["default"] == {"targets": ["cpu-slim"]}


def test_bake_prints_what_the_manifest_says(current_manifest_data, write_manifest, repo: Path, tmp_path: Path) -> None:
    """`docker buildx bake --print` on a copy: the HCL plus the generated file build the manifest's layers."""
    if shutil.which("docker") is None or subprocess.run(["docker", "buildx", "version"], capture_output=True,
                                                        check=False).returncode != 0:
        pytest.skip("docker buildx is not installed: cannot run bake --print (the generated JSON is tested above)")
    manifest = load_manifest(write_manifest(_slim_flavor(current_manifest_data)))
    shutil.copy(repo / "docker-bake.hcl", tmp_path / "docker-bake.hcl")
    bake_file = write_build_inputs(resolved(manifest, tmp_path))
    env = {**os.environ, "RELEASE": manifest.release, "IMAGE": "img", "LAYER_REPO": "img-layers"}
    printed = {}
    for group in ("default", "cpu"):
        proc = subprocess.run(["docker", "buildx", "bake", "-f", "docker-bake.hcl", "-f",
                               str(bake_file.relative_to(tmp_path)), "--print", group],
                              cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        printed[group] = json.loads(proc.stdout)
    for flavor_name, group in (("cpu-slim", "default"), ("cpu", "cpu")):
        targets = printed[group]["target"]
        assert set(targets) == {f"os-{flavor_name}", f"paddle-{flavor_name}", f"suite-{flavor_name}"}
        release = manifest.release
        assert targets[f"paddle-{flavor_name}"]["contexts"] == {BELOW: f"target:os-{flavor_name}"}
        assert targets[f"paddle-{flavor_name}"]["dockerfile"] == "layers/paddle/Dockerfile"
        assert targets[f"suite-{flavor_name}"]["contexts"] == {BELOW: f"target:paddle-{flavor_name}"}
        assert targets[f"suite-{flavor_name}"]["tags"] == [f"img:{release}-{flavor_name}"]  # no suffix asked for
        assert targets[f"os-{flavor_name}"]["tags"] == [f"img-layers:{release}-{flavor_name}-os"]
        assert targets[f"os-{flavor_name}"]["network"] == "host"
        assert targets[f"suite-{flavor_name}"]["labels"]["ngc-paddle.layer"] == "suite"
        assert "org.opencontainers.image.revision" in targets[f"suite-{flavor_name}"]["labels"]
        assert "org.opencontainers.image.revision" not in targets[f"os-{flavor_name}"]["labels"]


def _unquote(node):
    """python-hcl2 keeps the quotes of names and strings; drop them."""
    if isinstance(node, dict):
        return {_unquote(k): _unquote(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_unquote(v) for v in node]
    if isinstance(node, str) and len(node) >= 2 and node[0] == node[-1] == '"':
        return node[1:-1]
    return node


def test_bake_definition_has_args_for_every_target(manifest, tmp_path: Path) -> None:
    release = resolved(manifest, tmp_path)
    definition = bake_definition(release)
    for flavor_name, spec in manifest.flavors.items():
        for layer in spec.layers:
            assert definition["target"][bake_target(layer, flavor_name)]["args"]
    bake_file = write_build_inputs(release)
    assert {k: v for k, v in json.loads(bake_file.read_text()).items()} == definition
    suite = definition["target"][bake_target("suite", "cpu")]["args"]
    assert json.loads(suite["MANIFEST_JSON"]) == image_manifest(manifest, "cpu")  # what the image carries
    assert definition["variable"] == {"RELEASE": {"default": manifest.release}}


def test_bake_command_builds_one_target_with_the_host_network_granted() -> None:
    cmd = bake_command(Path("build/bake/26.12.json"), "dali-cpu", "--progress", "plain")
    assert cmd[:6] == ["buildx", "bake", "-f", "docker-bake.hcl", "-f", "build/bake/26.12.json"]
    pairs = list(itertools.pairwise(cmd))
    assert ("--allow", "network.host") in pairs and "--load" in cmd and cmd[-1] == "dali-cpu"
    assert ("--progress", "plain") in pairs


def test_a_cache_registry_gives_every_target_its_own_cache_image(manifest) -> None:
    cache = registry_cache(resolved_flavor(manifest, "cpu"), "127.0.0.1:5000")
    assert set(cache) == {bake_target(layer, "cpu") for layer in manifest.flavors["cpu"].layers}
    os_cache = cache[bake_target("os", "cpu")]
    assert os_cache["cache-from"] == [f"type=registry,ref=127.0.0.1:5000/{manifest.image}-cache:"
                                      f"{manifest.release}-os-cpu"]
    assert os_cache["cache-to"][0].endswith(",mode=max,ignore-error=true")


def test_the_committed_bake_override_is_what_the_newest_manifest_and_locks_give(repo: Path) -> None:
    """`docker buildx bake` at the repo root builds what the manifest says: make image refreshes the file, this
    catches a manifest or lock committed without it (fix: ngc-paddle bake-file)."""
    newest = load_manifest(repo / "releases" / f"{latest_release(repo / 'releases')}.yaml")
    assert (repo / OVERRIDE).read_text() == override_text(resolved(newest, repo)), \
        "docker-bake.override.json is stale: run `ngc-paddle bake-file` and commit it"
