"""Secure defaults: the image runs as paddle (uid 1000), works under any uid, and says how to fix a folder it
cannot write (the README's command: a bind folder that Docker created as root)."""

import json
import os
from pathlib import Path

from tests.integration.conftest import Built, docker


def test_image_runs_as_paddle_by_default(built: Built) -> None:
    assert docker("image", "inspect", "--format", "{{.Config.User}}", built.image).stdout.strip() == "1000:1000"
    proc = docker("run", "--rm", "--network", "none", "-e", "NGC_PADDLE_QUIET=1", built.image, "bash", "-c",
                  'id -u; echo "$HOME"; test -w "$HOME" && test -w /workspace && echo writable')
    assert proc.stdout.split() == ["1000", "/home/paddle", "writable"], proc.stdout + proc.stderr


def test_a_folder_the_image_user_cannot_write_is_a_one_line_error(built: Built, tmp_path: Path) -> None:
    results = tmp_path / "bench-results"  # as Docker creates a missing bind folder: root:root 755 (here: ours)
    results.mkdir(mode=0o755)
    if os.getuid() != 0:
        results.chmod(0o555)
    proc = docker("run", "--rm", "--network", "none", "-e", "NGC_PADDLE_QUIET=1", "-v",
                  f"{results}:/workspace/bench-results", built.image, "bench-rn50", check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith("error: /workspace/bench-results: output folder: not writable by uid 1000")
    assert proc.stderr.count("\n") == 1 and 'fix: run the container as the folder\'s owner (docker run --user' \
        in proc.stderr
    assert list(results.iterdir()) == []


def test_an_arbitrary_uid_writes_results_into_its_own_folder(built: Built, tmp_path: Path) -> None:
    """`docker run --user UID:GID` with a uid that has no account: HOME falls back to /tmp, results are its own."""
    out = tmp_path / "out"
    out.mkdir()
    uid = 4321 if os.getuid() == 0 else os.getuid()
    os.chown(out, uid, uid)
    proc = docker("run", "--rm", "--network", "none", "--user", f"{uid}:{uid}", "-e", "NGC_PADDLE_QUIET=1", "-v",
                  f"{out}:/workspace/bench-results", built.image, "bash", "-c",
                  'echo "home=$HOME" && bench-rn50 --smoke', check=False, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"home=/tmp/home-{uid}" in proc.stdout
    results = sorted(out.glob("*/result.json"))
    assert results and results[-1].stat().st_uid == uid
    assert json.loads(results[-1].read_text())["verdict"] == "SMOKE"
