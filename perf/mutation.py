"""The mutation score of the decision modules, per module group, from the results `mutmut run` left in mutants/.

Why: a planted bug that no unit test notices is a decision the suite does not pin. mutmut records each mutant's
result but has no score per group of modules and cannot tell a mutant that only rewords a message (which the
tests rightly do not pin word for word) from one that changes a decision; this script does both, takes out the
survivors judged equivalent (EQUIVALENT, each with why) and, with --record, writes the figures into
docs/measurements.md (section `mutation`). Run from the repository root after `mutmut run` (`make mutation`).

Score = killed (a test failed, or the mutant hung past mutmut's timeout) / (mutants - message-only survivors -
equivalent survivors); a mutant no unit test reaches counts as not killed.
"""

import argparse
import io
import sys
import time
import tokenize
from collections import Counter
from pathlib import Path

GROUPS = {  # module group -> the files (prefixes) it holds, as [tool.mutmut] only_mutate lists them
    "release A/B": ("ngc_paddle/release/ab/",),
    "bench harness gates, peaks, efficiency": ("benchmarks/harness/",),
    "scan policy and checks": ("ngc_paddle/scan/",),
    "lock checks": ("ngc_paddle/lock/",),
    "fleet results and cells": ("ngc_paddle/release/fleet/",),
    "ngc_common bounded reader and result schema": ("ngc_common/",),
}
MESSAGE_WORDS = 3  # a string literal of this many words or more is prose (a message), not a key or a status

# Survivors judged equivalent: mutant name -> why no input can tell it from the original. mutmut numbers the
# mutants of a function in order, so an edit of that function renumbers them: check this list after one.
_CAPS = "ngc_paddle.scan.checks.capabilities."
_HOOKS = "ngc_paddle.scan.checks.hooks.x_remote_exec__mutmut_"
_TAGS = "ngc_paddle.scan.checks.drift.x__installed_tags__mutmut_"
_GATES = "benchmarks.harness.acceptance_gates."
_EFF = "benchmarks.harness.efficiency.x_annotate__mutmut_"
_FLEET = "ngc_paddle.release.fleet.results."
_TERA = "1e12 written 1000000000001.0: a relative change of 1e-12 in a figure reported to 4 significant digits"
EQUIVALENT: dict[str, str] = {
    f"{_CAPS}x_decode__mutmut_12": "magic word unpacked signed ('<i'): it is only ever masked (& REVISION_MASK, "
                                   "& EFFECTIVE), and Python's & of a negative int gives the same low 32 bits",
    f"{_CAPS}x_decode__mutmut_60": "unknown capability bits scanned to 65 instead of 64: at most two 32-bit words "
                                   "are read, so bit 64 is never set",
    f"{_HOOKS}8": "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive",
    f"{_HOOKS}18": "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive",
    f"{_HOOKS}24": "rfind(\"\\n\", None, ...) instead of 0: None means the start of the text",
    f"{_HOOKS}31": "rfind from 1 instead of 0: differs only when the text starts with a newline, which the quoted "
                   "line's whitespace squeeze (' '.join(split())) removes",
    f"{_HOOKS}44": "end > 0 instead of >= 0: find() from match.end() (at least 1) never returns 0",
    f"{_HOOKS}45": "end >= 1 instead of >= 0: find() from match.end() (at least 1) never returns 0",
    f"{_TAGS}7": "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive",
    f"{_TAGS}19": "split(':') without maxsplit: a wheel tag (interpreter-abi-platform) holds no ':'",
    f"{_TAGS}20": "rsplit(':', 1): a wheel tag holds no ':', so the first and the last ':' are the same",
    f"{_TAGS}22": "split(':', 2): a wheel tag holds no ':'",
    f"{_GATES}x__figures_of__mutmut_10": "get(part, None) instead of {}: the next step and the return both treat "
                                         "anything but a mapping as {}",
    f"{_GATES}x__figures_of__mutmut_12": "get(part) instead of get(part, {}): the next step and the return both "
                                         "treat anything but a mapping as {}",
    f"{_GATES}x_why_missing__mutmut_21": "get(parts[2], None) instead of {}: the node is used only if it is a mapping",
    f"{_GATES}x_why_missing__mutmut_23": "get(parts[2]) instead of get(parts[2], {}): the node is used only if it is "
                                         "a mapping",
    f"{_GATES}x_regressions__mutmut_56": "load_differs '' instead of None before the peaks are compared: it is only "
                                         "ever tested for truth",
    f"{_GATES}x_regressions__mutmut_63": "peaks that differ by >= 15 % instead of > 15 %: no ratio of two floats is "
                                         "exactly 0.15 from 1 (0.15 needs bits below the 2^-53 step of such ratios)",
    "benchmarks.harness.peaks.xǁPeaksǁrecheck__mutmut_38": "a kind the recheck lacks counts as 1.0 x devices "
                                                           "FLOP/s instead of 0.0: max() with the phase's own peak "
                                                           "(billions of FLOP/s) ignores both",
    f"{_EFF}12": _TERA, f"{_EFF}19": _TERA, f"{_EFF}68": _TERA, f"{_EFF}86": _TERA,
    f"{_EFF}63": "own_kind None looked up as 'XXXX' instead of '': the probed kinds have neither name",
    f"{_FLEET}x_read__mutmut_1": "read()'s default threshold 6.0 instead of 5.0: its one caller (the fan-out) always "
                                 "passes the release's threshold",
    f"{_FLEET}x_read__mutmut_85": "rpartition('@') instead of partition('@'): an image reference by digest holds "
                                  "one '@'",
    f"{_FLEET}x_slurm_words__mutmut_8": "an empty reason kept ('XXXX' instead of '' in the reasons left out): the "
                                        "list drops empty parts anyway",
    f"{_FLEET}x__bench__mutmut_1": "_bench()'s default no_ab 'XXXX' instead of '': its one caller (read) always "
                                   "passes no_ab",
    "ngc_common.bench_result.x__depth__mutmut_2": "the depth count starting at 1 instead of 0: it only ever "
                                                  "measures `results`, a mapping, which sets it to at least 1",
    "ngc_common.bench_result.x__unknown__mutmut_9": "the field cut at 201 characters instead of 200: parse() refuses "
                                                    "keys over 64 characters first, so the field is far shorter",
    "ngc_common.bench_result.x__shape_problem__mutmut_61": "the field cut at 201 characters instead of 200: parse() "
                                                           "refuses keys over 64 characters first",
    "ngc_common.bench_result.x_is_efficiency__mutmut_4": "rsplit('.') without maxsplit: the last part is the same",
    "ngc_common.bench_result.x_is_efficiency__mutmut_7": "rsplit('.', 2): the last part is the same",
    "ngc_paddle.release.ab.stats.x__midranks__mutmut_9": "ranks start at 1.0 instead of 0.0: every rank is written "
                                                         "before it is read",
    "ngc_paddle.release.ab.stats.x_rounds_to_decide__mutmut_14": "bound <= ratio instead of <: a bound equal to the "
                                                                 "ratio has returned None just before",
    **{f"ngc_paddle.release.ab.stats.x_signed_rank__mutmut_{n}": "zip(strict=...) dropped or false: the ranks are "
       "made from the differences, so the two lists are always as long" for n in (36, 39, 40)},
    "ngc_paddle.release.ab.stats.x_signed_rank__mutmut_41": "d >= 0 instead of d > 0: rounds on the bound (d == 0) "
                                                            "were dropped just before",
    "ngc_paddle.release.ab.stats.x_signed_rank__mutmut_73": "p capped at 2.0 instead of 1.0: the exact count is at "
                                                            "most 2^n, so p never exceeds 1",
    "ngc_paddle.release.ab.stats.x_ratio_interval__mutmut_32": "the upper index capped at resamples + 1 instead of "
                                                               "- 1: ceil((1 - tail) x resamples) - 1 is at most "
                                                               "resamples - 1 already",
    **{f"ngc_paddle.release.ab.stats.x_signed_rank__mutmut_{n}": "the normal approximation's guard on sigma changed "
       "(sigma >= 0, > 1, or 1.0 when not): it runs beyond 60 rounds, where sigma^2 >= n(n+1)(n+1)/16 > 1 even "
       "with every round tied" for n in (109, 114, 115, 116)},
    "ngc_paddle.release.ab.stats.x_signed_rank__mutmut_131": "p capped at 2.0 instead of 1.0: a normal cdf is at "
                                                             "most 1",
    **{f"ngc_paddle.release.ab.verdict.x_max_regression_pct__mutmut_{n}": "the name given to the loaded module: it "
       "is never registered or looked up" for n in (16, 17)},
    **{f"ngc_paddle.release.ab.verdict.x_max_regression_pct__mutmut_{n}": "the 'cannot be loaded' branch: "
       "spec_from_file_location always gives a spec with a loader for a .py path, so it is never reached"
       for n in (18, 21)},
    "ngc_paddle.scan.checks.accounts.x__crypt__mutmut_4": "every warning ignored, not only DeprecationWarning: the "
                                                          "filter wraps only `import crypt`, whose one warning is that",
    "ngc_paddle.scan.checks.accounts.x_sudo_rules__mutmut_11": "codec 'UTF-8' instead of 'utf-8': codec names are "
                                                               "case-insensitive",
    **{f"ngc_paddle.scan.checks.accounts.x_sudo_rules__mutmut_{n}": "'#include' no longer skipped: the comment strip "
       "that follows removes a line starting '#i' whole" for n in (19, 20)},
    **{f"ngc_paddle.scan.checks.own_files.x__what__mutmut_{n}": "a hard link's kind 'file' spelt otherwise: the kind "
       "is only compared with 'symlink' after" for n in (13, 14)},
    **{f"ngc_paddle.scan.checks.own_files.x__later__mutmut_{n}": "zip(strict=...) dropped or false: check() passes "
       "the layers and the facts of one image, always as long" for n in (5, 8, 9)},
    "ngc_paddle.scan.checks.config_record.x__shown__mutmut_1": "_shown()'s default name 'XXXX' instead of '': its "
                                                                "one caller always passes the field's name",
    "ngc_paddle.scan.checks.own_files.x__later__mutmut_30": "a path written again after its whiteout kept among the "
                                                            "removed: check() judges a written path before that",
    **{f"ngc_paddle.release.ab.ab_report.x_unpullable__mutmut_{n}": "the registry split off with maxsplit 2 or "
       "none: the first part before '/' is the same" for n in (22, 25)},
    "ngc_paddle.release.ab.gate_without_floor.x_decide__mutmut_30": "the reasons joined with another separator: "
                                                                    "at most one reason is joined",
    "ngc_paddle.lock.check.x__cuda_majors__mutmut_12": "a component without a package searched as 'xxxx' instead "
                                                       "of '': neither names a CUDA major",
}


def group_of(path: str) -> str:
    return next((name for name, prefixes in GROUPS.items() if path.startswith(prefixes)), "other")


def _tokens(code: str) -> list[tokenize.TokenInfo]:
    return [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)]


def message_only(original: str, mutant: str) -> bool:
    """The mutant changes nothing but the text of string literals that are prose (MESSAGE_WORDS words or more)."""
    before, after = _tokens(original), _tokens(mutant)
    if len(before) != len(after):
        return False
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a.string != b.string]
    return bool(changed) and all(a.type == b.type == tokenize.STRING and len(a.string.split()) >= MESSAGE_WORDS
                                 for a, b in changed)


def survivor_kind(name: str, path: Path) -> str:
    """'message' when the survivor only rewords a message, else 'decision'."""
    import libcst as cst
    from mutmut.mutation.diff_apply import read_functions_from_index

    pair = read_functions_from_index(name, path)
    if pair is None:
        return "decision"
    empty = cst.Module([])
    return "message" if message_only(*(empty.code_for_node(f) for f in pair)) else "decision"


def collect() -> tuple[dict[str, Counter], dict[str, list[tuple[str, str]]]]:
    """Per group: counts of each status (killed, survived, message, equivalent, no tests, timeout, not checked);
    and per group the survivors that are neither message-only nor judged equivalent (name, path)."""
    from mutmut.configuration import config
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.file_utils import walk_mutatable_files

    config()  # read [tool.mutmut] while the working directory is the repository
    counts: dict[str, Counter] = {}
    open_survivors: dict[str, list[tuple[str, str]]] = {}
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        group = group_of(str(path))
        tally = counts.setdefault(group, Counter())
        for name, code in data.exit_code_by_key.items():
            status = status_by_exit_code[code]
            if status == "survived":
                status = ("equivalent" if name in EQUIVALENT else
                          "message" if survivor_kind(name, path) == "message" else "survived")
                if status == "survived":
                    open_survivors.setdefault(group, []).append((name, str(path)))
            tally[status] += 1
            tally["total"] += 1
    return counts, open_survivors


def score(tally: Counter) -> float | None:
    """Killed share of the mutants run that a test could tell apart (message-only and equivalent survivors out)."""
    caught = tally["killed"] + tally["timeout"]
    judged = tally["total"] - tally["message"] - tally["equivalent"] - tally["not checked"]
    return 100 * caught / judged if judged else None


def table(counts: dict[str, Counter]) -> str:
    rows = ["| module group | mutants | killed | timeout | survived | no tests | message-only | equivalent "
            "| not checked | score |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    total: Counter = Counter()
    for group in [*GROUPS, "other"]:
        if group not in counts:
            continue
        total += counts[group]
        rows.append(_row(group, counts[group]))
    rows.append(_row("**all**", total))
    return "\n".join(rows)


def _row(name: str, tally: Counter) -> str:
    value = score(tally)
    shown = f"{value:.1f} %" if value is not None else "-"
    return (f"| {name} | {tally['total']} | {tally['killed']} | {tally['timeout']} | {tally['survived']} "
            f"| {tally['no tests']} | {tally['message']} | {tally['equivalent']} | {tally['not checked']} | {shown} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="write the figures into docs/measurements.md")
    parser.add_argument("--wall", type=float, help="seconds `mutmut run` took (recorded with the figures)")
    parser.add_argument("--survivors", action="store_true", help="list the survivors that count against the score")
    parser.add_argument("--note", default="", help="a paragraph recorded with the figures (what the run covered)")
    options = parser.parse_args()
    started = time.monotonic()
    counts, survivors = collect()
    text = table(counts)
    print(text)
    if options.survivors:
        for group, names in survivors.items():
            print(f"\n{group}:")
            print("\n".join(f"  {name}" for name, _path in names))
    if options.record:
        from perf.measurements import record

        wall = f" `mutmut run` took {options.wall / 60:.0f} min." if options.wall else ""
        equivalent = "\n".join(f"- `{name}`: {why}" for name, why in sorted(EQUIVALENT.items())) or "- none"
        record("mutation", "Mutation score of the decision modules (mutmut, unit suite only)",
               f"mutmut 3.8.1 over the modules `[tool.mutmut] only_mutate` lists, each mutant run against the unit "
               f"tests that reach it.{wall} Score = (killed + timeout) / (mutants - message-only - equivalent - "
               f"not checked); not checked: not run in this measurement; no tests: no unit test reaches it (killed by "
               f"none, so in the score); "
               f"message-only: a survivor that changes only the text of a string of {MESSAGE_WORDS} words or more "
               f"(classified by perf/mutation.py in {time.monotonic() - started:.0f} s).\n\n{text}\n\n"
               f"{options.note + chr(10) + chr(10) if options.note else ''}"
               f"Survivors judged equivalent (mutant: why):\n\n{equivalent}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
