"""Startup hooks: files that run by themselves (profile scripts, cron, systemd units, entrypoint parts, Python
.pth and sitecustomize), and which of them the image did not get from its own sources.

Why: a script in /etc/profile.d/ or /etc/cron.d/ that fetches a URL into a shell runs whatever that URL
serves, every time, and nothing else in the gate looks at it. A hook is the image's own when dpkg installed
it unchanged (its md5sums or the Conffiles of its status), when it is this repository's own entrypoint part
(image/entrypoint.sh, image/entrypoint.d/), or, for a Python .pth or sitecustomize, when an installed
distribution's RECORD lists it with that hash. Any other hook is a `startup-hook` finding; a hook (ours or
not) that downloads and runs code is `remote-exec`, which blocks.
"""

import hashlib
import re
from pathlib import Path

from ngc_common.secret_patterns import dpkg_names
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import record_hash
from ngc_paddle.scan.source.saved_image import BASE, Layer

HOOK_PATHS = re.compile(
    r"^/etc/(profile|bash\.bashrc|environment|ld\.so\.preload|rc\.local|crontab)$"
    r"|^/etc/(profile\.d|init\.d|cron\.[a-z]+|systemd/system|xdg/autostart)/"
    r"|^/(usr/)?lib/systemd/system/|^/var/spool/cron/"
    r"|^/opt/ngc-paddle/entrypoint(\.sh$|\.d/)|^/(docker-entrypoint|entrypoint)\.d/"
    r"|^/(root|home/[^/]+)/\.(bashrc|profile|bash_profile|bash_login|bash_logout|zshrc|zshenv|zprofile|zlogin"
    r"|pam_environment)$"
    r"|/(sitecustomize|usercustomize)\.py$|^/etc/python3[^/]*/sitecustomize\.py$"
    r"|/(site|dist)-packages/[^/]+\.pth$")
OWN_PARTS = {"/opt/ngc-paddle/entrypoint.sh": "image/entrypoint.sh"}  # + /opt/ngc-paddle/entrypoint.d/* below
# Fetch and execute: a download piped or substituted into a shell or an interpreter, or exec of a URL's body.
REMOTE_EXEC = re.compile(
    r"(curl|wget|fetch)\b[^\n]*\|\s*(sudo\s+)?(env\s+\S+\s+)?(ba|da|z|k)?sh\b"
    r"|(curl|wget|fetch)\b[^\n]*\|\s*(sudo\s+)?python[0-9.]*\b"
    r"|\b(ba|da|z|k)?sh\s+(-c\s+)?[\"']?(\$\(|`)\s*(curl|wget)\b"
    r"|\b(ba|da|z|k)?sh\s+<\(\s*(curl|wget)\b"
    r"|\b(source|\.)\s+<\(\s*(curl|wget)\b"
    r"|\beval\s+[\"']?(\$\(|`)\s*(curl|wget)\b"
    r"|(exec|eval)\s*\([^\n]*(urlopen|urllib\.request|requests\.get|http\.client)"
    r"|(curl|wget)\b[^\n]*(-o|-O|--output)\s*\S+[^\n]*(&&|;)\s*(ba|da|z|k)?sh\s")


def wants(path: str) -> bool:
    return bool(HOOK_PATHS.search(path))


def inert(content: bytes) -> bool:
    """A hook with nothing in it but blank lines and comments (libpam's empty /etc/environment) runs nothing."""
    return all(not line.strip() or line.lstrip().startswith(b"#") for line in content.splitlines())


SKEL = re.compile(r"^/(root|home/[^/]+)/(\.[a-z_]+)$")


def remote_exec(content: bytes) -> str | None:
    """The first fetch-and-execute line of a hook, if any."""
    match = REMOTE_EXEC.search(content.decode("utf-8", "replace"))
    if not match:
        return None
    text = content.decode("utf-8", "replace")
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return " ".join(text[start: end if end >= 0 else len(text)].split())[:120]


def own_parts(root: Path) -> dict[str, str]:
    """This repository's own startup parts as the image holds them: image path -> md5 of the repository's file."""
    parts = dict(OWN_PARTS)
    for part in sorted((root / "image" / "entrypoint.d").glob("*")):
        parts[f"/opt/ngc-paddle/entrypoint.d/{part.name}"] = f"image/entrypoint.d/{part.name}"
    return {path: hashlib.md5((root / rel).read_bytes()).hexdigest() for path, rel in parts.items()
            if (root / rel).is_file()}


def check(hooks: dict[str, tuple[bytes | None, Layer]], dpkg_md5: dict[str, str], record_hashes: dict[str, str],
          own: dict[str, str], skel: dict[str, bytes] | None = None) -> list[Finding]:
    """`hooks`: hook path -> (content, the layer that wrote it); `dpkg_md5`: /path -> md5 dpkg recorded (md5sums
    and Conffiles); `record_hashes`: /path -> the sha256 (RECORD form) an installed distribution's RECORD gives
    it; `own`: this repository's parts (own_parts); `skel`: the image's /etc/skel files by name (useradd copies
    them into a new home). The base layer's hooks are the distribution's own (its maintainer scripts write
    /etc/profile, /root/.bashrc, which dpkg does not track), and so is a hook with nothing in it."""
    findings = []
    for path, (content, layer) in sorted(hooks.items()):
        if content is None:
            continue
        where = layer.where
        line = remote_exec(content)
        if line:
            findings.append(Finding("remote-exec", "fetch-and-execute", "CRITICAL",
                                    f"a startup hook downloads and runs code: {line}", package=path, location=where,
                                    source="hooks"))
        md5 = hashlib.md5(content).hexdigest()
        recorded = next((dpkg_md5["/" + n] for n in dpkg_names(path) if "/" + n in dpkg_md5), None)
        if recorded == md5 or own.get(path) == md5 or (layer.name == BASE and recorded is None) or inert(content):
            continue
        copied = SKEL.match(path)
        if copied and (skel or {}).get(copied.group(2)) == content:
            continue
        if path in record_hashes and record_hashes[path] == record_hash(hashlib.sha256(content).digest()):
            continue
        why = ("differs from the file dpkg installed" if recorded is not None else
               "differs from this repository's file" if path in own else
               "differs from its distribution's RECORD" if path in record_hashes else
               "not installed by a Debian package, a locked distribution or this repository")
        findings.append(Finding("startup-hook", "startup-hook-added", "MEDIUM", f"startup hook {why}",
                                package=path, location=where, source="hooks"))
    return findings
