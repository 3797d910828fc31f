"""The exit codes of every command of the project, image side and host side: one enum.

Why: make, CI, the release pipeline and a Slurm job all read an exit code to tell a failed gate from
bad input, a verdict that could not be proven, or a crash. Each meaning has one number, written here.
Standard library only.
"""

from enum import IntEnum


class ExitCode(IntEnum):
    PASS = 0  # every check or gate that applies passed (also a --smoke run that ran through)
    FAIL = 1  # a check or gate failed, a build failed, the scan gate blocked
    BAD_INPUT = 2  # bad input or toolchain: a malformed file, an unknown flavor, an unreachable source
    NOT_PROVEN = 3  # NOT PROVEN / NOT RUN: the verdict rests on checks that could not run (no GPU, no data)
    INTERNAL = 4  # a bug: one line naming the file that holds the traceback
    NOT_STARTED = 75  # a gate job could not start the image on its node (EX_TEMPFAIL): the fan-out requeues it once
    INTERRUPTED = 130  # SIGINT (Ctrl-C): 128 + 2, as a shell reports it
    TERMINATED = 143  # SIGTERM (docker stop, scancel, a time limit): 128 + 15


# A verdict word, as reports write it, and the exit code it ends in.
_VERDICTS = {"PASS": ExitCode.PASS, "SMOKE": ExitCode.PASS, "FAIL": ExitCode.FAIL,
             "NOT PROVEN": ExitCode.NOT_PROVEN, "NOT RUN": ExitCode.NOT_PROVEN,
             # A stored report of a run stopped by a signal proves nothing (the run itself exited 143 or 130).
             "INTERRUPTED": ExitCode.NOT_PROVEN}


def for_verdict(verdict: str) -> ExitCode:
    """The exit code of a run whose report says `verdict` (PASS, SMOKE, FAIL, NOT PROVEN, NOT RUN, INTERRUPTED)."""
    return _VERDICTS[verdict]
