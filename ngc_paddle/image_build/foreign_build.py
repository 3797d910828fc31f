"""What a build for another platform than the default one needs before its layers: qemu, and the build platform's base.

Why: a linux/arm64 image built on x86-64 runs its os and suite layers' steps under qemu (registered once,
toolchain/ensure-qemu.sh), and installs its pip layers in the default platform's os layer on the build platform
(layers/foreign/Dockerfile, through the bake target of that os layer), which is built FROM the default
platform's base. The long form: docs/building.md, "Another platform".
"""

from collections.abc import Callable

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.lock.base_image import ensure_base_image
from ngc_paddle.platforms import platform_named


def prepare(resolved: ResolvedFlavor, say: Callable[[str], None]) -> dict[str, str]:
    """Register qemu for the flavor's platform; return the base image of the build platform's os layer, keyed by
    that flavor's build name (the bake file's base_images)."""
    platform = platform_named(resolved.platform)
    say(f"==> {resolved.platform}: foreign to this host; its os and suite steps run under qemu-{platform.machine}, "
        "its pip layers install natively for it")
    engine.ensure_emulation(platform.machine)
    native = resolved.release_run.flavor(resolved.name)  # the flavor on its first (the default) platform
    lock = native.build_lock()
    components = native.spec.components
    base = ensure_base_image(components["os"], native.manifest.sources[components["python"].source], say,
                             lock.base.snapshot if lock.base.kind == "debootstrap" else None)
    return {native.build_name: base}
