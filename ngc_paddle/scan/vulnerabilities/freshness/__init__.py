"""Freshness without a database: Debian packages behind their archive, pinned Python releases that were yanked.

Why: a fix that Debian has published in `<suite>-security` but the image lacks is a known, fixable
vulnerability whatever database is at hand, and the archive's own signed indexes prove it; a yanked
pin is a release its authors withdrew. Both questions go only to the sources the image was built
from (the release manifest's, or the mirror given with `--source`), so the check runs on every
scan, on any host that could build the image. A source that cannot be asked is NOT RUN with a
one-line reason, never a pass and never a traceback.

The long form: docs/design-notes.md, section `ngc_paddle/scan/vulnerabilities/freshness/`.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.image_release import ImageRelease
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities.freshness.bounded_fetch import Unavailable
from ngc_paddle.scan.vulnerabilities.freshness.debian_archive import (
    CACHE_DIR,
    KEYRING,
    compare_debian,
    debian_findings,
    debian_suites,
)
from ngc_paddle.scan.vulnerabilities.freshness.pypi_yanks import check_python, python_findings


@dataclass
class Freshness:
    suites: list[dict] = field(default_factory=list)
    debian_compared: int = 0
    pending: list[dict] = field(default_factory=list)
    not_in_archive: list[str] = field(default_factory=list)
    python_checked: int = 0
    yanked: list[dict] = field(default_factory=list)
    not_on_index: list[str] = field(default_factory=list)
    not_run: dict[str, str] = field(default_factory=dict)  # "deb" or "pypi:<source>" -> reason
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"suites": self.suites, "debian_packages_compared": self.debian_compared,
                "pending_updates": self.pending, "security_updates": sum(p["security"] for p in self.pending),
                "not_in_archive": self.not_in_archive, "python_pins_checked": self.python_checked,
                "yanked": self.yanked, "not_on_index": self.not_on_index, "not_run": self.not_run,
                "seconds": round(self.seconds, 1)}


def check(packages: list[Package], config: dict, found: ImageRelease, root: Path, cache_dir: Path | None = None,
          keyring: Path | None = KEYRING, say: Callable[[str], None] = print) -> Freshness:
    """Compare the image's Debian packages with its archive and look up its pinned Python releases.

    `config` is the image's config (as `docker save` or `docker image inspect` give it: its architecture
    names the Debian index to read). `found`: the image's release, resolved once for the scan with its
    mirrors (image_release.of_image): the archive and indexes asked are its flavor's sources.
    """
    start = time.monotonic()
    arch = config.get("architecture") or config.get("Architecture")
    result = Freshness()
    flavor = found.flavor
    if flavor is None:
        result.not_run = {"deb": found.unknown, "pypi": found.unknown}
        result.seconds = time.monotonic() - start
        return result
    manifest = flavor.manifest
    debs = [p for p in packages if p.ecosystem == "deb"]
    debian = next((manifest.sources[c.source] for c in flavor.components().values()
                   if c.kind in ("apt", "image") and manifest.sources[c.source].kind == "debian"), None)
    if debian is None:
        result.not_run["deb"] = f"release {manifest.release} flavor {flavor.name} names no debian source"
    elif debs:
        image_arch = arch or next((p.arch for p in debs if p.arch and p.arch != "all"), "amd64")
        name = next(n for n, s in manifest.sources.items() if s is debian)
        try:
            suites = debian_suites(debian, image_arch, root / CACHE_DIR if cache_dir is None else cache_dir, keyring)
        except Unavailable as exc:
            result.not_run["deb"] = (f"Debian archive cannot be read: {exc}; fix: point sources.{name} at a "
                                     f"reachable mirror in releases/{manifest.release}.yaml or pass --source "
                                     f"{name}=URL")
        else:
            result.suites = [s.summary() for s in suites]
            result.pending, result.not_in_archive = compare_debian(debs, suites, image_arch)
            result.debian_compared = len(debs) - len(result.not_in_archive)
            result.findings += debian_findings(result.pending)
    result.python_checked, result.yanked, result.not_on_index, not_run = check_python(flavor, packages)
    result.not_run.update(not_run)
    result.findings += python_findings(result.yanked)
    result.seconds = time.monotonic() - start
    security = sum(p["security"] for p in result.pending)
    say(f"    freshness: {result.debian_compared} Debian packages vs {', '.join(s['suite'] for s in result.suites)}"
        f": {len(result.pending)} pending update(s), {security} from -security; {result.python_checked} Python "
        f"pin(s): {len(result.yanked)} yanked ({result.seconds:.1f} s)")
    for key, reason in result.not_run.items():
        say(f"    freshness NOT RUN ({key}): {reason}")
    return result


def markdown(fresh: dict) -> list[str]:
    """The report's freshness section."""
    lines = ["## Freshness (the archive and indexes the image was built from)", ""]
    for s in fresh["suites"]:
        lines.append(f"- `{s['suite']}` {s['url']}: released {s['release_date']}, {s['packages']} packages, "
                     f"signature {s['signature']}")
    lines += ["", f"{fresh['debian_packages_compared']} Debian packages compared: {len(fresh['pending_updates'])} "
              f"pending update(s), {fresh['security_updates']} of them security updates; "
              f"{fresh['python_pins_checked']} pinned Python release(s) checked: {len(fresh['yanked'])} yanked.", ""]
    if fresh["pending_updates"]:
        lines += ["| package | arch | installed | candidate | suite | security |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {p['package']} | {p['arch']} | {p['installed']} | {p['candidate']} | {p['suite']} | "
                  f"{'yes' if p['security'] else 'no'} |" for p in fresh["pending_updates"]]
        lines.append("")
    if fresh["yanked"]:
        lines += ["| yanked release | index | reason |", "| --- | --- | --- |"]
        lines += [f"| {y['package']} {y['version']} | {y['index']} | {y['reason']} |" for y in fresh["yanked"]]
        lines.append("")
    for key, reason in fresh["not_run"].items():
        lines.append(f"- NOT RUN ({key}): {reason}")
    if fresh["not_run"]:
        lines.append("")
    return lines
