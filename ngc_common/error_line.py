"""Turn a pydantic ValidationError into the project's one error line: `FILE: FIELD: what; fix: what`.

Why: every typed reader (manifest, lock, policy, scanner reports, advisories, state.json, a benchmark's
gates file and result.json) must word its errors the same way, naming the file and the field, on one
line, however many things are wrong. Standard library only at import (the error is read duck-typed).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ngc_common.errors import line, shown

if TYPE_CHECKING:
    from pydantic import ValidationError

# For a file a person writes: what an unknown or missing key means, and its fix.
_KEY_PROBLEMS = {
    "extra_forbidden": ("unknown key", "remove it or check its spelling"),
    "missing": ("required key is missing", "add it"),
}
# Problems whose wrong value is worth showing after the message (`..., not 'fast'`).
_SHOW_INPUT = ("literal_error", "bool_parsing", "finite_number", "string_pattern_mismatch")


def one_line(path: Path | str, exc: ValidationError, fix: str = "correct this field", *, skip: int = 0,
             written: bool = False) -> str:
    """The first problem of `exc` as one line, with a count of the others.

    `written`: the file was written by a tool (state.json, a result.json), so whatever is wrong the fix is
    `fix` (regenerate it), never "add it". `skip` leading parts of each location are the caller's wrapping,
    not the file's.
    """
    errors = exc.errors(include_url=False)
    err = errors[0]
    where = ".".join(str(part) for part in err["loc"][skip:]) or "(top level)"
    where = where if len(where) <= 120 else where[:117] + "..."
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    if err["type"] in _KEY_PROBLEMS:
        what, how = _KEY_PROBLEMS[err["type"]]
        how = fix if written else how
    else:
        what, how = err["msg"].removeprefix("Value error, "), fix
        if err["type"].endswith("_type") or err["type"] in _SHOW_INPUT:
            what += f", not {shown(err.get('input'))}"
    return line(path, where, what, how + more)
