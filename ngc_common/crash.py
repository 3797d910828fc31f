"""An unexpected exception ends in one line and exit 4, its traceback kept in a file named in that line.

Why: exit 1 means "a gate failed", 2 "bad input" and 3 "not proven"; a crash must read as none of
them. A traceback on the console is not the project's error shape either, so it goes to a new
file (never over another: in the results folder, which outlives a `docker run --rm`, else the
temp folder), and the line says where, for the bug report. Used by every entry point: the host's
`ngc-paddle`, and in the image `validate`, `bench-rn50` and `bench-hgnet`. Standard library only.
"""

import sys
import tempfile
import traceback
from pathlib import Path

from ngc_common.exit_codes import ExitCode


def save_traceback(exc: BaseException, prog: str, folders: list[Path]) -> Path | None:
    """Write the traceback to a new file in the first folder that takes it; None when none does."""
    text = "".join(traceback.format_exception(exc))
    for folder in [*folders, Path(tempfile.gettempdir())]:
        try:
            fd, name = tempfile.mkstemp(prefix=f"{prog}-internal-error-", suffix=".txt", dir=folder)
        except OSError:
            continue
        with open(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
        return Path(name)
    return None


def report(exc: BaseException, prog: str, folders: list[Path] | None = None) -> ExitCode:
    """Print `error: internal error: TYPE: message; fix: ...` on stderr and return ExitCode.INTERNAL."""
    where = save_traceback(exc, prog, folders or [])
    shown = " ".join(f"{type(exc).__name__}: {exc}".split())
    shown = shown if len(shown) <= 300 else shown[:297] + "..."
    fix = f"report this with the traceback in {where}" if where else "report this (the traceback could not be saved)"
    print(f"error: internal error: {shown}; fix: {fix}", file=sys.stderr)
    return ExitCode.INTERNAL
