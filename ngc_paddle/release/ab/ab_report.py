"""An A/B comparison's report: ab.json for machines, ab.md for people, rounds.svg (candidate vs reference over time).

Why: a verdict is only as good as what it shows: both digests, the node, every round's figures in the order they
ran, each metric's ratio and interval against its bound, and the reasons of anything not PASS. The plot is SVG
written here (matplotlib is not a dependency of the host tooling): one panel per metric, each image's figure at the
time its run started, so drift on the node and an alternating pattern (order effects) can be seen.
"""

import html
import json
from pathlib import Path

from ngc_paddle.outputs import ensure_folder, staged
from ngc_paddle.release.ab import rounds as rounds_reader
from ngc_paddle.release.ab import verdict
from ngc_paddle.release.ab.metrics import IMAGE_SIZE
from ngc_paddle.release.ab.rounds import SIDES, Rounds

COLOURS = {"candidate": "#d62728", "reference": "#1f77b4"}
REFERENCE_FAILED = "reference-failed:"  # payload.sh's outcome when the node cannot get the reference image


def unpullable(outcome: str) -> str:
    """Why an A/B whose reference exists but cannot be pulled is NOT PROVEN (not a first release's NOT RUN: there is
    a previous image, and nobody compared with it), from payload.sh's `reference-failed: cannot get IMAGE: WHY`,
    with the fix."""
    said = outcome.removeprefix(REFERENCE_FAILED).strip()
    image, _, why = said.removeprefix("cannot get ").partition(": ")
    image = image.rstrip(":")  # docker's own line may be empty: "cannot get IMAGE:"
    registry = image.split("/", 1)[0] if "/" in image else "its registry"
    return (f"the reference {image} cannot be pulled here ({why.strip()[:240] or 'no reason given'}); fix: make it "
            f"pullable (docker login {registry}, or push it there again), or name another with --reference "
            "[FLAVOR=]IMAGE@DIGEST, or --accept-unproven REASON")


def analyze(folder: Path, threshold_pct: float, node: dict[str, str] | None = None) -> dict:
    """The summary (ab.json's content) of the A/B a job left in `folder` (its bench-ab/)."""
    found = rounds_reader.read(folder)
    return summarize(found, threshold_pct, node or {})


def summarize(found: Rounds, threshold_pct: float, node: dict[str, str]) -> dict:
    judged = [verdict.judge(m, pairs, threshold_pct) for m, pairs in found.pairs().items()]
    if found.outcome.startswith(REFERENCE_FAILED):
        status, reasons = "NOT PROVEN", [unpullable(found.outcome)]
    elif found.outcome != "done":
        status, reasons = "NOT RUN", [f"the A/B did not finish: {found.outcome}"]
    else:
        status, reasons = verdict.overall(judged)
    reasons += [f"no figure: {p}" for p in found.problems]
    starts = {(s.round, s.side, s.name): s.start for s in found.steps}
    samples = [{"round": r, "image": side, "metric": m.key, "value": value,
                "start": starts.get((r, side, "validate" if m.key == "validate.seconds" else m.key.split(":")[0]))}
               for r, by_side in sorted(found.samples.items()) for side, figures in by_side.items()
               for m, value in sorted(figures.items(), key=lambda kv: kv[0].key)]
    return {
        "verdict": status,
        "reasons": reasons,
        "threshold_pct": threshold_pct,
        "rounds": len(found.measured),
        "warmup_rounds": int(0 in found.samples),
        "candidate": _image(found.facts, "candidate"),
        "reference": _image(found.facts, "reference"),
        "node": node,
        "metrics": [v.as_dict() for v in judged],
        "missing": found.missing(),
        "samples": samples,
        "steps": [{"round": s.round, "image": s.side, "step": s.name, "exit": s.rc, "start": s.start,
                   "seconds": s.seconds} for s in found.steps],
    }


def _image(facts: dict[str, str], side: str) -> dict:
    image = {k: facts.get(f"{side}_{k}", "") for k in ("image", "digest", "id", "size")}
    if side == "candidate" and facts.get("candidate_env"):
        image["env"] = facts["candidate_env"]
    return image


def headline(summary: dict) -> str:
    """One line: `A/B PASS vs REF (3 rounds): train fp32 0.98 [0.95, 1.01]; ...` (the worst metrics first)."""
    ref = summary["reference"].get("name") or summary["reference"].get("image") or "?"
    ranked = sorted(summary["metrics"], key=lambda m: verdict.ORDER.index(m["status"]) if m["status"] in verdict.ORDER
                    else len(verdict.ORDER))
    shown = "; ".join(f"{m['label']} {m['ratio']:.3f} [{m['low']:.3f}, {m['high']:.3f}] {m['status']}"
                      for m in ranked[:3] if m["status"] != "INFO")
    return (f"A/B {summary['verdict']} against {ref[:140]} ({summary['rounds']} rounds)"
            + (f": {shown}" if shown else "") + ("" if summary["verdict"] == "PASS" or not summary["reasons"]
                                                 else f" ({summary['reasons'][0][:600]})"))


def _named(image: dict) -> str:
    """`NAME (REPO@sha256:...; id sha256:...)`: what a person asked for, and what ran."""
    shown = str(image.get("name") or image.get("image") or "?")
    ran = [str(image[k])[:80] for k in ("image", "id") if image.get(k) and image.get(k) != shown]
    return shown + (f" ({'; '.join(ran)})" if ran else "")


def _value(value: float, unit: str) -> str:
    if unit == "bytes":
        return f"{value / 1e6:.1f} MB"
    return f"{value:.4g} {unit}"


def markdown(summary: dict, title: str = "A/B comparison") -> str:
    cand, ref = summary["candidate"], summary["reference"]
    lines = [f"# {title}", "",
             f"- verdict: **{summary['verdict']}** (threshold {summary['threshold_pct']:g} %, "
             f"{summary['rounds']} rounds, order alternated"
             + (", a warm-up round discarded)" if summary["warmup_rounds"] else ")"),
             f"- candidate: {_named(cand)}" + (f", env {cand['env']}" if cand.get("env") else ""),
             f"- reference: {_named(ref)}"]
    node = summary.get("node") or {}
    if node:
        lines.append("- node: " + ", ".join(f"{k} {v}" for k, v in node.items() if v))
    lines += ["", "| metric | candidate | reference | ratio | 95 % CI | bound | rounds | paired test p | verdict |",
              "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    for m in summary["metrics"]:
        p = f"{m['test_p']:.3f}" if m.get("test_p") is not None else "-"
        lines.append(f"| {m['label']} | {_value(m['candidate'], m['unit'])} | {_value(m['reference'], m['unit'])} | "
                     f"{m['ratio']:.3f} | [{m['low']:.3f}, {m['high']:.3f}] | "
                     f"{'>=' if m['direction'] == 'higher' else '<='} {m['bound']:.3f} | {m['rounds']} | {p} | "
                     f"{m['status']} |")
    if summary["reasons"]:
        lines += ["", "Why not PASS:" if summary["verdict"] != "PASS" else "Notes:"]
        lines += [f"- {r}" for r in summary["reasons"]]
    if summary["missing"]:
        lines += ["", "Compared nowhere (one image only):", *[f"- {m}" for m in summary["missing"]]]
    lines += ["", "Every round (candidate / reference; round 00 is the discarded warm-up):", ""]
    rounds = sorted({s["round"] for s in summary["samples"]})
    lines += ["| metric | " + " | ".join(f"{r:02d}" for r in rounds) + " |",
              "| --- | " + " | ".join("---:" for _ in rounds) + " |"]
    values = {(s["metric"], s["round"], s["image"]): s["value"] for s in summary["samples"]}
    for m in summary["metrics"]:
        if m["key"] == IMAGE_SIZE:
            continue
        cells = [f"{values[(m['key'], r, 'candidate')]:.4g} / {values[(m['key'], r, 'reference')]:.4g}"
                 if (m["key"], r, "candidate") in values and (m["key"], r, "reference") in values else "-"
                 for r in rounds]
        lines.append(f"| {m['label']} | " + " | ".join(cells) + " |")
    lines += ["", "Plot: rounds.svg (each image's figure at the time its run started).", ""]
    return "\n".join(lines)


def notes_table(summary: dict) -> list[str]:
    """The release notes' view: this month (the candidate) vs last month (the reference), ratio and interval per
    metric, the verdict and its reasons."""
    lines = [f"- verdict: **{summary['verdict']}** ({summary['rounds']} rounds interleaved on one node, threshold "
             f"{summary['threshold_pct']:g} %); this month: {_named(summary['candidate'])}; last month: "
             f"{_named(summary['reference'])}", "",
             "| metric | this month | last month | ratio | 95 % CI | verdict |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for m in summary["metrics"]:
        lines.append(f"| {m['label']} | {_value(m['candidate'], m['unit'])} | {_value(m['reference'], m['unit'])} | "
                     f"{m['ratio']:.3f} | [{m['low']:.3f}, {m['high']:.3f}] | {m['status']} |")
    if summary["verdict"] != "PASS":
        lines += ["", *[f"- {r}" for r in summary["reasons"][:6]]]
    return lines


def svg(summary: dict) -> str:
    """One panel per compared metric: candidate and reference figures against the time their runs started."""
    panels = [m for m in summary["metrics"] if m["key"] != IMAGE_SIZE]
    width, height, cols = 460, 190, 2
    rows = max(1, (len(panels) + cols - 1) // cols)
    starts = [s["start"] for s in summary["samples"] if s["start"] is not None]
    t0 = min(starts) if starts else 0
    t1 = max(starts) if starts else 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * cols}" height="{height * rows + 30}" '
           'font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="18" font-size="13">A/B {html.escape(summary["verdict"])}: candidate '
           f'<tspan fill="{COLOURS["candidate"]}">&#9679;</tspan> vs reference '
           f'<tspan fill="{COLOURS["reference"]}">&#9679;</tspan> over time (minutes since the first run)</text>']
    for i, m in enumerate(panels):
        x0, y0 = (i % cols) * width + 50, (i // cols) * height + 50
        w, h = width - 70, height - 60
        points = [s for s in summary["samples"] if s["metric"] == m["key"] and s["start"] is not None]
        values = [s["value"] for s in points] or [0.0, 1.0]
        lo, hi = min(values), max(values)
        lo, hi = (lo * 0.95, hi * 1.05) if hi > lo else (lo * 0.9, hi * 1.1 + 1e-9)
        out.append(f'<text x="{x0}" y="{y0 - 8}">{html.escape(m["label"])} ({html.escape(m["unit"])}): ratio '
                   f'{m["ratio"]:.3f} [{m["low"]:.3f}, {m["high"]:.3f}] {html.escape(m["status"])}</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#888"/>')
        out.append(f'<text x="{x0 - 4}" y="{y0 + 10}" text-anchor="end">{hi:.3g}</text>')
        out.append(f'<text x="{x0 - 4}" y="{y0 + h}" text-anchor="end">{lo:.3g}</text>')
        out.append(f'<text x="{x0 + w}" y="{y0 + h + 14}" text-anchor="end">{(t1 - t0) / 60:.1f}</text>')
        for side in SIDES:
            mine = sorted((s for s in points if s["image"] == side), key=lambda s: s["start"])
            xy = [(x0 + w * (s["start"] - t0) / max(1, t1 - t0), y0 + h - h * (s["value"] - lo) / (hi - lo),
                   s["round"]) for s in mine]
            if len(xy) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in xy if _ >= 1)
                out.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[side]}" stroke-width="1"/>')
            for x, y, r in xy:
                fill = COLOURS[side] if r >= 1 else "none"  # the warm-up round: an open circle
                out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{fill}" stroke="{COLOURS[side]}"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(folder: Path, summary: dict, title: str = "A/B comparison") -> None:
    """ab.json, ab.md and rounds.svg into `folder`, all three or none."""
    ensure_folder(folder)
    with staged() as out:
        out.write_text(folder / "ab.json", json.dumps(summary, indent=2) + "\n")
        out.write_text(folder / "ab.md", markdown(summary, title))
        out.write_text(folder / "rounds.svg", svg(summary))
