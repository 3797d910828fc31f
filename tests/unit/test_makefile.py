"""Every documented make target parses (a dry run), so a broken Makefile fails in seconds, not in CI."""

import subprocess
from pathlib import Path

import pytest

from ngc_paddle import image_ref

TARGETS = ["image", "lock", "test", "unit", "integration", "lint", "toolchain", "validate", "scan", "release",
           "bake-print", "perf-build", "perf-repro", "perf-validate", "perf-input", "perf-overhead",
           "perf-threads", "perf-scan", "bench-compare", "clean", "distclean", "help"]


@pytest.mark.parametrize("target", TARGETS)
def test_make_target_dry_runs(repo: Path, target: str) -> None:
    proc = subprocess.run(["make", "-n", target], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


NEWEST = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "releases").glob("*.yaml"))[-1]


@pytest.mark.parametrize(("image", "release", "flavor", "expected"), [
    (None, None, None, f"ngc-paddle:{NEWEST}-cpu"),
    (None, None, "gpu-cu118", f"ngc-paddle:{NEWEST}-gpu-cu118"),
    (None, "23.01", None, "ngc-paddle:23.01-gpu"),  # 23.01 has no cpu flavor: its own default, not -cpu
    (None, "23.01", "gpu", "ngc-paddle:23.01-gpu"),
    ("mine:1", None, None, "mine:1"),
])
def test_image_ref_follows_the_manifest(repo: Path, image, release, flavor, expected: str) -> None:
    assert image_ref.resolve(image, release, flavor, repo)[0] == expected


def test_image_ref_rejects_a_flavor_the_release_lacks(repo: Path, capsys) -> None:
    assert image_ref.main(["--root", str(repo), "--release", "23.01", "--flavor", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no flavor 'cpu'" in err and "fix:" in err


def test_image_ref_refuses_an_image_that_is_not_built(repo: Path, capsys) -> None:
    code = image_ref.main(["--root", str(repo), "--image", "ngc-paddle-never-built:0", "--require-built"])
    err = capsys.readouterr().err
    assert code == 2 and "ngc-paddle-never-built:0: not built; fix: make image" in err


@pytest.mark.parametrize("target", ["validate", "scan", "perf-input", "perf-overhead", "perf-threads", "perf-scan",
                                    "bench-compare"])
def test_image_targets_go_through_image_ref(repo: Path, target: str) -> None:
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", target, "FLAVOR=gpu-cu118"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert '-m ngc_paddle.image_ref --image "" --release "" --flavor "gpu-cu118"' in proc.stdout
    assert "-cpu" not in proc.stdout, proc.stdout


def test_release_passes_the_unproven_waiver(repo: Path) -> None:
    command = ["make", "--no-print-directory", "-n", "release", "ACCEPT_UNPROVEN=no GPU in CI"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert '--accept-unproven "no GPU in CI"' in proc.stdout, proc.stdout


def test_lock_target_passes_release_flavor_and_sources(repo: Path) -> None:
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "lock", "FLAVOR=gpu",
               "SOURCES=nvidia=https://m.example/nv"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert "ngc-paddle lock  --flavor gpu --source nvidia=https://m.example/nv" in proc.stdout, proc.stdout
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "lock", "FLAVOR=cpu",
               "PLATFORMS=linux/arm64"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert "ngc-paddle lock  --flavor cpu  --platform linux/arm64" in proc.stdout, proc.stdout


def test_scan_passes_the_vulnerability_sources(repo: Path) -> None:
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "scan", "IMAGE=mine:1",
               "OSV_DIR=/mirror/osv", "DB_REPOSITORY=mirror.example/trivy-db:2", "POLICY=p.yaml"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert ('ngc-paddle scan "$img" --osv-dir /mirror/osv --db-repository mirror.example/trivy-db:2 --policy p.yaml'
            in " ".join(proc.stdout.split())), proc.stdout


def test_bench_compare_passes_its_options(repo: Path) -> None:
    command = ["make", "--no-print-directory", "-n", "-W", ".venv/bin/.installed", "bench-compare",
               "REFERENCE=reg:5000/ngc-paddle@sha256:00", "ROUNDS=7", "MODEL=hgnet", "SMOKE=1"]
    proc = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert 'bench-compare "$img" --reference "reg:5000/ngc-paddle@sha256:00" --model hgnet --rounds 7 --smoke' \
        in " ".join(proc.stdout.replace("\\\n", " ").split()), proc.stdout
