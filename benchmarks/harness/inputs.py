"""Read the benchmarks' input files (gates file, --baseline result.json) with bounds, or fail in one line.

Why a second bounded reader beside ngc_paddle/safe_read.py: the benchmarks run inside the image,
where the ngc_paddle package is not installed (only validation/ and benchmarks/ ship). This one
applies the same bounds with the same libraries (PyYAML, json, pydantic): a regular file only
(never blocks on a FIFO or device), a size limit, strict UTF-8 without BOM or NUL, duplicate keys
refused, no NaN/Infinity, nesting depth limited; a pydantic ValidationError becomes the project's
one line `FILE: FIELD: what is wrong; fix: what to do`. Callers print it with `error: ` and exit 2.
"""

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

MAX_BYTES = 4 * 1024 * 1024  # a result.json of a full GPU sweep is tens of kB; the gates file a few kB
MAX_DEPTH = 32  # a result.json nests 7 levels deep (results.infer.<backend>.<precision>.bsN.latency_ms.mean)
MAX_NODES = 200_000  # values after expanding YAML aliases (guards against "billion laughs")
MAX_PATH = 4096


class InputError(ValueError):
    """An input file of the benchmark is unusable; `str()` is the one line (without `error: `)."""


def error(path: Path | str, where: str, what: str, fix: str) -> InputError:
    """The one line `FILE: FIELD: what; fix: how`, whatever whitespace the parts hold."""
    return InputError(" ".join(f"{path}: {where}: {what}; fix: {fix}".split()))


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """A regular file of at most `max_bytes`, as strict UTF-8; never blocks on a FIFO or a device."""
    raw = os.fsencode(path)
    if len(raw) > MAX_PATH or any(len(part) > 255 for part in raw.split(b"/")):
        raise error(os.fsdecode(raw[:80]) + "...", "(file)", f"the path is too long ({len(raw)} bytes)",
                    "use a shorter file name")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(path, "(file)", "no such file", "check the path") from None
    except OSError as exc:
        raise error(path, "(file)", f"cannot open it ({exc.strerror})", "check the path and its permissions") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else \
                "a device or socket"
            raise error(path, "(file)", f"is {kind}, not a regular file", "give the path of a regular file")
        data = b""
        while len(data) <= max_bytes and (chunk := os.read(fd, 1 << 20)):
            data += chunk
        if len(data) > max_bytes:
            raise error(path, "(file)", f"is more than the limit of {max_bytes} bytes", "check that this is the "
                        "right file")
    except OSError as exc:
        raise error(path, "(file)", f"cannot read it ({exc.strerror})", "check the file") from None
    finally:
        os.close(fd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(path, "(file)", f"is not UTF-8 text (byte {exc.start})", "save it as UTF-8") from None
    if text.startswith("\ufeff") or "\x00" in text:
        raise error(path, "(file)", "holds a byte-order mark or a NUL byte", "save it as plain UTF-8 text")
    return text


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (the second would silently replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(None, None, "a mapping key must be a plain value",
                                                        key_node.start_mark) from None
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: Path) -> Any:
    text = read_text(path)
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
    except RecursionError:
        raise error(path, "(file)", f"nests deeper than {MAX_DEPTH} levels", "flatten the file") from None
    except (yaml.YAMLError, TypeError, ValueError) as exc:  # TypeError: an unhashable key; ValueError: a bad date
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or exc
        raise error(path, "(file)", f"not valid YAML{at}: {problem}", "correct the syntax") from None
    check_shape(data, path)
    return data


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def load_json(path: Path) -> Any:
    text = read_text(path)
    try:
        data = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_pairs)
    except RecursionError:
        raise error(path, "(file)", f"nests deeper than {MAX_DEPTH} levels", "regenerate the file") from None
    except ValueError as exc:  # JSONDecodeError, NaN, duplicate keys, over-long integers
        raise error(path, "(file)", f"not valid JSON ({exc})", "regenerate the file") from None
    check_shape(data, path)
    return data


def check_shape(data: Any, path: Path | str) -> None:
    """Refuse nesting deeper than MAX_DEPTH, self-referencing values and alias bombs (iterative: no recursion)."""
    stack: list[tuple[Any, int, frozenset]] = [(data, 1, frozenset())]
    nodes = 0
    while stack:
        value, depth, above = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if id(value) in above:
            raise error(path, "(file)", "holds a value that contains itself", "remove the recursive alias")
        nodes += len(value) + 1
        if depth > MAX_DEPTH:
            raise error(path, "(file)", f"nests deeper than {MAX_DEPTH} levels", "flatten the file")
        if nodes > MAX_NODES:
            raise error(path, "(file)", f"expands to more than {MAX_NODES} values", "remove repeated aliases")
        children = value.values() if isinstance(value, dict) else value
        stack.extend((c, depth + 1, above | {id(value)}) for c in children if isinstance(c, dict | list))


def one_line(path: Path | str, exc: ValidationError, fix: str) -> InputError:
    """The first problem of a pydantic ValidationError as the project's one line, with a count of the others."""
    errors = exc.errors(include_url=False)
    err = errors[0]
    where = ".".join(str(part) for part in err["loc"]) or "(top level)"
    where = where if len(where) <= 120 else where[:117] + "..."
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    if err["type"] == "extra_forbidden":
        what, fix = "unknown key", "remove it or check its spelling"
    elif err["type"] == "missing":
        what, fix = "required key is missing", "add it"
    else:
        what = err["msg"].removeprefix("Value error, ")
        if err["type"].endswith("_type") or err["type"] in ("literal_error", "finite_number"):
            shown = repr(err.get("input"))
            what += f", not {shown if len(shown) <= 60 else shown[:60] + '...'}"
    return error(path, where, what, fix + more)
