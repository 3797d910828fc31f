"""The parts of trivy and grype JSON reports and OSV advisories that the scan gate reads, as typed models.

Why: these files come from other tools and dumps; a field with the wrong type, a missing id, a
string where a list belongs (`fix.versions: "1.26.5"`), a numeric severity or a version that the
ecosystem cannot parse must be bad input (exit 2), never a crash in the gate (which would read as
"blocked") nor a silent UNKNOWN that lets a finding pass. Only the fields the gate uses are
declared; the tools add others freely, so extra keys are ignored, but declared ones are strict.
"""

from datetime import UTC, datetime
from typing import Annotated, Literal

from debian.debian_support import Version as DebVersion
from packaging.version import InvalidVersion
from packaging.version import Version as PyVersion
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ngc_paddle.distro import NAMES, Distro, osv_matches
from ngc_paddle.fields import Text, Token

KNOWN_SEVERITIES = ("UNKNOWN", "NEGLIGIBLE", "LOW", "MEDIUM", "MODERATE", "HIGH", "CRITICAL")


def _severity(value: str) -> str:
    upper = value.upper()
    if upper not in KNOWN_SEVERITIES:
        raise ValueError(f"severity {value[:40]!r} is not one of {list(KNOWN_SEVERITIES)}")
    return upper


SeverityName = Annotated[str, AfterValidator(_severity)]
Short = Annotated[Text, Field(max_length=1000)]  # names and versions: no control characters
Prose = Annotated[str, Field(max_length=100_000)]  # titles and descriptions: shown, never executed


class _Report(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)  # other tools' formats: see the docstring


def _not_null(value: object) -> object:
    """A key the tool or the format leaves out when it has nothing to say may be absent (the default then holds),
    but `null` is no value of its type: read as absent it turned a fixed finding unfixed (informational), a
    severity UNKNOWN, or a result, package or event into nothing at all."""
    if value is None:
        raise ValueError("is null where the format requires a value (leave the key out when there is none)")
    return value


NotNull = BeforeValidator(_not_null)


# ---- trivy ---------------------------------------------------------------------------------------

class TrivyVulnerability(_Report):
    VulnerabilityID: Token
    PkgName: Short = ""
    InstalledVersion: Short = ""
    FixedVersion: Annotated[Short, NotNull] = ""
    Severity: SeverityName = "UNKNOWN"
    Title: Prose = ""


class TrivyLayer(_Report):
    DiffID: Short = "?"


class TrivyCodeLine(_Report):
    Content: Prose = ""
    IsCause: bool = False


class TrivyCode(_Report):
    Lines: list[TrivyCodeLine] | None = None  # trivy writes an empty list as null


class TrivySecret(_Report):
    RuleID: Token = "secret"
    Severity: SeverityName = "HIGH"
    Title: Prose = "secret"
    Layer: Annotated[TrivyLayer | None, NotNull] = None
    # for a secret in the image config: the (masked) line of config JSON
    Code: Annotated[TrivyCode | None, NotNull] = None


class TrivyResult(_Report):
    Target: Short = ""
    Class: Short = ""  # os-pkgs, lang-pkgs, secret, ...: which ecosystems the vulnerability scanner covered
    Type: Short = ""  # debian, python-pkg, pip, ...
    Vulnerabilities: Annotated[list[TrivyVulnerability], NotNull] = []
    Secrets: Annotated[list[TrivySecret], NotNull] = []


class TrivyReport(_Report):
    SchemaVersion: Annotated[int | None, NotNull] = None
    CreatedAt: Annotated[Short | None, NotNull] = None
    Results: Annotated[list[TrivyResult], NotNull] = []


# ---- grype ---------------------------------------------------------------------------------------

class GrypeFix(_Report):
    versions: list[Short] = []
    state: Short = ""


class GrypeVulnerability(_Report):
    id: Token
    severity: SeverityName = "UNKNOWN"
    description: Annotated[Prose, NotNull] = ""
    fix: Annotated[GrypeFix | None, NotNull] = None


class GrypeArtifact(_Report):
    name: Short = ""
    version: Short = ""
    type: Short = ""


class GrypeRelated(_Report):
    id: Token


class GrypeMatch(_Report):
    vulnerability: GrypeVulnerability
    artifact: GrypeArtifact
    relatedVulnerabilities: list[GrypeRelated] | None = None  # grype writes an empty list as null


class GrypeDbStatus(_Report):
    built: Annotated[Short | None, NotNull] = None


class GrypeDb(_Report):
    built: Annotated[Short | None, NotNull] = None  # grype up to 0.8x
    status: Annotated[GrypeDbStatus | None, NotNull] = None  # newer grype


class GrypeDescriptor(_Report):
    timestamp: Annotated[Short | None, NotNull] = None
    db: Annotated[GrypeDb | None, NotNull] = None


class GrypeDistro(_Report):
    name: Short = ""
    version: Short = ""


class GrypeReport(_Report):
    matches: list[GrypeMatch]
    descriptor: Annotated[GrypeDescriptor | None, NotNull] = None
    distro: Annotated[GrypeDistro | None, NotNull] = None


# ---- OSV (https://ossf.github.io/osv-schema/) ------------------------------------------------------

def ecosystem_kind(ecosystem: str) -> str | None:
    """The version ordering an OSV ecosystem uses here: pypi (PEP 440), deb (dpkg), or None (not matched)."""
    return "pypi" if ecosystem == "PyPI" else "deb" if ecosystem.split(":")[0] in NAMES.values() else None


def image_ecosystem(kind: str, distro: Distro | None) -> str | None:
    """The OSV ecosystem whose records apply to an image's packages of `kind` (see ngc_paddle/distro.py).

    OSV's Debian and Ubuntu records carry the release (`Debian:12`, `Debian:13`, `Ubuntu:20.04:LTS`): a
    bookworm image is matched against `Debian:12` only, or a fix published for trixie would flag a fixed
    bookworm package. Without a known release no distribution record applies.
    """
    if kind == "pypi":
        return "PyPI"
    return distro.osv_ecosystem if kind == "deb" and distro is not None else None


def applies(ecosystem: str, distro: Distro | None) -> str | None:
    """The kind of an OSV record's ecosystem when its records apply to this image's packages, else None."""
    kind = ecosystem_kind(ecosystem)
    if kind == "pypi":
        return kind
    return kind if kind == "deb" and osv_matches(ecosystem, distro) else None


def timestamp(value: str) -> datetime:
    """An RFC 3339 time of a report or record ("2024-07-15T16:25:39Z"), as an aware datetime."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _timestamp(value: str) -> str:
    try:
        timestamp(value)
    except ValueError:
        raise ValueError(f"{value[:40]!r} is not an RFC 3339 time") from None
    return value


Timestamp = Annotated[Short, AfterValidator(_timestamp)]


def parse_version(kind: str, version: str) -> DebVersion | PyVersion:
    return DebVersion(version) if kind == "deb" else PyVersion(version)


class OsvEvent(_Report):
    introduced: Annotated[Short | None, NotNull] = None
    fixed: Annotated[Short | None, NotNull] = None
    last_affected: Annotated[Short | None, NotNull] = None
    limit: Annotated[Short | None, NotNull] = None

    @model_validator(mode="after")
    def _one_event(self) -> "OsvEvent":
        given = [k for k in ("introduced", "fixed", "last_affected", "limit") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"an event holds exactly one of introduced, fixed, last_affected, limit (not {given})")
        return self


class OsvRange(_Report):
    type: Literal["ECOSYSTEM", "SEMVER", "GIT"]
    events: list[OsvEvent]


class OsvPackage(_Report):
    ecosystem: Short
    name: Short


class _Specific(_Report):
    severity: Annotated[SeverityName | None, NotNull] = None


class OsvAffected(_Report):
    package: Annotated[OsvPackage | None, NotNull] = None
    ranges: list[OsvRange] = []
    versions: list[Short] = []
    ecosystem_specific: Annotated[_Specific | None, NotNull] = None

    @model_validator(mode="after")
    def _versions_parse(self) -> "OsvAffected":
        kind = ecosystem_kind(self.package.ecosystem) if self.package else None
        if kind is None:
            return self
        for r in self.ranges:
            if r.type == "GIT":
                continue
            for event in r.events:
                version = event.introduced or event.fixed or event.last_affected or event.limit or ""
                if version == "0":
                    continue
                try:
                    parse_version(kind, version)
                except (InvalidVersion, ValueError):
                    raise ValueError(f"{version[:40]!r} is not a {self.package.ecosystem} version") from None
        return self


class OsvAdvisory(_Report):
    id: Token
    # required by the OSV schema; the age of an OSV folder is its newest
    modified: Annotated[Timestamp | None, NotNull] = None
    aliases: list[Token] = []
    summary: Prose = ""
    affected: list[OsvAffected] = []
    database_specific: Annotated[_Specific | None, NotNull] = None


