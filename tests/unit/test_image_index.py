"""One tag for a flavor's platforms: what a plain build builds and folds, the index build BuildKit is asked for, the
record a no-change rebuild reads through the index, and the failures that leave the tags where they were."""

import argparse
import json
import subprocess
from pathlib import Path

import pytest

from ngc_paddle import cli, engine
from ngc_paddle.host_errors import BuildError
from ngc_paddle.image_build import build_flavor, image_index

AMD64, ARM64, INDEX = "sha256:" + "a" * 64, "sha256:" + "b" * 64, "sha256:" + "c" * 64
IMAGES = {"linux/amd64": "ngc-paddle:26.12-cpu", "linux/arm64": "ngc-paddle:26.12-cpu-arm64"}
TAGS = ["ngc-paddle:26.12-cpu", "ngc-paddle:26.12"]


def build_args(repo: Path, flavor: str | None = None, platforms: tuple[str, ...] = ()) -> argparse.Namespace:
    return argparse.Namespace(root=str(repo), release="26.12", source=[], flavor=flavor, platform=list(platforms),
                              force=False, cache_registry=None)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """cmd_build with the platform builds and the fold recorded, not run."""
    calls: dict[str, list] = {"built": [], "folded": []}
    monkeypatch.setattr(build_flavor, "build", lambda flavor, **_: calls["built"].append(flavor.platform))
    monkeypatch.setattr(image_index, "fold", lambda images, tags, reports, say: calls["folded"].append(
        (dict(images), list(tags), reports)))
    return calls


def test_a_plain_build_builds_every_platform_and_folds_them_under_the_flavors_tags(repo: Path, builds) -> None:
    assert cli.cmd_build(build_args(repo)) == 0
    assert builds["built"] == ["linux/amd64", "linux/arm64"]  # the default platform first: its tags move first
    [(images, tags, reports)] = builds["folded"]
    assert images == IMAGES and tags == TAGS
    assert reports == repo.resolve() / "build" / "reports" / "26.12-cpu"


def test_a_build_of_some_platforms_tags_each_on_its_own(repo: Path, builds) -> None:
    cli.cmd_build(build_args(repo, platforms=("linux/arm64",)))
    cli.cmd_build(build_args(repo, platforms=("linux/amd64",)))
    assert builds["built"] == ["linux/arm64", "linux/amd64"] and builds["folded"] == []


def test_a_flavor_of_one_platform_is_not_folded(repo: Path, builds) -> None:
    cli.cmd_build(build_args(repo, flavor="gpu-cu118"))
    assert builds["built"] == ["linux/amd64"] and builds["folded"] == []


def test_the_index_build_takes_each_platform_whole_from_its_image() -> None:
    assert image_index.dockerfile(list(IMAGES)) == ("FROM platform-amd64 AS image-amd64\n"
                                                    "FROM platform-arm64 AS image-arm64\n"
                                                    "FROM image-${TARGETARCH}\n")
    cmd = image_index.fold_command(IMAGES, TAGS, Path("/m.json"), Path("/ctx"))
    assert cmd[cmd.index("--platform") + 1] == "linux/amd64,linux/arm64"
    # provenance or an SBOM would add entries and rewrite the manifests: the entries would no longer be the images
    assert "--provenance=false" in cmd and "--sbom=false" in cmd and "--pull=false" in cmd
    contexts = [cmd[i + 1] for i, flag in enumerate(cmd) if flag == "--build-context"]
    assert contexts == ["platform-amd64=docker-image://ngc-paddle:26.12-cpu",
                        "platform-arm64=docker-image://ngc-paddle:26.12-cpu-arm64"]
    assert cmd[cmd.index("--output") + 1] == 'type=image,"name=ngc-paddle:26.12-cpu,ngc-paddle:26.12"'
    assert cmd[cmd.index("--metadata-file") + 1] == "/m.json" and cmd[-1] == "/ctx"


def fake_engine(monkeypatch: pytest.MonkeyPatch, written: str | None, ids: dict[str, str], rc: int = 0,
                names_tags: bool = True) -> list:
    """engine.docker as BuildKit answers the index build (its metadata file naming `written`, the tags then naming
    it unless another build moved them), image ids as given."""
    seen: list = []

    def docker(*args: str, check: bool = True, stdin=None, **_):
        seen.append((args, stdin.read() if stdin else None))
        if written is not None and rc == 0:
            Path(args[args.index("--metadata-file") + 1]).write_text(json.dumps({"containerimage.digest": written}))
            if names_tags:
                ids.update(dict.fromkeys(TAGS, written))
        return subprocess.CompletedProcess(args, rc, "", "" if rc == 0 else "ERROR: docker exporter does not "
                                           "currently support exporting manifest lists\n")

    monkeypatch.setattr(engine, "docker", docker)
    monkeypatch.setattr(engine, "image_id", lambda ref: ids.get(ref))
    return seen


def test_a_fold_records_the_index_and_each_platforms_image(tmp_path: Path, monkeypatch) -> None:
    seen = fake_engine(monkeypatch, INDEX, {IMAGES["linux/amd64"]: AMD64, IMAGES["linux/arm64"]: ARM64})
    lines: list[str] = []
    assert image_index.fold(IMAGES, TAGS, tmp_path, lines.append) == INDEX
    assert seen[0][1] == image_index.dockerfile(list(IMAGES))  # the Dockerfile went in on stdin
    record = json.loads((tmp_path / image_index.RECORD).read_text())
    assert record == {"index": INDEX, "tags": TAGS, "platforms": {"linux/amd64": AMD64, "linux/arm64": ARM64}}
    assert lines[-1] == f"==> tagged {', '.join(TAGS)}: image index {INDEX[:19]} of linux/amd64, linux/arm64"


def test_a_fold_over_an_earlier_index_records_the_platforms_image_not_the_index(tmp_path: Path, monkeypatch) -> None:
    """After a fold the default platform's tag is the index; folding again (nothing rebuilt) keeps its entry."""
    (tmp_path / image_index.RECORD).write_text(json.dumps({"index": INDEX, "platforms": {"linux/amd64": AMD64,
                                                                                         "linux/arm64": ARM64}}))
    fake_engine(monkeypatch, INDEX, {IMAGES["linux/amd64"]: INDEX, IMAGES["linux/arm64"]: ARM64})
    image_index.fold(IMAGES, TAGS, tmp_path, lambda _: None)
    assert json.loads((tmp_path / image_index.RECORD).read_text())["platforms"]["linux/amd64"] == AMD64


def test_a_failed_fold_is_one_line_and_keeps_the_record(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / image_index.RECORD).write_text("kept")
    fake_engine(monkeypatch, None, {IMAGES["linux/amd64"]: AMD64, IMAGES["linux/arm64"]: ARM64}, rc=1)
    with pytest.raises(BuildError) as failed:
        image_index.fold(IMAGES, TAGS, tmp_path, lambda _: None)
    message = str(failed.value)
    assert "\n" not in message and message.startswith("folding linux/amd64 (ngc-paddle:26.12-cpu), linux/arm64 ")
    assert "docker exporter does not currently support exporting manifest lists" in message
    assert "fix: " in message and "containerd store" in message
    assert (tmp_path / image_index.RECORD).read_text() == "kept"


def test_a_tag_moved_by_another_build_is_not_recorded_as_the_index(tmp_path: Path, monkeypatch) -> None:
    fake_engine(monkeypatch, INDEX, {IMAGES["linux/amd64"]: AMD64, IMAGES["linux/arm64"]: ARM64}, names_tags=False)
    with pytest.raises(BuildError, match="not the index just written"):
        image_index.fold(IMAGES, TAGS, tmp_path, lambda _: None)
    assert not (tmp_path / image_index.RECORD).exists()


@pytest.mark.parametrize("record", [None, "not json", json.dumps(["a list"]),
                                    json.dumps({"index": "sha256:" + "d" * 64, "platforms": {"linux/amd64": AMD64}}),
                                    json.dumps({"index": INDEX, "platforms": {"linux/arm64": ARM64}})])
def test_an_id_that_is_no_recorded_index_means_itself(tmp_path: Path, record: str | None) -> None:
    if record is not None:
        (tmp_path / image_index.RECORD).write_text(record)
    assert image_index.platform_image(INDEX, "linux/amd64", tmp_path) == INDEX


def test_the_recorded_index_means_the_platforms_own_image(tmp_path: Path) -> None:
    (tmp_path / image_index.RECORD).write_text(json.dumps({"index": INDEX, "platforms": {"linux/amd64": AMD64,
                                                                                         "linux/arm64": ARM64}}))
    assert image_index.platform_image(INDEX, "linux/amd64", tmp_path) == AMD64
    assert image_index.platform_image(INDEX, "linux/arm64", tmp_path) == ARM64
    assert image_index.platform_image(AMD64, "linux/amd64", tmp_path) == AMD64


def test_the_index_record_is_read_by_the_module_that_writes_it(tmp_path: Path, monkeypatch) -> None:
    """The record's format is image_index's: the release's candidate check reads the platforms through it (it parsed
    the file with its own rule before)."""
    from ngc_paddle.release.stages import candidate

    record = tmp_path / image_index.RECORD
    assert image_index.recorded_platforms(record) is None
    record.write_text(json.dumps({"index": INDEX, "platforms": {"linux/amd64": AMD64, "linux/arm64": ARM64}}))
    assert image_index.recorded_platforms(record) == {"linux/amd64": AMD64, "linux/arm64": ARM64}
    monkeypatch.setattr(image_index, "recorded_platforms", lambda path: {"linux/amd64": AMD64})
    assert candidate.built_platforms(record) == {"linux/amd64": AMD64}
