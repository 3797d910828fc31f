"""What `ngc-paddle release` is asked to do: the release, its flavors, the registry, the gates' inputs.

Why: the CLI fills it, the pipeline orders the stages by it and each stage reads its own part (the
benchmarks, the scan policy and OSV folder, the mirrors); one plain dataclass, no stage imports the pipeline.
"""

from dataclasses import dataclass, field
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError

DEFAULT_REGISTRY = "127.0.0.1:5000"
BENCHMARKS = ("bench-rn50", "bench-hgnet")


def benchmarks(asked: list[str] | None) -> tuple[str, ...]:
    """--bench, repeated (default: every benchmark): each must be a benchmark the image ships, or its gate would
    run a command the image lacks (or none) and fail far from the cause."""
    for name in asked or ():
        if name not in BENCHMARKS:
            shown = repr(name) if len(name) <= 60 else repr(name[:60]) + "..."
            raise NgcPaddleError(f"--bench {shown}: (argument): is not a benchmark of the image; fix: name one of "
                                 f"{', '.join(BENCHMARKS)}, or leave --bench out for all of them")
    return tuple(asked) if asked is not None else BENCHMARKS


@dataclass
class ReleaseOptions:
    release: str
    flavors: list[str] = field(default_factory=list)
    registry: str = DEFAULT_REGISTRY
    policy: Path = Path("security/policy.yaml")
    osv_dir: Path | None = None
    benchmarks: tuple[str, ...] = BENCHMARKS
    root: Path = Path(".")
    accept_unproven: str | None = None  # the reason a person gives for pushing a flavor whose gates are not proven
    sources: dict[str, str] = field(default_factory=dict)  # mirrors for the build stage (NAME -> URL or path)
    fleet: Path | None = None  # fleets/*.yaml: validate and bench fan out per hardware profile (stages/gates.py)
    key: str | None = None  # the cosign private key signing the attestations (else COSIGN_KEY; stages/attest.py)
    no_attest: bool = False  # release unsigned: no attestations attached (the notes say so)
    # The A/B gates (stages/ab.py; on a fleet, each job's own): the reference per flavor ("*": every flavor), by
    # default the previous release's image of the flavor by digest; the rounds and their size.
    references: dict[str, str] = field(default_factory=dict)
    ab_rounds: int | None = None  # default: ngc_paddle.release.ab.plan.ROUNDS (SMOKE_ROUNDS with ab_smoke)
    ab_smoke: bool = False  # seconds-long rounds (--smoke runs): the machinery, tests
    ab_validation_time: bool = False  # each round also times the validation suite's fast checks
