"""Read an input file (manifest, lock, policy, scanner report, advisory, gates file, result.json) with bounds.

Why: every file the tools read is written by someone else (a release engineer, trivy, grype, an
OSV dump, an earlier benchmark run) and may be anything: a FIFO that never delivers a byte, a device,
a gigabyte, bytes that are not UTF-8, YAML whose second key silently replaces the first, nesting that
blows Python's recursion limit, JSON with NaN. Readers on both sides of the image go through here so
that each of these ends in one `FILE: (file): what is wrong; fix: what to do` line of the caller's
error type (exit 2), never a traceback, a hang or a silent accept. Schemas (pydantic models) then
check what the data means.

The long form: docs/design-notes.md, section `ngc_common/bounded_read.py`.
"""

import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from ngc_common.errors import InputError, OneLineError, line

MAX_BYTES = 16 * 1024 * 1024  # the largest report a scanner writes for our images is a few MB
MAX_DEPTH = 64  # the real files nest 6 levels deep
MAX_NODES = 2_000_000  # values after expanding YAML aliases (guards against "billion laughs")
MAX_PATH = 4096
MAX_NAME = 255


def _fail(error: type[OneLineError], path: Path | str, what: str, fix: str) -> OneLineError:
    return error(line(path, "(file)", what, fix))


def read_bytes(path: Path, error: type[OneLineError] = InputError, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; never blocks on a FIFO or device."""
    raw = os.fsencode(path)
    if len(raw) > MAX_PATH or any(len(part) > MAX_NAME for part in raw.split(b"/")):
        shown = os.fsdecode(raw[:80]) + "..."
        raise _fail(error, shown, f"the path is too long ({len(raw)} bytes)", "use a shorter file name")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _fail(error, path, "no such file", "check the path") from None
    except OSError as exc:
        raise _fail(error, path, f"cannot open it ({exc.strerror})", "check the path and its permissions") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a file")
            raise _fail(error, path, f"is {kind}, not a regular file", "give the path of a regular file")
        if info.st_size > max_bytes:
            raise _fail(error, path, f"is {info.st_size} bytes, more than the limit of {max_bytes}",
                        "check that this is the right file")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # the file grew while we read it
                raise _fail(error, path, f"is more than the limit of {max_bytes} bytes", "check the file")
        return b"".join(chunks)
    except OSError as exc:
        raise _fail(error, path, f"cannot read it ({exc.strerror})", "check the file") from None
    finally:
        os.close(fd)


def read_text(path: Path, error: type[OneLineError] = InputError, max_bytes: int = MAX_BYTES) -> str:
    """The file as strict UTF-8 text (a BOM or a NUL byte is refused too)."""
    data = read_bytes(path, error, max_bytes)
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise _fail(error, path, f"is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})",
                    "save it as UTF-8") from None
    if text.startswith("\ufeff"):
        raise _fail(error, path, "starts with a byte-order mark", "save it as UTF-8 without a BOM")
    if "\x00" in text:
        raise _fail(error, path, f"holds a NUL byte at offset {text.index(chr(0))}", "save it as plain text")
    return text


# libyaml's parser (PyYAML's C binding, part of its wheels) parses about nine times faster than the
# pure-Python one; the constructor below is Python either way, so the same rules apply. libyaml itself
# refuses nesting deeper than 1000 levels ("exceeded maximum nesting depth"), before any recursion.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):
    """The safe loader, refusing duplicate mapping keys and impossible dates."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _value in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *anchor` keys are merged, and explicit keys may override them
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:
                    raise yaml.constructor.ConstructorError(
                        None, None, "a mapping key must be a plain value", key_node.start_mark) from None
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (the second would silently replace the first)",
                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node: yaml.ScalarNode):
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(None, None, f"impossible date {node.value!r} ({exc})",
                                                    node.start_mark) from None


_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _StrictLoader.construct_yaml_timestamp)


def load_yaml(path: Path, error: type[OneLineError] = InputError, max_bytes: int = MAX_BYTES,
              max_nodes: int = MAX_NODES) -> Any:
    """Parse a YAML file with the bounds above; duplicate keys and deep nesting are errors. `max_nodes`: the
    values it may expand to (a small hand-written file passes a far smaller bound than a scanner report)."""
    text = read_text(path, error, max_bytes)
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # a safe loader: no arbitrary objects
    except RecursionError:
        raise _fail(error, path, f"nests deeper than {MAX_DEPTH} levels", "flatten the file") from None
    except yaml.YAMLError as exc:
        if getattr(exc, "problem", None) == "exceeded maximum nesting depth":  # libyaml's own limit
            raise _fail(error, path, f"nests deeper than {MAX_DEPTH} levels", "flatten the file") from None
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise _fail(error, path, f"not valid YAML{at}: {problem}", "correct the syntax") from None
    check_shape(data, path, error, max_nodes)
    return data


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json(path: Path, error: type[OneLineError] = InputError, max_bytes: int = MAX_BYTES) -> Any:
    """Parse a JSON file with the bounds above; NaN/Infinity, duplicate keys and deep nesting are errors."""
    text = read_text(path, error, max_bytes)
    try:
        data = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_pairs)
    except RecursionError:
        raise _fail(error, path, f"nests deeper than {MAX_DEPTH} levels", "regenerate the file") from None
    except ValueError as exc:  # JSONDecodeError, NaN, duplicate keys, over-long integers
        raise _fail(error, path, f"not valid JSON ({' '.join(str(exc).split())})", "regenerate the file") from None
    check_shape(data, path, error)
    return data


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def check_shape(data: Any, path: Path | str, error: type[OneLineError] = InputError,
                max_nodes: int = MAX_NODES) -> None:
    """Refuse nesting deeper than MAX_DEPTH, self-referencing values and alias bombs; iterative, no recursion."""
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        value, done = stack.pop()
        if not isinstance(value, dict | list):
            continue
        key = id(value)
        children = [c for c in (value.values() if isinstance(value, dict) else value) if isinstance(c, dict | list)]
        if done:
            on_path.discard(key)
            sizes[key] = len(value) + 1 + sum(sizes[id(c)] for c in children)
            heights[key] = 1 + max((heights[id(c)] for c in children), default=0)
            if heights[key] > MAX_DEPTH:
                raise _fail(error, path, f"nests deeper than {MAX_DEPTH} levels", "flatten the file")
            if sizes[key] > max_nodes:
                raise _fail(error, path, f"expands to more than {max_nodes} values", "remove repeated aliases")
            continue
        if key in on_path:
            raise _fail(error, path, "holds a value that contains itself", "remove the recursive alias")
        if key in sizes:
            continue
        on_path.add(key)
        stack.append((value, True))
        stack.extend((c, False) for c in children)
