"""Where ngc-paddle keeps what outlives a checkout: the user's cache (XDG_CACHE_HOME, else ~/.cache), as trivy keeps
~/.cache/trivy. What is kept there is keyed by the digest of the code that made it, so any checkout may read it and
one with other code never does."""

import os
from pathlib import Path


def folder(name: str, env: str) -> Path:
    """The environment variable `env` where set, else ngc-paddle/`name` in the user's cache."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get(env) or base / "ngc-paddle" / name)
