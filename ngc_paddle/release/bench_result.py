"""A benchmark's result.json as the release pipeline reads it: verdict and gates, checked at the door.

Why: the pipeline picks the previous release's results as baselines by their verdict, and sums up
a new run by its gates; a malformed, truncated or foreign file must end in one line naming the
file and the field (exit 2), never a traceback or a silently missing baseline. The benchmark
checks a --baseline in depth itself (benchmarks/harness/result_file.py, which ships in the image,
where this package does not); the top-level keys here are the same, and a unit test keeps the
two in step. `config`, `environment` and `results` are only passed on, so they are typed as JSON.
"""

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, JsonValue, ValidationError

from ngc_paddle import safe_read
from ngc_paddle.errors import NgcPaddleError
from ngc_paddle.fields import Token
from ngc_paddle.release.state_file import written_file_line

MAX_RESULT_BYTES = 4 * 1024 * 1024
Text = Annotated[str, Field(max_length=5000)]


class BenchResultError(NgcPaddleError):
    """A result.json that cannot be used."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class GateVerdict(_Strict):
    gate: Text
    metric: Text
    status: Literal["PASS", "FAIL", "NOT RUN", "N/A"]
    measured: FiniteFloat | None
    threshold: FiniteFloat | None
    op: Literal[">=", "<=", ""]
    profile: Text
    source: Text
    reason: Text
    acceptance: bool


class BenchResult(_Strict):
    model: Token
    config: dict[str, JsonValue]
    environment: dict[str, JsonValue]
    results: dict[str, JsonValue]
    gates: list[GateVerdict]
    verdict: Literal["PASS", "FAIL", "NOT PROVEN", "SMOKE"]
    verdict_reasons: list[Text]
    passed: bool


def read(path: Path, fix: str) -> BenchResult:
    """The result at `path`; BenchResultError (one line, ending in `fix`) when it is not one."""
    try:
        data = safe_read.load_json(path, BenchResultError, MAX_RESULT_BYTES)
    except BenchResultError as exc:  # same line, with the caller's fix
        raise BenchResultError(f"{str(exc).rsplit('; fix: ', 1)[0]}; fix: {fix}") from None
    if not isinstance(data, dict):
        raise BenchResultError(f"{path}: (top level): a result.json is a mapping, not a {type(data).__name__}; "
                               f"fix: {fix}")
    try:
        return BenchResult.model_validate(data)
    except ValidationError as exc:
        raise BenchResultError(written_file_line(path, exc, fix)) from None
