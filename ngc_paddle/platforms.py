"""The platforms an image is built for (linux/amd64, linux/arm64) and what each one is called by each tool.

Why: one platform has a name per tool: docker and BuildKit say linux/arm64, Debian's dpkg arm64, the kernel,
pip's manylinux tags and qemu aarch64. The manifest, the locks, pip's resolution, the Debian trial install and
the toolchain all take these names from here. linux/amd64 is the platform a manifest's `version:` pins and whose
lock keeps the plain name (releases/YY.MM-FLAVOR.lock.json); another platform's lock carries its Debian name
(releases/YY.MM-FLAVOR.arm64.lock.json: a flavor's name holds no '.').
The long form: docs/architecture.md, section "Platforms".
"""

import platform as host
from dataclasses import dataclass


@dataclass(frozen=True)
class Platform:
    name: str  # as docker, BuildKit and OCI image indexes name it: linux/arm64
    debian_arch: str  # dpkg's architecture: arm64
    machine: str  # the kernel's (uname -m), pip's manylinux tags' and qemu's: aarch64

    @property
    def qualifier(self) -> str:
        """What a file or tag made for this platform adds to its name: '' for the default platform (its lock and base
        keep the names they had before there were platforms), the Debian name for another (arm64)."""
        return "" if self.name == DEFAULT_PLATFORM else self.debian_arch


PLATFORMS: dict[str, Platform] = {p.name: p for p in (Platform("linux/amd64", "amd64", "x86_64"),
                                                      Platform("linux/arm64", "arm64", "aarch64"))}
DEFAULT_PLATFORM = "linux/amd64"  # what a flavor builds when its manifest names no platforms (releases before 26.12)
KNOWN = ", ".join(PLATFORMS)


def platform_named(name: str) -> Platform:
    """The platform of a docker name; a ValueError naming the known ones for any other."""
    try:
        return PLATFORMS[name]
    except KeyError:
        raise ValueError(f"{name!r} is not a known platform ({KNOWN})") from None


def host_platform() -> Platform | None:
    """The platform this machine runs natively (None on a machine no image is built for)."""
    machine = host.machine()
    return next((p for p in PLATFORMS.values() if p.machine == machine or p.debian_arch == machine), None)


def host_or_default() -> str:
    """The name of this machine's platform, or of the default one on a machine no image is built for: what a job run
    on this host itself (no fleet file, bench-compare) runs."""
    native = host_platform()
    return native.name if native else DEFAULT_PLATFORM


def foreign(name: str) -> bool:
    """Whether running a program of this platform here needs emulation (qemu, toolchain/ensure-qemu.sh)."""
    native = host_platform()
    return native is None or native.name != name
