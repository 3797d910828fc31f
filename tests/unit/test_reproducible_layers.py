"""What keeps the layers reproducible on dockerd 20.10's BuildKit: no step leaves BuildKit's stamps behind."""

import importlib.util
import io
import re
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted([REPO / "Dockerfile", *REPO.glob("layers/*/Dockerfile")])
# Mount targets outside /tmp: folders the Debian base already has (BuildKit makes no mount point for them).
BASE_FOLDERS = {"/var/cache/apt", "/var/lib/apt/lists"}


def run_mounts(path: Path) -> list[list[dict[str, str]]]:
    """The --mount options of each RUN instruction of a Dockerfile."""
    text = re.sub(r"\\\n", " ", path.read_text())
    runs = []
    for line in text.splitlines():
        if line.strip().startswith("RUN "):
            runs.append([dict(o.split("=", 1) for o in m.split(",") if "=" in o)
                         for m in re.findall(r"--mount=(\S+)", line)])
    return runs


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_mount_lies_under_a_tmpfs_or_in_a_base_folder(dockerfile: Path) -> None:
    runs = run_mounts(dockerfile)
    assert runs, "every layer has a RUN step"
    for mounts in runs:
        targets = {m["target"]: m["type"] for m in mounts}
        assert targets.get("/tmp") == "tmpfs", f"{dockerfile.name}: a RUN without a tmpfs at /tmp"
        for target in targets:
            assert target == "/tmp" or target.startswith("/tmp/") or target in BASE_FOLDERS, target


def test_no_copy_and_no_removal_in_any_layer() -> None:
    for dockerfile in DOCKERFILES:
        text = dockerfile.read_text()
        assert not re.search(r"^COPY ", text, re.M), f"{dockerfile}: COPY stamps folders with the build time"
        assert "rm -rf /tmp/ngc" not in text and "/run/secrets" not in text


def test_committed_etc_tar_is_what_its_script_writes() -> None:
    spec = importlib.util.spec_from_file_location("etc_tar", REPO / "layers/os/etc_tar.py")
    assert spec is not None and spec.loader is not None
    etc_tar = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(etc_tar)
    committed = (REPO / "layers/os/etc.tar").read_bytes()
    assert committed == etc_tar.tar_bytes(), "run python layers/os/etc_tar.py and commit layers/os/etc.tar"
    with tarfile.open(fileobj=io.BytesIO(committed)) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == ["etc", "etc/hosts", "etc/resolv.conf"]
        assert {(m.mtime, m.uid, m.gid) for m in members} == {(0, 0, 0)}
        hosts = tar.extractfile("etc/hosts")
        assert hosts is not None and b"localhost" in hosts.read()
    assert "ADD layers/os/etc.tar /" in (REPO / "layers/os/Dockerfile").read_text()


def test_tar_changes_with_its_source(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("etc_tar", REPO / "layers/os/etc_tar.py")
    assert spec is not None and spec.loader is not None
    etc_tar = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(etc_tar)
    (tmp_path / "hosts").write_text("127.0.0.1 localhost other\n")
    (tmp_path / "resolv.conf").write_text("")
    assert etc_tar.tar_bytes(tmp_path) != etc_tar.tar_bytes()
    assert etc_tar.tar_bytes(tmp_path) == etc_tar.tar_bytes(tmp_path)
