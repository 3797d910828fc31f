"""A scratch copy of the repository whose images take another name.

Why: benchmarks and tests build and break images without touching the release's own tags; the
copy shares BuildKit's cache with the original, so unchanged layers stay cached.
"""

import re
import shutil
from pathlib import Path

IGNORED = (".git", ".venv", "build", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache", "bench-results")


def scratch_copy(source: Path, destination: Path, image: str) -> Path:
    """Copy the repository to `destination` with every manifest's `image:` set to `image`."""
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns(*IGNORED))
    for manifest in (destination / "releases").glob("*.yaml"):
        manifest.write_text(re.sub(r"(?m)^image: \S+$", f"image: {image}", manifest.read_text()))
    return destination
