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
    """One finding per kind, id (or alias) and place: scanners often report the same thing under two ids."""
    kept: list[tuple[set[str], Finding]] = []
    for f in findings:
        ids = {f.id, *f.aliases}
        same = next((k for k in kept if k[1].kind == f.kind and k[1].where == f.where and k[0] & ids), None)
        if same is None:
            kept.append((ids, f))
            continue
        same[0].update(ids)
        if severity_rank(f.severity) > severity_rank(same[1].severity):
            same[1].severity = f.severity
        same[1].aliases = sorted(set(same[1].aliases) | ids - {same[1].id})
    return [f for _ids, f in kept]
