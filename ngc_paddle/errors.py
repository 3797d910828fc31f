"""Errors the command line turns into one line and an exit code.

Why: every bad input must end in a single readable line naming the thing and the fix, and a
non-zero exit that callers (make, CI, the release pipeline) can tell apart.
"""


class NgcPaddleError(Exception):
    """A failure the user can act on; `str()` is the one-line message."""

    exit_code = 2


class ManifestError(NgcPaddleError):
    """The release manifest is missing, malformed or inconsistent."""


class ToolchainError(NgcPaddleError):
    """The Docker engine, buildx or the base image cannot be made ready."""


class BuildError(NgcPaddleError):
    """A layer failed to build; the release tag was left where it was."""

    exit_code = 1


class NotProven(NgcPaddleError):
    """A verdict rests on checks that could not run (e.g. GPU checks without a GPU): not a pass."""

    exit_code = 3
