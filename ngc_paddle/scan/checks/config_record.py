"""The image's config against the one our build recorded for its topmost layer of ours, field by field.

Why: an image FROM ours inherits our config; whatever differs was set after our build (a derived image's
ENV, ENTRYPOINT, USER, ...). A change to a field that decides what runs or what is trusted
(config_fields.py) blocks as `config`; any other is listed as `config-other`. A change made on purpose is
accepted by an allowlist entry (id config-changed, package the field as named here, e.g. `Env LD_PRELOAD`).
"""

import json

from ngc_common import secret_patterns as patterns
from ngc_paddle.scan.checks.config_fields import FIELDS, env_trust, field_trust
from ngc_paddle.scan.findings import Finding

RULE = "config-changed"


def _value(value: object) -> object:
    """An absent, null or empty field is one thing: not set."""
    return value if value not in (None, [], {}, "") else None


def _shown(value: object, name: str = "") -> str:
    """A value as the report shows it; one that looks secret (by its name or its shape) only by its length."""
    if value is None:
        return "not set"
    text = json.dumps(value)
    if isinstance(value, str) and (patterns.SECRET_NAME.search(name) or patterns.value_hits(value)
                                   or patterns.looks_like_token(value)):
        return f"a value of {len(value)} characters (not shown: it looks secret)"
    return text[:200]


def _entries(field: str, value: object) -> dict[str, object]:
    """Env (NAME=value items) and Labels, compared entry by entry."""
    if field == "Env" and isinstance(value, list):
        return {name: rest[0] if rest else "" for name, *rest in (str(item).split("=", 1) for item in value)}
    return dict(value) if isinstance(value, dict) else {}


def _finding(name: str, trust: str | None, now: object, ours: object) -> Finding:
    shown = _shown(now, name)
    title = f"{name} is {shown}; our build's was {_shown(ours, name)}" + (f"; decides trust: {trust}" if trust
                                                                            else "")
    return Finding("config" if trust else "config-other", RULE, "CRITICAL" if trust else "LOW", title,
                   package=name, installed=shown, location="image config", source="config")


def compare(image: dict, recorded: dict | None) -> list[Finding]:
    """Each difference of `image` (its config's `config` object) from `recorded` (our build's), one finding."""
    if recorded is None:
        return []
    findings = []
    for field in FIELDS:
        now, ours = _value(image.get(field)), _value(recorded.get(field))
        if field in ("Env", "Labels"):
            have, had = _entries(field, now), _entries(field, ours)
            for name in sorted(set(have) | set(had)):
                if have.get(name) != had.get(name):
                    trust = env_trust(name) if field == "Env" else None
                    findings.append(_finding(f"{field} {name}", trust, have.get(name), had.get(name)))
        elif now != ours:
            findings.append(_finding(field, field_trust(field), now, ours))
    return findings


def status(ours: int, recorded: dict | None) -> dict:
    """What the comparison rested on, for the report: NOT RUN where layers are ours but no config was recorded."""
    if recorded is not None:
        return {"status": "compared", "detail": "the config our build recorded for its topmost layer of ours"}
    if ours:
        return {"status": "NOT RUN", "detail": "no config of our layers' image recorded (rebuild it here)"}
    return {"status": "none", "detail": "no layer of ours"}
