"""The reproducibility benchmark's comparison (two small layer tars made here) and its arguments."""

import dataclasses
import hashlib
import io
import json
import subprocess
import tarfile
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from types import MappingProxyType

import pytest

from ngc_common.exit_codes import ExitCode
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.image_build.bakefile import bake_definition
from ngc_paddle.layers import bake_target
from ngc_paddle.lock.layer_args import source_date_epoch
from ngc_paddle.lock.lock_file import read_lock
from ngc_paddle.manifest import load_manifest
from perf.image_build import bench_repro

REPO = Path(__file__).resolve().parents[2]


def make_layer(path: Path, members: dict[str, tuple[bytes | None, int, int]]) -> Path:
    """A layer tar of {name: (content, or None for a folder; mtime; mode)}."""
    with tarfile.open(path, "w") as tar:
        for name, (content, mtime, mode) in members.items():
            info = tarfile.TarInfo(name)
            info.mtime, info.mode = mtime, mode
            if content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return path


def make_saved(folder: Path, layers: list[dict[str, tuple[bytes | None, int, int]]]) -> Path:
    """A `docker save` folder: manifest.json, the config with the diff ids, one tar per layer."""
    folder.mkdir()
    names, diff_ids = [], []
    for index, members in enumerate(layers):
        tar = make_layer(folder / f"layer{index}.tar", members)
        names.append(tar.name)
        diff_ids.append("sha256:" + hashlib.sha256(tar.read_bytes()).hexdigest())
    (folder / "config.json").write_text(json.dumps({"rootfs": {"type": "layers", "diff_ids": diff_ids}}))
    (folder / "manifest.json").write_text(json.dumps([{"Config": "config.json", "Layers": names}]))
    return folder


BASE = {"etc": (None, 100, 0o755), "etc/os-release": (b"bookworm\n", 100, 0o644)}


def test_identical_layers_count_and_every_kind_of_difference(tmp_path: Path) -> None:
    layer_a = {
        "opt/venv/same.py": (b"x = 1\n", 5, 0o644),
        "opt/venv/__pycache__/mod.cpython-311.pyc": (b"pyc with mtime 1", 5, 0o644),
        "opt/venv/touched.txt": (b"same bytes", 5, 0o644),
        "opt/venv/script": (b"#!/bin/sh\n", 5, 0o644),
        "var/log/.wh.dpkg.log": (b"", 5, 0o600),
        "var/cache/ldconfig/aux-cache": (b"inodes 1", 5, 0o600),
        "only-in-a": (b"gone", 5, 0o644),
    }
    layer_b = {
        "opt/venv/same.py": (b"x = 1\n", 5, 0o644),
        "opt/venv/__pycache__/mod.cpython-311.pyc": (b"pyc with mtime 2", 5, 0o644),
        "opt/venv/touched.txt": (b"same bytes", 9, 0o644),
        "opt/venv/script": (b"#!/bin/sh\n", 5, 0o755),
        "var/log/.wh.dpkg.log": (b"", 9, 0o600),
        "var/cache/ldconfig/aux-cache": (b"inodes 2", 5, 0o600),
        "only-in-b": (b"new", 5, 0o644),
    }
    a = make_saved(tmp_path / "a", [BASE, layer_a])
    b = make_saved(tmp_path / "b", [BASE, layer_b])
    layers = bench_repro.compare_saved(a, b)
    assert [layer.identical for layer in layers] == [True, False]
    assert layers[0].files == []
    found = {f.path: (f.change, f.fields, f.reason) for f in layers[1].files}
    assert found == {
        "opt/venv/__pycache__/mod.cpython-311.pyc": ("content", [], ".pyc (bytecode written at install time)"),
        "opt/venv/touched.txt": ("metadata", ["mtime"], "timestamp"),
        "opt/venv/script": ("metadata", ["mode"], "metadata: mode"),
        "var/log/.wh.dpkg.log": ("metadata", ["mtime"], "timestamp" + bench_repro.WHITEOUT + " (apt/dpkg log)"),
        "var/cache/ldconfig/aux-cache": ("content", [], "ldconfig cache"),
        "only-in-a": ("removed", [], "unknown"),
        "only-in-b": ("added", [], "unknown"),
    }


def test_a_layer_missing_on_one_side_is_not_identical(tmp_path: Path) -> None:
    a = make_saved(tmp_path / "a", [BASE, {"x": (b"1", 1, 0o644)}])
    b = make_saved(tmp_path / "b", [BASE])
    layers = bench_repro.compare_saved(a, b)
    assert [layer.identical for layer in layers] == [True, False]
    assert [(f.path, f.change) for f in layers[1].files] == [("x", "removed")]


def test_same_tar_contents_in_another_order_differ_in_digest_but_list_no_file(tmp_path: Path) -> None:
    """Member order changes the digest; the file walk then finds nothing, which the report shows as 0 files."""
    first = {"a": (b"1", 1, 0o644), "b": (b"2", 1, 0o644)}
    second = {"b": (b"2", 1, 0o644), "a": (b"1", 1, 0o644)}
    layers = bench_repro.compare_saved(make_saved(tmp_path / "a", [first]), make_saved(tmp_path / "b", [second]))
    assert not layers[0].identical and layers[0].files == []


def test_package_diff_and_report() -> None:
    diff = bench_repro.package_diff(["numpy=1.26.4", "six=1.16.0"], ["numpy=1.26.4", "six=1.17.0"])
    assert diff == {"only_a": ["six=1.16.0"], "only_b": ["six=1.17.0"]}
    result = {"release": "26.12", "flavor": "cpu", "up_to": "dali", "image_a": "a", "image_b": "b",
              "packages_identical": False, "packages": {"pip": diff, "dpkg": {"only_a": [], "only_b": []}},
              "identical_layers": 1, "layers_total": 2,
              "layers": [{"index": 0, "digest_a": "sha256:" + "1" * 64, "digest_b": "sha256:" + "1" * 64,
                          "identical": True, "files": []},
                         {"index": 1, "digest_a": "sha256:" + "2" * 64, "digest_b": "sha256:" + "3" * 64,
                          "identical": False, "files": [{"path": "x.pyc", "change": "content", "fields": [],
                                                         "reason": ".pyc"}]}]}
    text = bench_repro.render_markdown(result)
    assert "**1 of 2 layers identical**; package sets DIFFER" in text
    assert "pip only in A: six=1.16.0" in text and "pip only in B: six=1.17.0" in text
    assert "| `x.pyc` | content |  | .pyc |" in text


def test_cli_arguments() -> None:
    args = bench_repro.parse_args(["--flavor", "cpu", "--up-to", "dali", "--source", "pypi=https://m/simple"])
    assert (args.flavor, args.up_to, args.source, args.compare) == ("cpu", "dali", ["pypi=https://m/simple"], None)
    assert bench_repro.parse_args(["--compare", "x:1", "y:1"]).compare == ["x:1", "y:1"]
    assert bench_repro.parse_args([]).name == "ngc-paddle-repro"


@pytest.mark.parametrize("argv", [["--up-to", "kernel"], ["--source", "pypi"], ["--source", "=x"],
                                  ["--compare", "only-one"]])
def test_cli_refuses_bad_arguments_with_exit_2(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        bench_repro.parse_args(argv)
    assert stopped.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_every_layer_gets_the_locks_snapshot_as_source_date_epoch() -> None:
    manifest = load_manifest(REPO / "releases" / "26.12.yaml")
    release = ResolvedRelease(REPO, manifest, MappingProxyType({}))
    lock = read_lock(REPO / "releases" / "26.12-cpu.lock.json")
    epoch = source_date_epoch(lock)
    assert epoch is not None and lock.base.snapshot is not None
    assert format_datetime(datetime.fromtimestamp(int(epoch), UTC), usegmt=True).replace("GMT", "UTC") \
        == lock.base.snapshot.replace("GMT", "UTC")
    definition = bake_definition(release)
    for layer in manifest.flavors["cpu"].layers:
        args = definition["target"][bake_target(layer, "cpu")]["args"]
        assert args["SOURCE_DATE_EPOCH"] == epoch
        # the inputs digest is computed from layer_args (image_build/nochange.py): the build stops when they differ
        # BASE_IMAGE aside (the tag of the layer below, or the base image the build finds), the same args
        resolved = release.flavor("cpu").layer_args(layer)
        assert {k: v for k, v in resolved.items() if k != "BASE_IMAGE"} == {
            k: v for k, v in args.items() if k != "BASE_IMAGE"}
    unlocked = dataclasses.replace(release.flavor("cpu"), lock=None)
    assert "SOURCE_DATE_EPOCH" not in unlocked.layer_args("os")  # `ngc-paddle lock`'s trial run
    assert source_date_epoch(None) is None
    assert source_date_epoch(lock.model_copy(update={"base": lock.base.model_copy(update={"snapshot": None})})) == "0"


def test_config_differences_name_the_field_and_why(tmp_path: Path) -> None:
    a = make_saved(tmp_path / "a", [BASE])
    b = make_saved(tmp_path / "b", [BASE])
    assert bench_repro.config_diff(a, b) == []
    for folder, when in ((a, "2026-12-03T09:00:00Z"), (b, "2026-12-03T09:05:00Z")):
        config = json.loads((folder / "config.json").read_text())
        config.update(created=when, history=[{"created": when, "created_by": "RUN true"}])
        config["config"] = {"Labels": {"x": when}, "User": "1000:1000"}
        (folder / "config.json").write_text(json.dumps(config))
    diff = {d["field"]: d["reason"] for d in bench_repro.config_diff(a, b)}
    assert set(diff) == {"created", "history[0].created", "config.Labels.x"}
    assert diff["created"] == diff["history[0].created"] == bench_repro.CONFIG_TIME
    assert "label" in diff["config.Labels.x"]


def test_another_platform_builds_every_layer_on_this_engine_and_an_unknown_one_is_refused(capsys) -> None:
    """--platform linux/arm64 builds the whole image (the foreign build has no stop at a layer) on this engine (a
    second engine instance has neither qemu nor the arm64 base); an unknown platform is one line naming the known."""
    assert bench_repro.parse_args(["--platform", "linux/arm64"]).platform == "linux/arm64"
    this_host = bench_repro.parse_args(["--platform", "linux/amd64", "--up-to", "os"])
    assert this_host.up_to == "os" and this_host.platform is None  # this host's: built and named as without it
    for bad in (["--platform", "linux/arm64", "--up-to", "os"], ["--platform", "linux/arm64", "--second-engine"],
                ["--platform", "linux/s390x"]):
        with pytest.raises(SystemExit) as refused:
            bench_repro.parse_args(bad)
        assert refused.value.code == ExitCode.BAD_INPUT, bad
        err = capsys.readouterr().err
        assert err.startswith("error: --platform") and err.count("\n") == 1 and "fix: " in err, err
    assert "linux/amd64, linux/arm64" in err


def test_the_packages_of_another_platforms_image_are_read_under_its_platform(monkeypatch) -> None:
    calls = []

    def run(image, *cmd, flags=(), check=False, **_):
        calls.append(list(flags))
        out = "[]" if "pip" in cmd else ""
        return subprocess.CompletedProcess([], 0, out, "")

    monkeypatch.setattr(bench_repro.engine, "run", run)
    assert bench_repro.installed_packages("img:arm64", "linux/arm64") == {"pip": [], "dpkg": []}
    assert all(f[f.index("--platform") + 1] == "linux/arm64" for f in calls) and len(calls) == 2
    calls.clear()
    bench_repro.installed_packages("img")
    assert all("--platform" not in f for f in calls)
