"""Helpers for the malformed-input tests: mutate real files, bound time, check the one-line error."""

import copy
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ngc_paddle.errors import NgcPaddleError

REPO = Path(__file__).resolve().parents[2]
# NGC_PADDLE_FUZZ_EXAMPLES=2000 for a long run; the default keeps `make unit` fast.
EXAMPLES = int(os.environ.get("NGC_PADDLE_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="NGC_PADDLE_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TIME_LIMIT_S = 30.0  # per example: a hang fails the test instead of stalling it (far above any real read)

ODD_VALUES = [None, True, False, 0, -1, 1.0, 2**70, "", "x", [], {}, ["x"], {"x": 1}, float("nan")]
INJECTIONS = ["\n", "\nextra: line", "\x00", "\x1b[31m", "\u202e", "\uff11", " --extra-index-url http://evil",
              "; rm -rf /", "$(id)", "\t", " ", "-o", "é", "\r\n--trusted-host x"]


@contextmanager
def time_bound(seconds: float = TIME_LIMIT_S) -> Iterator[None]:
    def expire(*_: object) -> None:
        raise TimeoutError(f"a reader took more than {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(call: Callable[[], Any], names: Path | str) -> Any:
    """The reader's result, or None after a clean one-line project error naming `names`; anything else fails."""
    try:
        with time_bound():
            return call()
    except NgcPaddleError as exc:
        assert_one_line(str(exc), names)
        return None


def assert_one_line(message: str, names: Path | str) -> None:
    assert "\n" not in message and "\r" not in message, f"not one line: {message!r}"
    assert message.startswith(str(names)), f"does not name {names}: {message!r}"
    assert "; fix: " in message, f"no fix given: {message!r}"


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a parsed document, as a tuple of keys/indexes (iterative)."""
    found, stack = [], [(data, prefix)]
    while stack:
        value, at = stack.pop()
        found.append(at)
        if isinstance(value, dict):
            stack.extend((v, (*at, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*at, i)) for i, v in enumerate(value))
    return found


def _get(data: Any, at: tuple) -> Any:
    for key in at:
        data = data[key]
    return data


def _set(data: Any, at: tuple, value: Any) -> Any:
    if not at:
        return value
    _get(data, at[:-1])[at[-1]] = value
    return data


def _enlarged(value: Any, size: int) -> Any:
    # small new items, never copies of the value: repeated mutations must not compound in memory
    if isinstance(value, list):
        return value + list(range(size // 100))
    if isinstance(value, dict):
        return {**value, **{f"k{i}": i for i in range(size // 100)}}
    text = str(value) or "x"
    return (text * (size // len(text) + 1))[:size]


@st.composite
def mutated(draw: st.DrawFn, original: Any) -> Any:
    """`original` with one to three structural mutations: delete, rename, retype, inject, nest, enlarge."""
    data = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 3))):
        places = sorted(_paths(data), key=repr)
        at = draw(st.sampled_from(places))
        value = _get(data, at)
        op = draw(st.sampled_from(["delete", "rename", "retype", "inject", "nest", "enlarge", "duplicate"]))
        if op == "delete" and at:
            del _get(data, at[:-1])[at[-1]]
        elif op == "rename" and at and isinstance(at[-1], str):
            parent = _get(data, at[:-1])
            new = draw(st.sampled_from([at[-1] + "s", at[-1][:-1], at[-1].upper(), "x-" + at[-1], at[-1] + "\n"]))
            parent[new] = parent.pop(at[-1])
        elif op == "retype":
            data = _set(data, at, copy.deepcopy(draw(st.sampled_from(ODD_VALUES))))  # never share the constants
        elif op == "inject" and isinstance(value, str):
            cut = draw(st.integers(0, len(value)))
            data = _set(data, at, value[:cut] + draw(st.sampled_from(INJECTIONS)) + value[cut:])
        elif op == "nest":
            for _ in range(draw(st.sampled_from([1, 2, 10, 70, 150]))):
                value = [value]
            data = _set(data, at, value)
        elif op == "enlarge":
            data = _set(data, at, _enlarged(value, draw(st.sampled_from([300, 5_000, 200_000, 1_200_000]))))
        elif op == "duplicate" and isinstance(value, list):
            data = _set(data, at, value + value)
    return data


@st.composite
def mangled_bytes(draw: st.DrawFn, raw: bytes) -> bytes:
    """`raw` with bytes injected, flipped, cut, or re-encoded."""
    op = draw(st.sampled_from(["insert", "flip", "truncate", "bom", "utf16", "latin1", "gzip", "random"]))
    if op == "insert":
        at = draw(st.integers(0, len(raw)))
        return raw[:at] + draw(st.binary(min_size=1, max_size=8)) + raw[at:]
    if op == "flip":
        at = draw(st.integers(0, len(raw) - 1))
        return raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1:]
    if op == "truncate":
        return raw[:draw(st.integers(0, len(raw)))]
    if op == "bom":
        return b"\xef\xbb\xbf" + raw
    if op == "utf16":
        return raw.decode().encode("utf-16")
    if op == "latin1":
        return raw.decode().replace("a", "\u00e9").encode("latin-1")
    if op == "gzip":
        import gzip

        return gzip.compress(raw)
    return draw(st.binary(max_size=200))
