"""File integrity: every file of the image under the system's paths against the records of what installed it.

The long form: docs/design-notes.md, section `ngc_paddle/scan/checks/integrity.py`.
"""

import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Protocol

from pydantic import AfterValidator, Field, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.strict_model import Strict
from ngc_paddle.fields import Text
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.layers import LAYER_ORDER
from ngc_paddle.scan.checks import bytecode, hooks, package_records
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.saved_image import BASE, Layer, whiteout_hides


class LayerFacts(package_records.Facts, Protocol):
    """What integrity reads of a layer's facts (layer_facts.LayerFacts, which imports this module)."""

    special: list[dict]
    integrity: dict[str, list]

DECLARED_FILE = Path("layers/declared-files.yaml")
# What decides trust, by category: a finding here blocks.
TRUST: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("dynamic loader", re.compile(r"^/etc/ld\.so\.(preload|conf)$|^/etc/ld\.so\.conf\.d/"
                                  r"|^/(usr/)?(local/)?lib(32|64|x32)?/(.+/)?[^/]+\.so(\.[0-9.]+)?$")),
    ("PAM", re.compile(r"^/etc/(pam\.d|security)/|^/etc/pam\.conf$|/security/pam_[^/]+\.so$")),
    ("sudo and accounts", re.compile(r"^/etc/(sudoers|sudo\.conf|sudo_logsrvd\.conf|passwd|shadow|group|gshadow"
                                     r"|login\.defs|subuid|subgid|nsswitch\.conf|shells|securetty|doas\.conf)$"
                                     r"|^/etc/sudoers\.d/")),
    ("package sources and keys", re.compile(r"^/etc/apt/|^/usr/share/keyrings/|^/etc/(pip\.conf|npmrc)$"
                                            r"|^/etc/xdg/pip/|/pip\.(conf|ini)$|/\.npmrc$|^/usr/(local/)?etc/npmrc$"
                                            r"|^/etc/gpg/|^/usr/share/debian-archive-keyring"
                                            r"|/\.(yarnrc|condarc|pydistutils\.cfg|gitconfig)$|/\.config/(uv/uv\.toml|git/config)$")),
    ("CA store", re.compile(r"^/etc/ssl/|^/etc/ca-certificates(\.conf|/)|^/usr/(local/)?share/ca-certificates/"
                            r"|/certifi/cacert\.pem$|/pki/")),
    ("startup", hooks.HOOK_PATHS),
    ("commands", re.compile(r"^/(usr/)?(local/)?s?bin/|^/opt/[^/]+/bin/")),
    ("Python code", re.compile(r"/(site|dist)-packages/.+\.(py|pyc|so|pth)$|/python3[.0-9]*/[^/]+\.py$")),
    ("package records", re.compile(r"^/var/lib/dpkg/(info/|status$)|\.dist-info/RECORD$")),
)


def trust_of(path: str, setuid: bool = False) -> str | None:
    if setuid:
        return "setuid/capabilities"
    return next((name for name, pattern in TRUST if pattern.search(path)), None)


# ---- what the project's own layers declare ---------------------------------------------------------------------


class Declared(Strict):
    """Files one of our layers adds or changes beyond what its packages' records hold (shell-style globs); no
    control characters (a pattern holding one matches no real path, and hides in a review)."""

    path: Annotated[Text, Field(min_length=2, max_length=500, pattern=r"^/[^\s]*$")]
    why: Annotated[Text, Field(min_length=1, max_length=500)]


def _layer(name: str) -> str:
    """A declaration under a name that is no layer would declare nothing, silently."""
    if name not in LAYER_ORDER:
        raise ValueError(f"{name[:40]!r} is not a layer ({', '.join(LAYER_ORDER)})")
    return name


class Declarations(Strict):
    layers: dict[Annotated[str, AfterValidator(_layer)], list[Declared]]


class DeclarationError(NgcPaddleError):
    """layers/declared-files.yaml is wrong."""


def load_declarations(root: Path) -> dict[str, list[Declared]]:
    path = root / DECLARED_FILE
    if not os.path.lexists(path):  # absent: nothing declared; a folder or a dangling link there is read (one line)
        return {}
    data = bounded_read.load_yaml(path, DeclarationError, 256 * 1024)
    try:
        return Declarations.model_validate(data).layers
    except ValidationError as exc:
        raise DeclarationError(one_line(path, exc, "see the file's header for the format")) from None


def matcher(declarations: dict[str, list[Declared]]) -> Callable[[str, str], bool]:
    """declared(path, layer name): whether a pattern that layer declares matches the path (one regex per layer)."""
    patterns = {layer: re.compile("|".join(fnmatch.translate(d.path) for d in entries))
                for layer, entries in declarations.items() if entries}

    def declared(path: str, layer: str) -> bool:
        pattern = patterns.get(layer)
        return pattern is not None and pattern.match(path) is not None
    return declared


# ---- the judgement ----------------------------------------------------------------------------------------------

@dataclass
class Seen:
    """A file of the final image: the layer whose copy it is, its type, digest and link target."""

    layer: Layer
    type: str  # file | symlink | pyc
    digest: str  # md5 or RECORD-style sha256; a .pyc's header as hex
    link: str
    setuid: bool = False
    mtime: int = 0  # a Python source's (what its compiled module's header must match)
    size: int = 0


def final_files(layers: list[Layer], facts: list[LayerFacts]) -> tuple[dict[str, Seen], dict[str, Layer]]:
    """(path -> its final copy, path -> the layer that deleted it) over every layer in order."""
    final: dict[str, Seen] = {}
    deleted: dict[str, Layer] = {}
    for layer, f in zip(layers, facts, strict=True):
        for kind, path in f.removed:
            for key in [k for k in final if whiteout_hides(kind, path, k)]:
                deleted[key] = layer
                del final[key]
        special = {s["path"] for s in f.special if s["type"] == "file" and (s["mode"] & 0o6000 or s["caps"])}
        for path, (kind, digest, link, *stat) in f.integrity.items():
            if kind == "hardlink":  # the same bytes as its target, as dpkg's tar writes duplicates
                target = final.get("/" + link.lstrip("/"))
                kind, digest = "file", target.digest if target else ""
            final[path] = Seen(layer, kind, digest, link, path in special, *stat)
            deleted.pop(path, None)
    return final, deleted


def _finding(path: str, trust: str | None, rule: str, package: str | None, what: str, where: str) -> Finding:
    owner = package or "no package"
    title = f"{what} ({owner})" + (f"; decides trust: {trust}" if trust else "")
    return Finding("integrity" if trust else "integrity-other", rule, "CRITICAL" if trust else "MEDIUM", title,
                   package=path, installed=owner, location=where, source="integrity")


@dataclass
class Owned:
    """What the installed distributions' RECORDs say of one path (image_checks.owned_by_dists)."""

    dist: str  # the first distribution listing it
    sha256: set[str] = field(default_factory=set)  # the hashes it may have (none: listed without one)
    records: set[str] = field(default_factory=set)  # the RECORD files listing it


def _dpkg_file(path: str, seen: Seen, md5: str | None) -> tuple[str, str] | None:
    """(rule, what changed) of a package's regular file or symlink against its install's checksum."""
    if md5 and seen.type == "symlink":
        return "package-file-changed", f"a symlink to {seen.link} where its package installed a regular file"
    if md5 and seen.digest != md5:
        return "package-file-changed", f"differs from the file its package installed (md5 {seen.digest[:12]}, dpkg " \
            f"recorded {md5[:12]})"
    if not md5 and seen.type == "file":
        return "package-file-unverifiable", "owned but unverifiable: its package lists it with no checksum"
    return None


def _dpkg_link(path: str, seen: Seen, installed: int | None, facts: list[LayerFacts]) -> tuple[str, str] | None:
    """A symlink a package lists (dpkg records no target): as the layer that installed the package wrote it.
    One written by a later layer that differs from that install's is a change; one from an earlier layer is
    the folder or link the package installed into (merged /usr's /bin)."""
    if installed is None or seen.layer.index <= installed:
        return None
    then = facts[installed].integrity.get(path)
    if then is not None and then[0] == "symlink" and then[2] == seen.link:
        return None
    had = f"a symlink to {then[2]}" if then is not None and then[0] == "symlink" else "no symlink"
    return "package-file-changed", (f"a symlink to {seen.link} written after its package's install in layer "
                                    f"{installed} ({had} there)")


def _record_file(seen: Seen, owned: Owned, path: str) -> tuple[str, str] | None:
    if owned.sha256 and seen.type == "symlink":
        return "package-file-changed", f"a symlink to {seen.link} where its RECORD lists a regular file"
    if owned.sha256 and seen.digest not in owned.sha256:
        return "package-file-changed", (f"differs from its RECORD (sha256 {seen.digest[:12]}, recorded "
                                        f"{sorted(owned.sha256)[0][:12]})")
    if not owned.sha256 and seen.type == "file" and not path.endswith("/RECORD"):
        return "package-file-unverifiable", "owned but unverifiable: its RECORD lists it with no hash"
    return None


def _rewritten_records(final: dict[str, Seen], records: dict[str, Owned]) -> list[Finding]:
    """A RECORD rewritten in a later layer than its distribution's METADATA: pip writes both in one install."""
    findings = []
    for record in sorted({r for owned in records.values() for r in owned.records}):
        seen, metadata = final.get(record), final.get(record.rsplit("/", 1)[0] + "/METADATA")
        if seen is not None and metadata is not None and seen.layer.index > metadata.layer.index:
            findings.append(_finding(record, trust_of(record), "package-record-changed", record.split("/")[-2],
                                     f"its RECORD was rewritten in a later layer than its install (layer "
                                     f"{metadata.layer.index})", seen.layer.where))
    return findings


def check(layers: list[Layer], facts: list[LayerFacts], records: dict[str, Owned],
          declarations: dict[str, list[Declared]], base_trusted: bool = True) -> list[Finding]:
    """Every file of the final image in scope against dpkg's and pip's records and the layers' declarations.

    `records`: path -> what the installed dist-infos' RECORDs say of it; `base_trusted`: the first layer is the
    os component's base (its files that no package lists are the distribution's own, as the maintainer scripts
    of the bootstrap wrote them). A layer's name is ours only where own_layers matched it to our build's chain."""
    dpkg = package_records.dpkg(layers, facts)
    final, deleted = final_files(layers, facts)
    findings = [_finding(p.path, "package records", "package-record-changed", p.package, p.what, p.layer.where)
                for p in dpkg.problems]
    findings += _rewritten_records(final, records)
    judge = _FileJudge(dpkg, final, facts, records, matcher(declarations), base_trusted)
    findings += [finding for path, seen in sorted(final.items()) if (finding := judge.present(path, seen))]
    findings += [finding for path, layer in sorted(deleted.items()) if (finding := judge.removed(path, layer))]
    return findings


@dataclass
class _FileJudge:
    """One file's verdict against the records of what installed it: dpkg's, pip's RECORDs, a layer's declaration,
    the base; a finding or None, at most one a file."""

    dpkg: package_records.Records
    final: dict[str, Seen]
    facts: list[LayerFacts]
    records: dict[str, Owned]
    declared: Callable[[str, str], bool]
    base_trusted: bool

    def install_layers(self, path: str) -> set[int]:
        """The layers whose install wrote `path`, by its package or its distribution's RECORDs."""
        package, _md5 = self.dpkg.entry(path)
        if package is not None and package in self.dpkg.installed_in:
            return {self.dpkg.installed_in[package]}
        owned = self.records.get(path)
        return {self.final[r].layer.index for r in owned.records if r in self.final} if owned else set()

    def source(self, path: str) -> bytecode.Source | None:
        seen = self.final.get(path)
        return bytecode.Source(path, seen.layer.index, seen.mtime, seen.size) if seen and seen.type == "file" \
            else None

    def present(self, path: str, seen: Seen) -> Finding | None:
        """A file of the final image: declared, bytecode, a package's, a distribution's, the base's, or unowned."""
        layer = seen.layer
        if self.declared(path, layer.name):
            return None
        if seen.type == "pyc":
            verdict = bytecode.judge(path, bytes.fromhex(seen.digest), layer.index, self.source, self.install_layers)
            if verdict is None:
                return None
            return _finding(path, trust_of(verdict.source or path) or trust_of(path, seen.setuid),
                            "bytecode-unaccounted", None, verdict.what, layer.where)
        package, md5 = self.dpkg.entry(path)
        if package is not None:
            changed = _dpkg_file(path, seen, md5) or \
                (_dpkg_link(path, seen, self.dpkg.installed_in.get(package), self.facts)
                 if seen.type == "symlink" else None)
            if changed and ((trust := trust_of(path, seen.setuid)) or changed[0] != "package-file-unverifiable"):
                what = changed[1].replace("the file its package installed", "its package's conffile") \
                    if path in self.dpkg.conffiles else changed[1]
                return _finding(path, trust, changed[0], package, what, layer.where)
            return None
        if (owned := self.records.get(path)) is not None:
            changed = _record_file(seen, owned, path)
            if changed and ((trust := trust_of(path, seen.setuid)) or changed[0] != "package-file-unverifiable"):
                return _finding(path, trust, changed[0], owned.dist, changed[1], layer.where)
            return None
        if self.base_trusted and layer.name == BASE:
            return None
        what = f"a symlink to {seen.link}" if seen.type == "symlink" else "a file"
        return _finding(path, trust_of(path, seen.setuid), "unowned-file", None,
                        f"{what} that no package installed and no layer of ours declares", layer.where)

    def removed(self, path: str, layer: Layer) -> Finding | None:
        """A package's file deleted by a later layer that does not declare it."""
        package, _md5 = self.dpkg.entry(path)
        trust = trust_of(path)
        if package is None or trust is None or self.declared(path, layer.name):
            return None
        return _finding(path, trust, "package-file-removed", package, "removed from the image", layer.where)
