"""dpkg's records of what each package installed, as the layer that installed the package wrote them.

The long form: docs/design-notes.md, section `ngc_paddle/scan/checks/package_records.py`.
"""

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ngc_common.secret_patterns import dpkg_names, parse_md5sums
from ngc_paddle.dpkg_status import DPKG_STATUS, installed
from ngc_paddle.scan.checks.file_scope import DPKG_INFO
from ngc_paddle.scan.source.saved_image import Layer, whiteout_hides


class Facts(Protocol):
    """What is read of a layer's facts (layer_facts.LayerFacts)."""

    removed: list[list]
    files: dict[str, dict]

    def content(self, path: str) -> bytes | None: ...


@dataclass
class Problem:
    """A record rewritten after its package's install: the record, the package, what changed, where."""

    path: str
    package: str
    what: str
    layer: Layer


@dataclass
class Records:
    owner: dict[str, str] = field(default_factory=dict)  # /path -> the package whose install listed it
    md5: dict[str, str] = field(default_factory=dict)  # /path -> md5 its install recorded ('' none)
    conffiles: set[str] = field(default_factory=set)
    installed_in: dict[str, int] = field(default_factory=dict)  # package -> index of the layer that installed it
    problems: list[Problem] = field(default_factory=list)

    def entry(self, path: str) -> tuple[str | None, str | None]:
        """(package, md5 it recorded) under any name dpkg may know the path by (before /usr was merged)."""
        if path in self.owner or path in self.md5 or not path.startswith("/usr/"):
            return self.owner.get(path), self.md5.get(path)
        for name in dpkg_names(path):
            key = "/" + name
            if key in self.owner or key in self.md5:
                return self.owner.get(key), self.md5.get(key)
        return None, None


def copies(facts: Sequence[Facts], wanted: Callable[[str], bool]) -> dict[str, list[tuple[int, bytes | None]]]:
    """Each wanted captured file -> its copies (layer index, content), bottom first; a whiteout over it (a
    package removed) ends its history."""
    found: dict[str, list[tuple[int, bytes | None]]] = {}
    for index, f in enumerate(facts):
        for kind, path in f.removed:
            for key in [k for k in found if whiteout_hides(kind, path, k)]:
                del found[key]
        for path in f.files:
            if wanted(path):
                found.setdefault(path, []).append((index, f.content(path)))
    return found


def _as_of(history: list[tuple[int, bytes | None]], index: int) -> tuple[int, bytes | None] | None:
    """The copy a history had at layer `index` (the last one written at or below it)."""
    return next((copy for copy in reversed(history) if copy[0] <= index), None)


def _listed(content: bytes | None) -> set[str]:
    return {posixpath.normpath(line) for line in (content or b"").decode("utf-8", "replace").splitlines()
            if line.startswith("/")}


def status_entries(status: bytes | None) -> dict[str, tuple[str, dict[str, str]]]:
    """package -> (version, {conffile: md5}) of every installed package of a dpkg status file."""
    return {p.package: (p.version, p.conffiles) for p in installed(status or b"")}


def install_layers(statuses: list[tuple[int, bytes | None]]) -> tuple[dict[str, int], dict[int, dict]]:
    """package -> the layer whose status first lists it at its final version (after any other version), with
    each status copy parsed (layer index -> status_entries)."""
    parsed = {index: status_entries(content) for index, content in statuses}
    final = parsed[statuses[-1][0]] if statuses else {}
    installed: dict[str, int] = {}
    for index, entries in parsed.items():
        for package, (version, _conffiles) in final.items():
            held = entries.get(package)
            if held is None or held[0] != version:
                installed.pop(package, None)
            else:
                installed.setdefault(package, index)
    return installed, parsed


def dpkg(layers: Sequence[Layer], facts: Sequence[Facts]) -> Records:
    """What each installed package owns and the checksums its install recorded, from every layer's copies of
    dpkg's records; with the records a later layer rewrote without installing the package."""
    records = Records()
    history = copies(facts, lambda p: p == DPKG_STATUS or (p.startswith(DPKG_INFO) and p.endswith((".list",
                                                                                                     ".md5sums"))))
    statuses = history.pop(DPKG_STATUS, [])
    installed, parsed = install_layers(statuses)
    for path, lists in history.items():
        if not path.endswith(".list"):
            continue
        stem = path.removeprefix(DPKG_INFO).removesuffix(".list")
        package = stem.split(":", 1)[0]
        install = installed.get(package, lists[-1][0])
        records.installed_in[package] = install
        sums = history.get(f"{DPKG_INFO}{stem}.md5sums", [])
        if sums and sums[-1][0] > install:
            records.problems.append(Problem(f"{DPKG_INFO}{stem}.md5sums", package, (
                f"its checksums were rewritten in a later layer than its install (layer {install}): the "
                "checksums of that install are used"), layers[sums[-1][0]]))
        at_install, listed = _as_of(sums, install), _listed(lists[-1][1])
        if lists[-1][0] > install:  # the file list rewritten without a reinstall
            before = _as_of(lists, install)
            gained = sorted(listed - _listed(before[1] if before else None))
            if gained:
                records.problems.append(Problem(path, package, (
                    f"its file list gained {len(gained)} path(s) without a reinstall: {', '.join(gained[:3])}"
                    " (not the package's)"), layers[lists[-1][0]]))
                listed -= set(gained)
        for owned in listed:
            records.owner.setdefault(owned, package)
        for name, digest in parse_md5sums(at_install[1] or b"").items() if at_install else ():
            records.md5["/" + name] = digest
            records.owner.setdefault("/" + name, package)
    final = parsed[statuses[-1][0]] if statuses else {}
    for package, (_version, entries) in final.items():
        install = installed.get(package, statuses[-1][0])
        then = parsed[_as_of(statuses, install)[0]].get(package, ("", {}))[1]
        for conffile, digest in entries.items():
            expected = then.get(conffile, digest)
            if expected != digest or conffile not in then:
                records.problems.append(Problem(DPKG_STATUS, package, (
                    f"the checksum of its conffile {conffile} changed in the status after its install (layer "
                    f"{install}): {expected[:12] if conffile in then else 'none'} then, {digest[:12]} now"),
                    layers[statuses[-1][0]]))
            records.md5[conffile] = expected
            records.conffiles.add(conffile)
    return records
