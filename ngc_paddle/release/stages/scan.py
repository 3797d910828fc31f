"""Release stage `scan`: the image's scan gate (secrets, hygiene, vulnerabilities) and its SBOM.

Inputs (resume key): the image id, the policy's content, today's date (an allowlist entry or a waiver
  can expire, a source can age past the policy's limit) and the vulnerability data at hand (the OSV
  folder's records, trivy's database).
Run: ngc_paddle.scan.gate.run with the policy and the sources; report and SBOM in <flavor>/scan/
  (sbom.cdx.json, which month-over-month compares with the previous release's).
Report: `    scan: STATUS: [not-run parts; ][waiver; ]N blocking, N allowlisted, N informational; SBOM FILE
  [(blocking: first three)]`, the same in state.json and the notes' gate table. Blocked: failed;
  a part that did not run for want of a source: not proven; a waived vulnerability part: passed.
"""

from datetime import UTC, date, datetime
from pathlib import Path

from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.release.stages import Built, Outcome, Step, digest, file_digest
from ngc_paddle.scan import gate as scan_gate
from ngc_paddle.scan.vulnerabilities import sources

NAME = "scan"
HEADLINE_STATUS = {"BLOCKED": "failed", "NOT RUN": "not proven", "PASS": "passed"}


def sbom(flavor_folder: Path) -> Path:
    """The SBOM this stage writes for a flavor (build/release/<release>/<flavor>)."""
    return flavor_folder / "scan" / "sbom.cdx.json"


def plan(built: Built) -> Step:
    policy = built.root / built.opts.policy
    osv_dir = sources.resolve_osv_dir(built.opts.osv_dir, built.root)
    out = sbom(built.folder).parent
    return Step(NAME, scan_key(built.image_id, policy, osv_dir, datetime.now(UTC).date()),
                lambda: run_scan(built.image, out, policy, osv_dir, built.root, built.opts.sources, built.resolved))


def scan_key(image_id: str, policy: Path, osv_dir: Path | None, today: date) -> str:
    """The scan's inputs: the image, the policy's content, the date and the vulnerability data at hand."""
    return digest(image_id, file_digest(policy), today.isoformat(), sources.digest(osv_dir, sources.trivy_cache()))


def run_scan(image: str, out: Path, policy: Path, osv: Path | None, root: Path,
             source_overrides: dict[str, str] | None = None, resolved: ResolvedFlavor | None = None) -> Outcome:
    # the flavor's platform: its image of the index the tag may be (a single image must be of that platform)
    report = scan_gate.run(image, out, policy, osv, [], None, None, root, say=lambda _line: None,
                           source_overrides=source_overrides, resolved=resolved,
                           platform=resolved.platform if resolved is not None else None)
    counts = report["counts"]
    detail = (f"{counts['blocking']} blocking, {counts['suppressed']} allowlisted, "
              f"{counts['informational']} informational; SBOM {Path(report['sbom']).name}")
    if report["blocked"]:
        first = ", ".join(f"{f['kind']} {f['id']} {f['package']}" for f in report["blocking"][:3])
        detail += f" (blocking: {first})"
    if report["vulnerabilities"]["status"] == "waived":
        detail = f"{scan_gate.waiver_line(report)}; {detail}"
    detail = "".join(f"{part}; " for part in scan_gate.not_run_parts(report)) + detail
    return Outcome(HEADLINE_STATUS[scan_gate.headline(report)], detail)
