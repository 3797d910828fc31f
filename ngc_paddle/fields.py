"""String types for values that reach a shell, apt, pip, docker or a report: what each one may hold.

Why: a manifest or policy value ends up as a build argument, an apt package list, a pip
requirement or an image reference. Each type here says what the value means (a Debian suite, an
http(s) URL, a PEP 508 name, an image reference) and refuses anything else, so a newline, a
leading `-` (an option), a space or a `;` can never slip through. All patterns are ASCII-only
and matched in full (`fullmatch`, no `$` that lets a trailing newline pass, no `\\d` that takes
full-width digits).
"""

import re
import unicodedata
from typing import Annotated

from packaging.requirements import Requirement
from pydantic import AfterValidator

_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::[0-9]{1,5})?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_NAME = rf"(?:{_HOST}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"

PIP_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")  # PEP 508 names, no extras
DEBIAN_NAME_RE = re.compile(r"[a-z0-9][a-z0-9+.-]{1,99}")  # Debian policy 5.6.1
DEBIAN_SUITE_RE = re.compile(r"[a-z][a-z0-9-]{0,63}(?:/[a-z][a-z0-9-]{0,63})?")  # bookworm, bookworm-updates
URL_RE = re.compile(rf"https?://{_HOST}(?:/[A-Za-z0-9._~%/+-]{{0,1000}})?|file:///[A-Za-z0-9._~%/+-]{{0,1000}}")
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
IMAGE_NAME_RE = re.compile(_IMAGE_NAME)
IMAGE_REF_RE = re.compile(rf"{_IMAGE_NAME}(?::{_TAG})?(?:@sha256:[0-9a-f]{{64}})?")
# An image by digest (the OCI reference grammar: repository path components, an optional tag, `@sha256:` and
# exactly 64 lower-case hex digits), and the registry part an image name is put under (HOST[:PORT][/PATH]).
DIGEST_REF_RE = re.compile(rf"(?P<name>{_IMAGE_NAME})(?::{_TAG})?@sha256:[0-9a-f]{{64}}")
REGISTRY_RE = re.compile(rf"{_HOST}(?:/{_PATH_COMPONENT})*")
MAX_NAME = 255  # the distribution spec's limit on a repository name, registry included
TOKEN_RE = re.compile(r"[A-Za-z0-9._:+~/@-]{1,200}")  # ids, licenses, version prefixes: printable ASCII, no spaces
REL_PATH_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,500}")
# A vendor archive's file name (no folder): what a source of kind `archive` serves, e.g. TensorRT's tar.
ARCHIVE_FILE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,250}\.(?:tar\.gz|tgz|tar\.xz|tar)")


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 60 else repr(value[:60]) + "..."


def check(value: str, pattern: re.Pattern[str], what: str) -> str:
    """`value` when `pattern` matches all of it, else a ValueError saying what was expected."""
    if not pattern.fullmatch(value):
        raise ValueError(f"{_shown(value)} is not {what}")
    return value


def _rule(pattern: re.Pattern[str], what: str) -> AfterValidator:
    return AfterValidator(lambda value: check(value, pattern, what))


def pip_name(value: str) -> str:
    check(value, PIP_NAME_RE, "a PEP 508 distribution name (letters, digits, '.', '_', '-'; e.g. paddlepaddle)")
    req = Requirement(value)  # cannot fail after the pattern; says the same as pip will
    if req.name != value or req.extras or req.specifier or req.url or req.marker:
        raise ValueError(f"{_shown(value)} is a requirement, not a bare distribution name")
    return value


def digest_reference(value: str) -> str:
    """REGISTRY/REPO[:TAG]@sha256:<64 hex>, as every node pulls it; a ValueError saying what is wrong otherwise."""
    if len(value) > 2 * MAX_NAME:
        raise ValueError(f"{_shown(value)} is {len(value)} characters: no image reference is that long")
    name, sep, digest = value.rpartition("@")
    if not sep:
        raise ValueError(f"{_shown(value)} names no digest (@sha256:...): a tag may move, a digest cannot")
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise ValueError(f"digest {_shown(digest)} is not sha256: followed by exactly 64 lower-case hex digits")
    match = DIGEST_REF_RE.fullmatch(value)
    if match is None:
        raise ValueError(f"{_shown(name)} is not a repository (lower-case path components, e.g. "
                         "registry:5000/ngc-paddle, optionally :TAG)")
    if len(match.group("name")) > MAX_NAME:
        raise ValueError(f"the repository name is {len(match.group('name'))} characters, more than {MAX_NAME}")
    return value


def registry(value: str) -> str:
    """HOST[:PORT][/PATH] that an image name goes under (127.0.0.1:5000, registry.example/team)."""
    if len(value) > MAX_NAME:
        raise ValueError(f"{_shown(value)} is {len(value)} characters, more than {MAX_NAME}")
    return check(value, REGISTRY_RE, "a registry HOST[:PORT][/PATH] (no scheme, spaces or tag; e.g. "
                                     "127.0.0.1:5000)")


def debian_name(value: str) -> str:
    return check(value, DEBIAN_NAME_RE, "a Debian package name (lower-case letters, digits, + - .)")


def _rel_path(value: str) -> str:
    check(value, REL_PATH_RE, "a relative path of letters, digits, '.', '_', '-' and '/' (e.g. wheelhouse)")
    if ".." in value.split("/"):
        raise ValueError(f"{_shown(value)} leaves the repository ('..')")
    return value


def _text(value: str) -> str:
    if len(value) > 2000:
        raise ValueError(f"{_shown(value)} is longer than 2000 characters")
    bad = next((c for c in value if unicodedata.category(c)[0] == "C"), None)
    if bad is not None:
        raise ValueError(f"{_shown(value)} holds the control character U+{ord(bad):04X}")
    return value


PipName = Annotated[str, AfterValidator(pip_name)]
DebianName = Annotated[str, AfterValidator(debian_name)]
DebianSuite = Annotated[str, _rule(DEBIAN_SUITE_RE, "a Debian suite name (e.g. bookworm or bookworm-updates)")]
Url = Annotated[str, _rule(URL_RE, "an http(s)://host/path or file:///path URL without spaces or options")]
ImageName = Annotated[str, _rule(IMAGE_NAME_RE, "an image name without a tag (e.g. ngc-paddle or host:5000/x)")]
ImageRef = Annotated[str, _rule(IMAGE_REF_RE, "an image reference (e.g. debian:bookworm-slim)")]
Token = Annotated[str, _rule(TOKEN_RE, "a printable ASCII word without spaces")]
RelPath = Annotated[str, AfterValidator(_rel_path)]
Text = Annotated[str, AfterValidator(_text)]
ArchiveFile = Annotated[str, _rule(ARCHIVE_FILE_RE, "an archive's file name without a folder (e.g. X-1.0.tar.gz)")]


