"""Resolve the Debian packages the os layer installs, by installing them once in a throwaway container.

Why: the honest answer to "which packages and versions does the os layer add" is what apt installs
from the manifest's archive on the locked base (another platform's base: under emulation, apt of that
architecture). So the os layer's own install script runs in a
container of the base (`docker run --rm`, nothing is kept), and the dpkg database before and after
gives every package it adds or upgrades, which the build then installs pinned as `pkg=version`.
The venv it makes has no pip of Debian's: pip, setuptools and wheel are locked pip entries (pip_lock.py).
"""

from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.dpkg_status import DPKG_STATUS, installed
from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.check import apt_packages
from ngc_paddle.lock.layer_args import os_args
from ngc_paddle.lock.lock_file import DebianEntry
from ngc_paddle.lock.subject import LockSubject
from ngc_paddle.platforms import DEFAULT_PLATFORM

CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# dpkg's status file before and after the install, read by the one reader of it (ngc_paddle/dpkg_status.py)
SCRIPT = f"""set -euo pipefail
cp {DPKG_STATUS} /tmp/before
bash /tmp/ngc/layer/install.sh >&2
echo '=== before'; cat /tmp/before
echo '=== after'; cat {DPKG_STATUS}
"""


def parse_dpkg(text: str) -> list[DebianEntry]:
    """The installed packages of a dpkg status file's text, by name."""
    return sorted((DebianEntry(package=p.package, version=p.version, architecture=p.architecture)
                   for p in installed(text.encode())), key=lambda e: e.package)


def parse_output(text: str) -> tuple[list[DebianEntry], list[DebianEntry]]:
    """(base packages, packages the os layer adds or upgrades) from the container's output."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("=== "):
            current = line[4:].strip()
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    if set(sections) != {"before", "after"}:
        raise ManifestError("the os layer's trial install printed no package lists; fix: see the output above")
    before = parse_dpkg("\n".join(sections["before"]))
    after = parse_dpkg("\n".join(sections["after"]))
    known = {(e.package, e.version) for e in before}
    added = [e for e in after if (e.package, e.version) not in known]
    return before, added


def lock_debian(subject: LockSubject, base: str, root: Path):
    """Run the os layer's install on `base` in a throwaway container; return its package lists."""
    manifest, flavor, flavor_name = subject.manifest, subject.spec, subject.name
    args = os_args(manifest, flavor, base, None, apt_packages(flavor))  # no lock: the package names, unpinned
    # another platform's base runs under emulation (qemu, registered by toolchain/ensure-qemu.sh)
    flags = [] if subject.platform == DEFAULT_PLATFORM else ["--platform", subject.platform]
    flags += ["--network", "host", "-v", f"{(root / 'layers' / 'os').resolve()}:/tmp/ngc/layer:ro"]
    if CA_BUNDLE.is_file():
        flags += ["-v", f"{CA_BUNDLE}:/tmp/ngc/secrets/ca:ro"]  # where the os layer's build mounts its CA secret
    for key in ("APT_MIRROR", "APT_SUITE", "APT_SECURITY", "APT_PACKAGES", "APT_UPGRADE", "PYTHON_VERSION"):
        flags += ["-e", f"{key}={args[key]}"]
    proc = engine.run(base, "bash", "-c", SCRIPT, flags=flags, timeout=1800)
    if proc.returncode != 0:
        tail = [ln for ln in proc.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        raise ManifestError(f"releases/{manifest.release}.yaml: flavors.{flavor_name}.components.python: the os "
                            f"layer's packages could not be installed on {base} ({tail[0]}); fix: check "
                            f"sources.debian and the package names")
    return parse_output(proc.stdout)
