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

from packaging.version import InvalidVersion, Version

from ngc_paddle.errors import ManifestError
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


def _replace(text: str, package: str, old: str, new: str) -> str:
    flow = re.compile(rf"(package: {re.escape(package)}, version: ){re.escape(old)}(?=[,}}\s])")
    block = re.compile(rf"(package: {re.escape(package)}\n\s+version: ){re.escape(old)}(?=\s)")
    return block.sub(rf"\g<1>{new}", flow.sub(rf"\g<1>{new}", text))


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


def create(release: str, previous: str, root: Path, lookup=newest_version, write: bool = True,
           say: Callable[[str], None] = print) -> tuple[Path, str, list[Proposal]]:
    if not RELEASE_RE.match(release):
        raise ManifestError(f"release {release!r} is not of the form YY.MM (e.g. 27.01)")
    source_path = find_manifest(previous, root / "releases")
    target = root / "releases" / f"{release}.yaml"
    if target.exists() and write:
        raise ManifestError(f"{target} exists already; fix: remove it or pick another release id")
    manifest = load_manifest(source_path)
    old_text = source_path.read_text()
    text = re.sub(rf'^release: "?{re.escape(previous)}"?$', f'release: "{release}"', old_text, flags=re.M)
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
    diff = "".join(difflib.unified_diff(old_text.splitlines(True), text.splitlines(True),
                                        f"releases/{previous}.yaml", f"releases/{release}.yaml"))
    if write:
        target.write_text(text)
    for p in proposals:
        say(f"  {p.package:<28} {p.old:>14} -> {p.new:<14} {p.note}")
    return target, diff, proposals
