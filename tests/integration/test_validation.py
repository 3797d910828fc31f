"""The validation suite in real images: the built image passes, broken images fail exactly the right checks."""

import json
import os
import subprocess
from pathlib import Path

from tests.integration.conftest import Built, docker, run_cli

SITE = "/opt/venv/lib/python3.11/site-packages"

# defect -> (Dockerfile RUN line that plants it, the check ids that must fail, text their message must name)
DEFECTS = {
    "version-differs": (
        f"sed -i 's/^Version: .*/Version: 0.0.1/' {SITE}/pytest_xdist-*.dist-info/METADATA",
        {"version.pytest-xdist", "pyenv.locked"}, "0.0.1"),
    "distribution-outside-the-lock": (
        f"mkdir -p {SITE}/stray_pkg-1.0.dist-info && printf 'Metadata-Version: 2.1\\nName: stray-pkg\\n"
        f"Version: 1.0\\nLicense: MIT\\n' > {SITE}/stray_pkg-1.0.dist-info/METADATA",
        {"pyenv.locked"}, "stray-pkg 1.0 (not locked)"),
    "removed-library": (
        f"rm {SITE}/paddle/libs/libgfortran.so.3",
        {"link.paddle"}, "libgfortran.so.3"),
    "pip-cache": (
        "mkdir -p /root/.cache/pip/http-v2/a && echo cached > /root/.cache/pip/http-v2/a/b",
        {"hygiene.package-caches"}, "/root/.cache/pip/http-v2/a/b"),
    "setuid-binary": (
        "cp /usr/bin/true /usr/local/bin/helper && chmod 4755 /usr/local/bin/helper",
        {"hygiene.setuid"}, "/usr/local/bin/helper"),
    "private-key": (
        "mkdir -p /root/.ssh && printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n"
        "-----END OPENSSH PRIVATE KEY-----\\n' > /root/.ssh/id_ed25519 && chmod 600 /root/.ssh/id_ed25519",
        {"hygiene.private-keys"}, "/root/.ssh/id_ed25519"),
}


def validate_in_image(image: str, out: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out.mkdir(parents=True, exist_ok=True)
    proc = docker("run", "--rm", "--network", "none", "--user", f"{os.getuid()}:{os.getgid()}", "-v", f"{out}:/report",
                  image, "validate", "--output",
                  "/report", *args, check=False, timeout=900)
    report = json.loads((out / "validation.json").read_text()) if (out / "validation.json").exists() else {}
    return proc, report


def test_validate_in_image_passes(built: Built, tmp_path: Path) -> None:
    proc, report = validate_in_image(built.image, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert f"validation of {built.release}-{built.flavor}: PASS" in proc.stdout and report["verdict"] == "PASS"
    starts = {c["id"]: c["status"] for c in report["checks"] if c["id"].startswith("contract.command-starts.")}
    assert starts == {f"contract.command-starts.{c}": "passed" for c in ("bench-hgnet", "bench-rn50", "validate")}
    assert report["ok"] and report["counts"]["failed"] == 0 and report["counts"]["passed"] >= 40
    ids = {c["id"] for c in report["checks"]}
    for expected in ("version.paddle", "version.dali", "link.paddle", "pyenv.pip-check", "func.paddle-run-check",
                     "func.train-loss-decreases", "func.cpu-data-parallel", "func.dali-cpu-pipeline",
                     "func.inference-onnx-agree",
                     "contract.banner", "hygiene.setuid", "hygiene.private-keys"):
        assert expected in ids, expected
    for check in report["checks"]:
        if check["id"].startswith("gpu."):
            assert check["status"] == "skipped" and check["message"], check
    for name in ("validation.md", "validation.xml"):
        assert (tmp_path / name).stat().st_size > 0


def test_validate_from_host_reads_labels(built: Built, tmp_path: Path) -> None:
    """The host's own check (the image's labels); the whole suite from the host runs in the release's validate
    stage (test_release_pipeline) and, for gpu-cu118, in cu118_validated."""
    proc = run_cli("validate", built.image, "--output", str(tmp_path / "host"), "-k", "oci_labels")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    report = json.loads((tmp_path / "host" / "validation.json").read_text())
    labels = next(c for c in report["checks"] if c["id"] == "contract.oci-labels")
    assert labels["status"] == "passed", labels
    junit = (tmp_path / "host" / "validation.xml").read_text()
    assert "<testsuites>" in junit and "contract.oci-labels" in junit


def test_a_broken_image_fails_exactly_the_checks_of_its_defects(built: Built, tmp_path: Path) -> None:
    """Every defect of DEFECTS planted in one image (one layer each) and validated once: the failed checks are exactly
    the union of the defects' checks, and each of those names its defect in a one-line message."""
    image = "ngc-paddle-broken:all-defects"
    plants = "".join(f"RUN {plant}\n" for plant, _checks, _named in DEFECTS.values())
    dockerfile = f"FROM {built.image}\nUSER root\n{plants}USER 1000:1000\n"  # the image runs as paddle
    build = subprocess.run(["docker", "buildx", "build", "--network", "none", "--load", "-q", "-t", image, "-"],
                           input=dockerfile, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    try:
        proc, report = validate_in_image(image, tmp_path)
    finally:
        docker("image", "rm", "-f", image, check=False)
    assert proc.returncode == 1, proc.stdout[-2000:]
    failed = {c["id"]: c for c in report["checks"] if c["status"] in ("failed", "error")}
    expected = set().union(*(checks for _plant, checks, _named in DEFECTS.values()))
    assert set(failed) == expected, {k: v["message"] for k, v in failed.items()}
    for defect, (_plant, checks, named) in DEFECTS.items():
        for check in checks:
            message = failed[check]["message"]
            assert named in message, (defect, message)
            assert "\n" not in message and message.startswith("expected"), message


def test_unknown_image_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_cli("validate", "ngc-paddle:00.01-nope", "--output", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: image 'ngc-paddle:00.01-nope' not found") and proc.stderr.count("\n") == 1


def test_gpu_flavor_without_gpu_is_not_proven_and_runs_every_non_gpu_check(cu118_validated) -> None:
    """The GPU flavor that builds from PyPI alone: all non-GPU checks pass, GPU checks did not run, so the
    verdict is NOT PROVEN (exit 3), naming them; its shipped commands all start."""
    built_cu118, proc, report, folder = cu118_validated
    failed = [c for c in report["checks"] if c["status"] in ("failed", "error")]
    assert proc.returncode == 3 and not failed, (proc.stderr, failed)
    assert proc.stderr.startswith(f"error: validation of {built_cu118} NOT PROVEN") and proc.stderr.count("\n") == 1
    assert report["verdict"] == "NOT PROVEN" and "gpu.amp-step" in report["verdict_reasons"][0]
    assert "NOT PROVEN" in (folder / "validation.md").read_text()
    gpu_checks = [c for c in report["checks"] if c["id"].startswith("gpu.")]
    assert gpu_checks and all(c["status"] == "skipped" for c in gpu_checks)
    assert all(("no NVIDIA GPU visible" in c["message"]) or ("ships no" in c["message"]) for c in gpu_checks)
    by_id = {c["id"]: c for c in report["checks"]}
    for check in ("version.paddle-cuda", "contract.nvidia-env", "contract.driver-warning", "link.runtime.cudnn",
                  "version.pyyaml", "contract.command-starts.bench-rn50", "contract.command-starts.bench-hgnet",
                  "contract.command-starts.validate"):
        assert by_id[check]["status"] == "passed", by_id[check]
