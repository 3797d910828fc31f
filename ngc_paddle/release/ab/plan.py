"""What one A/B runs: the rounds' benchmarks and their options, as a job of the fleet's job script.

Why: an A/B round must be short (many rounds beat one long pair) yet measure the same work on both images; the
options are the benchmarks' own (--steps, --warmup, --infer-iters), after the profile's (its precisions, batch
sizes), so a profile's choices hold and only the length is the round's. `--smoke` rounds are seconds long (tests).
Default rounds: ROUNDS, after one discarded warm-up round (payload.sh says why).
"""

from dataclasses import dataclass, replace
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.platforms import host_or_default
from ngc_paddle.release.ab import verdict
from ngc_paddle.release.fleet.payload import JobSpec

MODELS = {"rn50": ("bench-rn50",), "hgnet": ("bench-hgnet",), "all": ("bench-rn50", "bench-hgnet")}
ROUNDS = 5
SMOKE_ROUNDS = 3
MIN_ROUNDS, MAX_ROUNDS = 1, 999  # payload.sh names rounds round-01..round-999 (the rounds reader reads 2-3 digits)
WARMUP_ROUNDS = 1
# The length of one round's run: CPU runs are seconds per step, GPU runs milliseconds.
SHORT = {"cpu": ("--steps", "4", "--warmup", "1", "--infer-iters", "10"),
         "gpu": ("--steps", "30", "--warmup", "10", "--infer-iters", "50")}
SMOKE = ("--smoke",)
VALIDATE_FAST = ("-m", "fast")  # the validation suite's fast checks: its wall time is a metric of every round


@dataclass(frozen=True)
class Size:
    """How much an A/B runs: measured rounds, smoke-sized or short runs, the validation suite timed or not."""

    rounds: int = ROUNDS
    smoke: bool = False
    validation_time: bool = False

    @classmethod
    def of(cls, rounds: int | None, smoke: bool, validation_time: bool) -> "Size":
        return cls(measured_rounds(rounds, smoke), smoke, validation_time)


def measured_rounds(asked: int | None, smoke: bool, option: str = "--ab-rounds") -> int:
    """The measured rounds asked for, else the default. Out of range is bad input: 0 is not "the default" and -3
    not "no A/B"; the line says how many rounds can decide (a FAIL needs the paired test's FAIL_MIN_ROUNDS)."""
    if asked is None:
        return SMOKE_ROUNDS if smoke else ROUNDS
    if not MIN_ROUNDS <= asked <= MAX_ROUNDS:
        raise NgcPaddleError(f"{option} {asked}: (argument): must be {MIN_ROUNDS} to {MAX_ROUNDS}, and a FAIL needs "
                             f"at least {verdict.FAIL_MIN_ROUNDS} (the paired signed-rank test cannot reach "
                             f"p < {verdict.ALPHA:g} with fewer); fix: {option} {ROUNDS}, or leave it out for "
                             f"{ROUNDS} ({SMOKE_ROUNDS} with smoke rounds)")
    return asked


def round_args(profile_args: tuple[str, ...], gpu: bool, smoke: bool) -> tuple[str, ...]:
    """A round's options of one benchmark: the profile's, then the round's length (the later option wins)."""
    return (*profile_args, *(SMOKE if smoke else SHORT["gpu" if gpu else "cpu"]))


def with_ab(spec: JobSpec, reference: str | None, rounds: int, smoke: bool, time_validation: bool,
            warmup: int = WARMUP_ROUNDS) -> JobSpec:
    """The job `spec` with its A/B part: the same benchmarks (and profile options) in rounds against `reference`."""
    if not reference or rounds <= 0:
        return spec
    benches = tuple((command, round_args(args, spec.gpus > 0, smoke)) for command, args in spec.benches)
    return replace(spec, reference=reference, ab_rounds=rounds, ab_warmup=warmup, ab_benches=benches,
                   ab_validate_args=VALIDATE_FAST if time_validation else None)


def compare_job(candidate: str, reference: str, folder: Path, commands: tuple[str, ...], rounds: int, smoke: bool,
                gpus: int, time_validation: bool, warmup: int = WARMUP_ROUNDS, pull: bool = False,
                candidate_env: tuple[str, ...] = ()) -> JobSpec:
    """A job that runs only the A/B (no validation gate, no absolute benchmark runs): bench-compare's, on this host."""
    spec = JobSpec(flavor="compare", profile="this-host", hardware="gpu" if gpus else "cpu", image=candidate,
                   folder=folder, benches=tuple((c, ()) for c in commands), gpus=gpus, validate=False, pull=pull,
                   candidate_env=candidate_env, platform=host_or_default())
    return replace(with_ab(spec, reference, rounds, smoke, time_validation, warmup), benches=())
