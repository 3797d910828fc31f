"""The schema of benchmarks/gates.yaml: what each gate, profile and threshold may hold (pydantic, strict).

Why: a gate that is mistyped does not fail loudly by itself: `min: "fast"` or `when: {image_size:
"224"}` makes a gate that never applies (the run reports N/A), a profile key spelt differently
from its profile is never gated, `.nan` as a threshold passes nothing and fails nothing. Here
every such file is bad input (one line naming the file and the field, exit 2) before a run starts.
"""

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, FiniteFloat, ValidationError, model_validator

from ngc_common import bounded_read
from ngc_common.bench_result import EFFICIENCIES, is_efficiency
from ngc_common.error_line import one_line
from ngc_common.errors import InputError, line
from ngc_common.strict_model import Strict

FIX = "see benchmarks/gates.yaml for the format"
MAX_GATES_BYTES = 1024 * 1024  # the gates file is a few kB
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
METRIC_RE = re.compile(r"(train|infer|eval|data_parallel)(\.[A-Za-z0-9_-]{1,64}){1,6}")
PRECISIONS = Literal["fp32", "tf32", "fp16", "bf16", "int8"]


def _matches(pattern: re.Pattern[str], what: str):
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(f"{value[:60]!r} is not {what}")
        return value

    return AfterValidator(check)


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{value[:60]!r} is not a regular expression ({exc})") from None
    return value


def _text(value: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"{value[:60]!r} holds a control character")
    return value


Name = Annotated[str, _matches(NAME_RE, "a name of letters, digits, '.', '_' and '-' (e.g. A100-80GB)")]
Text = Annotated[str, Field(min_length=1, max_length=500), AfterValidator(_text)]
Metric = Annotated[str, _matches(METRIC_RE, "a metric path such as train.fp32.efficiency, infer.paddle-inference."
                                            "fp32.bs8.ips or data_parallel.amp.scaling_efficiency")]
Positive = Annotated[FiniteFloat, Field(gt=0)]



# Optional keys may be left out but never given as null: acceptance_gates.py reads the plain mapping (`"min" in gate`,
# `gate.get("when", {})`), where a null would be a crash or a gate that never applies. Hence a type without
# None and a default of None, which pydantic does not validate.
class When(Strict):
    """The run configuration a gate's reference was measured in (keys of result.json's `config`)."""

    image_size: Annotated[int, Field(ge=1)] = None  # type: ignore[assignment]
    batch_size: Annotated[int, Field(ge=1)] = None  # type: ignore[assignment]
    infer_image_size: Annotated[int, Field(ge=1)] = None  # type: ignore[assignment]
    gpus: Annotated[int, Field(ge=0)] = None  # type: ignore[assignment]
    nnodes: Annotated[int, Field(ge=1)] = None  # type: ignore[assignment]  # DLE's multi-GPU figures are one node's
    model: Name = None  # type: ignore[assignment]
    ssld: bool = None  # type: ignore[assignment]
    cpu_kind: Name = None  # type: ignore[assignment]  # benchmarks/harness/cpu_kind.py: vendor-isa, e.g. amd-avx2


class Gate(Strict):
    name: Text
    metric: Metric
    min: FiniteFloat = None  # type: ignore[assignment]
    max: FiniteFloat = None  # type: ignore[assignment]
    when: When = None  # type: ignore[assignment]
    source: Text

    @model_validator(mode="after")
    def _one_bound(self) -> "Gate":
        if (self.min is None) == (self.max is None):
            raise ValueError("a gate needs exactly one of min: or max:")
        return self


class Profile(Strict):
    name: Name
    match: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_regex)]
    peak_tflops: dict[PRECISIONS, Positive] = None  # type: ignore[assignment]


class GatesFile(Strict):
    max_regression_pct: Annotated[FiniteFloat, Field(gt=0, lt=100)]
    profiles: list[Profile]
    models: dict[Name, dict[Name, list[Gate]]]



def _meaning(table: GatesFile) -> tuple[str, str, str] | None:
    """What the schema alone cannot say: (field, what is wrong, fix) for the first problem, or None."""
    names = [p.name for p in table.profiles]
    for i, name in enumerate(names):
        if name in names[:i] or name in ("cpu", "relative"):
            return f"profiles.{i}.name", f"profile {name!r} is defined twice or reserved", "rename it"
    for model, profiles in table.models.items():
        for profile, gates in profiles.items():
            if profile not in {*names, "cpu", "relative"}:
                return (f"models.{model}.{profile}", "no profile of that name, so these gates would never apply",
                        f"use one of {', '.join(names)}, cpu, relative")
            for i, gate in enumerate(gates):
                if profile == "cpu" and not is_efficiency(gate.metric):
                    return (f"models.{model}.cpu.{i}.metric", "a CPU gate must gate an efficiency (no absolute "
                            "CPU figure carries to another machine)",
                            f"gate a {' or '.join(f'.{e}' for e in sorted(EFFICIENCIES))} metric")
                if profile == "cpu" and (gate.when is None or gate.when.cpu_kind is None):
                    return (f"models.{model}.cpu.{i}.when", "a CPU floor holds for the CPU kind it was measured on "
                            "(its healthy ratio moves 2x between CPU models)",
                            "add when: {cpu_kind: VENDOR-ISA} (python -m benchmarks.harness.cpu_kind prints it)")
    return None


def read(path: Path) -> dict[str, Any]:
    """The gates file as a plain mapping, after the schema accepted it; InputError in one line otherwise."""
    data = bounded_read.load_yaml(path, InputError, MAX_GATES_BYTES)
    try:
        table = GatesFile.model_validate(data)
    except ValidationError as exc:
        raise InputError(one_line(path, exc, FIX)) from None
    problem = _meaning(table)
    if problem:
        raise InputError(line(path, *problem))
    return data
