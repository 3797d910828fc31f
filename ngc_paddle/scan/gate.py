"""`ngc-paddle scan IMAGE`: SBOM, vulnerabilities, secrets and hardening, judged by the release policy.

Exit codes: 0 the image may be released; 1 the gate blocks it (the table says what and why);
2 the scan could not be done (unknown image, corrupt report, bad policy).
"""

import json
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from pathlib import Path

from ngc_paddle import outputs
from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.fields import IMAGE_REF_RE
from ngc_paddle.scan import freshness, layer_checks, policy, sbom, vulnerabilities
from ngc_paddle.scan.findings import Finding, dedupe, severity_rank
from ngc_paddle.scan.inventory import Inventory, wants_content
from ngc_paddle.scan.saved_image import SavedImage, save

HADOLINT_LEVEL = {"error": "HIGH", "warning": "MEDIUM", "info": "LOW", "style": "LOW"}


class Blocked(NgcPaddleError):
    """The gate blocks the release."""

    exit_code = 1


def hadolint_findings(root: Path) -> list[Finding]:
    binary = vulnerabilities.tool_binary("hadolint")
    files = [str(p.relative_to(root)) for p in [root / "Dockerfile", *sorted(root.glob("layers/*/Dockerfile"))]
             if p.exists()]
    if binary is None or not files:
        return []
    config = ["--config", ".hadolint.yaml"] if (root / ".hadolint.yaml").exists() else []
    proc = subprocess.run([binary, *config, "--no-fail", "-f", "json", *files], cwd=root, capture_output=True,
                          text=True)
    findings = []
    for item in json.loads(proc.stdout or "[]"):
        findings.append(Finding("dockerfile", item["code"], HADOLINT_LEVEL.get(item["level"], "LOW"), item["message"],
                                package=item["file"], location=f"line {item['line']}", source="hadolint"))
    return findings


def _timed(timings: dict[str, float], phase: str, work: Callable, *args):
    """Run one phase and record its wall time (phases running in a pool thread are timed there)."""
    mark = time.perf_counter()
    try:
        return work(*args)
    finally:
        timings[phase] = time.perf_counter() - mark


def run(image: str, output: Path, policy_path: Path, osv_dir: Path | None, reports: list[tuple[str, Path]],
        db_repository: str | None = None, today: date | None = None, root: Path = Path("."),
        say: Callable[[str], None] = print, sources: dict[str, str] | None = None) -> dict:
    if not IMAGE_REF_RE.fullmatch(image):  # it reaches docker and grype as an argument
        raise NgcPaddleError(f"image {image[:80]!r}: (argument): not an image reference; "
                             "fix: name an image like ngc-paddle:26.12-cpu")
    rules = policy.load(policy_path)
    today = today or datetime.now(UTC).date()
    external: list[Finding] = []
    for kind, path in reports:  # read given reports first: a corrupt one is bad input, before any work
        external += vulnerabilities.read_trivy(path) if kind == "trivy" else vulnerabilities.read_grype(path)
    advisories = vulnerabilities.load_osv(osv_dir) if osv_dir else []
    outputs.ensure_folder(output)
    timings: dict[str, float] = {}  # seconds per phase, in the report and for benchmarks/scan/bench_gate.py
    start = time.perf_counter()
    with outputs.staged() as stage, ThreadPoolExecutor(max_workers=2) as pool:
        # nothing replaces the previous outputs unless the whole run succeeds
        hadolint_job = pool.submit(_timed, timings, "hadolint", hadolint_findings, root)
        with tempfile.TemporaryDirectory(prefix="ngc-scan-") as tmp:
            say(f"==> scan {image}: saving the image")
            tar = _timed(timings, "save", save, image, Path(tmp) / "image.tar")
            # One saved archive feeds every scanner. trivy reads it in its own process while this one
            # walks the layers (two cores busy instead of one after the other); the thread only waits.
            cache = Path.home() / ".cache" / "trivy"  # where an air-gapped host keeps a pre-populated database
            trivy_job = pool.submit(_timed, timings, "trivy", vulnerabilities.run_trivy, tar, cache,
                                    db_repository, Path(tmp) / "trivy.json")
            mark = time.perf_counter()
            saved = SavedImage(tar)
            say(f"    reading {len(saved.layers)} layers")
            inventory, findings = Inventory(), []
            want = lambda path, size: wants_content(path, size) or layer_checks.wants_content(path, size)  # noqa: E731
            checks = layer_checks.LayerScan(rules.setuid_allowed, rules.key_fixtures)
            for entry in saved.entries(want_content=want):
                inventory.add(entry)
                findings += checks.entry(entry)
            findings += checks.finish()
            findings += layer_checks.scan_config(saved)
            packages = inventory.packages()
            timings["layers"] = time.perf_counter() - mark
            mark = time.perf_counter()
            manifest = json.loads(inventory.image_manifest) if inventory.image_manifest else None
            sbom_path = output / "sbom.cdx.json"
            staged_sbom = sbom.write(sbom.build(image, manifest, packages), stage.path(sbom_path))
            timings["sbom"] = time.perf_counter() - mark
            say(f"    SBOM: {sbom.component_count(staged_sbom)} components -> {sbom_path}")
            mark = time.perf_counter()
            fresh = freshness.check(packages, saved.config, manifest, root, sources, say=say)
            findings += fresh.findings
            timings["freshness"] = time.perf_counter() - mark
            mark = time.perf_counter()
            trivy_report, scanned = trivy_job.result()
            timings["trivy_wait"] = time.perf_counter() - mark  # trivy's time beyond the layer walk
            if trivy_report:
                findings += vulnerabilities.read_trivy(trivy_report)
                say(f"    trivy: {scanned} scanners")
            else:
                say(f"    trivy: {scanned}")
            grype_report = vulnerabilities.run_grype(image, Path(tmp) / "grype.json")
            if grype_report:
                findings += vulnerabilities.read_grype(grype_report)
        findings += external
        if advisories:
            findings += vulnerabilities.match_osv(packages, advisories)
            say(f"    OSV: {len(advisories)} advisories matched against {len(packages)} packages")
        findings += hadolint_job.result()
        mark = time.perf_counter()
        findings = dedupe(findings)
        decision = policy.decide(rules, findings, today)
        report = {
            "image": image, "scanned": datetime.now(UTC).isoformat(timespec="seconds"), "today": str(today),
            "policy": str(policy_path), "severity_threshold": rules.severity_threshold,
            "blocked": decision.blocked, "sbom": str(sbom_path),
            "vulnerability_sources": {"trivy": scanned if trivy_report else "not run",
                                      "osv_advisories": len(advisories),
                                      "reports": [f"{k}:{p}" for k, p in reports]},
            "counts": {"blocking": len(decision.blocking), "suppressed": len(decision.suppressed),
                       "informational": len(decision.informational)},
            "expired_allowlist_entries": [f"{e.id} ({e.package}) expired {e.expires}" for e in decision.expired],
            "blocking": [f.as_dict() for f in decision.blocking],
            "suppressed": [f.as_dict() for f in decision.suppressed],
            "informational": [f.as_dict() for f in decision.informational],
            "freshness": fresh.as_dict(),
        }
        timings["report"] = time.perf_counter() - mark
        timings["total"] = time.perf_counter() - start
        report["timings_s"] = {k: round(v, 2) for k, v in timings.items()}
        stage.write_text(output / "scan.json", json.dumps(report, indent=2) + "\n")
        stage.write_text(output / "scan.md", markdown(report))
    say("    phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    say(f"==> {'BLOCKED' if decision.blocked else 'PASS'}: {len(decision.blocking)} blocking, "
        f"{len(decision.suppressed)} allowlisted, {len(decision.informational)} informational; "
        f"report: {output / 'scan.md'}")
    for f in sorted(decision.blocking, key=lambda f: -severity_rank(f.severity)):
        say(f"   {f.severity:<8} {f.kind:<13} {f.id:<24} {f.package} {f.installed} {f.location} "
            f"{'fix: ' + f.fixed if f.fixed else ''} {('(' + f.suppressed_by + ')') if f.suppressed_by else ''}")
    return report


def markdown(report: dict) -> str:
    lines = [f"# Scan gate: {report['image']}: {'BLOCKED' if report['blocked'] else 'PASS'}", "",
             f"Policy `{report['policy']}` (threshold {report['severity_threshold']}), scanned {report['scanned']}; "
             f"SBOM `{report['sbom']}`.", ""]
    if report["expired_allowlist_entries"]:
        expired = "; ".join(report["expired_allowlist_entries"])
        lines += [f"Expired allowlist entries (no longer suppressing): {expired}", ""]
    for title, key in (("What blocks the release", "blocking"), ("Allowlisted", "suppressed")):
        lines += [f"## {title} ({len(report[key])})", ""]
        if report[key]:
            lines += ["| severity | kind | id | package / path | installed | fixed | where | why |",
                      "| --- | --- | --- | --- | --- | --- | --- | --- |"]
            for f in report[key]:
                why = f["suppressed_by"] or f["title"]
                lines.append(f"| {f['severity']} | {f['kind']} | {f['id']} | {f['package']} | {f['installed']} | "
                             f"{f['fixed']} | {f['location']} | {why} |")
        lines.append("")
    lines += freshness.markdown(report["freshness"])
    lines.append(f"{len(report['informational'])} informational finding(s) (below the threshold) are in scan.json.")
    return "\n".join(lines) + "\n"
