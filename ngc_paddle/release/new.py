"""`ngc-paddle release new YY.MM --from PREV`: next month's manifest, with the newest versions proposed.

For every pinned pip component, the newest final release its own index offers for the flavor's
Python is proposed, unless the component is held (`hold:` says why). A proposal that breaks a
consistency rule (a Paddle built against another TensorRT or cuDNN, a CUDA major) is taken back.
The file is edited as text, so comments and anchors survive; the diff is printed for review.
"""

import difflib
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.version import InvalidVersion, Version

from ngc_paddle.host_errors import ManifestError
from ngc_paddle.manifest.loader import find_manifest, load_manifest
from ngc_paddle.manifest.schema import RELEASE_RE, Manifest


@dataclass
class Proposal:
    package: str
    old: str
    new: str
    note: str = ""


def newest_version(package: str, index: str, python: str) -> str | None:
    """The newest final release of `package` on `index` for CPython `python` (None when unreachable)."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", package, "--index-url", index, "--python-version",
           python, "--only-binary", ":all:", "--disable-pip-version-check"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None
    match = re.search(r"Available versions: (.+)", proc.stdout)
    if proc.returncode != 0 or not match:
        return None
    finals = []
    for text in match.group(1).split(","):
        try:
            version = Version(text.strip())
        except InvalidVersion:
            continue
        if not version.is_prerelease and not version.is_devrelease:
            finals.append(version)
    return str(max(finals)) if finals else None


def _scalar(value: str) -> str:
    """A YAML scalar as written, plain or quoted ('x', "x" or x): the part the loader reads."""
    return rf"""(?P<q>["']?){re.escape(value)}(?P=q)"""


def _replace(text: str, package: str, old: str, new: str) -> str:
    """`text` with the version of `package` moved from `old` to `new`, in a flow mapping ({package: P, version: V})
    or a block one (package and version on lines of one indent, either order), keeping the value's quotes."""
    pkg, ver = _scalar(package), _scalar(old).replace("?P<q>", "?P<v>").replace("(?P=q)", "(?P=v)")
    def keep(match: re.Match[str]) -> str:
        quote = match["v"] or ('"' if not isinstance(yaml.safe_load(new), str) else "")  # 2.0 unquoted is a float
        return f"{match['pre']}{quote}{new}{quote}{match.groupdict().get('post') or ''}"

    flow = re.compile(rf"(?P<pre>\{{(?=[^{{}}\n]*\bpackage:\s*{pkg}\s*[,}}])[^{{}}\n]*?\bversion:\s*){ver}"
                      rf"(?=\s*[,}}])")
    text = flow.sub(keep, text)
    block = re.compile(rf"(?P<pre>^(?P<i>[ \t]*)(?:- )?package:[ \t]*{pkg}[ \t]*(?:#.*)?\n"
                       rf"(?:(?P=i)[ \t]*[A-Za-z_-]+:.*\n)*?(?P=i)[ \t]*version:[ \t]*){ver}(?=[ \t]*(?:#.*)?$)",
                       re.M)
    text = block.sub(keep, text)
    before = re.compile(rf"(?P<pre>^(?P<i>[ \t]*)(?:- )?version:[ \t]*){ver}(?P<post>[ \t]*(?:#.*)?\n"
                        rf"(?:(?P=i)[ \t]*[A-Za-z_-]+:.*\n)*?(?P=i)[ \t]*package:[ \t]*{pkg}[ \t]*(?:#.*)?$)", re.M)
    return before.sub(keep, text)


def propose(manifest: Manifest, lookup: Callable[[str, str, str], str | None]) -> list[Proposal]:
    proposals: dict[tuple[str, str], Proposal] = {}
    for flavor in manifest.flavors.values():
        python = flavor.components["python"].version
        for comp in flavor.components.values():
            key = (str(comp.package), comp.version)
            if comp.kind != "pip" or key in proposals:
                continue
            if comp.hold:
                proposals[key] = Proposal(key[0], comp.version, comp.version, f"held: {comp.hold}")
                continue
            source = manifest.sources[comp.source]
            if source.kind != "pip-index":
                proposals[key] = Proposal(key[0], comp.version, comp.version, f"kept: {comp.source} is a wheel folder")
                continue
            found = lookup(key[0], str(source.url), python)
            if found is None:
                proposals[key] = Proposal(key[0], comp.version, comp.version, f"kept: {source.url} did not answer")
            elif Version(found) > Version(comp.version):
                proposals[key] = Proposal(key[0], comp.version, found)
            else:
                proposals[key] = Proposal(key[0], comp.version, comp.version, "already the newest")
    return list(proposals.values())


def _check(text: str, path: Path) -> str | None:
    """The manifest's first problem, or None when it checks."""
    path.write_text(text)
    try:
        load_manifest(path)
        return None
    except ManifestError as exc:
        return str(exc)


def _culprit(text: str, error: str, proposals: list[Proposal], path: Path) -> Proposal | None:
    """The changed proposal whose reversal makes this error go away."""
    for p in proposals:
        if p.new != p.old and _check(_replace(text, p.package, p.new, p.old), path) != error:
            return p
    return None


def _check_written(manifest: Manifest, proposals: list[Proposal], source: Path) -> None:
    """Every bump that is reported is in the file as the loader reads it (never a diff that says one thing and a
    manifest that pins another)."""
    for p in proposals:
        pinned = {c.version for f in manifest.flavors.values() for c in f.components.values()
                  if c.kind == "pip" and str(c.package) == p.package}
        if p.new != p.old and (p.new not in pinned or p.old in pinned):
            raise ManifestError(f"{source}: components ({p.package}): could not move version {p.old} to {p.new} "
                                "in the text; fix: write the component as {package: NAME, version: VERSION} "
                                "(one mapping, plain or quoted values) and run release new again")


def create(release: str, previous: str, root: Path, lookup=newest_version, write: bool = True,
           say: Callable[[str], None] = print) -> tuple[Path, str, list[Proposal]]:
    if not RELEASE_RE.match(release):
        raise ManifestError(f"release {release!r} is not of the form YY.MM (e.g. 27.01)")
    if release == previous:
        raise ManifestError(f"release new {release} --from {previous}: a release cannot start from itself; "
                            "fix: pass the previous release with --from (e.g. --from 26.12 for 27.01)")
    source_path = find_manifest(previous, root / "releases")
    target = root / "releases" / f"{release}.yaml"
    if target.exists() and write:
        raise ManifestError(f"{target} exists already; fix: remove it or pick another release id")
    manifest = load_manifest(source_path)
    old_text = source_path.read_text()
    text = re.sub(rf"""^release:([ \t]*)(["']?){re.escape(previous)}\2([ \t]*(?:#.*)?)$""",
                  lambda m: f'release:{m[1]}{m[2] or chr(34)}{release}{m[2] or chr(34)}{m[3]}', old_text, flags=re.M)
    text = text.replace(f"release {previous}", f"release {release}")
    proposals = propose(manifest, lookup)
    for p in proposals:
        if p.new != p.old:
            text = _replace(text, p.package, p.old, p.new)
    # Take back proposals that break a consistency rule, one at a time, until the manifest checks.
    with tempfile.TemporaryDirectory() as tmp:
        candidate = Path(tmp) / f"{release}.yaml"
        while (error := _check(text, candidate)) is not None:
            culprit = _culprit(text, error, proposals, candidate)
            if culprit is None:
                raise ManifestError(error)
            text = _replace(text, culprit.package, culprit.new, culprit.old)
            rule = error.split(": ", 2)[-1]
            culprit.note, culprit.new = f"kept: {culprit.new} breaks a rule ({rule})", culprit.old
        _check_written(load_manifest(candidate), proposals, source_path)
    diff = "".join(difflib.unified_diff(old_text.splitlines(True), text.splitlines(True),
                                        f"releases/{previous}.yaml", f"releases/{release}.yaml"))
    if write:
        target.write_text(text)
    for p in proposals:
        say(f"  {p.package:<28} {p.old:>14} -> {p.new:<14} {p.note}")
    return target, diff, proposals
