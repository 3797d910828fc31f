"""The release policy of the scan gate: what blocks, the allowlist with expiry dates, and source freshness.

An allowlist entry names a finding id (advisory, rule or check), the package (or path) it applies
to, why it is accepted, and until when; an entry past its date stops suppressing, and the gate says
so. A vulnerability source older than `max_source_age_days` does not count as consulted; an
ecosystem without a consulted source makes the vulnerability part NOT RUN, unless a
`vulnerability_waiver` (reason, expiry date) accepts that; an expired waiver is no waiver. A
policy that cannot be read (bad YAML, bad date, unknown key) is bad input, not a pass.
"""

from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.strict_model import Strict
from ngc_paddle.fields import Text, Token
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.scan.findings import SEVERITIES, Finding, severity_rank

DEFAULT_POLICY = Path("security/policy.yaml")
ALWAYS_BLOCK = {"secret", "private-key", "credential", "setuid", "world-writable", "security-update",
                "yanked", "capability", "privilege", "drift", "remote-exec", "archive",
                "integrity", "config"}  # the default of block_on
# Every kind of finding the gate produces (see findings.Finding.kind); `block_on` may only name these.
FindingKind = Literal["vulnerability", "secret", "private-key", "credential", "setuid", "world-writable", "user",
                      "dockerfile", "key-fixture", "security-update", "outdated", "yanked", "capability",
                      "privilege", "drift", "startup-hook", "remote-exec", "archive", "archive-unread", "integrity",
                      "integrity-other", "config", "config-other"]
MAX_POLICY_BYTES = 1024 * 1024


class PolicyError(NgcPaddleError):
    """The policy file is wrong."""


@dataclass
class AllowEntry:
    id: str
    package: str
    justification: str
    expires: date

    def matches(self, f: Finding) -> bool:
        return (self.id == f.id or self.id in f.aliases) and self.package in (f.package, "*")


@dataclass
class Waiver:
    """A person's acceptance that an ecosystem's vulnerabilities were not scanned, until a date."""

    reason: str
    expires: date
    ecosystems: tuple[str, ...] = ("debian", "pypi")


@dataclass
class Policy:
    severity_threshold: str = "HIGH"
    count_unfixed: bool = False
    block_on: set[str] = field(default_factory=lambda: set(ALWAYS_BLOCK))
    setuid_allowed: set[str] = field(default_factory=set)
    capabilities_allowed: dict[str, set[str]] = field(default_factory=dict)  # path -> capabilities it may hold
    allowlist: list[AllowEntry] = field(default_factory=list)
    key_fixtures: dict[str, str] = field(default_factory=dict)  # sha256 of a key block a package ships -> why
    max_source_age_days: int | None = None
    vulnerability_waiver: Waiver | None = None


def _threshold(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def _real_date(value: Any) -> Any:
    """YAML gives a date for 2027-01-31; a quoted "2027-01-31" is read too; a date-time or anything else is not."""
    if isinstance(value, datetime):
        raise ValueError(f"expires {value!r} is a date-time; write YYYY-MM-DD")
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"expires {value[:40]!r} is not a date; write YYYY-MM-DD") from None
    if not isinstance(value, date):
        raise ValueError(f"expires {value!r} is not a date; write YYYY-MM-DD")
    return value


def _absolute(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"{value[:60]!r} is not an absolute path in the image")
    return value



class _AllowEntryModel(Strict):
    id: Token
    package: Annotated[str, Field(min_length=1, max_length=500)]
    justification: Annotated[Text, Field(min_length=1)]
    # until when it holds: `expires`, or `review_by` (an accepted file change: the date a person looks again)
    expires: Annotated[date, BeforeValidator(_real_date)] | None = None
    review_by: Annotated[date, BeforeValidator(_real_date)] | None = None

    @model_validator(mode="after")
    def _one_date(self) -> "_AllowEntryModel":
        if (self.expires is None) == (self.review_by is None):
            raise ValueError("give exactly one of expires or review_by (YYYY-MM-DD)")
        return self


class _KeyFixtureModel(Strict):
    """A private key that a package ships on purpose (a test fixture), known by its content, not its path."""

    # sha256 of each key block ("-----BEGIN" to the END line's "-----"): python -m ngc_common.secret_patterns FILE
    sha256: Annotated[list[Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]], Field(min_length=1)]
    path: Annotated[str, Field(max_length=4096), AfterValidator(_absolute)]
    reason: Annotated[Text, Field(min_length=1)]


class _CapabilityModel(Strict):
    """A file that may carry file capabilities (Debian's own, e.g. ping's cap_net_raw): only these, and only as
    the file its package installed (dpkg's md5sums)."""

    path: Annotated[str, Field(max_length=4096), AfterValidator(_absolute)]
    capabilities: Annotated[list[Annotated[str, Field(pattern=r"^cap_[a-z_0-9]{1,30}$")]], Field(min_length=1)]
    reason: Annotated[Text, Field(min_length=1)]


class _WaiverModel(Strict):
    reason: Annotated[Text, Field(min_length=1, max_length=500)]
    expires: Annotated[date, BeforeValidator(_real_date)]
    # An empty list would read as "the default, both": it is refused, the key is left out instead.
    ecosystems: Annotated[list[Literal["debian", "pypi"]], Field(min_length=1)] | None = None


class _PolicyModel(Strict):
    severity_threshold: Annotated[Literal[SEVERITIES], BeforeValidator(_threshold)] = "HIGH"  # type: ignore[valid-type]
    count_unfixed: bool = False  # strict: "false" is a string, not a boolean
    # strict: a string is not a list of kinds; [] would read as "the default kinds": refused, leave the key out
    block_on: Annotated[list[FindingKind], Field(min_length=1)] | None = None
    setuid_allowed: list[Annotated[str, Field(max_length=4096), AfterValidator(_absolute)]] | None = None
    capabilities_allowed: list[_CapabilityModel] | None = None
    allowlist: list[_AllowEntryModel] | None = None
    key_fixtures: list[_KeyFixtureModel] | None = None
    max_source_age_days: Annotated[int, Field(ge=1, le=3650)] | None = None
    vulnerability_waiver: _WaiverModel | None = None


KEYS = set(_PolicyModel.model_fields)


def load(path: Path) -> Policy:
    data = bounded_read.load_yaml(path, PolicyError, MAX_POLICY_BYTES)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PolicyError(f"{path}: (top level): the policy must be a mapping of keys, not {type(data).__name__}; "
                          f"fix: use the keys {sorted(KEYS)}")
    try:
        model = _PolicyModel.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(one_line(path, exc, fix=f"see {DEFAULT_POLICY} for the format")) from None
    entries = [AllowEntry(e.id, e.package, e.justification, e.expires or e.review_by) for e in model.allowlist or []]
    waiver = model.vulnerability_waiver
    return Policy(model.severity_threshold, model.count_unfixed, set(model.block_on or ALWAYS_BLOCK),
                  set(model.setuid_allowed or []),
                  {c.path: set(c.capabilities) for c in model.capabilities_allowed or []}, entries,
                  {d: f"{k.reason} ({k.path})" for k in model.key_fixtures or [] for d in k.sha256},
                  model.max_source_age_days,
                  Waiver(waiver.reason, waiver.expires, tuple(waiver.ecosystems or ("debian", "pypi")))
                  if waiver else None)


@dataclass
class Decision:
    blocking: list[Finding]
    suppressed: list[Finding]
    informational: list[Finding]
    expired: list[AllowEntry]

    @property
    def blocked(self) -> bool:
        return bool(self.blocking)


def decide(policy: Policy, findings: list[Finding], today: date) -> Decision:
    blocking, suppressed, info, expired = [], [], [], []
    threshold = severity_rank(policy.severity_threshold)
    for f in findings:
        would_block = f.kind in policy.block_on or (
            f.kind == "vulnerability" and severity_rank(f.severity) >= threshold and (f.fixed or policy.count_unfixed))
        if not would_block:
            info.append(f)
            continue
        entry = next((e for e in policy.allowlist if e.matches(f)), None)
        if entry is not None and entry.expires >= today:
            f.suppressed_by = f"{entry.justification} (until {entry.expires})"
            suppressed.append(f)
            continue
        if entry is not None:
            expired.append(entry)
            f.suppressed_by = f"allowlist entry expired on {entry.expires}"
        blocking.append(f)
    return Decision(blocking, suppressed, info, expired)


@dataclass
class VulnerabilityVerdict:
    """Whether the vulnerability part of the gate ran for every ecosystem of the image."""

    status: str  # "scanned" | "NOT RUN" | "waived"
    missing: list[str]  # ecosystems without a consulted source
    waiver: Waiver | None = None  # the waiver in force
    waiver_note: str = ""  # e.g. "the waiver expired on 2026-11-30"

    def as_dict(self) -> dict:
        return {"status": self.status, "missing": self.missing,
                "waiver": {"reason": self.waiver.reason, "expires": str(self.waiver.expires),
                           "ecosystems": list(self.waiver.ecosystems)} if self.waiver else None,
                "waiver_note": self.waiver_note}


def vulnerability_verdict(policy: Policy, covered: dict[str, list[str]], today: date) -> VulnerabilityVerdict:
    """NOT RUN when an ecosystem of the image had no consulted source, unless a waiver in force covers it."""
    missing = [eco for eco, consulted in covered.items() if not consulted]
    if not missing:
        return VulnerabilityVerdict("scanned", [])
    waiver = policy.vulnerability_waiver
    if waiver is None:
        return VulnerabilityVerdict("NOT RUN", missing)
    if waiver.expires < today:
        return VulnerabilityVerdict("NOT RUN", missing, None, f"the vulnerability waiver expired on {waiver.expires}")
    uncovered = [eco for eco in missing if eco not in waiver.ecosystems]
    if uncovered:
        return VulnerabilityVerdict("NOT RUN", missing, None,
                                    f"the vulnerability waiver does not cover {', '.join(uncovered)}")
    return VulnerabilityVerdict("waived", missing, waiver)
