"""Turn a pydantic ValidationError into the project's one error line: `FILE: FIELD: what; fix: what`.

Why: every typed reader (manifest, policy, reports, advisories) must word its errors the same way,
naming the file and the field, on one line, however many things are wrong.
"""

from pathlib import Path

from pydantic import ValidationError

_FIX = {
    "extra_forbidden": ("unknown key", "remove it or check its spelling"),
    "missing": ("required key is missing", "add it"),
}


def one_line(path: Path | str, exc: ValidationError, fix: str = "correct this field") -> str:
    """The first problem of `exc` as one line, with a count of the others."""
    errors = exc.errors(include_url=False)
    err = errors[0]
    where = ".".join(str(part) for part in err["loc"]) or "(top level)"
    where = where if len(where) <= 120 else where[:117] + "..."
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    if err["type"] in _FIX:
        what, how = _FIX[err["type"]]
    else:
        what, how = err["msg"].removeprefix("Value error, "), fix
        if err["type"].endswith("_type") or err["type"] in ("literal_error", "bool_parsing"):
            what += f", not {_shown(err.get('input'))}"
    line = f"{path}: {where}: {what}; fix: {how}{more}"
    return " ".join(line.split())  # never more than one line, whatever the input held


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."
