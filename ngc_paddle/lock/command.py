"""`ngc-paddle lock RELEASE [--flavor F] [--source NAME=URL]`: write each flavor's lock beside its manifest.

Why: a lock is made on purpose, by a command, reviewed as a diff and committed; builds only read it.
Per flavor: check that its sources answer (else one line naming the source and the mirror fix, exit
2), resolve its Python set (pip_lock), its Debian packages and base (debian_lock, base), and write
`releases/<release>-<flavor>.lock.json` staged, so a failed run leaves the previous lock alone.
"""

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from ngc_paddle import engine, outputs
from ngc_paddle.lock.archive_lock import lock_archives
from ngc_paddle.lock.base import base_facts
from ngc_paddle.lock.base_image import ensure_base_image
from ngc_paddle.lock.check import lock_inputs, without_layers
from ngc_paddle.lock.debian_lock import lock_debian
from ngc_paddle.lock.model import LOCK_VERSION, Lock, lock_path
from ngc_paddle.lock.pip_lock import check_reachable, lock_pip, unreachable_optional_layers
from ngc_paddle.manifest.loader import find_manifest, load_manifest
from ngc_paddle.manifest.resolve import apply_source_overrides, flavor_of
from ngc_paddle.manifest.schema import Manifest


def build_lock(manifest: Manifest, flavor_name: str, root: Path, say: Callable[[str], None] = print) -> Lock:
    """Resolve one flavor completely; raises (one line) when a source is unreachable or a pin cannot resolve."""
    flavor = flavor_of(manifest, flavor_name)
    pending = unreachable_optional_layers(manifest, flavor_name, root)
    for layer, why in pending.items():
        say(f"[{flavor_name}] layer {layer} left out of the lock (pending): {why}")
    manifest = without_layers(manifest, flavor_name, pending)
    flavor = flavor_of(manifest, flavor_name)
    check_reachable(manifest, flavor_name, Path("releases"), root=root)
    say(f"[{flavor_name}] resolving the Python set (pip --dry-run --report, wheels for the image's platform)")

    pip = lock_pip(manifest, flavor_name, root=root)
    archives = lock_archives(manifest, flavor_name, root)
    for entry in archives:
        say(f"[{flavor_name}] archive {entry.file} ({entry.sha256[:12]}): libraries {entry.libraries}, wheel "
            f"{entry.wheel.name} {entry.wheel.version}")
    say(f"[{flavor_name}] {len(pip)} distributions; resolving the os layer's Debian packages on the base")
    engine.ensure_engine()
    debian_source = manifest.sources[flavor.components["python"].source]
    base_ref = ensure_base_image(flavor.components["os"], debian_source, say)
    base_packages, debian = lock_debian(manifest, flavor_name, base_ref, root)
    return Lock(lock_version=LOCK_VERSION, release=manifest.release, flavor=flavor_name,
                generated_by=f"ngc-paddle lock {manifest.release} --flavor {flavor_name}",
                inputs=lock_inputs(manifest, flavor_name), base=base_facts(base_ref, debian_source, base_packages),
                debian=debian, pip=pip, archives=archives, pending_layers=pending)


def lock_text(lock: Lock) -> str:
    return json.dumps(lock.model_dump(mode="json"), indent=1, sort_keys=False) + "\n"


def write_lock(root: Path, lock: Lock) -> Path:
    path = lock_path(root / "releases", lock.release, lock.flavor)
    with outputs.staged() as stage:
        stage.write_text(path, lock_text(lock))
    return path


def run(root: Path, release: str, flavors: list[str], sources: Mapping[str, str],
        say: Callable[[str], None] = print) -> list[Path]:
    """Lock the named flavors (default: every flavor not marked `lock: {pending}`); the first failure stops
    with one line. A pending flavor named explicitly is tried: that is how its lock gets made (via mirrors)."""
    manifest = apply_source_overrides(load_manifest(find_manifest(release, root / "releases")), sources)
    if not flavors:
        for name, flavor in manifest.flavors.items():
            if flavor.lock is not None:
                say(f"[{name}] skipped: lock pending ({flavor.lock.pending}); lock it with --flavor {name}")
        flavors = [name for name, flavor in manifest.flavors.items() if flavor.lock is None]
    written = []
    for flavor_name in flavors:
        lock = build_lock(manifest, flavor_name, root, say)
        path = write_lock(root, lock)
        say(f"wrote {path.relative_to(root)}: {len(lock.pip)} wheels, {len(lock.debian)} Debian packages, "
            f"base {lock.base.kind} {lock.base.image}")
        written.append(path)
    return written
