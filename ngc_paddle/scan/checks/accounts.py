"""Privilege and account hygiene of the final image: passwd, shadow, group, sudoers, authorized_keys, USER.

Why: a root with an empty password hash, a second uid 0, a `NOPASSWD: ALL` rule, a world-readable shadow or
an authorized_keys for root is a way into the container that no package scanner reports, and an image that
runs as root although its release says uid 1000 gives every process root. The files are read as the final
image has them (the upper layer's copy wins, whiteouts remove), each problem is a `privilege` finding
naming the file and the rule. Known default passwords are tried with the system's crypt(3) (Python's
`crypt` module, bounded: a few accounts, a few words, no costly hash parameters).
"""

import re
import stat
import warnings
from dataclasses import dataclass

from ngc_paddle.scan.findings import Finding

FILES = {"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/etc/sudoers"}
SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d/")  # never readable by others
SUDOERS_D = "/etc/sudoers.d/"
AUTHORIZED_KEYS = re.compile(r"(/\.ssh/authorized_keys2?|/etc/ssh/authorized_keys[^/]*(/[^/]+)?)$")
PRIVILEGED_GROUPS = {"root", "sudo", "wheel", "admin", "shadow", "disk", "docker"}
DEFAULT_PASSWORDS = ("root", "toor", "password", "changeme", "admin", "123456", "12345678", "letmein", "docker",
                     "debian", "ubuntu", "nvidia", "paddle", "user", "test", "secret")
MAX_HASHED_ACCOUNTS = 20
COSTLY = re.compile(r"rounds=([0-9]+)")


def wants(path: str) -> bool:
    return path in FILES or path.startswith(SUDOERS_D) or bool(AUTHORIZED_KEYS.search(path))


@dataclass
class File:
    """A file as the final image has it, and the layer that wrote it."""

    path: str
    mode: int
    content: bytes | None
    where: str  # e.g. "layer 3 (paddle)"


def _lines(content: bytes | None) -> list[list[str]]:
    text = (content or b"").decode("utf-8", "replace")
    return [line.split(":") for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _finding(rule: str, severity: str, title: str, f: File, account: str = "") -> Finding:
    return Finding("privilege", rule, severity, title, package=f.path, installed=account, location=f.where,
                   source="accounts")


def _crypt(word: str, hashed: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt  # the system's crypt(3): sha512, yescrypt, ...; removed from Python 3.13
        return crypt.crypt(word, hashed) == hashed
    except (ImportError, OSError, ValueError):
        return False


def _default_password(name: str, hashed: str) -> str | None:
    match = COSTLY.search(hashed)
    if match and int(match.group(1)) > 100_000:
        return None
    return next((w for w in (*DEFAULT_PASSWORDS, name) if _crypt(w, hashed)), None)


def check(files: dict[str, File]) -> list[Finding]:
    """Every account problem of the final image's account files, sudoers and authorized_keys."""
    findings: list[Finding] = []
    passwd, shadow, group = files.get("/etc/passwd"), files.get("/etc/shadow"), files.get("/etc/group")
    for fields in _lines(passwd.content) if passwd else []:
        if len(fields) < 4:
            continue
        name, password, uid = fields[0], fields[1], fields[2]
        if uid.strip() == "0" and name != "root":
            findings.append(_finding("uid0-account", "CRITICAL", f"account {name} has uid 0 (a second root)",
                                     passwd, name))
        if password == "":
            findings.append(_finding("empty-password", "CRITICAL", f"account {name} needs no password (empty "
                                     "password field in /etc/passwd)", passwd, name))
    hashed = 0
    for fields in _lines(shadow.content) if shadow else []:
        if len(fields) < 2:
            continue
        name, value = fields[0], fields[1]
        if value == "":
            findings.append(_finding("empty-password-hash", "CRITICAL", f"account {name} has an empty password "
                                     "hash: it logs in without a password", shadow, name))
        elif value.startswith("$") and hashed < MAX_HASHED_ACCOUNTS:
            hashed += 1
            word = _default_password(name, value)
            if word is not None:
                findings.append(_finding("default-password", "CRITICAL", f"account {name} has a known default "
                                         f"password ({word[:2]}...)", shadow, name))
    members = {}
    for fields in _lines(group.content) if group else []:
        if len(fields) >= 4:
            members[fields[0]] = [m for m in fields[3].split(",") if m.strip()]
    for name in sorted(PRIVILEGED_GROUPS & members.keys()):
        for member in members[name]:
            if member != "root":
                findings.append(_finding("privileged-group", "HIGH", f"account {member} is a member of group "
                                         f"{name}", group, member))
    for path, f in sorted(files.items()):
        if path.startswith(SECRET_FILES) and f.mode & (stat.S_IROTH | stat.S_IWOTH) and f.content is not None:
            how = "world-writable" if f.mode & stat.S_IWOTH else "world-readable"
            findings.append(_finding("sensitive-file-mode", "CRITICAL", f"{path} is {how} "
                                     f"(mode {stat.S_IMODE(f.mode):04o})", f))
        if (path == "/etc/sudoers" or path.startswith(SUDOERS_D)) and f.content is not None:
            for rule in sudo_rules(f.content):
                findings.append(_finding("sudo-nopasswd", "CRITICAL", f"sudo without a password: {rule[:80]}", f))
        if AUTHORIZED_KEYS.search(path) and f.content is not None and _lines(f.content):
            findings.append(_finding("authorized-keys", "HIGH", "an authorized_keys file lets a key holder log in",
                                     f))
    return findings


def sudo_rules(content: bytes) -> list[str]:
    """The sudoers rules that skip the password (NOPASSWD:, `Defaults !authenticate`), continuation lines joined."""
    text = content.decode("utf-8", "replace").replace("\\\n", " ")
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(("#include", "@include")):
            continue
        line = re.sub(r"(^|\s)#(?![0-9]).*$", "", line).strip()  # "#1000" is a uid, not a comment
        if "NOPASSWD" in line or re.search(r"!\s*authenticate\b", line):
            rules.append(" ".join(line.split()))
    return rules


def runtime_user(config_user: str, files: dict[str, File]) -> tuple[int | None, int | None, str]:
    """(uid, gid or None, as shown) of the image's USER, a name looked up in its /etc/passwd."""
    user, _, group = (config_user or "root").partition(":")
    passwd = {f[0]: f for f in _lines(files["/etc/passwd"].content)} if "/etc/passwd" in files else {}
    groups = {f[0]: f for f in _lines(files["/etc/group"].content)} if "/etc/group" in files else {}

    def number(value: str, table: dict, column: int) -> int | None:
        if value.isdigit():
            return int(value)
        entry = table.get(value)
        return int(entry[column]) if entry and len(entry) > column and entry[column].isdigit() else None

    uid = number(user or "root", passwd, 2)
    gid = number(group, groups, 2) if group else None
    return uid, gid, config_user or "root (no USER)"
