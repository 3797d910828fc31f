"""Helpers for the malformed-input tests: mutate real files, bound time, check the one-line error."""

import copy
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st

from ngc_paddle.host_errors import NgcPaddleError

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


def outcome(call: Callable[[], Any], names: Path | str, errors: tuple[type[Exception], ...] = (NgcPaddleError,)) -> Any:
    """The reader's result, or None after a clean one-line error of `errors` naming `names`; anything else fails."""
    try:
        with time_bound():
            result = call()
    except errors as exc:
        assert_one_line(str(exc), names)
        event("refused in one line")  # --hypothesis-show-statistics counts both outcomes
        return None
    event("accepted")
    return result


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
        return raw.decode("utf-8", "replace").encode("utf-16")
    if op == "latin1":
        return raw.decode("latin-1").replace("a", "\u00e9").encode("latin-1")
    if op == "gzip":
        import gzip

        return gzip.compress(raw)
    return draw(st.binary(max_size=200))


# ---- real-shaped documents, written by the project's own writers ---------------------------------
# The figures below are made up (a fixture, not a measurement); the shape is the writer's.

def bench_result(model: str = "rn50") -> dict:
    """A result.json as benchmarks/harness/report.write writes it for a CPU run of `model`, as plain data."""
    import contextlib
    import io
    import json
    import tempfile

    from benchmarks.harness import acceptance_gates, efficiency, environment, record, report, roofline, run_config
    from benchmarks.harness.hardware import hardware_key
    from benchmarks.harness.peaks import Peaks
    from benchmarks.harness.timing import Timing
    from benchmarks.hgnet.spec import SPEC as HGNET
    from benchmarks.rn50.spec import SPEC as RN50

    spec = {"rn50": RN50, "hgnet": HGNET}[model]
    asked = run_config.requested(spec, ["--threads", "2", "--backends", "paddle-inference"])
    resolved = run_config.resolve(asked, spec, run_config.Hardware(0, 2, "test fixture"))
    config = record.run_config(resolved, spec)
    env = environment.capture()
    env.update(threads=2, threads_from="test fixture", hardware=hardware_key("cpu", [], 0, env["cpu"], 2))
    probe = {"paddle": {"gemm_flops": 2.0e10, "conv_flops": 1.5e10, "peak_flops": 2.0e10, "method": "fixture"},
             "paddle-inference": {"gemm_flops": 3.5e10, "conv_flops": 3e10, "peak_flops": 3.5e10, "method": "fixture"},
             "blas": {"gemm_flops": 4.0e10, "peak_flops": 4.0e10, "method": "fixture"},
             "cublas": {"status": "not available", "reason": "cuBLAS needs a GPU (this run is on the CPU)"}}
    peaks = Peaks("cpu", 1, 1)
    original = roofline.probe_all
    roofline.probe_all = lambda device, dtype, repeats, threads: {k: dict(v) for k, v in probe.items()}
    try:
        with peaks.around("float32", "train fp32", lambda *a: None) as peak:
            pass
    finally:
        roofline.probe_all = original
    train = {**Timing(16, [4.0] * 8).summary(), "loss_first": 7.0, "loss_last": 6.5, "loss_finite": True,
             "world_size": 1}
    efficiency.annotate(train, 3 * 1.3e9, peak, None, "paddle")
    train["losses"] = [7.0, 6.8, 6.5]
    infer = {f"bs{bs}": efficiency.annotate(Timing(bs, [0.05 * bs] * 4).summary(), 1.3e9, peak, None,
                                            "paddle-inference")
             for bs in (1, 8)}
    results = {"train": {"fp32": train, "summary": {"loss_finite": 1}},
               "infer": {"paddle-inference": {"fp32": infer}, "agreement": {},
                         "summary": {"bs8_over_bs1": infer["bs8"]["ips"] / infer["bs1"]["ips"]}},
               "peak": dict(peaks.found)}
    config["eval"] = False
    verdicts = acceptance_gates.evaluate(acceptance_gates.load(), model, "cpu", results, config)
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        report.write(Path(tmp), model, model, config, env, results, verdicts, acceptance_gates.overall(verdicts))
        return json.loads((Path(tmp) / "result.json").read_text())


def release_state() -> dict:
    """A state.json as ngc_paddle.release.state_file.State.record writes it after a full release, as plain data."""
    import json
    import tempfile

    from ngc_paddle.release.state_file import State

    with tempfile.TemporaryDirectory() as tmp:
        state = State(Path(tmp) / "state.json")
        image_id = "sha256:" + "ab" * 32
        state.record("cpu", "build", image_id, "passed", "ngc-paddle:26.12-cpu abababababab (cached, cached)")
        for stage in ("validate", "bench", "scan"):
            state.record("cpu", stage, "0123456789abcdef", "passed", f"{stage} detail")
        state.record("gpu", "build", "", "failed", "layer cuda failed:\nno route to the index")
        state.record("gpu", "bench", "fedcba9876543210", "accepted unproven", "GPU gates; accepted by a person: x")
        state.record("cpu", "push", "0011223344556677", "passed", "127.0.0.1:5000/ngc-paddle:26.12-cpu@sha256:"
                     + "cd" * 32, digest="sha256:" + "cd" * 32)
        return json.loads((Path(tmp) / "state.json").read_text())


# ---- the registry of readers: one entry per file the tools read at the door ----------------------------------

@dataclass(frozen=True)
class Reader:
    """A file the tools read, for the generic property-based test (test_malformed_inputs.test_registered_reader).

    Each example writes a mutation of `sample` (structural, through `parse`/`dump`, or byte-level) as `filename`
    in a fresh folder, calls `read(path)`, and requires a result or one clean line of `errors` naming the file,
    within the time bound; `use(result, path)` then exercises what was accepted the way the tools use it (a
    crash there is a silent accept of something inconsistent). Register a new file with `register(Reader(...))`
    beside its sample; nothing else is needed."""

    name: str
    filename: str
    sample: Callable[[], bytes]
    parse: Callable[[bytes], Any]
    dump: Callable[[Any], bytes]
    read: Callable[[Path], Any]
    errors: tuple[type[Exception], ...] = (NgcPaddleError,)
    use: Callable[[Any, Path], None] | None = None


READERS: dict[str, Reader] = {}


def register(reader: Reader) -> Reader:
    READERS[reader.name] = reader
    return reader


def json_bytes(data: Any) -> bytes:
    import json

    return json.dumps(data, allow_nan=True).encode()


@st.composite
def reader_input(draw: st.DrawFn, reader: Reader) -> bytes:
    raw = reader.sample()
    if draw(st.booleans()):
        return reader.dump(draw(mutated(reader.parse(raw))))
    return draw(mangled_bytes(raw))
