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

# Survivors judged equivalent: mutant name -> (the line the mutant changes, as mutmut wrote it; why no input can tell
# it from the original). mutmut numbers the mutants of a function in order, so an edit of that function renumbers
# them: collect() takes an entry only while its mutant still makes that change, and names each stale one (judge it
# again: the number may now be another mutant's).
EQUIVALENT: dict[str, tuple[str, str]] = {
    'ngc_paddle.scan.checks.layer_cache.xǁLayerCacheǁput__mutmut_31': (
        'out.write(gzip.compress(json.dumps(facts.as_dict()).encode(), ))',
        "gzip's compression level changes an entry's size, not what get() reads back"),
    'ngc_paddle.scan.checks.layer_cache.xǁLayerCacheǁput__mutmut_33': (
        'out.write(gzip.compress(json.dumps(facts.as_dict()).encode(), compresslevel=4))',
        "gzip's compression level changes an entry's size, not what get() reads back"),
    'ngc_paddle.scan.checks.drift.x_compare__mutmut_139': (
        'findings.append(_finding("pypi", _direction("XXpypiXX", p.version, locked_entry[0]), name, p.version,',
        "_direction() tells only 'deb' apart: any other kind compares as Python versions"),
    'ngc_paddle.scan.checks.drift.x_compare__mutmut_140': (
        'findings.append(_finding("pypi", _direction("PYPI", p.version, locked_entry[0]), name, p.version,',
        "_direction() tells only 'deb' apart: any other kind compares as Python versions"),
    'ngc_paddle.release.ab.stats.x_rounds_to_decide__mutmut_7': (
        'if distance <= 1e-9:',
        "a distance to the bound of exactly 1e-9 taken as on it: the distance of two logarithms is never exactly "
        "that float"),
    'ngc_paddle.release.fleet.results.x__tasks__mutmut_10': (
        'results = bounded_read.load_json(found[-1], NgcPaddleError).get("results", None) if found else {}',
        "a report without results read as None instead of {}: the next line passes on a mapping only, and {} "
        "otherwise"),
    'ngc_paddle.release.fleet.results.x__tasks__mutmut_12': (
        'results = bounded_read.load_json(found[-1], NgcPaddleError).get("results", ) if found else {}',
        "a report without results read as None instead of {}: the next line passes on a mapping only, and {} "
        "otherwise"),
    'ngc_paddle.release.fleet.results.x__tasks__mutmut_21': (
        'results = None',
        "an unreadable report's results None instead of {}: the next line passes on a mapping only, and {} "
        "otherwise"),
    'ngc_paddle.scan.checks.package_records.x__listed__mutmut_7': (
        'return {posixpath.normpath(line) for line in (content or b"XXXX").decode("utf-8", "replace").splitlines()',
        "a missing list read as 'XXXX' instead of '': neither holds a line starting with '/'"),
    'ngc_paddle.scan.checks.package_records.x__listed__mutmut_9': (
        'return {posixpath.normpath(line) for line in (content or b"").decode("UTF-8", "replace").splitlines()',
        "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive"),
    'ngc_paddle.scan.checks.integrity.x__dpkg_link__mutmut_3': (
        'if installed is None or seen.layer.index < installed:',
        "a package symlink written in its package's own install layer compared as well: that layer's facts hold the "
        "same symlink, so the comparison finds no change"),
    'ngc_paddle.scan.checks.archives.x__member__mutmut_40': (
        'spool.seek(1)',
        "the nested archive's spool rewound to 1 instead of 0: _archive() seeks it to 0 itself before opening it"),
    'benchmarks.harness.acceptance_gates.x_evaluate__mutmut_29': (
        'verdicts = [_compare(g, results, profile, config, True) for g in table.get(profile or "XXXX", [])',
        "a profile of None looked up as 'XXXX' instead of '': the comprehension's condition (profile in table) "
        "leaves nothing for None either way"),
    'benchmarks.harness.acceptance_gates.x_scaling_reported__mutmut_18': (
        'verdict.reason = scaling.why_not_gated(table, name, None, verdict.reason)',
        "the profile dropped where a gate is N/A: such a verdict always carries its reason, and with one "
        "why_not_gated() returns before it reads the profile"),
    'ngc_paddle.scan.checks.capabilities.x_decode__mutmut_12': (
        '(magic,) = struct.unpack_from("<i", raw)',
        "magic word unpacked signed ('<i'): it is only ever masked (& REVISION_MASK, & EFFECTIVE), and Python's "
        '& of a negative int gives the same low 32 bits'),
    'ngc_paddle.scan.checks.capabilities.x_decode__mutmut_60': (
        'names += [f"cap_{i}" for i in range(len(NAMES), 65) if bits >> i & 1]  # a capability newer than this list',
        'unknown capability bits scanned to 65 instead of 64: at most two 32-bit words are read, so bit 64 is '
        'never set'),
    'ngc_paddle.scan.checks.hooks.x_remote_exec__mutmut_8': (
        'match = REMOTE_EXEC.search(content.decode("UTF-8", "replace"))',
        "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive"),
    'ngc_paddle.scan.checks.hooks.x_remote_exec__mutmut_18': (
        'text = content.decode("UTF-8", "replace")',
        "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive"),
    'ngc_paddle.scan.checks.hooks.x_remote_exec__mutmut_24': (
        'start = text.rfind("\\n", None, match.start()) + 1',
        'rfind("\\n", None, ...) instead of 0: None means the start of the text'),
    'ngc_paddle.scan.checks.hooks.x_remote_exec__mutmut_31': (
        'start = text.rfind("\\n", 1, match.start()) + 1',
        "rfind from 1 instead of 0: differs only when the text starts with a newline, which the quoted line's "
        "whitespace squeeze (' '.join(split())) removes"),
    'ngc_paddle.scan.checks.hooks.x_remote_exec__mutmut_44': (
        'return " ".join(text[start: end if end > 0 else len(text)].split())[:120]',
        'end > 0 instead of >= 0: find() from match.end() (at least 1) never returns 0'),
    'ngc_paddle.scan.checks.hooks.x_remote_exec__mutmut_45': (
        'return " ".join(text[start: end if end >= 1 else len(text)].split())[:120]',
        'end >= 1 instead of >= 0: find() from match.end() (at least 1) never returns 0'),
    'ngc_paddle.scan.checks.drift.x__installed_tags__mutmut_7': (
        'for line in wheel.decode("UTF-8", "replace").splitlines():',
        "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive"),
    'ngc_paddle.scan.checks.drift.x__installed_tags__mutmut_19': (
        'parts = line.split(":", )[1].strip().split("-")',
        "split(':') without maxsplit: a wheel tag (interpreter-abi-platform) holds no ':'"),
    'ngc_paddle.scan.checks.drift.x__installed_tags__mutmut_20': (
        'parts = line.rsplit(":", 1)[1].strip().split("-")',
        "rsplit(':', 1): a wheel tag holds no ':', so the first and the last ':' are the same"),
    'ngc_paddle.scan.checks.drift.x__installed_tags__mutmut_22': (
        'parts = line.split(":", 2)[1].strip().split("-")',
        "split(':', 2): a wheel tag holds no ':'"),
    'benchmarks.harness.acceptance_gates.x__figures_of__mutmut_10': (
        'parent = parent.get(part, None) if isinstance(parent, dict) else {}',
        'get(part, None) instead of {}: the next step and the return both treat anything but a mapping as {}'),
    'benchmarks.harness.acceptance_gates.x__figures_of__mutmut_12': (
        'parent = parent.get(part, ) if isinstance(parent, dict) else {}',
        'get(part) instead of get(part, {}): the next step and the return both treat anything but a mapping as {}'),
    'benchmarks.harness.acceptance_gates.x_why_missing__mutmut_40': (
        'node = results.get("infer", {}).get(parts[1], {}).get(parts[2], None)',
        'get(parts[2], None) instead of {}: the node is used only if it is a mapping'),
    'benchmarks.harness.acceptance_gates.x_why_missing__mutmut_42': (
        'node = results.get("infer", {}).get(parts[1], {}).get(parts[2], )',
        'get(parts[2]) instead of get(parts[2], {}): the node is used only if it is a mapping'),
    'benchmarks.harness.acceptance_gates.x_regressions__mutmut_56': (
        'load_differs = ""',
        "load_differs '' instead of None before the peaks are compared: it is only ever tested for truth"),
    'benchmarks.harness.acceptance_gates.x_regressions__mutmut_63': (
        'if peak_now and peak_then and abs(peak_now / peak_then - 1) >= PEAK_TOLERANCE:',
        'peaks that differ by >= 15 % instead of > 15 %: no ratio of two floats is exactly 0.15 from 1 (0.15 '
        'needs bits below the 2^-53 step of such ratios)'),
    'benchmarks.harness.peaks.xǁPeaksǁrecheck__mutmut_38': (
        'kinds = {kind: max(rate, again.get("kinds", {}).get(kind, 1.0) * peak["devices"])',
        "a kind the recheck lacks counts as 1.0 x devices FLOP/s instead of 0.0: max() with the phase's own "
        'peak (billions of FLOP/s) ignores both'),
    'benchmarks.harness.efficiency.x_annotate__mutmut_12': (
        'result["achieved_tflops"] = achieved / 1000000000001.0',
        '1e12 written 1000000000001.0: a relative change of 1e-12 in a figure reported to 4 significant digits'),
    'benchmarks.harness.efficiency.x_annotate__mutmut_19': (
        'result["peak_tflops"] = peak["peak_flops"] / 1000000000001.0',
        '1e12 written 1000000000001.0: a relative change of 1e-12 in a figure reported to 4 significant digits'),
    'benchmarks.harness.efficiency.x_annotate__mutmut_68': (
        'result["paddle_peak_tflops"] = own / 1000000000001.0',
        '1e12 written 1000000000001.0: a relative change of 1e-12 in a figure reported to 4 significant digits'),
    'benchmarks.harness.efficiency.x_annotate__mutmut_86': (
        'result["mfu"] = achieved / (datasheet_tflops * 1000000000001.0)',
        '1e12 written 1000000000001.0: a relative change of 1e-12 in a figure reported to 4 significant digits'),
    'benchmarks.harness.efficiency.x_annotate__mutmut_63': (
        'own = peak.get("kinds", {}).get(own_kind or "XXXX")',
        "own_kind None looked up as 'XXXX' instead of '': the probed kinds have neither name"),
    'ngc_paddle.release.fleet.results.x_read__mutmut_1': (
        'def read(job: Placed, state: JobState, pattern: str, threshold_pct: float = 6.0, no_reference: str = '
        '"") -> Reading:',
        "read()'s default threshold 6.0 instead of 5.0: its one caller (the fan-out) always passes the "
        "release's threshold"),
    'ngc_paddle.release.fleet.results.x_read__mutmut_96': (
        'expected = job.spec.image.rpartition("@")[2]',
        "rpartition('@') instead of partition('@'): an image reference by digest holds one '@'"),
    'ngc_paddle.release.fleet.results.x_slurm_words__mutmut_8': (
        'extra = [p for p in (state.reason if state.reason not in ("None", "XXXX") else "",',
        "an empty reason kept ('XXXX' instead of '' in the reasons left out): the list drops empty parts anyway"),
    'ngc_paddle.release.fleet.results.x__bench__mutmut_1': (
        'no_ab: str = "XXXX") -> tuple[str, str]:',
        "_bench()'s default no_ab 'XXXX' instead of '': its one caller (read) always passes no_ab"),
    'ngc_common.bench_result.x__depth__mutmut_2': (
        'deepest, stack = 1, [(node, 0)]',
        'the depth count starting at 1 instead of 0: it only ever measures `results`, a mapping, which sets it '
        'to at least 1'),
    'ngc_common.bench_result.x__unknown__mutmut_9': (
        'return f"{where}.{unknown}"[:201], f"is not {what} the harness writes ({\', \'.join(sorted(known))[:300]})"',
        'the field cut at 201 characters instead of 200: parse() refuses keys over 64 characters first, so the '
        'field is far shorter'),
    'ngc_common.bench_result.x__shape_problem__mutmut_58': (
        'if problem := _data_parallel_problem(f"results.data_parallel.{precision}"[:201], figures):',
        'the field cut at 201 characters instead of 200: its key (a precision, a back end) is at most 64 '
        'characters, so the field is far shorter'),
    'ngc_common.bench_result.x__shape_problem__mutmut_72': (
        'return f"results.infer.{backend}"[:201], (f"{backend[:40]!r} is not an inference back end "',
        'the field cut at 201 characters instead of 200: its key (a precision, a back end) is at most 64 '
        'characters, so the field is far shorter'),
    'ngc_common.bench_result.x_is_efficiency__mutmut_4': (
        'return metric.rsplit(".", )[-1] in EFFICIENCIES',
        "rsplit('.') without maxsplit: the last part is the same"),
    'ngc_common.bench_result.x_is_efficiency__mutmut_7': (
        'return metric.rsplit(".", 2)[-1] in EFFICIENCIES',
        "rsplit('.', 2): the last part is the same"),
    'ngc_paddle.release.ab.stats.x__midranks__mutmut_9': (
        'ranks = [1.0] * len(values)',
        'ranks start at 1.0 instead of 0.0: every rank is written before it is read'),
    'ngc_paddle.release.ab.stats.x_rounds_to_decide__mutmut_14': (
        'half = centre - math.log(interval.low) if bound <= interval.ratio else math.log(interval.high) - centre',
        'bound <= ratio instead of <: a bound equal to the ratio has returned None just before'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_36': (
        'w_plus = sum(r for r, d in zip(ranks, differences, strict=None) if d > 0)',
        'zip(strict=...) dropped or false: the ranks are made from the differences, so the two lists are always '
        'as long'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_39': (
        'w_plus = sum(r for r, d in zip(ranks, differences, ) if d > 0)',
        'zip(strict=...) dropped or false: the ranks are made from the differences, so the two lists are always '
        'as long'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_40': (
        'w_plus = sum(r for r, d in zip(ranks, differences, strict=False) if d > 0)',
        'zip(strict=...) dropped or false: the ranks are made from the differences, so the two lists are always '
        'as long'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_41': (
        'w_plus = sum(r for r, d in zip(ranks, differences, strict=True) if d >= 0)',
        'd >= 0 instead of d > 0: rounds on the bound (d == 0) were dropped just before'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_73': (
        'return PairedTest(w_plus, min(2.0, below / 2 ** n), "exact", n, min_p)',
        'p capped at 2.0 instead of 1.0: the exact count is at most 2^n, so p never exceeds 1'),
    'ngc_paddle.release.ab.stats.x_ratio_interval__mutmut_32': (
        'high = means[min(resamples + 1, math.ceil((1 - tail) * resamples) - 1)]',
        'the upper index capped at resamples + 1 instead of - 1: ceil((1 - tail) x resamples) - 1 is at most '
        'resamples - 1 already'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_109': (
        'z = (w_plus - mean + 0.5) / sigma if (sigma > 0) or True else 0.0',
        "the normal approximation's guard on sigma changed (sigma >= 0, > 1, or 1.0 when not): it runs beyond "
        '60 rounds, where sigma^2 >= n(n+1)(n+1)/16 > 1 even with every round tied'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_114': (
        'z = (w_plus - mean + 0.5) / sigma if sigma >= 0 else 0.0',
        "the normal approximation's guard on sigma changed (sigma >= 0, > 1, or 1.0 when not): it runs beyond "
        '60 rounds, where sigma^2 >= n(n+1)(n+1)/16 > 1 even with every round tied'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_115': (
        'z = (w_plus - mean + 0.5) / sigma if sigma > 1 else 0.0',
        "the normal approximation's guard on sigma changed (sigma >= 0, > 1, or 1.0 when not): it runs beyond "
        '60 rounds, where sigma^2 >= n(n+1)(n+1)/16 > 1 even with every round tied'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_116': (
        'z = (w_plus - mean + 0.5) / sigma if sigma > 0 else 1.0',
        "the normal approximation's guard on sigma changed (sigma >= 0, > 1, or 1.0 when not): it runs beyond "
        '60 rounds, where sigma^2 >= n(n+1)(n+1)/16 > 1 even with every round tied'),
    'ngc_paddle.release.ab.stats.x_signed_rank__mutmut_131': (
        'return PairedTest(w_plus, min(2.0, NormalDist().cdf(z)), "normal", n, min_p)',
        'p capped at 2.0 instead of 1.0: a normal cdf is at most 1'),
    'ngc_paddle.release.ab.verdict.x_max_regression_pct__mutmut_16': (
        'spec = importlib.util.spec_from_file_location(path) if path.is_file() else None',
        'the name given to the loaded module: it is never registered or looked up'),
    'ngc_paddle.release.ab.verdict.x_max_regression_pct__mutmut_17': (
        'spec = importlib.util.spec_from_file_location("ngc_gates_file", ) if path.is_file() else None',
        'the name given to the loaded module: it is never registered or looked up'),
    'ngc_paddle.release.ab.verdict.x_max_regression_pct__mutmut_18': (
        'spec = importlib.util.spec_from_file_location("XXngc_gates_fileXX", path) if path.is_file() else None',
        "the 'cannot be loaded' branch: spec_from_file_location always gives a spec with a loader for a .py "
        'path, so it is never reached'),
    'ngc_paddle.release.ab.verdict.x_max_regression_pct__mutmut_21': (
        'if spec is not None or spec.loader is None:',
        "the 'cannot be loaded' branch: spec_from_file_location always gives a spec with a loader for a .py "
        'path, so it is never reached'),
    'ngc_paddle.scan.checks.accounts.x__crypt__mutmut_4': (
        'warnings.simplefilter("ignore", )',
        'every warning ignored, not only DeprecationWarning: the filter wraps only `import crypt`, whose one '
        'warning is that'),
    'ngc_paddle.scan.checks.accounts.x_sudo_rules__mutmut_11': (
        'text = content.decode("UTF-8", "replace").replace("\\\\\\n", " ")',
        "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive"),
    'ngc_paddle.scan.checks.accounts.x_sudo_rules__mutmut_19': (
        'if line.startswith(("XX#includeXX", "@include")):',
        "'#include' no longer skipped: the comment strip that follows removes a line starting '#i' whole"),
    'ngc_paddle.scan.checks.accounts.x_sudo_rules__mutmut_20': (
        'if line.startswith(("#INCLUDE", "@include")):',
        "'#include' no longer skipped: the comment strip that follows removes a line starting '#i' whole"),
    'ngc_paddle.scan.checks.own_files.x__what__mutmut_13': (
        'kind, digest = "XXfileXX", written[target][0][1] if target in written else expected.get(target, "")',
        "a hard link's kind 'file' spelt otherwise: the kind is only compared with 'symlink' after"),
    'ngc_paddle.scan.checks.own_files.x__what__mutmut_14': (
        'kind, digest = "FILE", written[target][0][1] if target in written else expected.get(target, "")',
        "a hard link's kind 'file' spelt otherwise: the kind is only compared with 'symlink' after"),
    'ngc_paddle.scan.checks.own_files.x__later__mutmut_5': (
        'for layer, f in zip(layers[ours:], facts[ours:], strict=None):',
        'zip(strict=...) dropped or false: check() passes the layers and the facts of one image, always as long'),
    'ngc_paddle.scan.checks.own_files.x__later__mutmut_8': (
        'for layer, f in zip(layers[ours:], facts[ours:], ):',
        'zip(strict=...) dropped or false: check() passes the layers and the facts of one image, always as long'),
    'ngc_paddle.scan.checks.own_files.x__later__mutmut_9': (
        'for layer, f in zip(layers[ours:], facts[ours:], strict=False):',
        'zip(strict=...) dropped or false: check() passes the layers and the facts of one image, always as long'),
    'ngc_paddle.scan.checks.config_record.x__shown__mutmut_1': (
        'def _shown(value: object, name: str = "XXXX") -> str:',
        "_shown()'s default name 'XXXX' instead of '': its one caller always passes the field's name"),
    'ngc_paddle.scan.checks.own_files.x__later__mutmut_30': (
        'removed.pop(None, None)',
        'a path written again after its whiteout kept among the removed: check() judges a written path before that'),
    'ngc_paddle.release.ab.ab_report.x_unpullable__mutmut_22': (
        'registry = image.split("/", )[0] if "/" in image else "its registry"',
        "the registry split off with maxsplit 2 or none: the first part before '/' is the same"),
    'ngc_paddle.release.ab.ab_report.x_unpullable__mutmut_25': (
        'registry = image.split("/", 2)[0] if "/" in image else "its registry"',
        "the registry split off with maxsplit 2 or none: the first part before '/' is the same"),
    'ngc_paddle.release.ab.gate_without_floor.x_decide__mutmut_30': (
        'why = "XX; XX".join(summary.get("reasons", [])[:1]) or f"it measured no figure of {command}"',
        'the reasons joined with another separator: at most one reason is joined'),
    'ngc_paddle.lock.check.x__cuda_majors__mutmut_12': (
        'match = CUDA_MAJOR.search(canonicalize_name(str(comp.package or "XXXX")))',
        "a component without a package searched as 'xxxx' instead of '': neither names a CUDA major"),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_11': (
        'seekable = None',
        'the stream read from a spool instead of directly: the same bytes either way (only memory and speed differ)'),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_12': (
        'seekable = stream.seekable() if (hasattr(stream, "seekable")) and False else False',
        'the stream read from a spool instead of directly: the same bytes either way (only memory and speed differ)'),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_14': (
        'seekable = stream.seekable() if hasattr(None, "seekable") else False',
        'the stream read from a spool instead of directly: the same bytes either way (only memory and speed differ)'),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_18': (
        'seekable = stream.seekable() if hasattr(stream, "XXseekableXX") else False',
        'the stream read from a spool instead of directly: the same bytes either way (only memory and speed differ)'),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_19': (
        'seekable = stream.seekable() if hasattr(stream, "SEEKABLE") else False',
        'the stream read from a spool instead of directly: the same bytes either way (only memory and speed differ)'),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_24': (
        'with contextlib.nullcontext(stream) if seekable else tempfile.SpooledTemporaryFile(None) as spool:',
        "the spool's memory size None (never rolled to disk) instead of 32 MiB: the same bytes, held in memory"),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_28': (
        'shutil.copyfileobj(stream, spool, None)',
        "copyfileobj's buffer size (None, 0 or left out: its default; 2 or 4 MiB): the same bytes are copied"),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_31': (
        'shutil.copyfileobj(stream, spool, )',
        "copyfileobj's buffer size (None, 0 or left out: its default; 2 or 4 MiB): the same bytes are copied"),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_32': (
        'shutil.copyfileobj(stream, spool, 1 >> 20)',
        "copyfileobj's buffer size (None, 0 or left out: its default; 2 or 4 MiB): the same bytes are copied"),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_33': (
        'shutil.copyfileobj(stream, spool, 2 << 20)',
        "copyfileobj's buffer size (None, 0 or left out: its default; 2 or 4 MiB): the same bytes are copied"),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_34': (
        'shutil.copyfileobj(stream, spool, 1 << 21)',
        "copyfileobj's buffer size (None, 0 or left out: its default; 2 or 4 MiB): the same bytes are copied"),
    'ngc_paddle.scan.checks.archives.x_scan__mutmut_36': (
        'spool.seek(1)',
        'the spool sought to 1 instead of 0: _archive seeks to 0 before it opens either kind'),
    'ngc_paddle.scan.checks.archives.x__archive__mutmut_3': (
        'fh.seek(1)',
        'a zip sought to 1 before zipfile opens it: zipfile reads the central directory from the end and seeks itself'),
    'ngc_paddle.scan.checks.archives.x__tar__mutmut_4': (
        'with tarfile.open(fileobj=fh, ) as archive:',
        "tarfile.open without mode: its default 'r' is 'r:*'"),
    'ngc_paddle.scan.checks.archives.x__tar__mutmut_15': (
        'budget.spend(513)  # a header: an archive of empty members still costs time',
        'a header costs 513 bytes of the 2 GiB budget instead of 512: a bomb by headers alone needs about 4 '
        'million members, past MAX_MEMBERS (100,000) first'),
    'ngc_paddle.scan.checks.archives.xǁ_Budgetǁspend__mutmut_9': (
        'if time.monotonic() >= self.deadline:',
        'the deadline passed at >= instead of >: time.monotonic() equal to the deadline to the nanosecond '
        'decides nothing a test or a user could tell'),
    'ngc_paddle.scan.checks.archives.x__member__mutmut_5': (
        'inner = member.rsplit("!", )[-1]',
        "rsplit('!') with another maxsplit, or [+1] for [-1]: the last part of the name is the same"),
    'ngc_paddle.scan.checks.archives.x__member__mutmut_8': (
        'inner = member.rsplit("!", 2)[-1]',
        "rsplit('!') with another maxsplit, or [+1] for [-1]: the last part of the name is the same"),
    'ngc_paddle.scan.checks.archives.x__member__mutmut_9': (
        'inner = member.rsplit("!", 1)[+1]',
        "rsplit('!') with another maxsplit, or [+1] for [-1]: the last part of the name is the same"),
    'ngc_paddle.scan.checks.drift.xǁDistInfoǁrecord_lines__mutmut_15': (
        'for line in self.files.get("RECORD", b"XXXX").decode("utf-8", "replace").splitlines():',
        "a missing RECORD read as 'XXXX' instead of '': one line without commas, which no entry comes of"),
    'ngc_paddle.scan.checks.drift.xǁDistInfoǁrecord_lines__mutmut_17': (
        'for line in self.files.get("RECORD", b"").decode("UTF-8", "replace").splitlines():',
        "codec 'UTF-8' instead of 'utf-8': codec names are case-insensitive"),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_40': (
        'package = stem.split(":", )[0]',
        "the first field of a split does not depend on how many splits follow it"),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_43': (
        'package = stem.split(":", 2)[0]',
        "the first field of a split does not depend on how many splits follow it"),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_90': (
        'if lists[-1][0] >= install:',
        "a file list last written in the install's own layer is the list as of the install: it gains nothing"),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_132': (
        'parse_md5sums(at_install[1] or b"XXXX")',
        'a record with no content read as b"XXXX" instead of b"": neither holds an "<md5>  <path>" line'),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_150': (
        'install = installed.get(package, None)',
        "every package of the final status is in install_layers' map: the default is never taken"),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_152': (
        'install = installed.get(package, )',
        "every package of the final status is in install_layers' map: the default is never taken"),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_155': (
        'install = installed.get(package, statuses[-1][1])',
        "every package of the final status is in install_layers' map: the default is never taken"),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_158': (
        '.get(package, None)[1]',
        'the status copy of the install layer lists the package (that is how its install layer was found): '
        'the default is never taken'),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_160': (
        '.get(package, )[1]',
        'the status copy of the install layer lists the package (that is how its install layer was found): '
        'the default is never taken'),
    'ngc_paddle.scan.checks.package_records.x_dpkg__mutmut_166': (
        '.get(package, ("XXXX", {}))[1]',
        'the status copy of the install layer lists the package (that is how its install layer was found): '
        'the default is never taken'),
    'ngc_paddle.scan.checks.image_checks.x_check__mutmut_23': (
        'result.findings = accounts.check(account_files)',
        'the first findings put into an empty list: assigning and adding give the same list'),
    'ngc_paddle.scan.checks.layer_facts.x_captured__mutmut_9': (
        'inventory.wants_content(path, None)',
        'inventory.wants_content does not read its size argument'),
    'ngc_paddle.scan.checks.layer_facts.x_captured__mutmut_12': (
        'inventory.wants_content(path, 1)',
        'inventory.wants_content does not read its size argument'),
    'ngc_paddle.scan.checks.layer_facts.x_scan_layer__mutmut_5': (
        'e = entry_of(None, tar, item, SMALL, None)',
        "scan_layer reads no field of an entry's layer"),
    'ngc_paddle.scan.checks.layer_facts.x_scan_layer__mutmut_13': (
        'e = entry_of(layer, tar, item, SMALL, )',
        "entry_of's want defaults to None"),
    'ngc_paddle.scan.checks.layer_facts.x_scan_layer__mutmut_29': (
        'md5, head = None, b"XXXX"',
        'head is read only for a regular file, for which _read sets it'),
    'ngc_paddle.scan.checks.layer_facts.x_scan_layer__mutmut_39': (
        'special or file_scope.wants_md5(e.path), None)',
        '_read reads keep for its truth only: None and False alike'),
    'ngc_paddle.scan.checks.layer_facts.x_scan_layer__mutmut_65': (
        'facts.hashes.get(e.path, None)',
        "every in-scope regular file but a .pyc has an md5 or a sha256, and a .pyc's entry takes its header, "
        'not a digest'),
    'ngc_paddle.scan.checks.layer_facts.x_scan_layer__mutmut_67': (
        'facts.hashes.get(e.path, )',
        "every in-scope regular file but a .pyc has an md5 or a sha256, and a .pyc's entry takes its header, "
        'not a digest'),
    'ngc_paddle.scan.checks.layer_facts.x_scan_layer__mutmut_68': (
        'facts.hashes.get(e.path, "XXXX")',
        "every in-scope regular file but a .pyc has an md5 or a sha256, and a .pyc's entry takes its header, "
        'not a digest'),
    'ngc_paddle.scan.checks.layer_facts.x__file__mutmut_3': (
        'kept = content if (content is not None and len(content) <= CAPTURE_LIMIT) or True else None',
        '_read hands over no content longer than CAPTURE_LIMIT: read whole, at most SMALL (256 KiB, below the '
        '4 MiB limit); streamed, kept only up to the limit'),
    'ngc_paddle.scan.checks.own_files.x_check__mutmut_105': (
        'zip(layers[ours:], facts[ours:], strict=None)',
        '_later zips the same slices strictly first: a length mismatch has raised before this loop'),
    'ngc_paddle.scan.checks.own_files.x_check__mutmut_108': (
        'zip(layers[ours:], facts[ours:], )',
        '_later zips the same slices strictly first: a length mismatch has raised before this loop'),
    'ngc_paddle.scan.checks.own_files.x_check__mutmut_109': (
        'zip(layers[ours:], facts[ours:], strict=False)',
        '_later zips the same slices strictly first: a length mismatch has raised before this loop'),
    'ngc_paddle.release.ab.compare.x_run_job__mutmut_39': (
        'parts = line.split(None)',
        "rounds.tsv is the job script's (payload.sh's ngc_ab_step): round-NN, the side, the command, numbers, "
        'none empty or holding a blank: split on blanks or tabs alike'),
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
    """'equivalent' when EQUIVALENT names the survivor and its mutant still makes the change the entry records,
    'message' when it only rewords a message, else 'decision' (a stale entry is said on stderr)."""
    import libcst as cst
    from mutmut.mutation.diff_apply import read_functions_from_index

    pair = read_functions_from_index(name, path)
    if pair is None:
        return "decision"
    empty = cst.Module([])
    original, mutant = (empty.code_for_node(f) for f in pair)
    if name in EQUIVALENT:
        change = EQUIVALENT[name][0]
        if change in mutant and change not in original:
            return "equivalent"
        print(f"stale: EQUIVALENT[{name!r}] judged a mutant that changed a line to {change!r}; this mutant does "
              "not: judge it again", file=sys.stderr)
    return "message" if message_only(original, mutant) else "decision"


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
                kind = survivor_kind(name, path)
                status = ("equivalent" if kind == "equivalent" else "message" if kind == "message" else "survived")
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
        equivalent = "\n".join(f"- `{name}` (`{change}`): {why}"
                               for name, (change, why) in sorted(EQUIVALENT.items())) or "- none"
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
