"""One walk over the image's filesystem for the hygiene checks (JSON).

Finds package caches, apt lists, orphaned bytecode, build secrets, private keys, .git folders,
core files, setuid/setgid files and world-writable directories without the sticky bit.
"""

import json
import os
import re
import stat

SKIP = ("/proc", "/sys", "/dev", "/run/secrets/kubernetes.io")
KEY_RE = re.compile(rb"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED )?PRIVATE KEY-----")
CACHE_DIRS = ("/.cache/pip", "/.cache/uv", "/.cache/pypoetry", "/var/cache/apt/archives", "/.npm/_cacache",
              "/.conda/pkgs")
MAX_CONTENT = 256 * 1024


def main() -> None:
    found: dict[str, list[str]] = {k: [] for k in (
        "package_caches", "apt_lists", "orphan_bytecode", "build_secrets", "private_keys", "git_dirs",
        "core_files", "setuid", "setgid", "world_writable_dirs")}
    for root, dirs, files in os.walk("/", topdown=True):
        dirs[:] = [d for d in dirs if not os.path.join(root, d).startswith(SKIP)]
        if root == "/":
            dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(root, d)) or d in ("workspace",)]
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
        for name in files:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_mode & stat.S_ISUID:
                found["setuid"].append(path)
            if st.st_mode & stat.S_ISGID:
                found["setgid"].append(path)
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
            elif st.st_size <= MAX_CONTENT and not path.startswith(("/usr/share/", "/var/lib/dpkg/")):
                try:
                    with open(path, "rb") as fh:
                        if KEY_RE.search(fh.read()):
                            found["private_keys"].append(path)
                except OSError:
                    pass
    print(json.dumps({k: sorted(v) for k, v in found.items()}))


if __name__ == "__main__":
    main()
