"""toolchain/ensure-qemu.sh, as the lock (and a foreign build) call it through engine.ensure_emulation: nothing to
do for the host's own machine, one line naming the fix where binfmt_misc cannot be mounted or the machine is not
one qemu emulates. (Installing and registering qemu is checked where it runs: `make lock PLATFORMS=linux/arm64`.)"""

import platform
import subprocess
from pathlib import Path

import pytest

from ngc_paddle import engine
from ngc_paddle.host_errors import ToolchainError
from ngc_paddle.platforms import PLATFORMS

SCRIPT = Path(__file__).resolve().parents[2] / "toolchain" / "ensure-qemu.sh"


def _run(*args: str, binfmt: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "BINFMT_MISC": str(binfmt)})


def _foreign_machine() -> str:
    return next(p.machine for p in PLATFORMS.values() if p.machine != platform.machine())


def test_the_hosts_own_machine_needs_nothing(tmp_path: Path) -> None:
    proc = _run(platform.machine(), binfmt=tmp_path / "not-mounted")
    assert proc.returncode == 0 and proc.stderr == ""


def test_binfmt_misc_that_cannot_be_mounted_is_one_line_with_the_fix(tmp_path: Path) -> None:
    proc = _run(_foreign_machine(), binfmt=tmp_path / "no-such-folder")
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("[toolchain]")]
    assert len(lines) == 1 and lines[0].startswith("error: binfmt_misc ")
    assert "fix: " in lines[0] and f"binfmt_misc {tmp_path / 'no-such-folder'}" in lines[0]


def test_an_unknown_machine_is_one_line(tmp_path: Path) -> None:
    proc = _run("riscv99", binfmt=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("error: no qemu emulator for machine 'riscv99'; fix: name a machine "
                                   "qemu-user-static emulates (e.g. aarch64)")


def test_ensure_emulation_raises_the_scripts_line(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BINFMT_MISC", str(tmp_path / "no-such-folder"))
    with pytest.raises(ToolchainError, match=r"^binfmt_misc .*fix: "):
        engine.ensure_emulation(_foreign_machine())
    engine.ensure_emulation(platform.machine())  # the host's own: nothing to do, no error
