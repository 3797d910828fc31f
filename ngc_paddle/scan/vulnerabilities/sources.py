"""Which vulnerability sources the scan gate consulted, per package ecosystem, and how old each was.

Why: a gate that consulted no vulnerability data must not say the image has no vulnerabilities.
For each ecosystem present in the image (Debian packages, Python distributions) the gate records
every source it looked for: trivy's database (a pre-populated cache, or one fetched from
--db-repository), grype's database when grype runs, reports given with --trivy-report /
--grype-report, and the OSV folder (records of PyPI and of the image's Debian release). Each
says whether it was consulted (and why not), its age (database build date, report date, newest
OSV record) and how many records it held. A source older than the policy's
`max_source_age_days`, or of unknown age when the policy sets a limit, counts as not consulted.
"""

import hashlib
import json
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ngc_common import bounded_read
from ngc_paddle.distro import NAMES, Distro
from ngc_paddle.fields import Text
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.scan.vulnerabilities import scanners
from ngc_paddle.scan.vulnerabilities.report_models import applies, image_ecosystem, timestamp

ECOSYSTEMS = {"deb": "debian", "pypi": "pypi"}  # inventory kind -> the name reports use
TRIVY_LANG_TYPES = {"python-pkg", "pip", "pipenv", "poetry", "uv", "conda-pkg"}


def trivy_cache() -> Path:
    """Where the gate looks for trivy's database: trivy's own default cache, `~/.cache/trivy/db/`."""
    return Path.home() / ".cache" / "trivy"


def default_osv_dir(root: Path) -> Path:
    return root / "security" / "osv"


def resolve_osv_dir(given: Path | None, root: Path) -> Path | None:
    """The OSV folder a scan reads: the one given, else security/osv when it holds any record file."""
    if given is not None:
        return given
    default = default_osv_dir(root)
    return default if any(default.glob("**/*.json")) else None


@dataclass
class Source:
    name: str  # trivy DB, grype DB, trivy report, grype report, OSV folder
    where: str  # the path or reference looked at
    ecosystems: list[str]  # what it covers when consulted: debian, pypi
    consulted: bool
    why: str = ""  # why not consulted (or why it no longer counts)
    built: str | None = None  # ISO date: database build, report creation, newest OSV record
    records: int | None = None  # records it held (None: not countable, e.g. trivy's bbolt database)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    def shown(self) -> str:
        state = "consulted" if self.consulted else f"not consulted: {self.why}"
        age = f", built {self.built}" if self.built else ""
        count = f", {self.records} records" if self.records is not None else ""
        return f"{self.name} at {self.where} ({state}{age}{count})"


class _TrivyDbMetadata(BaseModel):
    """trivy's db/metadata.json (written beside trivy.db by trivy and by `oras pull` of the DB image)."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)  # trivy's format: it may add fields
    Version: int
    UpdatedAt: Text
    NextUpdate: Text | None = None


class SourceError(NgcPaddleError):
    """A vulnerability source's own metadata cannot be read."""


def _day(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return timestamp(value).date().isoformat()
    except ValueError:
        return None


def trivy_db(cache: Path, scanned: str, db_repository: str | None) -> Source:
    """trivy's vulnerability database, as the gate's trivy run used it (`scanned`: its scanners, or why none)."""
    where = str(cache / "db")
    if "vuln" not in scanned.split("+"):
        why = scanned if "not installed" in scanned else f"no {where}/trivy.db, no --db-repository"
        return Source("trivy DB", where, ["debian", "pypi"], False, why)
    meta_path = cache / "db" / "metadata.json"
    built = None
    if meta_path.exists():
        try:
            meta = _TrivyDbMetadata.model_validate(bounded_read.load_json(meta_path, SourceError, 64 * 1024))
            built = _day(meta.UpdatedAt)
        except ValidationError:
            built = None
    via = f" (from {db_repository})" if db_repository else ""
    return Source("trivy DB", where + via, ["debian", "pypi"], True, built=built,
                  notes=[] if built else [f"{meta_path}: no readable UpdatedAt"])


def grype_db(ran: bool) -> Source:
    """grype's database, when grype ran (its build date from `grype db status -o json`)."""
    binary = scanners.tool_binary("grype")
    if binary is None or not ran:
        return Source("grype DB", "grype", ["debian", "pypi"], False, "not installed")
    built = None
    proc = subprocess.run([binary, "db", "status", "-o", "json"], capture_output=True, text=True)
    if proc.returncode == 0:
        try:
            built = _day(str(json.loads(proc.stdout).get("built", "")))
        except (ValueError, AttributeError):
            built = None
    return Source("grype DB", "grype", ["debian", "pypi"], True, built=built)


def trivy_report(path: Path) -> Source:
    """A given trivy report: it covers the ecosystems its vulnerability results name."""
    report = scanners.trivy_report(path)
    covered, records = set(), 0
    for result in report.Results or []:
        if result.Class == "os-pkgs" and result.Type == "debian":
            covered.add("debian")
        elif result.Class == "lang-pkgs" and result.Type in TRIVY_LANG_TYPES:
            covered.add("pypi")
        records += len(result.Vulnerabilities or [])
    why = "" if covered else "no Debian or Python package results (was trivy's vuln scanner on?)"
    return Source("trivy report", str(path), sorted(covered), bool(covered), why, _day(report.CreatedAt), records,
                  notes=["age is the report's date; the database it used is not recorded"])


def grype_report(path: Path) -> Source:
    """A given grype report: Debian when its distro is Debian, Python always (grype matches every ecosystem)."""
    report = scanners.grype_report(path)
    db = report.descriptor.db if report.descriptor else None
    built = (db.built or (db.status.built if db.status else None)) if db else None
    covered = ["pypi"] + (["debian"] if report.distro and report.distro.name in NAMES else [])
    return Source("grype report", str(path), sorted(covered), True, built=_day(built), records=len(report.matches))


def osv_folder(folder: Path | None, advisories: list[dict], distro: Distro | None) -> list[Source]:
    """The OSV folder, once per ecosystem: records of PyPI, and of the image's distribution release."""
    shown = str(folder) if folder else "(no --osv-dir)"
    sources = []
    for kind, name in (("deb", "debian"), ("pypi", "pypi")):
        ecosystem = image_ecosystem(kind, distro)
        if ecosystem is None:
            sources.append(Source("OSV folder", shown, [name], False, "the image's distribution release is unknown"))
            continue
        held = [a for a in advisories
                if any(applies((x.get("package") or {}).get("ecosystem", ""), distro) == kind
                       for x in a.get("affected", []))]
        newest = max((a["modified"] for a in held if a.get("modified")), key=timestamp, default=None)
        if not held:
            why = "no such folder" if folder and not folder.is_dir() else f"no {ecosystem} records"
            sources.append(Source(f"OSV folder ({ecosystem})", shown, [name], False, why, records=0))
        else:
            sources.append(Source(f"OSV folder ({ecosystem})", shown, [name], True, built=_day(newest),
                                  records=len(held)))
    return sources


def apply_age_limit(sources: list[Source], max_age_days: int | None, today: date) -> None:
    """A source older than the policy's limit (or of unknown age under a limit) no longer counts."""
    if max_age_days is None:
        return
    for s in sources:
        if not s.consulted:
            continue
        if s.built is None:
            s.consulted, s.why = False, f"its age is unknown and the policy allows {max_age_days} days"
        elif (today - date.fromisoformat(s.built)).days > max_age_days:
            s.consulted, s.why = False, (f"built {s.built}, {(today - date.fromisoformat(s.built)).days} days old, "
                                         f"older than the policy's {max_age_days} days")


def coverage(sources: list[Source], present: set[str]) -> dict[str, list[str]]:
    """For each ecosystem present in the image, the sources consulted for it ([] when none)."""
    return {eco: [s.name for s in sources if s.consulted and eco in s.ecosystems] for eco in sorted(present)}


def digest(osv_dir: Path | None, cache: Path) -> str:
    """A digest of the vulnerability data at hand (OSV folder content, trivy DB metadata): it changes with a new DB."""
    h = hashlib.sha256()
    if osv_dir is not None and osv_dir.is_dir():
        for path in sorted(osv_dir.rglob("*.json")):
            h.update(str(path.relative_to(osv_dir)).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    meta = cache / "db" / "metadata.json"
    h.update(b"trivy:" + (meta.read_bytes() if meta.is_file() else b"-"))
    return h.hexdigest()[:16]
