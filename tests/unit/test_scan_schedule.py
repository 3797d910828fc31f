"""How the scan gate schedules its work: one saved archive, trivy beside the layer walk, phases timed.

Also that the literal-first secret patterns (written for speed) find exactly what the `\\b` forms did.
No engine and no trivy: `docker save` and trivy are replaced by stand-ins; nothing asserts a speed.
"""

import io
import json
import re
import tarfile
import threading
from pathlib import Path

import pytest

from ngc_common import secret_patterns as patterns
from ngc_paddle.scan import gate
from ngc_paddle.scan.checks import layer_checks
from ngc_paddle.scan.source.saved_image import SavedImage
from ngc_paddle.scan.vulnerabilities import scanners

REPO = Path(__file__).resolve().parents[2]

# The patterns as first written (a leading \b); the shipped ones must agree with them everywhere.
ORIGINAL = {
    "aws-access-key-id": re.compile(rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "github-token": re.compile(rb"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{60,})\b"),
    "gitlab-token": re.compile(rb"\bglpat-[A-Za-z0-9_-]{20}\b"),
    "slack-token": re.compile(rb"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
}
TOKENS = {
    "aws-access-key-id": [b"AKIAIOSFODNN7EXAMPLE", b"ASIAY34FZKBOKMUTVV7A"],
    "github-token": [b"ghp_" + b"a1B2" * 9, b"ghs_" + b"Z9" * 18, b"github_pat_" + b"aB3_" * 16],
    "gitlab-token": [b"glpat-" + b"x1Y2_" * 4],
    "slack-token": [b"xoxb-1234567890-abcdef", b"xoxp-0000000000"],
}
CONTEXTS = [b"%s", b"key=%s\n", b"x%s", b"_%s", b"9%s", b"(%s)", b"\n%s", b"%sX", b"%s-", b"A%s", b"\xff%s",
            b"ghp%s", b"xo%s", b"g%s", b"glpat%s"]


@pytest.mark.parametrize("rule", sorted(ORIGINAL))
def test_literal_first_patterns_match_what_the_word_boundary_forms_matched(rule: str) -> None:
    shipped = dict(patterns.CREDENTIALS)[rule]
    for token in TOKENS[rule]:
        for context in CONTEXTS:
            text = context % token
            found, expected = shipped.search(text), ORIGINAL[rule].search(text)
            assert (found and found.span()) == (expected and expected.span()), (rule, text)
    assert shipped.search(b"password = %s" % TOKENS[rule][0])  # the plain case is found at all
    assert not shipped.search(b"word%s" % TOKENS[rule][0])  # inside a word it is not


def _saved_image(path: Path) -> Path:
    """A two-layer image as docker save writes it: a dpkg status and a private key in the upper layer."""
    def layer(files: dict[str, bytes]) -> bytes:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    key = (b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n"
           b"-----END OPENSSH PRIVATE KEY-----\n")
    members = {
        "a/layer.tar": layer({"var/lib/dpkg/status": b"Package: base-files\nStatus: install ok installed\n"
                                                     b"Version: 12.4\nArchitecture: amd64\n"}),
        "b/layer.tar": layer({"root/.ssh/id_ed25519": key}),
        "c.json": json.dumps({"history": [{"created_by": "Imported from -"},
                                          {"created_by": "APT_PACKAGES=python3"}],
                              "config": {"User": "paddle"}}).encode(),
        "manifest.json": json.dumps([{"Config": "c.json", "Layers": ["a/layer.tar", "b/layer.tar"]}]).encode(),
    }
    with tarfile.open(path, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_trivy_reads_the_saved_archive_while_the_layers_are_walked(tmp_path: Path, monkeypatch) -> None:
    saved_paths: list[Path] = []
    trivy_inputs: list[Path] = []
    trivy_started = threading.Event()
    seen_during_walk: list[bool] = []

    def fake_open(image: str, work: Path, say) -> tuple[SavedImage, str]:
        saved_paths.append(_saved_image(work / "image.tar"))
        return SavedImage(saved_paths[-1]), "docker save"

    def fake_trivy(saved: Path, cache: Path, db_repository, out: Path):
        trivy_inputs.append(saved)
        trivy_started.set()
        return None, "trivy not installed"

    real_scan_config = layer_checks.scan_config

    def scan_config_after_the_walk(image, layers):  # runs once the layer loop is done, before trivy is awaited
        seen_during_walk.append(trivy_started.wait(timeout=30))  # a bound against a hang, not a speed
        return real_scan_config(image, layers)

    monkeypatch.setattr(gate.layer_source, "open_image", fake_open)
    monkeypatch.setattr(scanners, "run_trivy", fake_trivy)
    monkeypatch.setattr(layer_checks, "scan_config", scan_config_after_the_walk)
    report = gate.run("ngc-paddle:26.12-cpu", tmp_path / "out", REPO / "security/policy.yaml", None, [],
                      root=tmp_path, say=lambda line: None)
    assert trivy_inputs == saved_paths, "trivy must scan the one archive the gate saved"
    assert seen_during_walk == [True], "trivy must be started before the layer walk ends, not after it"
    assert any(f["kind"] == "private-key" for f in report["blocking"]), "the layer walk still ran"
    assert {"fetch", "layers", "checks", "sbom", "trivy", "trivy_wait", "hadolint", "report", "total"} <= set(
        report["timings_s"])
    assert json.loads((tmp_path / "out/scan.json").read_text())["timings_s"] == report["timings_s"]
