"""Does a flavor's lock still match its manifest? Used by `manifest check` and before every build.

Why: a lock made from last week's manifest would install last week's components under this week's
pins. The lock records the part of the manifest it was made from (`inputs`); any difference is one
line naming the lock file, the field and both values, with the fix (run `ngc-paddle lock` again).
"""

import re
from collections.abc import Iterable
from pathlib import Path

from packaging.utils import canonicalize_name

from ngc_paddle.host_errors import ManifestError
from ngc_paddle.layers import LAYER_ORDER
from ngc_paddle.lock.lock_file import Inputs, Lock, LockedComponent, lock_path, read_lock
from ngc_paddle.lock.pip_lock import target_platform
from ngc_paddle.lock.subject import LockSubject, ManifestFlavor
from ngc_paddle.manifest.schema import Flavor


def without_layers(subject: LockSubject, layers: Iterable[str]) -> LockSubject:
    """The flavor with `layers` emptied of their components: what a lock that leaves those optional layers
    pending was resolved from (the layers stay, built empty). The subject itself when none is left out."""
    left_out = set(layers)
    if not left_out:
        return subject
    manifest, flavor = subject.manifest, subject.spec
    kept = {name: comp for name, comp in flavor.components.items() if comp.layer not in left_out}
    flavors = {**manifest.flavors, subject.name: flavor.model_copy(update={"components": kept})}
    return ManifestFlavor(manifest.model_copy(update={"flavors": flavors}), subject.name, subject.platform)


def apt_packages(flavor: Flavor) -> list[str]:
    """The Debian packages a flavor's os layer installs by name (unpinned: the lock pins them and what they pull
    in): each apt component's package and its extra packages, in manifest order (python3 first, then tini...)."""
    return [name for comp in flavor.components.values() if comp.kind == "apt"
            for name in (str(comp.package), *comp.extra_packages)]


def lock_inputs(subject: LockSubject) -> Inputs:
    """The part of the manifest a flavor's lock depends on (source URLs are not: hashes pin the files)."""
    manifest, flavor = subject.manifest, subject.spec
    python = flavor.components["python"]
    suite = str(manifest.sources[python.source].suite)
    return Inputs(
        python=python.version,
        platform=target_platform(suite, subject.platform),
        suite=suite,
        base_image=str(flavor.components["os"].image),
        dependency_source=manifest.dependency_source,
        apt_packages=apt_packages(flavor),
        components={name: LockedComponent(package=str(c.package), version=c.version, source=c.source, layer=c.layer)
                    for name, c in flavor.components.items() if c.kind in ("pip", "archive")},
    )


def mismatch(subject: LockSubject, lock: Lock) -> str | None:
    """The first way `lock` differs from the manifest (as `FIELD: what`), or None when it matches."""
    manifest, flavor_name = subject.manifest, subject.name
    if lock.release != manifest.release or lock.flavor != flavor_name:
        return f"release/flavor: the lock is for {lock.release}-{lock.flavor}, not {manifest.release}-{flavor_name}"
    optional = subject.spec.optional_layers
    stray = sorted(set(lock.pending_layers) - set(optional))
    if stray:
        return (f"pending_layers: {', '.join(stray)} left out, but the manifest does not make "
                f"{'them' if len(stray) > 1 else 'it'} optional (flavors.{flavor_name}.optional_layers)")
    # A lock that leaves optional layers pending was resolved without their components.
    subject = without_layers(subject, lock.pending_layers)
    want, have = lock_inputs(subject), lock.inputs
    for name in sorted(set(want.components) | set(have.components)):
        wanted, locked = want.components.get(name), have.components.get(name)
        if wanted is None:
            return f"inputs.components.{name}: locked, but the manifest no longer pins it"
        if locked is None:
            return f"inputs.components.{name}: the manifest pins {wanted.package}=={wanted.version}, the lock lacks it"
        for field in ("package", "version", "source", "layer"):
            if getattr(wanted, field) != getattr(locked, field):
                return (f"inputs.components.{name}.{field}: the manifest says {getattr(wanted, field)}, "
                        f"the lock {getattr(locked, field)}")
    for field in ("python", "platform", "suite", "base_image", "dependency_source", "apt_packages"):
        if getattr(want, field) != getattr(have, field):
            return f"inputs.{field}: the manifest says {getattr(want, field)}, the lock {getattr(have, field)}"
    problem = _entries_fit(subject, lock)
    if problem:
        return problem
    problem = _archives_fit(subject, lock)
    if problem:
        return problem
    by_name = {entry.name: entry for entry in lock.pip}
    archives = {entry.component for entry in lock.archives}
    for name, comp in want.components.items():  # the entries themselves must carry the pins too
        if name in archives:
            continue
        entry = by_name.get(canonicalize_name(comp.package))
        if entry is None or entry.version != comp.version or entry.source != comp.source or entry.component != name:
            return f"pip.{canonicalize_name(comp.package)}: does not install component {name} " \
                   f"({comp.package}=={comp.version} from {comp.source})"
        if LAYER_ORDER.index(entry.layer) > LAYER_ORDER.index(comp.layer):  # lower is fine: a lower layer needs it
            return (f"pip.{entry.name}.layer: component {name} sits in layer {entry.layer!r}, above "
                    f"{comp.layer!r} where the manifest puts it")
    return None


def _archives_fit(subject: LockSubject, lock: Lock) -> str | None:
    """Each archive entry installs an archive component of the flavor, at its pin, from its source, in its layer;
    and every archive component of the flavor (but those of the layers left pending) has its entry."""
    flavor, flavor_name = subject.spec, subject.name
    locked = {entry.component: entry for entry in lock.archives}
    for name, entry in locked.items():
        comp = flavor.components.get(name)
        if comp is None or comp.kind != "archive":
            return f"archives.{name}: {name!r} is not an archive component of flavor {flavor_name}"
        for field, wanted in (("version", comp.version), ("source", comp.source), ("layer", comp.layer),
                              ("file", comp.file)):
            if getattr(entry, field) != wanted:
                return f"archives.{name}.{field}: the manifest says {wanted}, the lock {getattr(entry, field)}"
        if entry.wheel.name != canonicalize_name(str(comp.package)):
            return f"archives.{name}.wheel.name: the manifest says {comp.package}, the lock {entry.wheel.name}"
    absent = next((n for n, c in flavor.components.items() if c.kind == "archive" and n not in locked), None)
    if absent:
        return f"archives: component {absent} ({flavor.components[absent].file}) is not locked"
    return None


CUDA_MAJOR = re.compile(r"-cu([0-9]{2})$|cuda([0-9]{2})[0-9]?$")  # nvidia-cublas-cu12, nvidia-dali-cuda120
GPU_BUILDS = {"paddlepaddle-gpu", "onnxruntime-gpu"}


def _cuda_majors(flavor: Flavor) -> set[str]:
    """The CUDA majors a flavor's wheels may be built for: its CUDA, and that of a component built for one (the
    cpu flavor's DALI is nvidia-dali-cuda120, whose CUDA 12 wheels it installs)."""
    majors = {flavor.cuda.version.split(".")[0]} if flavor.cuda else set()
    for comp in flavor.components.values():
        match = CUDA_MAJOR.search(canonicalize_name(str(comp.package or "")))
        if match:
            majors.add(match.group(1) or match.group(2))
    return majors


def _entries_fit(subject: LockSubject, lock: Lock) -> str | None:
    """Each pip entry within what the manifest allows: a source it names, a layer the flavor has, a component it
    pins (or none), and no CUDA wheel in a flavor without CUDA."""
    manifest, flavor, flavor_name = subject.manifest, subject.spec, subject.name
    majors = _cuda_majors(flavor)
    for entry in lock.pip:
        where = f"pip.{entry.name}"
        if entry.source not in manifest.sources:
            return f"{where}.source: {entry.source!r} is not a source of the manifest ({', '.join(manifest.sources)})"
        if manifest.sources[entry.source].kind not in ("pip-index", "wheel-dir"):
            return f"{where}.source: {entry.source!r} is a {manifest.sources[entry.source].kind} source, not a pip one"
        if entry.layer not in flavor.layers:
            return f"{where}.layer: {entry.layer!r} is not a layer of flavor {flavor_name} ({', '.join(flavor.layers)})"
        if entry.component is not None and entry.component not in flavor.components:
            return f"{where}.component: {entry.component!r} is not a component of flavor {flavor_name}"
        cuda = CUDA_MAJOR.search(entry.name)
        major = (cuda.group(1) or cuda.group(2)) if cuda else None
        if major is not None and major not in majors:
            return (f"{where}: a CUDA {major} wheel in flavor {flavor_name}, "
                    f"which needs {'CUDA ' + ', '.join(sorted(majors)) if majors else 'no CUDA'}")
        if entry.name in GPU_BUILDS and not flavor.cuda:
            return f"{where}: a GPU build in flavor {flavor_name}, which has no CUDA (flavors.{flavor_name}.cuda)"
    return None


def lock_status(subject: LockSubject, releases_dir: Path) -> tuple[str, Lock | None]:
    """('ok', lock) | ('pending', None) with the manifest's reason printed by the caller; raises otherwise."""
    manifest, flavor, flavor_name = subject.manifest, subject.spec, subject.name
    path = lock_path(releases_dir, manifest.release, flavor_name, subject.platform)
    fix = f"run 'ngc-paddle lock {manifest.release} --flavor {flavor_name}' and commit {path.name}"
    if flavor.lock is not None:
        if path.exists():
            raise ManifestError(f"{releases_dir / (manifest.release + '.yaml')}: flavors.{flavor_name}.lock.pending: "
                                f"{path.name} exists; fix: drop lock.pending from the manifest")
        return "pending", None
    if not path.exists():
        raise ManifestError(f"{path}: (file): no lock for flavor {flavor_name} of {manifest.release}; fix: {fix} "
                            f"(or set flavors.{flavor_name}.lock.pending with the reason)")
    lock = read_lock(path)
    problem = mismatch(subject, lock)
    if problem:
        raise ManifestError(f"{path}: {problem}; fix: {fix}")
    return "ok", lock

