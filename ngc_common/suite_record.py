"""The suite layer's record of its own files (sha256 each): written at build time, read by the suite, the
benchmarks and the scan before they judge.

Why: the judge ships inside the accused; a later layer that edits gates.yaml or a check would pass its own
gates. The suite and the benchmarks refuse a verdict (NOT PROVEN) when their files differ from this record;
the scan trusts only the copy in a layer whose diff id our build recorded (a rewritten record is its job).
The long form: docs/scanning.md, section `Our own files`. Standard library only.
"""

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from ngc_common import image_paths
from ngc_common.exit_codes import ExitCode

FORMAT = 1
RECORD_NAME = image_paths.SUITE_RECORD.rsplit("/", 1)[1]
SKIPPED_DIRS = frozenset({"__pycache__", ".pytest_cache"})  # what Python and pytest may write at run time


def default_roots() -> list[str]:
    """What the suite layer installs: /opt/ngc-paddle and this package in the image's Python."""
    return [image_paths.HOME, str(Path(__file__).resolve().parent)]


def skipped(path: str) -> bool:
    return path.endswith("/" + RECORD_NAME) or any(part in SKIPPED_DIRS for part in path.split("/"))


def under(path: str, roots: list[str]) -> bool:
    return any(path.startswith(root.rstrip("/") + "/") for root in roots)


def walk(roots: list[str]) -> dict[str, str]:
    """path -> sha256 hex of each regular file under `roots` (a symlink: `link:TARGET`), skipped ones left out."""
    found: dict[str, str] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
                path = os.path.join(folder, name)
                if skipped(path):
                    continue
                if os.path.islink(path):
                    found[path] = f"link:{os.readlink(path)}"
                elif os.path.isfile(path):
                    with open(path, "rb") as f:
                        found[path] = hashlib.file_digest(f, "sha256").hexdigest()
    return found


def write(path: str | None = None, roots: list[str] | None = None) -> dict:
    """Record every file under `roots` into `path` (sorted: the suite layer stays reproducible)."""
    roots = roots or default_roots()
    record = {"format": FORMAT, "roots": roots, "files": dict(sorted(walk(roots).items()))}
    Path(path or image_paths.SUITE_RECORD).write_text(json.dumps(record, indent=0, sort_keys=True) + "\n")
    return record


@dataclass(frozen=True)
class Difference:
    path: str
    what: str  # changed | removed | added


def parse(text: str | bytes) -> dict:
    """A record's content, checked for its shape; ValueError naming what is wrong."""
    record = json.loads(text)
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"not a format {FORMAT} suite record")
    roots, files = record.get("roots"), record.get("files")
    if not (isinstance(roots, list) and all(isinstance(r, str) and r.startswith("/") for r in roots)
            and isinstance(files, dict) and all(isinstance(v, str) for v in files.values())):
        raise ValueError("its roots or files are not lists of paths and digests")
    return record


def differences(record: dict, found: dict[str, str]) -> list[Difference]:
    """Each recorded file that is changed or gone, and each file under the record's roots it does not list."""
    files = record["files"]
    out = [Difference(p, "removed" if p not in found else "changed") for p, digest in files.items()
           if found.get(p) != digest]
    out += [Difference(p, "added") for p in found if p not in files and not skipped(p)]
    return sorted(out, key=lambda d: d.path)


def refusal(code_file: str) -> str | None:
    """Why a verdict of the code at `code_file` would not be proven (its own files differ from the image's
    record), or None. Code outside the image's suite (the host's checkout) is not held to it."""
    if not under(str(Path(code_file).resolve()), [image_paths.HOME]):
        return None
    record_path = image_paths.SUITE_RECORD
    fix = "fix: run the image as its build made it (rebuild it, or use the released image)"
    try:
        record = parse(Path(record_path).read_bytes())
    except (OSError, ValueError) as exc:
        return f"NOT PROVEN: {record_path}: the suite's record of its own files is unreadable ({exc}); {fix}"
    found = differences(record, walk(record["roots"]))
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (f"NOT PROVEN: {found[0].path}: {found[0].what} since the image was built (not as {record_path} "
            f"records it){more}; the suite does not judge an image whose judge was changed; {fix}")


def refuse_if_changed(code_file: str) -> None:
    """Exit NOT PROVEN (3) with one line when refusal() names a file."""
    line = refusal(code_file)
    if line is not None:
        print(line, file=sys.stderr)
        sys.exit(ExitCode.NOT_PROVEN)


if __name__ == "__main__":  # the suite layer: python -B -m ngc_common.suite_record write
    if sys.argv[1:] != ["write"]:
        sys.exit(f"usage: python -m ngc_common.suite_record write (records {image_paths.SUITE_RECORD})")
    print(f"suite record: {len(write()['files'])} files -> {image_paths.SUITE_RECORD}")
