"""`ngc-paddle scan IMAGE`: SBOM, vulnerabilities, secrets and hardening, judged by the release policy.

Exit codes: 0 the image may be released; 1 the gate blocks it (the table says what and why);
2 the scan could not be done (unknown image, corrupt report, bad policy); 3 the vulnerability part
is NOT RUN: an ecosystem of the image (Debian packages, Python distributions) had no vulnerability
source consulted (none at hand, or older than the policy allows) and no waiver in force.
A blocking finding wins over NOT RUN (exit 1).
"""

import contextlib
import dataclasses
import json
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from pathlib import Path

from ngc_paddle import outputs
from ngc_paddle.distro import Distro
from ngc_paddle.fields import IMAGE_REF_RE
from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.host_errors import Failed, NgcPaddleError, NotProven
from ngc_paddle.scan import policy, sbom
from ngc_paddle.scan.checks import config_record, image_checks, layer_checks, own_files
from ngc_paddle.scan.checks.layer_cache import LayerCache, default_folder
from ngc_paddle.scan.checks.layer_facts import LayerFacts, scan_layer
from ngc_paddle.scan.findings import Finding, dedupe, severity_rank
from ngc_paddle.scan.source import image_release, layer_source, own_layers
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.source.saved_image import Layer
from ngc_paddle.scan.vulnerabilities import freshness, scanners, sources

HADOLINT_LEVEL = {"error": "HIGH", "warning": "MEDIUM", "info": "LOW", "style": "LOW"}


class Blocked(Failed):
    """The gate blocks the release (exit 1)."""


class VulnerabilitiesNotRun(NotProven):
    """A part of the gate had no evidence: no vulnerability source consulted for an ecosystem of the image
    (and no waiver accepts that), or the freshness check could not read an archive or index (exit 3)."""


def vulnerability_evidence(rules: policy.Policy, packages: list, consulted: list[sources.Source],
                           today: date) -> tuple[list[sources.Source], policy.VulnerabilityVerdict]:
    """The sources after the policy's age limit, and whether every ecosystem of the image had one."""
    sources.apply_age_limit(consulted, rules.max_source_age_days, today)
    present = {sources.ECOSYSTEMS[p.ecosystem] for p in packages if p.ecosystem in sources.ECOSYSTEMS}
    verdict = policy.vulnerability_verdict(rules, sources.coverage(consulted, present), today)
    return consulted, verdict


def not_run_line(report: dict) -> str:
    """`vulnerabilities: NOT RUN (debian: no source; looked for: ...)` from a report."""
    vuln = report["vulnerabilities"]
    missing = vuln["missing"]
    looked = [s for s in report["vulnerability_sources"] if set(s["ecosystems"]) & set(missing)]
    shown = ", ".join(f"{s['name']} at {s['where']} ({s['why']})" for s in looked)
    note = f"; {vuln['waiver_note']}" if vuln["waiver_note"] else ""
    ecosystems = "; ".join(f"{e}: no source" for e in missing)
    return f"vulnerabilities: {vuln['status']} ({ecosystems}; looked for: {shown}{note})"


def waiver_line(report: dict) -> str:
    waiver = report["vulnerabilities"]["waiver"]
    return (f"vulnerabilities not scanned: {waiver['reason']}, waiver expires {waiver['expires']} "
            f"(no source for: {', '.join(report['vulnerabilities']['missing'])})")


def hadolint_findings(root: Path) -> list[Finding]:
    binary = scanners.tool_binary("hadolint")
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


def read_layers(source, cache: LayerCache, say: Callable[[str], None]) -> tuple[list[LayerFacts], list[dict]]:
    """Each layer's facts: from the per-layer cache by diff id, else read from the image (and cached)."""
    facts, report = [], []
    for layer in source.layers:
        found = cache.get(layer.diff_id)
        cached = found is not None
        if found is None:
            with source.open_layer(layer) as tar:
                found = scan_layer(layer, tar)
            cache.put(found)
        facts.append(found)
        report.append({"index": layer.index, "name": layer.name, "diff_id": layer.diff_id, "cached": cached,
                       "entries": found.entries, "bytes": found.size,
                       "seconds": 0.0 if cached else round(found.seconds, 2)})
    read = [r for r in report if not r["cached"]]
    say(f"    {len(report)} layers: {len(read)} read ({sum(r['seconds'] for r in read):.1f} s), "
        f"{len(report) - len(read)} from the per-layer cache ({cache.folder})")
    return facts, report


def name_trivy_layers(findings: list[Finding], layers: list[Layer]) -> list[Finding]:
    """trivy names a layer by its diff id: name it as our own findings do ("layer 3 (paddle)")."""
    by_prefix = {layer.diff_id[:19]: layer.where for layer in layers if layer.diff_id}
    for f in findings:
        if f.location.startswith("layer sha256:"):
            f.location = by_prefix.get(f.location.removeprefix("layer "), f.location)
    return findings


def secret_scan(scanned: str) -> dict:
    """Whether trivy's secret scanner ran beside our own rules: without it the secret part is NOT RUN."""
    if "secret" in scanned.split("+"):
        return {"status": "scanned", "detail": f"trivy ({scanned}) and the gate's own rules"}
    return {"status": "NOT RUN", "detail": f"{scanned}; only the gate's own rules ran"}


class PhaseClock:
    """Wall seconds per phase of one scan, every phase timed the same way (a phase run in a pool thread is timed
    in that thread); the report's `timings_s` and perf/scan/bench_gate.py read them."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._start = time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        mark = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - mark

    def call(self, name: str, work: Callable, *args):
        with self.phase(name):
            return work(*args)

    def as_dict(self) -> dict[str, float]:
        """Rounded seconds per phase, with the total so far."""
        return {k: round(v, 2) for k, v in {**self.seconds, "total": time.perf_counter() - self._start}.items()}


@dataclasses.dataclass
class ImageJudgement:
    """What the image's own layers and config showed: findings, the packages it holds, and each check's status."""

    findings: list[Finding]
    packages: list[Package]
    distro: Distro | None
    found: image_release.ImageRelease
    whole: image_checks.Whole
    own: own_files.OwnFiles
    fresh: freshness.Freshness
    sbom_path: Path


def _judge_image(image: str, source, attribution, labelled, rules: policy.Policy, root: Path,
                 overrides: dict[str, str], stage, output: Path, clock: PhaseClock,
                 say: Callable[[str], None]) -> tuple[ImageJudgement, list[dict]]:
    """The layer walk and every check of the image's own content and config, the SBOM and freshness."""
    with clock.phase("layers"):
        facts, layer_report = read_layers(source, LayerCache(default_folder()), say)
    with clock.phase("checks"):
        findings = layer_checks.judge(source.layers, facts, rules)
        findings += layer_checks.scan_config(source, source.layers)
        view = image_checks.final_view(source.layers, facts)
        found = image_release.with_baked_manifest(labelled, source.config, view.baked_manifest(), root, overrides)
        whole = image_checks.check(source.layers, facts, view, source.user, root, found)
        findings += whole.findings
        # our own files and config against our build's record (trusted: layers with the build's diff ids)
        own = own_files.check(source.layers, facts, attribution.ours)
        findings += own.findings + config_record.compare(source.config.get("config") or {}, attribution.config)
        packages = view.inventory.packages()
    with clock.phase("sbom"):
        manifest = json.loads(view.inventory.image_manifest) if view.inventory.image_manifest else None
        distro = view.inventory.distro(manifest)
        sbom_path = output / "sbom.cdx.json"
        staged_sbom = sbom.write(sbom.build(image, manifest, packages, distro), stage.path(sbom_path))
    say(f"    SBOM: {sbom.component_count(staged_sbom)} components -> {sbom_path}")
    with clock.phase("freshness"):
        fresh = freshness.check(packages, source.config, found, root, say=say)
        findings += fresh.findings
    return ImageJudgement(findings, packages, distro, found, whole, own, fresh, sbom_path), layer_report


def _scanner_findings(image: str, source, trivy_job, tmp: Path, clock: PhaseClock,
                      say: Callable[[str], None]) -> tuple[list[Finding], str, bool]:
    """trivy's findings (its job started before the layer walk) and grype's; (findings, trivy's scanners, whether
    grype ran)."""
    with clock.phase("trivy_wait"):  # trivy's time beyond the layer walk
        trivy_report, scanned = trivy_job.result()
    findings: list[Finding] = []
    if trivy_report:
        findings += name_trivy_layers(scanners.read_trivy(trivy_report), source.layers)
        say(f"    trivy: {scanned} scanners")
    else:
        say(f"    trivy: {scanned}")
    grype_report = scanners.run_grype(image, tmp / "grype.json")
    if grype_report:
        findings += scanners.read_grype(grype_report)
    return findings, scanned, grype_report is not None


def _given_evidence(reports: list[tuple[str, Path]], osv_dir: Path | None) -> tuple[list[Finding], list]:
    """The given scanner reports' findings and the OSV folder's advisories, read before any work: a corrupt one is
    bad input."""
    external: list[Finding] = []
    for kind, path in reports:
        external += scanners.read_trivy(path) if kind == "trivy" else scanners.read_grype(path)
    return external, scanners.load_osv(osv_dir) if osv_dir else []


def _osv_findings(judged: ImageJudgement, advisories: list, say: Callable[[str], None]) -> list[Finding]:
    """The offline advisories matched against the image's packages (its distribution's records only)."""
    if not advisories:
        return []
    findings = scanners.match_osv(judged.packages, advisories, judged.distro)
    say(f"    OSV: {len(advisories)} advisories matched against {len(judged.packages)} packages "
        "(distribution records of "
        f"{judged.distro.osv_ecosystem if judged.distro else '? (unknown release: none)'} only)")
    return findings


def _open(image: str, work: Path, say: Callable[[str], None], platform: str | None,
          opened: layer_source.OpenedImage | None):
    """The image's source and how it was read: `platform`'s image of the opened image, else the image opened here."""
    if opened is not None:
        return opened.source(opened.one(platform), say), opened.how
    if platform is None:
        return layer_source.open_image(image, work, say)
    return layer_source.open_image(image, work, say, platform)


def check_inputs(image: str, output: Path, policy_path: Path, osv_dir: Path | None,
                 reports: list[tuple[str, Path]]) -> tuple[list, list, list]:
    """What a scan is given, checked before any image is read or pushed (a bad input is one line, not a push):
    the image reference, the policy (its rules), the given reports and OSV folder (their findings and advisories)
    and the output folder."""
    if not IMAGE_REF_RE.fullmatch(image):  # it reaches docker and grype as an argument
        raise NgcPaddleError(f"image {image[:80]!r}: (argument): not an image reference; "
                             "fix: name an image like ngc-paddle:26.12-cpu")
    rules = policy.load(policy_path)
    external, advisories = _given_evidence(reports, osv_dir)
    outputs.ensure_folder(output)
    return rules, external, advisories


def run(image: str, output: Path, policy_path: Path, osv_dir: Path | None, reports: list[tuple[str, Path]],
        db_repository: str | None = None, today: date | None = None, root: Path = Path("."),
        say: Callable[[str], None] = print, source_overrides: dict[str, str] | None = None,
        resolved: ResolvedFlavor | None = None, platform: str | None = None,
        opened: layer_source.OpenedImage | None = None, stage: outputs.Staged | None = None) -> dict:
    """Scan IMAGE into OUTPUT (scan.json, scan.md, the SBOM); `resolved`: the image's flavor as a release run
    resolved it. Without it, the image's release is resolved here, once, from its labels (with the mirrors
    `source_overrides`), and the same resolution feeds the image-against-its-lock check and freshness.
    `platform`: the image of an index to scan (an index without it is refused), or the platform a single image must
    be; `opened`: the image already pushed once for all its platforms (per_platform.scan); `stage`: where the outputs
    wait until the caller's whole run succeeds (per_platform.scan: every platform's), else until this one does."""
    rules, external, advisories = check_inputs(image, output, policy_path, osv_dir, reports)
    today = today or datetime.now(UTC).date()
    overrides = source_overrides or {}
    clock = PhaseClock()
    given = contextlib.nullcontext(stage) if stage is not None else outputs.staged()
    with given as stage, ThreadPoolExecutor(max_workers=2) as pool:
        # nothing replaces the previous outputs unless the whole run succeeds
        hadolint_job = pool.submit(clock.call, "hadolint", hadolint_findings, root)
        with tempfile.TemporaryDirectory(prefix="ngc-scan-") as tmp:
            if opened is None or opened.index:  # a single image opened by per_platform.scan: it said this line
                say(f"==> scan {image}" + (f" ({platform})" if platform else ""))
            source, how = clock.call("fetch", _open, image, Path(tmp), say, platform, opened)
            if opened is not None and not opened.index:  # opened before this run's clock started
                clock.seconds["fetch"] += opened.seconds
            # the image's release, resolved once from its labels (or handed in by the release run), names the
            # layers that are our build's (their diff ids, as this host recorded them); an image without labels
            # may still name it in its baked manifest, read by _judge_image
            labelled = image_release.of_image(source.config, None, root, overrides, resolved)
            attribution = own_layers.attribute(source.layers, source.labels, root, labelled)
            say(f"    own layers: {attribution.line}")
            # trivy reads the same image (the registry reference, or the saved tar) in its own process while
            # this one reads the layers (two cores busy instead of one after the other); the thread only waits.
            cache = sources.trivy_cache()  # where an air-gapped host keeps a pre-populated database
            trivy_job = pool.submit(clock.call, "trivy", scanners.run_trivy,
                                    source.reference or getattr(source, "path", None), cache, db_repository,
                                    Path(tmp) / "trivy.json")
            judged, layer_report = _judge_image(image, source, attribution, labelled, rules, root, overrides,
                                                stage, output, clock, say)
            found_by_scanners, scanned, grype_ran = _scanner_findings(image, source, trivy_job, Path(tmp),
                                                                      clock, say)
        findings = judged.findings + found_by_scanners + external + _osv_findings(judged, advisories, say)
        looked = [sources.trivy_db(cache, scanned, db_repository), sources.grype_db(grype_ran),
                  *[sources.trivy_report(p) if k == "trivy" else sources.grype_report(p) for k, p in reports],
                  *sources.osv_folder(osv_dir or sources.default_osv_dir(root), advisories, judged.distro)]
        looked, verdict = vulnerability_evidence(rules, judged.packages, looked, today)
        findings += hadolint_job.result()
        with clock.phase("report"):
            decision = policy.decide(rules, dedupe(findings), today)
            report = _report(image, policy_path, rules, today, decision, verdict, looked, judged, scanned, how,
                             attribution, layer_report)
        if platform is not None:
            report["platform"] = platform
        report["timings_s"] = clock.as_dict()
        stage.write_text(output / "scan.json", json.dumps(report, indent=2) + "\n")
        stage.write_text(output / "scan.md", markdown(report))
    _say_outcome(report, decision, verdict, output, say)
    return report


def _report(image: str, policy_path: Path, rules: policy.Policy, today: date, decision, verdict, looked: list,
            judged: ImageJudgement, scanned: str, how: str, attribution, layer_report: list[dict]) -> dict:
    """scan.json's content (its timings are added by run)."""
    return {
        "image": image, "scanned": datetime.now(UTC).isoformat(timespec="seconds"), "today": str(today),
        "policy": str(policy_path), "severity_threshold": rules.severity_threshold,
        "blocked": decision.blocked, "sbom": str(judged.sbom_path),
        "distro": judged.distro.osv_ecosystem if judged.distro else None,
        "max_source_age_days": rules.max_source_age_days,
        "vulnerabilities": verdict.as_dict(),
        "vulnerability_sources": [s.as_dict() for s in looked],
        "counts": {"blocking": len(decision.blocking), "suppressed": len(decision.suppressed),
                   "informational": len(decision.informational)},
        "expired_allowlist_entries": [f"{e.id} ({e.package}) expired {e.expires}" for e in decision.expired],
        "blocking": [f.as_dict() for f in decision.blocking],
        "suppressed": [f.as_dict() for f in decision.suppressed],
        "informational": [f.as_dict() for f in decision.informational],
        "freshness": judged.fresh.as_dict(),
        "secret_scan": secret_scan(scanned),
        "lock": {"status": judged.whole.lock_status, "detail": judged.whole.lock_why},
        "read_from": how,
        "own_layers": attribution.as_dict(),
        "own_files": judged.own.as_dict(),
        "config_record": config_record.status(attribution.ours, attribution.config),
        "layers": layer_report,
    }


def _say_outcome(report: dict, decision, verdict, output: Path, say: Callable[[str], None]) -> None:
    """The phases' times, what was NOT RUN, the waiver, the headline and each blocking finding."""
    say("    phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in report["timings_s"].items()))
    for line in not_run_parts(report):
        say("    " + line)
    if verdict.status == "waived":
        say("    " + waiver_line(report))
    platform = f"{report['platform']}: " if report.get("platform") else ""
    say(f"==> {platform}{headline(report)}: {len(decision.blocking)} blocking, "
        f"{len(decision.suppressed)} allowlisted, {len(decision.informational)} informational; "
        f"report: {output / 'scan.md'}")
    for f in sorted(decision.blocking, key=lambda f: -severity_rank(f.severity)):
        say(f"   {f.severity:<8} {f.kind:<13} {f.id:<24} {f.package} {f.installed} {f.location} "
            f"{'fix: ' + f.fixed if f.fixed else ''} {('(' + f.suppressed_by + ')') if f.suppressed_by else ''}")


def not_run_parts(report: dict) -> list[str]:
    """What the verdict could not rest on, a line each: the vulnerability part (no consulted source, no
    waiver) and the freshness part (an archive or index that could not be read)."""
    parts = [not_run_line(report)] if report["vulnerabilities"]["status"] == "NOT RUN" else []
    secrets = report.get("secret_scan") or {}
    if secrets.get("status") == "NOT RUN":
        parts.append(f"secrets: NOT RUN ({secrets['detail']})")
    own = report.get("own_layers") or {}
    if own.get("missing"):
        parts.append(f"own layers: NOT RUN (the image names {own.get('claims')}, and this host has no record of "
                     f"that build: {own.get('source')}; its layers' declared files were judged as anyone's; fix: "
                     "scan it where it was built, or build it here first)")
    for part in ("own_files", "config_record"):
        if (report.get(part) or {}).get("status") == "NOT RUN":
            parts.append(f"{part.replace('_', ' ')}: NOT RUN ({report[part]['detail']})")
    lock = report.get("lock") or {}
    if lock.get("status") == "NOT RUN":
        parts.append(f"lock: NOT RUN (the image was not compared with a lock: {lock.get('detail')})")
    fresh = (report.get("freshness") or {}).get("not_run") or {}
    if fresh:
        parts.append("freshness: NOT RUN (" + "; ".join(f"{part}: {why}" for part, why in sorted(fresh.items())) + ")")
    return parts


def headline(report: dict) -> str:
    """BLOCKED, NOT RUN (a part without evidence) or PASS: a blocking finding wins."""
    if report["blocked"]:
        return "BLOCKED"
    return "NOT RUN" if not_run_parts(report) else "PASS"


def _sources_markdown(report: dict) -> list[str]:
    vuln = report["vulnerabilities"]
    limit = report.get("max_source_age_days")
    lines = ["## Vulnerability sources", ""]
    if vuln["status"] == "NOT RUN":
        lines += [f"**{not_run_line(report)}**", ""]
    elif vuln["status"] == "waived":
        lines += [f"**{waiver_line(report)}** (policy `vulnerability_waiver`)", ""]
    else:
        lines += ["Every package ecosystem of the image was checked against at least one source.", ""]
    if vuln["waiver_note"]:
        lines += [f"Note: {vuln['waiver_note']}.", ""]
    lines += [f"Distribution release matched: {report.get('distro') or 'unknown'}; "
              f"oldest source allowed: {f'{limit} days' if limit else 'no limit'}.", "",
              "| source | where | covers | consulted | age (built / newest record) | records |",
              "| --- | --- | --- | --- | --- | --- |"]
    for s in report["vulnerability_sources"]:
        state = "yes" if s["consulted"] else f"no: {s['why']}"
        records = "-" if s["records"] is None else s["records"]
        lines.append(f"| {s['name']} | `{s['where']}` | {', '.join(s['ecosystems']) or '-'} | {state} | "
                     f"{s['built'] or 'unknown'} | {records} |")
    return [*lines, ""]


def markdown(report: dict) -> str:
    platform = f" ({report['platform']})" if report.get("platform") else ""
    lines = [f"# Scan gate: {report['image']}{platform}: {headline(report)}", "",
             f"Policy `{report['policy']}` (threshold {report['severity_threshold']}), scanned {report['scanned']}; "
             f"SBOM `{report['sbom']}`.", ""]
    lines += _sources_markdown(report)
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
