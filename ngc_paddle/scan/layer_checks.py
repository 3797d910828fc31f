"""Our own checks over every layer and the image config: keys, credentials, tokens, setuid, permissions.

Written here because they must see each layer separately (a key deleted in a later layer is still
in the image) and the build metadata (ENV, labels, the arguments recorded in the history), which
file scanners do not read as a whole.
"""

import re
import stat

from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.saved_image import Entry, SavedImage

PRIVATE_KEY = re.compile(rb"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----")
# Each pattern starts with a literal, so `re` jumps from one occurrence of it to the next: a leading
# `\b` or class makes every byte a start candidate (about 15x slower over the ~400 MB of file contents
# of a 2.4 GB image). `X(?<!\wX)` is `\bX` for a word character X, written literal-first.
CREDENTIALS = [
    ("aws-access-key-id", re.compile(rb"A(?<!\wA)(?:KIA|SIA)[0-9A-Z]{16}\b")),
    ("aws-secret-access-key", re.compile(rb"aws_secret_access_key\s*[=:]\s*[A-Za-z0-9/+=]{40}")),
    ("gcp-service-account", re.compile(rb'"type":\s*"service_account"')),
    ("github-token", re.compile(rb"gh(?<!\wgh)[pousr]_[A-Za-z0-9]{36}\b")),
    ("slack-token", re.compile(rb"xox(?<!\wxox)[baprs]-[A-Za-z0-9-]{10,}\b")),
]
# Names whose values must never be baked into ENV, labels or build arguments.
SECRET_NAME = re.compile(r"(?i)(password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)")
# Paths where package test suites ship throw-away keys on purpose are still reported: nothing is skipped.
CONTENT_LIMIT = 256 * 1024


def wants_content(path: str, size: int) -> bool:
    return size <= CONTENT_LIMIT and not path.startswith(("/usr/share/doc/", "/usr/share/man/"))


def scan_entry(e: Entry, setuid_allowed: set[str]) -> list[Finding]:
    """Findings of one entry of one layer (called for every entry as the layers stream past)."""
    findings: list[Finding] = []
    where = f"layer {e.layer.index} ({e.layer.name})"
    if e.type == "file":
        if e.mode & (stat.S_ISUID | stat.S_ISGID) and e.path not in setuid_allowed:
            bit = "setuid" if e.mode & stat.S_ISUID else "setgid"
            findings.append(Finding("setuid", f"{bit}-file", "HIGH", f"{bit} file not in the allowlist",
                                    package=e.path, location=where, source="layers"))
        if e.content is not None:
            if PRIVATE_KEY.search(e.content):
                findings.append(Finding("private-key", "private-key", "CRITICAL", "private key in a layer",
                                        package=e.path, location=where, source="layers"))
            for rule, pattern in CREDENTIALS:
                if pattern.search(e.content):
                    findings.append(Finding("credential", rule, "CRITICAL", f"{rule} in a layer",
                                            package=e.path, location=where, source="layers"))
    elif e.type == "dir" and e.mode & stat.S_IWOTH and not e.mode & stat.S_ISVTX:
        findings.append(Finding("world-writable", "world-writable-dir", "MEDIUM",
                                "world-writable directory without the sticky bit", package=e.path,
                                location=where, source="layers"))
    return findings


def scan_config(image: SavedImage) -> list[Finding]:
    findings = []
    for name, value in image.env.items():
        if SECRET_NAME.search(name) and value:
            findings.append(Finding("secret", "secret-in-env", "CRITICAL", f"ENV {name} carries a value",
                                    package=name, location="config Env", source="config"))
    for name, value in image.labels.items():
        if SECRET_NAME.search(name) and value:
            findings.append(Finding("secret", "secret-in-label", "CRITICAL", f"label {name} carries a value",
                                    package=name, location="config Labels", source="config"))
    for layer in image.layers:
        for name in re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)=\S", layer.created_by):
            if SECRET_NAME.search(name) and name != "LAYER_SPEC":
                findings.append(Finding("secret", "secret-in-build-args", "HIGH",
                                        f"build argument {name} is recorded in the image history",
                                        package=name, location=f"history of layer {layer.index}", source="config"))
        for rule, pattern in CREDENTIALS:
            if pattern.search(layer.created_by.encode()):
                findings.append(Finding("credential", rule, "CRITICAL", f"{rule} in the image history",
                                        location=f"history of layer {layer.index}", source="config"))
    if image.user in ("", "root", "0", "0:0"):
        findings.append(Finding("user", "runs-as-root", "LOW", "the image's USER is root", package=image.user,
                                location="config User", source="config"))
    return findings
