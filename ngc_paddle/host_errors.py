"""Errors the command line turns into one line and an exit code.

Why: every bad input must end in a single readable line naming the thing and the fix, and a
non-zero exit that callers (make, CI, the release pipeline) can tell apart. The line's shape and the
exit codes are ngc_common's, shared with the commands in the image.
"""

from ngc_common.errors import OneLineError
from ngc_common.exit_codes import ExitCode


class NgcPaddleError(OneLineError):
    """A failure the user can act on; `str()` is the one-line message (exit 2 unless a subclass says otherwise)."""


class ManifestError(NgcPaddleError):
    """The release manifest is missing, malformed or inconsistent."""


class ToolchainError(NgcPaddleError):
    """The Docker engine, buildx or the base image cannot be made ready."""


class Failed(NgcPaddleError):
    """A build, check or gate ran and failed (exit 1), as opposed to bad input (exit 2)."""

    exit_code = ExitCode.FAIL


class BuildError(Failed):
    """A layer failed to build; the release tag was left where it was."""


class NotProven(NgcPaddleError):
    """A verdict rests on checks that could not run (e.g. GPU checks without a GPU): not a pass."""

    exit_code = ExitCode.NOT_PROVEN
