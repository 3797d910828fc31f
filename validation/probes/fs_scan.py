"""One walk over the image's filesystem for the hygiene checks (JSON).

Finds package caches, apt lists, orphaned bytecode, build secrets, private keys and credentials, .git
folders, core files, setuid/setgid files (and whether each is the file dpkg installed), world-writable
files and folders without the sticky bit, and the folders this uid could not read. What counts as a key
or a credential is ngc_common/secret_patterns.py (the scan gate's own module, installed in the image); what is
allowed (setuid paths, key fixtures) is /opt/ngc-paddle/security/policy.yaml, the gate's policy.
"""

import contextlib
import hashlib
import json
import os
import re
import stat
from pathlib import Path

import yaml

# The scan gate's own patterns: installed in the image (in a layer image, copied beside this probe by the host).
from ngc_common import image_paths
from ngc_common import secret_patterns as patterns

SKIP = ("/proc", "/sys", "/dev", "/run/secrets/kubernetes.io")
CACHE_DIRS = ("/.cache/pip", "/.cache/uv", "/.cache/pypoetry", "/var/cache/apt/archives", "/.npm/_cacache",
              "/.conda/pkgs")
POLICY = os.environ.get("NGC_PADDLE_POLICY", image_paths.POLICY)
SMALL = 256 * 1024


def load_policy(path: str) -> dict:
    data = yaml.safe_load(Path(path).read_text()) or {}
    return {"setuid_allowed": sorted(data.get("setuid_allowed") or []),
            "key_fixtures": {d: k["reason"] for k in data.get("key_fixtures") or [] for d in k["sha256"]}}


def dpkg_md5sums() -> dict[str, str]:
    recorded: dict[str, str] = {}
    for md5sums in Path("/var/lib/dpkg/info").glob("*.md5sums"):
        with contextlib.suppress(OSError):
            recorded.update(patterns.parse_md5sums(md5sums.read_bytes()))
    return recorded


def content_scan(path: str, size: int, want_md5: bool) -> tuple[set[str], set[str], str | None]:
    """Rule hits, digests of the private-key blocks and md5 of one file, read whole when small, else in chunks."""
    with open(path, "rb") as fh:
        if size <= SMALL:
            data = fh.read()
            hits = patterns.buffer_hits(data, path)
            keys = patterns.key_digests(data) if "private-key" in hits else set()
            return hits, keys, hashlib.md5(data).hexdigest() if want_md5 else None
        scan = patterns.StreamScan(path, ("md5",) if want_md5 else ())
        while chunk := fh.read(patterns.CHUNK):
            scan.feed(chunk)
        return scan.hits, scan.keys, scan.digest("md5") if want_md5 else None


def main() -> None:
    policy = load_policy(POLICY)
    allowed = set(policy["setuid_allowed"])
    found: dict[str, list[str]] = {k: [] for k in (
        "package_caches", "apt_lists", "orphan_bytecode", "build_secrets", "private_keys", "key_fixtures",
        "credentials", "git_dirs", "core_files", "setuid", "setgid", "setuid_modified", "world_writable_dirs",
        "world_writable_files", "unreadable")}
    special: list[tuple[str, str]] = []  # (path, md5) of allowlisted setuid/setgid files
    for root, dirs, files in os.walk("/", topdown=True, onerror=lambda e: found["unreadable"].append(e.filename)):
        dirs[:] = [d for d in dirs if not os.path.join(root, d).startswith(SKIP)]
        if root == "/":
            dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(root, d)) or d in ("workspace",)]
        _check_dirs(root, dirs, found)
        for name in files:
            _check_file(root, name, policy, allowed, found, special)
    if special:
        _check_special(special, found)
    result = {k: sorted(v) for k, v in found.items()}
    result["setuid_allowed"] = policy["setuid_allowed"]
    result["uid"] = os.getuid()
    print(json.dumps(result))


def _check_dirs(root: str, dirs: list[str], found: dict[str, list[str]]) -> None:
    """A folder's sub-folders: git checkouts, and world-writable folders without the sticky bit."""
    for d in list(dirs):
        path = os.path.join(root, d)
        if d == ".git":
            found["git_dirs"].append(path)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
            found["world_writable_dirs"].append(path)


def _check_file(root: str, name: str, policy: dict, allowed: set[str], found: dict[str, list[str]],
                special: list[tuple[str, str]]) -> None:
    """One regular file: its mode bits and where it lies (caches, apt lists, secrets, core dumps, orphan bytecode),
    then its content; an allowlisted setuid/setgid file's md5 goes to `special`."""
    path = os.path.join(root, name)
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        return
    if st.st_mode & stat.S_IWOTH:
        found["world_writable_files"].append(path)
    for bit, key in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid")):
        if st.st_mode & bit:
            found[key].append(path)
    if any(marker in path for marker in CACHE_DIRS) and not name.endswith(".lock") and name != "lock":
        found["package_caches"].append(path)
    if path.startswith("/var/lib/apt/lists/") and name != "lock":
        found["apt_lists"].append(path)
    if path.startswith("/run/secrets/"):
        found["build_secrets"].append(path)
    if re.fullmatch(r"core(\.\d+)?", name):
        found["core_files"].append(path)
    if name.endswith(".pyc") and os.path.basename(root) == "__pycache__":
        source = os.path.join(os.path.dirname(root), name.split(".")[0] + ".py")
        if not os.path.exists(source):
            found["orphan_bytecode"].append(path)
        return
    is_special = bool(st.st_mode & (stat.S_ISUID | stat.S_ISGID)) and path in allowed
    try:
        hits, keys, md5 = content_scan(path, st.st_size, is_special)
    except OSError:
        found["unreadable"].append(path)
        return
    if is_special:
        special.append((path, md5 or ""))
    for rule in sorted(hits):
        fixture = patterns.is_fixture(keys, policy["key_fixtures"]) if rule == "private-key" else None
        if fixture:
            found["key_fixtures"].append(f"{path} ({fixture})")
        elif rule == "private-key":
            found["private_keys"].append(path)
        else:
            found["credentials"].append(f"{path} ({rule})")


def _check_special(special: list[tuple[str, str]], found: dict[str, list[str]]) -> None:
    """Each allowlisted setuid/setgid file against the md5 its package's install recorded."""
    recorded = dpkg_md5sums()
    for path, md5 in special:
        expected = next((recorded[n] for n in patterns.dpkg_names(path) if n in recorded), None)
        if expected != md5:
            found["setuid_modified"].append(f"{path} (not the file its package installed: dpkg md5sums)")


if __name__ == "__main__":
    main()
