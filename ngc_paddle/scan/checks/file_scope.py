"""What the integrity check keeps of each file in the layer walk (layer_facts.scan_layer), cached per layer.

Why a module of its own: the per-layer cache is keyed by a digest of the code that gathers the facts
(layer_cache.fact_sources()); this is that code for the integrity check (which files, which digest, which header),
while the judgement (integrity.py, package_records.py, bytecode.py) runs on cached facts every scan and can
change without reading a layer again.
"""

import re

from ngc_paddle.scan.source.saved_image import Entry

DPKG_INFO = "/var/lib/dpkg/info/"
# The system's paths: where packages install and what runs. Data folders (/var/lib, /var/cache, /var/log),
# /tmp, /workspace and homes (but their shell start files) are the running image's, not its software.
# In a home, the files that run code when a shell or Python starts, and those that point package tools at their
# sources (pip, npm, yarn, conda, uv, distutils, git's url rewrites): a user's own is as good as /etc's.
HOME_FILES = (r"\.(bashrc|profile|bash_profile|bash_login|bash_logout|zshrc|zshenv|zprofile|zlogin|pam_environment"
              r"|npmrc|yarnrc|condarc|pydistutils\.cfg|gitconfig|pip/pip\.(conf|ini)"
              r"|config/(pip/pip\.conf|uv/uv\.toml|git/config)|local/lib/python3[^/]*/site-packages/.+)$")
ROOTS = re.compile(r"^/(etc|usr|bin|sbin|lib|lib32|lib64|libx32|opt|var/spool/cron)/"
                   r"|^/(root|home/[^/]+)/" + HOME_FILES)
VENV_TREES = ("/opt/",)  # pip's side: sha256 (RECORD's hash) instead of md5 (dpkg's)


def in_scope(path: str) -> bool:
    return bool(ROOTS.search(path))


def wants_md5(path: str) -> bool:
    """A file dpkg may own (its md5sums give md5); pip's trees are compared by sha256 (layer_facts.hashes);
    of compiled Python only the header is kept (bytecode.py)."""
    return in_scope(path) and not path.startswith(VENV_TREES) and not path.endswith(".pyc")


def wants_sha256(path: str) -> bool:
    return in_scope(path) and path.startswith(VENV_TREES)


def captured(path: str) -> bool:
    """dpkg's records of what each package owns (the md5sums are captured already, the status by the inventory)."""
    return (path.startswith(DPKG_INFO) and path.endswith(".list")) or path == "/var/lib/dpkg/diversions"


def entry(e: Entry, digest: str, head: bytes) -> list | None:
    """A file's integrity facts (LayerFacts.integrity): [file, digest, ""] (a Python source also its mtime and
    size), [pyc, its header as hex, ""], [symlink | hardlink, "", target]; None for anything else."""
    if e.type == "file":
        if e.path.endswith(".pyc"):
            return ["pyc", head.hex(), ""]
        return ["file", digest, "", e.mtime, e.size] if e.path.endswith(".py") else ["file", digest, ""]
    if e.type == "symlink" or (e.type == "other" and e.link):
        return ["symlink" if e.type == "symlink" else "hardlink", "", e.link]
    return None
