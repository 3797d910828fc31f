"""The one error shape of the project: `THING: what is wrong; fix: what to do`, one line, with its exit code.

Why: every bad input, on either side of the image boundary, ends in a single readable line on stderr
(printed as `error: LINE`) and an exit code that says what kind of failure it was. The host package's
errors (ngc_paddle/host_errors.py) derive from OneLineError; the image side raises InputError.
Standard library only.
"""

from pathlib import Path

from ngc_common.exit_codes import ExitCode


class OneLineError(Exception):
    """A failure the user can act on; `str()` is the one line (without `error: `)."""

    exit_code: ExitCode = ExitCode.BAD_INPUT


class InputError(OneLineError):
    """An input file or option of a command in the image (a gates file, a --baseline) is unusable: exit 2."""


def line(thing: Path | str, where: str, what: str, fix: str) -> str:
    """`THING: WHERE: what; fix: how` as one line, whatever whitespace (newlines included) the parts hold."""
    return " ".join(f"{thing}: {where}: {what}; fix: {fix}".split())


def shown(value: object, limit: int = 60) -> str:
    """A value as it may appear in an error line: repr, cut at `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
