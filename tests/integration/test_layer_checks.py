"""Checks per layer in real images: every intermediate layer image of the default flavor validates from the
host with its layers' checks, and a broken dali layer stops the build right there, naming the check."""

import json
import subprocess
from pathlib import Path

from ngc_paddle.manifest import load_manifest
from tests.integration.conftest import AMD64, Built, docker, run_cli, scratch


def test_each_layer_image_validates_from_the_host(built: Built, tmp_path: Path) -> None:
    """The lower layers carry no pytest and no /opt/ngc-paddle: the host's suite checks them, per layer."""
    stack = [layer["layer"] for layer in built.report["layers"]]
    for index, layer in enumerate(built.report["layers"][:-1]):
        below = stack[: index + 1]
        out = tmp_path / layer["layer"]
        proc = run_cli("validate", layer["tag"], "--output", str(out))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
        assert f"validation of {built.release}-{built.flavor} up to layer {layer['layer']}: PASS" in proc.stdout
        report = json.loads((out / "validation.json").read_text())
        assert report["layer"] == layer["layer"] and [x["layer"] for x in report["layers"]] == below
        assert all(x["counts"]["passed"] >= 1 and x["ok"] for x in report["layers"]), report["layers"]
        assert {c["layer"] for c in report["checks"]} == set(below)
        assert [below.index(c["layer"]) for c in report["checks"]] == sorted(below.index(c["layer"])
                                                                             for c in report["checks"])
        assert f"| {layer['layer']} | " in (out / "validation.md").read_text()


def test_broken_dali_layer_stops_the_build_at_that_layer(tmp_path: Path) -> None:
    """A DALI shared object removed after install: the dali layer's fast checks fail (link.dali), the build
    stops there with one line naming layer and check, paddle and suite are not built, the release tag stays.
    The scratch image name is this file's own: the tags it removes are no other file's."""
    scratch_repo = scratch(tmp_path / "repo", "ngc-paddle-brokenlayer")
    manifest = load_manifest(scratch_repo / "releases" / "26.12.yaml")
    flavor = manifest.default_flavor
    layers_repo = f"{manifest.image}-layers:{manifest.release}-{flavor}"
    release_tag = f"{manifest.image}:{manifest.release}-{flavor}"
    for stale in (f"{layers_repo}-paddle", release_tag):  # left by an earlier run: must not be built now
        docker("image", "rm", "-f", stale, check=False)
    # A stand-in "previous release" whose id must not change.
    subprocess.run(["docker", "import", "-", release_tag], input=b"\0" * 1024, capture_output=True, check=True)
    previous = docker("image", "inspect", "--format", "{{.Id}}", release_tag).stdout.strip()
    install = scratch_repo / "layers" / "dali" / "install.sh"
    install.write_text(install.read_text() + 'rm "$(python -c \'import nvidia.dali, os; '
                       'print(os.path.dirname(nvidia.dali.__file__))\')"/.libs/libcfitsio-*.so*\n')
    try:
        proc = run_cli("build", *AMD64, root=scratch_repo)
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
        assert proc.stderr.startswith("error: layer dali: check link.dali failed: ") and proc.stderr.count("\n") == 1
        assert "libcfitsio" in proc.stderr and "layers above were not built" in proc.stderr
        assert "dali: checks " in proc.stdout and "paddle: building" not in proc.stdout
        failed = json.loads((scratch_repo / "build" / "reports" / f"{manifest.release}-{flavor}" /
                             "build-failed.json").read_text())
        assert [x["layer"] for x in failed["layers"]] == ["os", "dali"] and failed["layers"][1]["status"] == "failed"
        assert "link.dali" in failed["layers"][1]["checks"]["failed"]
        assert docker("image", "inspect", f"{layers_repo}-paddle", check=False).returncode != 0
        assert docker("image", "inspect", "--format", "{{.Id}}", release_tag).stdout.strip() == previous
    finally:
        for tag in (release_tag, f"{layers_repo}-dali"):
            docker("image", "rm", "-f", tag, check=False)
