"""Whether this process runs under a user-mode emulator (qemu-user: an arm64 image on an x86-64 host, or the reverse).

Why: a figure measured under qemu says nothing about the image's speed, so validation and the benchmarks must know
they run emulated and call their performance verdicts NOT PROVEN. `uname -m` cannot tell: qemu-user reports the
guest's machine (aarch64). The binfmt_misc registration (/proc/sys/fs/binfmt_misc/qemu-aarch64) is not mounted in a
container, and on the host it only says qemu could run a foreign program, not that this one is. What qemu-user does
not translate is /proc/cpuinfo: it shows the host's CPU. A machine whose /proc/cpuinfo describes another
architecture's CPU (x86 `vendor_id`/`flags` under aarch64, Arm's `CPU implementer` under x86_64) is emulated.
Standard library only: the in-image suite, the benchmarks and the host's tools import it.
"""

import platform
from dataclasses import dataclass
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# The /proc/cpuinfo fields only one architecture's kernel writes.
X86_FIELDS = ("vendor_id", "flags")
ARM_FIELDS = ("CPU implementer", "Features")
# How much longer a check's time budget is under emulation: `import paddle, paddle2onnx, onnxruntime, nvidia.dali`
# took 39 s under qemu-aarch64 on this 2-core x86-64 host (about 4 s natively), and a budget exists to catch a hang,
# not to judge speed.
SLOWDOWN = 10
ARM_MACHINES = ("aarch64", "arm64", "armv7l", "armv8l")
X86_MACHINES = ("x86_64", "AMD64", "i686")


@dataclass(frozen=True)
class Emulation:
    machine: str  # what programs here are built for (uname -m as qemu reports it: the guest's)
    host: str | None  # the architecture of the CPU /proc/cpuinfo describes, when it is another one (emulated)

    @property
    def emulated(self) -> bool:
        return self.host is not None

    def reason(self) -> str | None:
        """The one line a NOT PROVEN verdict gives for a run under emulation; None for a native run."""
        if self.host is None:
            return None
        return (f"emulated: {self.machine} programs run under qemu-user on a {self.host} CPU, so timings measure the "
                "emulator, not the image; run on a native host to prove performance")


def budget(seconds: int, emulated: bool) -> int:
    """A time budget (a hang's limit) for a run that is emulated or not."""
    return seconds * SLOWDOWN if emulated else seconds


def guest_argv(argv: list[bytes]) -> list[bytes]:
    """A process's command line (/proc/PID/cmdline) as the emulated program has it: binfmt_misc starts a foreign
    program as `QEMU PATH [ARGV0] ARGS...` (with the P flag, PATH and the preserved argv[0]), and under qemu-user
    /proc/1/cmdline shows that; a command line that does not start with a qemu interpreter is returned as it is."""
    if not argv or b"qemu" not in argv[0]:
        return argv
    rest = argv[1:]
    return rest[1:] if len(rest) > 1 and rest[0] == rest[1] else rest


def fields_of(cpuinfo: str) -> set[str]:
    """The field names of /proc/cpuinfo."""
    return {row.partition(":")[0].strip() for row in cpuinfo.splitlines() if ":" in row}


def detect(cpuinfo: str | None = None, machine: str | None = None) -> Emulation:
    """This process's emulation (arguments: for tests; defaults read this machine). An unreadable or empty
    /proc/cpuinfo, or a machine of a third architecture, is taken as native: only positive evidence counts."""
    machine = machine or platform.machine()
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    names = fields_of(cpuinfo)
    if machine in ARM_MACHINES and any(f in names for f in X86_FIELDS) and "CPU implementer" not in names:
        return Emulation(machine, "x86_64")
    if machine in X86_MACHINES and "CPU implementer" in names and "vendor_id" not in names:
        return Emulation(machine, "aarch64")
    return Emulation(machine, None)


if __name__ == "__main__":
    found = detect()
    print(found.reason() or f"native: {found.machine}")
