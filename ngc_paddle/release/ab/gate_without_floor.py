"""Where no CPU floor holds, the A/B decides the benchmark gate: the one rule, for this host's release and a fleet job.

Why: CPU efficiency floors hold per CPU kind (benchmarks/harness/cpu_kind.py); on a kind without one the benchmark
reports its figures and is NOT PROVEN (benchmarks/harness/acceptance_gates.py `unfloored_cpu`), and gates.yaml and
docs/benchmarks.md promise "reported, not gated (NOT PROVEN unless the A/B gate decides)". So a benchmark run that is
NOT PROVEN for that reason alone takes the verdict of its own metrics in the A/B of the same flavor on the same host
or node (the candidate against the previous release's image, interleaved): PASS passes with the ratio and interval
as the reason, FAIL fails, anything else stays NOT PROVEN naming both. A run NOT PROVEN for any other reason (a
missing GPU, an acceptance gate that did not run) or FAILed keeps its verdict: the A/B never hides those.
"""

from ngc_common.bench_result import ResultFile
from ngc_paddle.release.ab.verdict import ORDER

# How benchmarks/harness/acceptance_gates.py's unfloored_cpu starts its reason (the image writes it into result.json;
# tests/unit/test_ab_gate_without_floor.py checks the harness still says it this way).
NO_FLOOR = "no CPU efficiency floor for this CPU kind ("
SHOWN = 4  # metrics of the A/B named in a reason


def kind_without_floor(result: ResultFile) -> str | None:
    """The CPU kind of a run whose NOT PROVEN rests on that kind having no floor and on nothing else, else None.
    The harness adds that reason only when nothing else is missing and no acceptance gate passed or failed."""
    reasons = result.verdict_reasons
    if result.verdict != "NOT PROVEN" or len(reasons) != 1 or not reasons[0].startswith(NO_FLOOR):
        return None
    if any(g.status == "FAIL" or (g.acceptance and g.status in ("PASS", "NOT RUN")) for g in result.gates):
        return None
    return result.config.cpu_kind or reasons[0][len(NO_FLOOR):].split(";")[0]


def decide(command: str, kind: str, summary: dict | None, no_ab: str) -> tuple[str, str]:
    """(verdict, reason) of `command`'s run that had no floor for CPU `kind`, from the A/B of the same flavor and
    profile (`summary`: its ab.json; None when there is none, `no_ab` says why)."""
    head = f"no floor for CPU kind {kind}"
    if summary is None:
        return "NOT PROVEN", f"{head}, and {no_ab}"
    mine = [m for m in summary.get("metrics", []) if m["key"].startswith(f"{command}:") and m["status"] in ORDER]
    if summary.get("verdict") == "NOT RUN" or not mine:
        why = "; ".join(summary.get("reasons", [])[:1]) or f"it measured no figure of {command}"
        return "NOT PROVEN", f"{head}, and the A/B is {summary.get('verdict')}: {why}"
    status = min((m["status"] for m in mine), key=ORDER.index)
    ranked = sorted(mine, key=lambda m: ORDER.index(m["status"]))[:SHOWN]
    shown = "; ".join(f"{m['label']} ratio {m['ratio']:.3f} CI [{m['low']:.3f}, {m['high']:.3f}] {m['status']}"
                      for m in ranked) + (f"; {len(mine) - SHOWN} more" if len(mine) > SHOWN else "")
    rounds = f"{summary.get('rounds')} rounds against {_reference(summary)}"
    if status in ("PASS", "FAIL"):
        return status, f"{head}: decided by A/B ({rounds}): {shown}"
    return "NOT PROVEN", f"{head}, and the A/B is {status} ({rounds}): {shown}"


def _reference(summary: dict) -> str:
    ref = summary.get("reference") or {}
    return str(ref.get("name") or ref.get("image") or "the reference")[:120]
