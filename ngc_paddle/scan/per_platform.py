"""`ngc-paddle scan IMAGE`: every platform of an image index scanned as an image of its own, one verdict for all.

Why: one tag holds the cpu flavor for linux/amd64 and linux/arm64; each platform's image has its own layers,
packages and lock, so the gate judges each against its own (gate.run with `platform`), keeps each report, and ends
in the worst verdict: a blocked platform blocks the tag (1), one NOT RUN makes it NOT RUN (3). The image is pushed
once; each platform is read, and given to trivy, by its own manifest digest. A single-platform image scans as before.
The long form: docs/scanning.md, "Several platforms".
"""

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from ngc_paddle import outputs
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.platforms import PLATFORMS
from ngc_paddle.scan import gate
from ngc_paddle.scan.source import layer_source
from ngc_paddle.scan.vulnerabilities import sources

# A verdict's rank: the worst of an index's platforms is the tag's (gate.Blocked exits 1, NOT RUN 3, PASS 0).
RANK = {"PASS": 0, "NOT RUN": 1, "BLOCKED": 2}


@dataclass(frozen=True)
class PlatformScan:
    """One platform's scan: where its reports are, and the report."""

    platform: str | None  # None: a single-platform image, scanned as before
    output: Path
    report: dict

    @property
    def headline(self) -> str:
        return gate.headline(self.report)

    def named(self, text: str) -> str:
        """`text` of this scan, led by its platform where it is one of an index's."""
        return f"{self.platform}: {text}" if self.platform else text


def report_folder(output: Path, platform: str) -> Path:
    """Where an index's platform keeps its reports: OUTPUT for the default platform (the names it had before there
    were platforms), OUTPUT/<arch> for another (OUTPUT/arm64), as its lock and its own tag carry its Debian name."""
    known = PLATFORMS.get(platform)
    qualifier = known.qualifier if known else platform.removeprefix("linux/").replace("/", "-")
    return output / qualifier if qualifier else output


def scan(image: str, output: Path, policy_path: Path, osv_dir: Path | None, reports: list[tuple[str, Path]],
         db_repository: str | None = None, today: date | None = None, root: Path = Path("."),
         say: Callable[[str], None] = print, source_overrides: dict[str, str] | None = None,
         platforms: Sequence[str] = ()) -> list[PlatformScan]:
    """Scan IMAGE: each platform of an index (or those `platforms` names) into its own report folder, else the one
    image into OUTPUT; the scans in the index's order."""
    gate.check_inputs(image, output, policy_path, osv_dir, reports)  # a bad input is refused before the push
    scans = []
    # one run: no platform's reports replace the earlier ones unless every platform's scan ends (in a verdict)
    with tempfile.TemporaryDirectory(prefix="ngc-scan-") as tmp, outputs.staged() as stage:
        say(f"==> scan {image}")
        opened = _open(image, Path(tmp), say)
        chosen = opened.choose(platforms)
        if opened.index and reports and len(chosen) > 1:  # a report is of one image: never every platform's source
            kind, path = reports[0]
            raise NgcPaddleError(f"--{kind}-report {path}: {image} is an index of {', '.join(chosen)}, and a scanner "
                                 "report is of one image, so it would count as every platform's vulnerability "
                                 "source; fix: scan the platform it is of alone (--platform PLATFORM), or leave the "
                                 "report out")
        if opened.index:
            say(f"    an image index of {', '.join(opened.platforms)} (pushed once, {opened.seconds:.1f} s): "
                f"scanning {', '.join(chosen)}, each as an image of its own, against its own lock")
        for platform in chosen:
            where = report_folder(output, platform) if opened.index else output
            report = gate.run(image, where, policy_path, osv_dir, reports, db_repository, today, root, say,
                              source_overrides, platform=platform if opened.index else None, opened=opened,
                              stage=stage)
            scans.append(PlatformScan(platform if opened.index else None, where, report))
    if opened.index:
        say(f"==> {image}: " + ", ".join(f"{s.platform} {s.headline}" for s in scans))
        for s in scans:
            say(f"    {summary_line(s)}")
    return scans


def _open(image: str, work: Path, say: Callable[[str], None]) -> layer_source.OpenedImage:
    """The image opened once: an index as pushed (layer_source.AnIndex carries it), else the single image read."""
    start = time.perf_counter()
    try:
        source, how = layer_source.open_image(image, work, say)
        opened = layer_source.OpenedImage(image, how, single=source)
    except layer_source.AnIndex as index:
        opened = index.opened
    opened.seconds = time.perf_counter() - start
    return opened


def summary_line(done: PlatformScan) -> str:
    """`linux/arm64: NOT RUN: 0 blocking, 0 allowlisted, 3 informational; report OUT/arm64/scan.md`."""
    counts = done.report["counts"]
    return (f"{done.platform}: {done.headline}: {counts['blocking']} blocking, {counts['suppressed']} allowlisted, "
            f"{counts['informational']} informational; report {done.output / 'scan.md'}")


def _fixes(report: dict) -> list[str]:
    fixes = []
    if report["vulnerabilities"]["status"] == "NOT RUN":
        fixes.append(f"give trivy its database (--db-repository MIRROR, or a pre-populated "
                     f"{sources.trivy_cache() / 'db'}), fill the OSV folder (ngc-paddle osv import), or put a "
                     "vulnerability_waiver with reason and expiry in the policy")
    if report["freshness"]["not_run"]:
        fixes.append("point the manifest's sources at a reachable mirror (or --source NAME=URL)")
    return fixes


def verdict(image: str, scans: list[PlatformScan]) -> NgcPaddleError | None:
    """The error the command ends in, for the worst of the scans (None: every one passed): one line naming each
    platform with that verdict, its reason and its report."""
    worst = max(RANK[s.headline] for s in scans)
    if worst == RANK["PASS"]:
        return None
    if worst == RANK["BLOCKED"]:
        blocked = [s for s in scans if s.headline == "BLOCKED"]
        found = "; ".join(s.named(f"{s.report['counts']['blocking']} finding(s)") for s in blocked)
        return gate.Blocked(f"the scan gate blocks {image}: {found}; "
                            f"see {', '.join(str(s.output / 'scan.md') for s in blocked)}")
    not_run = [s for s in scans if s.headline == "NOT RUN"]
    fixes = list(dict.fromkeys(f for s in not_run for f in _fixes(s.report)))
    parts = "; ".join(s.named(part) for s in not_run for part in gate.not_run_parts(s.report))
    return gate.VulnerabilitiesNotRun(f"{parts}; fix: {' and '.join(fixes)}; "
                                      f"see {', '.join(str(s.output / 'scan.md') for s in not_run)}")
