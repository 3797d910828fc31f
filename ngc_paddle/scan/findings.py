"""A finding of any scanner, in one shape, so one policy can judge them all."""

from dataclasses import asdict, dataclass, field

SEVERITIES = ("UNKNOWN", "LOW", "MEDIUM", "HIGH", "CRITICAL")


def severity_rank(severity: str) -> int:
    value = severity.upper()
    if value == "MODERATE":  # GitHub advisories say MODERATE where others say MEDIUM
        value = "MEDIUM"
    return SEVERITIES.index(value) if value in SEVERITIES else 0


@dataclass
class Finding:
    kind: str  # vulnerability | secret | private-key | credential | setuid | world-writable | user | dockerfile
    #            | security-update | outdated | yanked (freshness) | config | config-other (config_record.py)
    id: str  # advisory id, rule id, or a stable name for our own checks
    severity: str
    title: str
    package: str = ""  # package name, or the file path for file findings
    installed: str = ""
    fixed: str = ""  # fixed version ("" when no fix is known)
    location: str = ""  # layer, file, config field
    source: str = ""  # trivy | grype | osv | layers | config | hadolint
    aliases: list[str] = field(default_factory=list)
    suppressed_by: str = ""  # allowlist justification when suppressed

    @property
    def where(self) -> tuple:
        """Identity besides the id: a vulnerability is its package version; a file finding also its place."""
        base = (self.package.lower(), self.installed)
        return base if self.kind == "vulnerability" else (*base, self.location)

    def as_dict(self) -> dict:
        return asdict(self)


def dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per kind, id (or alias) and place: scanners often report the same thing under two ids.

    Linear: each (kind, place, id) points at the first kept finding that holds that id, so a finding
    joins the earliest kept one sharing any of its ids (as a scan through the kept list would).
    """
    kept: list[Finding] = []
    ids_of: list[set[str]] = []
    owner: dict[tuple, int] = {}
    for f in findings:
        ids = {f.id, *f.aliases}
        place = (f.kind, f.where)
        hits = [owner[(place, i)] for i in ids if (place, i) in owner]
        if not hits:
            index = len(kept)
            kept.append(f)
            ids_of.append(set(ids))
        else:
            index = min(hits)
            same = kept[index]
            ids_of[index] |= ids
            if severity_rank(f.severity) > severity_rank(same.severity):
                same.severity = f.severity
        for i in ids:
            key = (place, i)
            if owner.get(key, index) >= index:
                owner[key] = index
    for f, ids in zip(kept, ids_of, strict=True):
        if ids != {f.id, *f.aliases}:
            f.aliases = sorted(ids - {f.id})
    return kept
