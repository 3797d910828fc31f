"""The checks that need the whole image: the final filesystem assembled from every layer's facts, its
inventory, accounts, startup hooks, USER, and the image against its release's lock.

Why here: the per-layer facts (layer_facts.py) are cached and shared between images; what the image is as a
whole (which copy of /etc/shadow survives, which dpkg status, which dist-infos) depends on the order of its
layers and their whiteouts, and is assembled anew for each scan from those facts (no layer is read again).
"""

import json
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ngc_common.secret_patterns import parse_md5sums
from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.lock.lock_file import Lock
from ngc_paddle.manifest.schema import Manifest, RuntimeUser
from ngc_paddle.scan.checks import accounts, drift, hooks, integrity
from ngc_paddle.scan.checks.layer_facts import LayerFacts
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.image_release import ImageRelease
from ngc_paddle.scan.source.inventory import Inventory
from ngc_paddle.scan.source.saved_image import Layer, whiteout_hides

MD5SUMS = "/var/lib/dpkg/info/"
LAYER_LABEL = "ngc-paddle.layer"  # which build layer an image of ours is (ngc_paddle/image_build/bakefile.py)


@dataclass
class Final:
    """A captured file as the final image has it."""

    layer: Layer
    item: dict
    content: bytes | None


def _apply_removals(table: dict, removed: list[list]) -> None:
    for kind, path in removed:
        for key in [k for k in table if whiteout_hides(kind, path, k)]:
            del table[key]


class FinalView(NamedTuple):
    files: dict[str, Final]  # captured path -> its final copy
    hashes: dict[str, str]  # installed Python file -> sha256 of its final copy
    inventory: Inventory

    def baked_manifest(self) -> dict | None:
        """The manifest baked into the image (/opt/ngc-paddle/manifest.json), None when absent or not a mapping."""
        text = self.inventory.image_manifest
        try:
            baked = json.loads(text) if text else None
        except ValueError:
            return None
        return baked if isinstance(baked, dict) else None


def final_view(layers: list[Layer], facts: list[LayerFacts]) -> FinalView:
    """The image as its layers leave it, assembled from their facts (no layer is read again)."""
    files: dict[str, Final] = {}
    hashes: dict[str, str] = {}
    inventory = Inventory()
    for layer, f in zip(layers, facts, strict=True):
        _apply_removals(files, f.removed)  # a layer's whiteouts hide what the layers below it had
        _apply_removals(hashes, f.removed)
        for path, item in f.files.items():
            files[path] = Final(layer, item, f.content(path))
        hashes.update(f.hashes)
        for entry in f.replay(layer):
            inventory.add(entry)
    return FinalView(files, hashes, inventory)


@dataclass
class Release:
    """The release an image says it is (its labels or baked manifest), its flavor's lock and declared user."""

    manifest: Manifest | None = None
    flavor: str = ""
    lock: Lock | None = None
    why_no_lock: str = ""
    layers: set[str] | None = None  # the flavor's layers up to the image's own (a layer image), None: all
    lock_file: str = ""  # the lock of the image's platform, as releases/NAME


def _layers_upto(flavor: ResolvedFlavor, labels: dict) -> set[str] | None:
    """A layer image of the build (ngc-paddle.layer below the flavor's top) holds the lock's entries up to it."""
    layers = list(flavor.layers)
    top = labels.get(LAYER_LABEL)
    return set(layers[: layers.index(top) + 1]) if top in layers and top != layers[-1] else None


def release_of(found: ImageRelease) -> Release:
    """The image's release as the checks read it, from its one resolution for the scan."""
    flavor = found.flavor
    if flavor is None:
        return Release(why_no_lock=found.unknown)
    lock_file = f"releases/{flavor.lock_file.name}"
    if found.from_run:
        return Release(flavor.manifest, flavor.name, flavor.lock,
                       flavor.lock_problem or (f"flavor {flavor.name} has no lock ({flavor.pending})"
                                               if flavor.lock is None else ""), lock_file=lock_file)
    upto = _layers_upto(flavor, found.labels)
    why = flavor.lock_problem or ("" if flavor.lock is not None else
                                  f"flavor {flavor.name} of {flavor.release} has no lock yet (pending)")
    return Release(flavor.manifest, flavor.name, flavor.lock, why, upto, lock_file)


def user_findings(config_user: str, files: dict[str, accounts.File], declared: RuntimeUser | None,
                  ours: bool) -> list[Finding]:
    """The image's USER against the release's declared user (any non-root user when it declares none)."""
    uid, gid, shown = accounts.runtime_user(config_user, files)
    where = "image config: User"
    if not ours:
        if uid == 0:
            return [Finding("user", "runs-as-root", "LOW", "the image's USER is root (no release declares its user)",
                            package=shown, location=where, source="config")]
        return []
    if declared is None:
        if uid == 0 or uid is None:
            return [Finding("privilege", "user-mismatch", "CRITICAL", f"USER {shown} is root (or unknown); the "
                            "release declares no user, so it must run as a non-root uid", package=shown,
                            location=where, source="config")]
        return []
    if uid != declared.uid or (gid is not None and gid != declared.gid):
        return [Finding("privilege", "user-mismatch", "CRITICAL",
                        f"USER {shown} (uid {uid if uid is not None else 'unknown'}) is not the release's declared "
                        f"user {declared.name} ({declared.uid}:{declared.gid})", package=shown,
                        installed=str(uid), fixed=str(declared.uid), location=where, source="config")]
    if declared.uid == 0:
        return [Finding("user", "runs-as-root", "LOW", f"runs as root as the release declares: {declared.root_reason}",
                        package=shown, location=where, source="config")]
    return []


@dataclass
class Whole:
    findings: list[Finding] = field(default_factory=list)
    lock_status: str = "NOT RUN"  # compared | NOT RUN
    lock_why: str = ""


def check(layers: list[Layer], facts: list[LayerFacts], view: FinalView, config_user: str, root: Path,
          found: ImageRelease) -> Whole:
    """The whole image's findings; `view`: final_view of its layers; `found`: its release, resolved once for the
    scan (scan/source/image_release.py)."""
    files, hashes, inventory = view
    release = release_of(found)
    result = Whole()
    account_files = {p: accounts.File(p, f.item["mode"], f.content, f.layer.where) for p, f in files.items()
                     if accounts.wants(p) and f.item["type"] == "file"}
    result.findings += accounts.check(account_files)
    # A layer image below the top has no USER yet (the suite layer sets it): only a release image is held to it.
    if release.layers is None:
        result.findings += user_findings(config_user, account_files,
                                         release.manifest.user if release.manifest else None,
                                         release.manifest is not None)
    dpkg_md5 = dict(inventory.conffiles())
    for path, f in files.items():
        if path.startswith(MD5SUMS) and path.endswith(".md5sums") and f.content is not None:
            dpkg_md5.update({"/" + name: md5 for name, md5 in parse_md5sums(f.content).items()})
    dists = _dists(files)
    record_hashes = {path: digest for dist in dists for path, digest in drift.record_entries(dist)}
    hook_files = {p: (f.content, f.layer) for p, f in files.items()
                  if hooks.wants(p) and f.item["type"] == "file"}
    skel = {p.removeprefix("/etc/skel/"): f.content for p, f in files.items()
            if p.startswith("/etc/skel/") and f.content is not None}
    result.findings += hooks.check(hook_files, dpkg_md5, record_hashes, hooks.own_parts(root), skel)
    result.findings += integrity.check(layers, facts, owned_by_dists(dists), integrity.load_declarations(root))
    if release.lock is None:
        result.lock_why = release.why_no_lock or "no lock"
    else:
        packages = inventory.packages()
        result.findings += drift.compare(packages, release.lock, release.layers)
        result.findings += drift.check_builds(dists, packages, release.lock, hashes)
        result.lock_status = "compared"
        upto = f" (layers {', '.join(sorted(release.layers))})" if release.layers else ""
        result.lock_why = release.lock_file + upto
    return result


def owned_by_dists(dists: list[drift.DistInfo]) -> dict[str, integrity.Owned]:
    """path -> what the RECORDs of the installed dist-infos say of it: the first distribution listing it, the
    sha256s it may have (several where distributions share a file, none where a RECORD gives no hash) and the
    RECORDs that list it (their layers are the layers that installed it)."""
    owned: dict[str, integrity.Owned] = {}
    for dist in dists:
        name = posixpath.basename(dist.path).removesuffix(".dist-info")
        record = dist.path + "/RECORD"
        for path, digest in dist.record_lines():
            entry = owned.setdefault(path, integrity.Owned(name))
            entry.records.add(record)
            if digest:
                entry.sha256.add(digest)
    return owned


def _dists(files: dict[str, Final]) -> list[drift.DistInfo]:
    found: dict[str, drift.DistInfo] = {}
    for path, f in files.items():
        folder, name = posixpath.split(path)
        if folder.endswith(".dist-info") and name in ("RECORD", "WHEEL", "direct_url.json") and f.content is not None:
            dist = found.setdefault(folder, drift.DistInfo(folder, {}, f.layer.where))
            dist.files[name] = f.content
    return list(found.values())
