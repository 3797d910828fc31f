"""`ngc-paddle lock RELEASE [--flavor F] [--platform P] [--source NAME=URL]`: write each flavor's locks beside its
manifest, one per platform the flavor is built for.

Why: a lock is made on purpose, by a command, reviewed as a diff and committed; builds only read it.
Per flavor and platform: check that its sources answer (else one line naming the source and the mirror fix, exit
2), resolve its Python set (pip_lock, for the platform's wheels, natively), its Debian packages and base (debian_lock,
base: another platform's under emulation, which toolchain/ensure-qemu.sh sets up), and write
`releases/<release>-<flavor>[.<arch>].lock.json` staged, so a failed run leaves the previous lock alone.
The command takes the release as the run resolved it (ngc_paddle.flavor, once, with the mirrors) and each flavor
from it: it sits above flavor.py, while lock/ (what a lock is, how it is made and checked) sits below it and reads
the resolved flavor through lock/subject.py.
"""

import json
from collections.abc import Callable
from pathlib import Path

from ngc_paddle import engine, outputs
from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.archive_lock import lock_archives
from ngc_paddle.lock.base_image import ensure_base_image
from ngc_paddle.lock.base_pin import base_facts
from ngc_paddle.lock.check import lock_inputs, without_layers
from ngc_paddle.lock.debian_lock import lock_debian
from ngc_paddle.lock.lock_file import LOCK_VERSION, Lock, lock_path
from ngc_paddle.lock.pip_lock import check_reachable, lock_pip, unreachable_optional_layers
from ngc_paddle.platforms import DEFAULT_PLATFORM, KNOWN, PLATFORMS, foreign


def build_lock(flavor: ResolvedFlavor, say: Callable[[str], None] = print) -> Lock:
    """Resolve one flavor on its platform completely; raises (one line) when a source is unreachable or a pin cannot
    resolve."""
    root, name, platform = flavor.root, flavor.name, PLATFORMS[flavor.platform]
    if flavor.platform != DEFAULT_PLATFORM:
        name = f"{name} {platform.name}"  # what the progress lines say
    pending = unreachable_optional_layers(flavor, root)
    for layer, why in pending.items():
        say(f"[{name}] layer {layer} left out of the lock (pending): {why}")
    subject = without_layers(flavor, pending)
    spec, manifest = subject.spec, subject.manifest
    check_reachable(subject, Path("releases"), root=root)
    say(f"[{name}] resolving the Python set (pip --dry-run --report, wheels for the image's platform)")

    pip = lock_pip(subject, root=root)
    archives = lock_archives(subject, root)
    for entry in archives:
        say(f"[{name}] archive {entry.file} ({entry.sha256[:12]}): libraries {entry.libraries}, wheel "
            f"{entry.wheel.name} {entry.wheel.version}")
    say(f"[{name}] {len(pip)} distributions; resolving the os layer's Debian packages on the base")
    engine.ensure_engine()
    if foreign(platform.name):  # the base's bootstrap and the os layer's trial install run the platform's programs
        engine.ensure_emulation(platform.machine)
    debian_source = manifest.sources[spec.components["python"].source]
    base_ref = ensure_base_image(spec.components["os"], debian_source, say, platform=platform)
    base_packages, debian = lock_debian(subject, base_ref, root)
    asked = "" if flavor.platform == DEFAULT_PLATFORM else f" --platform {flavor.platform}"
    return Lock(lock_version=LOCK_VERSION, release=manifest.release, flavor=flavor.name,
                generated_by=f"ngc-paddle lock {manifest.release} --flavor {flavor.name}{asked}",
                inputs=lock_inputs(subject), base=base_facts(base_ref, debian_source, base_packages),
                debian=debian, pip=pip, archives=archives, pending_layers=pending)


def lock_text(lock: Lock) -> str:
    return json.dumps(lock.model_dump(mode="json"), indent=1, sort_keys=False) + "\n"


def write_lock(root: Path, lock: Lock, platform: str = DEFAULT_PLATFORM) -> Path:
    path = lock_path(root / "releases", lock.release, lock.flavor, platform)
    with outputs.staged() as stage:
        stage.write_text(path, lock_text(lock))
    return path


def run(release: ResolvedRelease, flavors: list[str], say: Callable[[str], None] = print,
        platforms: list[str] | None = None) -> list[Path]:
    """Lock the named flavors of the release (default: every flavor not marked `lock: {pending}`) on each of their
    platforms (or those of `platforms`: a flavor named with one it is not built for is one line); the first
    failure stops with one line. A pending flavor named explicitly is tried: that is how its lock gets made (via
    mirrors)."""
    unknown = next((p for p in platforms or [] if p not in PLATFORMS), None)
    if unknown is not None:
        raise ManifestError(f"--platform {unknown}: not a known platform; fix: use one of {KNOWN}")
    named = bool(flavors)
    if not flavors:
        marked = {name: flavor.spec.lock for name, flavor in release.flavors().items()}  # the manifest's lock.pending
        for name, pending in marked.items():
            if pending is not None:
                say(f"[{name}] skipped: lock pending ({pending.pending}); lock it with --flavor {name}")
        flavors = [name for name, pending in marked.items() if pending is None]
    written = []
    # a flavor named with a platform it is not built for is one line (release.flavor); one not named is skipped there
    pairs = [(name, p) for name in flavors for p in platforms or release.platforms(name)
             if named or p in release.platforms(name)]
    if not pairs and platforms:
        raise ManifestError(f"release {release.release}: no flavor to lock is built for {', '.join(platforms)}; fix: "
                            "add the platform to a flavor's platforms or ask for another")
    for name, platform in pairs:
        lock = build_lock(release.flavor(name, platform), say)
        path = write_lock(release.root, lock, platform)
        say(f"wrote {path.relative_to(release.root)}: {len(lock.pip)} wheels, {len(lock.debian)} Debian packages, "
            f"base {lock.base.kind} {lock.base.image}")
        written.append(path)
    return written
