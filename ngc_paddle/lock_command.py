"""`ngc-paddle lock RELEASE [--flavor F] [--source NAME=URL]`: write each flavor's lock beside its manifest.

Why: a lock is made on purpose, by a command, reviewed as a diff and committed; builds only read it.
Per flavor: check that its sources answer (else one line naming the source and the mirror fix, exit
2), resolve its Python set (pip_lock), its Debian packages and base (debian_lock, base), and write
`releases/<release>-<flavor>.lock.json` staged, so a failed run leaves the previous lock alone.
The command takes the release as the run resolved it (ngc_paddle.flavor, once, with the mirrors) and each flavor
from it: it sits above flavor.py, while lock/ (what a lock is, how it is made and checked) sits below it and reads
the resolved flavor through lock/subject.py.
"""

import json
from collections.abc import Callable
from pathlib import Path

from ngc_paddle import engine, outputs
from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease
from ngc_paddle.lock.archive_lock import lock_archives
from ngc_paddle.lock.base_image import ensure_base_image
from ngc_paddle.lock.base_pin import base_facts
from ngc_paddle.lock.check import lock_inputs, without_layers
from ngc_paddle.lock.debian_lock import lock_debian
from ngc_paddle.lock.lock_file import LOCK_VERSION, Lock, lock_path
from ngc_paddle.lock.pip_lock import check_reachable, lock_pip, unreachable_optional_layers


def build_lock(flavor: ResolvedFlavor, say: Callable[[str], None] = print) -> Lock:
    """Resolve one flavor completely; raises (one line) when a source is unreachable or a pin cannot resolve."""
    root, name = flavor.root, flavor.name
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
    debian_source = manifest.sources[spec.components["python"].source]
    base_ref = ensure_base_image(spec.components["os"], debian_source, say)
    base_packages, debian = lock_debian(subject, base_ref, root)
    return Lock(lock_version=LOCK_VERSION, release=manifest.release, flavor=name,
                generated_by=f"ngc-paddle lock {manifest.release} --flavor {name}",
                inputs=lock_inputs(subject), base=base_facts(base_ref, debian_source, base_packages),
                debian=debian, pip=pip, archives=archives, pending_layers=pending)


def lock_text(lock: Lock) -> str:
    return json.dumps(lock.model_dump(mode="json"), indent=1, sort_keys=False) + "\n"


def write_lock(root: Path, lock: Lock) -> Path:
    path = lock_path(root / "releases", lock.release, lock.flavor)
    with outputs.staged() as stage:
        stage.write_text(path, lock_text(lock))
    return path


def run(release: ResolvedRelease, flavors: list[str], say: Callable[[str], None] = print) -> list[Path]:
    """Lock the named flavors of the release (default: every flavor not marked `lock: {pending}`); the first failure
    stops with one line. A pending flavor named explicitly is tried: that is how its lock gets made (via mirrors)."""
    if not flavors:
        marked = {name: flavor.spec.lock for name, flavor in release.flavors().items()}  # the manifest's lock.pending
        for name, pending in marked.items():
            if pending is not None:
                say(f"[{name}] skipped: lock pending ({pending.pending}); lock it with --flavor {name}")
        flavors = [name for name, pending in marked.items() if pending is None]
    written = []
    for name in flavors:
        lock = build_lock(release.flavor(name), say)
        path = write_lock(release.root, lock)
        say(f"wrote {path.relative_to(release.root)}: {len(lock.pip)} wheels, {len(lock.debian)} Debian packages, "
            f"base {lock.base.kind} {lock.base.image}")
        written.append(path)
    return written
