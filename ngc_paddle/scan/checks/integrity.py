"""File integrity: every file of the image under the system's paths against the records of what installed it.

Why: tampering with what the image trusts (a library in /etc/ld.so.preload, an apt source marked trusted, a
sudoers drop-in, a root cron entry, a changed binary) has no name a rule could list in advance, but every such
change is either a file that no package installed or a package's file that no longer matches what its package
installed; checking files against their packages' own records catches the family, named or not, as
`dpkg --verify`/debsums and `rpm -V` do. The records: dpkg's (`<package>.list` for what a package owns,
`<package>.md5sums` for its files' md5, the status file's Conffiles for its configuration files), pip's (each
dist-info's RECORD with the sha256 of each file), the base layer (the locked root file system the os component
names), and the project's own layers, which declare what they add beyond packages (layers/declared-files.yaml:
the venv, the entrypoint parts, the banner, the suite, the generated caches and account entries). Anything else
is a finding naming the file, its package or "no package", and what changed: `integrity` (blocks) under the
paths that decide trust, `integrity-other` (listed) elsewhere. The per-layer part (each file's md5 or sha256,
type and link) is gathered in the layer walk and cached with the layer's facts; the judgement here is made on
the final file system each scan (whiteouts in later layers remove what lower layers had).
"""

import fnmatch
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.secret_patterns import dpkg_names, parse_md5sums
from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.scan.checks import hooks
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.saved_image import Layer


class LayerFacts(Protocol):
    """What integrity reads of a layer's facts (layer_facts.LayerFacts, which imports this module)."""

    removed: list[list]
    special: list[dict]
    integrity: dict[str, list]

DPKG_INFO = "/var/lib/dpkg/info/"
DECLARED_FILE = Path("layers/declared-files.yaml")
# The system's paths: where packages install and what runs. Data folders (/var/lib, /var/cache, /var/log),
# /tmp, /workspace and homes (but their shell start files) are the running image's, not its software.
ROOTS = re.compile(r"^/(etc|usr|bin|sbin|lib|lib32|lib64|libx32|opt|var/spool/cron)/"
                   r"|^/(root|home/[^/]+)/\.(bashrc|profile|bash_profile|bash_login|zshrc|pam_environment)$")
VENV_TREES = ("/opt/",)  # pip's side: sha256 (RECORD's hash) instead of md5 (dpkg's)
# What decides trust, by category: a finding here blocks.
TRUST: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("dynamic loader", re.compile(r"^/etc/ld\.so\.(preload|conf)$|^/etc/ld\.so\.conf\.d/"
                                  r"|^/(usr/)?(local/)?lib(32|64|x32)?/(.+/)?[^/]+\.so(\.[0-9.]+)?$")),
    ("PAM", re.compile(r"^/etc/(pam\.d|security)/|^/etc/pam\.conf$|/security/pam_[^/]+\.so$")),
    ("sudo and accounts", re.compile(r"^/etc/(sudoers|sudo\.conf|sudo_logsrvd\.conf|passwd|shadow|group|gshadow"
                                     r"|login\.defs|subuid|subgid|nsswitch\.conf|shells|securetty|doas\.conf)$"
                                     r"|^/etc/sudoers\.d/")),
    ("package sources and keys", re.compile(r"^/etc/apt/|^/usr/share/keyrings/|^/etc/(pip\.conf|npmrc)$"
                                            r"|^/etc/xdg/pip/|/pip\.conf$|/\.npmrc$|^/usr/(local/)?etc/npmrc$"
                                            r"|^/etc/gpg/|^/usr/share/debian-archive-keyring")),
    ("CA store", re.compile(r"^/etc/ssl/|^/etc/ca-certificates(\.conf|/)|^/usr/(local/)?share/ca-certificates/"
                            r"|/certifi/cacert\.pem$|/pki/")),
    ("startup", hooks.HOOK_PATHS),
    ("commands", re.compile(r"^/(usr/)?(local/)?s?bin/|^/opt/[^/]+/bin/")),
    ("Python code", re.compile(r"/(site|dist)-packages/.+\.(py|so|pth)$|/python3[.0-9]*/[^/]+\.py$")),
)


def in_scope(path: str) -> bool:
    return bool(ROOTS.search(path)) and "/__pycache__/" not in path


def wants_md5(path: str) -> bool:
    """A file dpkg may own (its md5sums give md5); pip's trees are compared by sha256 (layer_facts.hashes)."""
    return in_scope(path) and not path.startswith(VENV_TREES)


def wants_sha256(path: str) -> bool:
    return in_scope(path) and path.startswith(VENV_TREES)


def captured(path: str) -> bool:
    """dpkg's records of what each package owns (the md5sums are captured already, the status by the inventory)."""
    return (path.startswith(DPKG_INFO) and path.endswith(".list")) or path == "/var/lib/dpkg/diversions"


def trust_of(path: str, setuid: bool = False) -> str | None:
    if setuid:
        return "setuid/capabilities"
    return next((name for name, pattern in TRUST if pattern.search(path)), None)


# ---- what the project's own layers declare ---------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Declared(_Strict):
    """Files one of our layers adds or changes beyond what its packages' records hold (shell-style globs)."""

    path: Annotated[str, Field(min_length=2, max_length=500, pattern=r"^/[^\s]*$")]
    why: Annotated[str, Field(min_length=1, max_length=500)]


class Declarations(_Strict):
    layers: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}$")], list[Declared]]


class DeclarationError(NgcPaddleError):
    """layers/declared-files.yaml is wrong."""


def load_declarations(root: Path) -> dict[str, list[Declared]]:
    path = root / DECLARED_FILE
    if not path.is_file():
        return {}
    data = bounded_read.load_yaml(path, DeclarationError, 256 * 1024)
    try:
        return Declarations.model_validate(data).layers
    except ValidationError as exc:
        raise DeclarationError(one_line(path, exc, "see the file's header for the format")) from None


def declared(path: str, layer: str, declarations: dict[str, list[Declared]]) -> bool:
    return any(fnmatch.fnmatchcase(path, d.path) for d in declarations.get(layer, ()))


# ---- the judgement ----------------------------------------------------------------------------------------------

@dataclass
class Record:
    """What the packages' records hold: path -> package that owns it, expected digest ('' when none recorded)."""

    owner: dict[str, str] = field(default_factory=dict)
    md5: dict[str, str] = field(default_factory=dict)
    conffiles: set[str] = field(default_factory=set)
    sha256: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (distribution, RECORD hash)

    def dpkg_entry(self, path: str) -> tuple[str | None, str | None]:
        """(package, md5 it recorded) under any name dpkg may know the path by (before /usr was merged)."""
        for name in dpkg_names(path):
            key = "/" + name
            if key in self.owner or key in self.md5:
                return self.owner.get(key), self.md5.get(key)
        return None, None


def dpkg_records(files: dict[str, bytes | None], conffiles: dict[str, str]) -> Record:
    """`files`: the final image's captured dpkg files (path -> content): .list and .md5sums per package."""
    record = Record()
    for path, content in files.items():
        if content is None or not path.startswith(DPKG_INFO):
            continue
        package = posixpath.basename(path).rsplit(".", 1)[0].split(":", 1)[0]
        if path.endswith(".list"):
            for line in content.decode("utf-8", "replace").splitlines():
                if line.startswith("/"):
                    record.owner.setdefault(posixpath.normpath(line), package)
        elif path.endswith(".md5sums"):
            for name, digest in parse_md5sums(content).items():
                record.md5["/" + name] = digest
                record.owner.setdefault("/" + name, package)
    for path, digest in conffiles.items():
        record.md5[path] = digest
        record.conffiles.add(path)
    return record


@dataclass
class Seen:
    """A file of the final image: the layer whose copy it is, its type, digest and link target."""

    layer: Layer
    type: str
    digest: str
    link: str
    setuid: bool = False


def final_files(layers: list[Layer], facts: list[LayerFacts]) -> tuple[dict[str, Seen], dict[str, Layer]]:
    """(path -> its final copy, path -> the layer that deleted it) over every layer in order."""
    final: dict[str, Seen] = {}
    deleted: dict[str, Layer] = {}
    for layer, f in zip(layers, facts, strict=True):
        for kind, path in f.removed:
            folder, name = path.rsplit("/", 1)
            target = folder if kind == "opaque" else f"{folder}/{name.removeprefix('.wh.')}"
            prefix = target + "/"
            for key in [k for k in final if k.startswith(prefix) or (kind == "whiteout" and k == target)]:
                deleted[key] = layer
                del final[key]
        special = {s["path"] for s in f.special if s["type"] == "file" and (s["mode"] & 0o6000 or s["caps"])}
        for path, (kind, digest, link) in f.integrity.items():
            if kind == "hardlink":  # the same bytes as its target, as dpkg's tar writes duplicates
                target = final.get("/" + link.lstrip("/"))
                kind, digest = "file", target.digest if target else ""
            final[path] = Seen(layer, kind, digest, link, path in special)
            deleted.pop(path, None)
    return final, deleted


def _finding(path: str, trust: str | None, rule: str, package: str | None, what: str, where: str) -> Finding:
    owner = package or "no package"
    title = f"{what} ({owner})" + (f"; decides trust: {trust}" if trust else "")
    return Finding("integrity" if trust else "integrity-other", rule, "CRITICAL" if trust else "MEDIUM", title,
                   package=path, installed=owner, location=where, source="integrity")


def check(layers: list[Layer], facts: list[LayerFacts], dpkg_files: dict[str, bytes | None],
          conffiles: dict[str, str], records: dict[str, tuple[str, set[str]]], declarations: dict[str, list[Declared]],
          base_trusted: bool = True) -> list[Finding]:
    """Every file of the final image in scope against dpkg's and pip's records and the layers' declarations.

    `records`: path -> (distribution, the RECORD sha256s it may have) of every installed dist-info; `base_trusted`: the
    first layer is the os component's base (its files that no package lists are the distribution's own, as the
    maintainer scripts of the bootstrap wrote them)."""
    dpkg = dpkg_records(dpkg_files, conffiles)
    final, deleted = final_files(layers, facts)
    findings = []
    for path, seen in sorted(final.items()):
        layer = seen.layer
        trust = trust_of(path, seen.setuid)
        ours = declared(path, layer.name, declarations)
        package, md5 = dpkg.dpkg_entry(path)
        dist, sha = records.get(path, (None, set()))
        if package is not None:
            if md5 and seen.type == "file" and seen.digest != md5 and not ours:
                kind = "its package's conffile" if path in dpkg.conffiles else "the file its package installed"
                findings.append(_finding(path, trust, "package-file-changed", package,
                                         f"differs from {kind} (md5 {seen.digest[:12]}, dpkg recorded {md5[:12]})",
                                         layer.where))
            continue
        if dist is not None:
            if sha and seen.type == "file" and seen.digest not in sha and not path.endswith(".pyc") and not ours:
                findings.append(_finding(path, trust, "package-file-changed", dist,
                                         f"differs from its RECORD (sha256 {seen.digest[:12]}, recorded "
                                         f"{sorted(sha)[0][:12]})", layer.where))
            continue
        if ours or (base_trusted and layer.name == hooks.BASE):
            continue
        what = f"a symlink to {seen.link}" if seen.type == "symlink" else "a file"
        findings.append(_finding(path, trust, "unowned-file", None,
                                 f"{what} that no package installed and no layer of ours declares", layer.where))
    for path, layer in sorted(deleted.items()):
        package, _md5 = dpkg.dpkg_entry(path)
        trust = trust_of(path)
        if package is None or trust is None or declared(path, layer.name, declarations):
            continue
        findings.append(_finding(path, trust, "package-file-removed", package, "removed from the image",
                                 layer.where))
    return findings
