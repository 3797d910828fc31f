"""The release policy of the scan gate: what blocks, and the allowlist with expiry dates.

An allowlist entry names a finding id (advisory, rule or check), the package (or path) it applies
to, why it is accepted, and until when; an entry past its date stops suppressing, and the gate says
so. A policy that cannot be read (bad YAML, bad date, unknown key) is bad input, not a pass.
"""

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import yaml

from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.scan.findings import SEVERITIES, Finding, severity_rank

DEFAULT_POLICY = Path("security/policy.yaml")
ALWAYS_BLOCK = {"secret", "private-key", "credential", "setuid"}


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
class Policy:
    severity_threshold: str = "HIGH"
    count_unfixed: bool = False
    block_on: set[str] = field(default_factory=lambda: set(ALWAYS_BLOCK))
    setuid_allowed: set[str] = field(default_factory=set)
    allowlist: list[AllowEntry] = field(default_factory=list)


KEYS = {"severity_threshold", "count_unfixed", "block_on", "setuid_allowed", "allowlist"}


def load(path: Path) -> Policy:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read the policy ({exc.strerror}); fix: check --policy") from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"{path}: not valid YAML ({exc}); fix the syntax") from exc
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise PolicyError(f"{path}: unknown key {unknown[0]!r}; fix: use {sorted(KEYS)}")
    threshold = str(data.get("severity_threshold", "HIGH")).upper()
    if threshold not in SEVERITIES:
        raise PolicyError(f"{path}: severity_threshold {threshold!r} is not one of {SEVERITIES}")
    entries = []
    for i, raw in enumerate(data.get("allowlist") or []):
        missing = [k for k in ("id", "package", "justification", "expires") if not raw.get(k)]
        if missing:
            raise PolicyError(f"{path}: allowlist[{i}] lacks {missing}; fix: every entry needs id, package, "
                              "justification and expires")
        expires = raw["expires"]
        if not isinstance(expires, date):
            try:
                expires = date.fromisoformat(str(expires))
            except ValueError:
                raise PolicyError(f"{path}: allowlist[{i}] ({raw['id']}): expires {raw['expires']!r} is not a date; "
                                  "fix: write YYYY-MM-DD") from None
        entries.append(AllowEntry(str(raw["id"]), str(raw["package"]), str(raw["justification"]), expires))
    return Policy(threshold, bool(data.get("count_unfixed", False)), set(data.get("block_on") or ALWAYS_BLOCK),
                  set(data.get("setuid_allowed") or []), entries)


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
