"""The A/B report as a person reads it (ngc_paddle.release.ab.ab_report): ab.md whole, for a FAIL with every part
and a PASS with the fewest, and rounds.svg's panels, points and scales. A table that shows another figure than ab.json
holds, or drops a round, is a report that misleads the release engineer who reads it."""

import copy
import xml.etree.ElementTree as ET

from ngc_paddle.release.ab import ab_report

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
SUMMARY = {
    "verdict": "FAIL", "reasons": ["bench-rn50 train fp32 img/s: 0.800 of the reference"], "threshold_pct": 5,
    "rounds": 2, "warmup_rounds": 1,
    "candidate": {"name": "reg/ngc-paddle@sha256:" + "a" * 64, "digest": A, "env": "X=1"},
    "reference": {"name": "reg/ngc-paddle@sha256:" + "b" * 64, "digest": B},
    "node": {"hostname": "node1", "slurm_job": "", "cpu": "EPYC"},
    "metrics": [
        {"key": "bench-rn50:train.fp32.ips", "label": "bench-rn50 train fp32 img/s", "unit": "img/s",
         "direction": "higher", "candidate": 8.0, "reference": 10.0, "ratio": 0.8, "low": 0.78, "high": 0.82,
         "bound": 0.95, "rounds": 2, "test_p": 0.25, "status": "FAIL"},
        {"key": "image.size_bytes", "label": "image size", "unit": "bytes", "direction": "lower",
         "candidate": 2.5e9, "reference": 2.4e9, "ratio": 1.0417, "low": 1.0417, "high": 1.0417, "bound": 1.05,
         "rounds": 1, "test_p": None, "status": "INFO"},
        {"key": "validate.seconds", "label": "validation suite wall time", "unit": "s", "direction": "lower",
         "candidate": 61.0, "reference": 60.0, "ratio": 1.0167, "low": 1.0, "high": 1.03, "bound": 1.05,
         "rounds": 2, "test_p": 0.5, "status": "PASS"}],
    "missing": ["bench-rn50:infer.trt.fp16.ips (candidate only)"],
    "samples": [
        {"round": 0, "image": "candidate", "metric": "bench-rn50:train.fp32.ips", "value": 7.5, "start": 0},
        {"round": 0, "image": "reference", "metric": "bench-rn50:train.fp32.ips", "value": 9.5, "start": 60},
        {"round": 1, "image": "candidate", "metric": "bench-rn50:train.fp32.ips", "value": 8.0, "start": 120},
        {"round": 1, "image": "reference", "metric": "bench-rn50:train.fp32.ips", "value": 10.0, "start": 180},
        {"round": 2, "image": "reference", "metric": "bench-rn50:train.fp32.ips", "value": 10.0, "start": 240},
        {"round": 2, "image": "candidate", "metric": "bench-rn50:train.fp32.ips", "value": 8.0, "start": 300},
        {"round": 1, "image": "candidate", "metric": "validate.seconds", "value": 61.0, "start": None},
        {"round": 1, "image": "reference", "metric": "validate.seconds", "value": 60.0, "start": None},
        {"round": 2, "image": "candidate", "metric": "validate.seconds", "value": 61.0, "start": None},
    ],
}

FAIL_MD = (
    '# A/B of cpu@cpu on node1' "\n"
    '' "\n"
    '- verdict: **FAIL** (threshold 5 %, 2 rounds, order alternated, a warm-up round discarded)' "\n"
    '- candidate: reg/ngc-paddle@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, env X=1'
    "\n"
    '- reference: reg/ngc-paddle@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' "\n"
    '- node: hostname node1, cpu EPYC' "\n"
    '' "\n"
    '| metric | candidate | reference | ratio | 95 % CI | bound | rounds | paired test p | verdict |' "\n"
    '| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |' "\n"
    '| bench-rn50 train fp32 img/s | 8 img/s | 10 img/s | 0.800 | [0.780, 0.820] | >= 0.950 | 2 | 0.250 | FAIL |' "\n"
    '| image size | 2500.0 MB | 2400.0 MB | 1.042 | [1.042, 1.042] | <= 1.050 | 1 | - | INFO |' "\n"
    '| validation suite wall time | 61 s | 60 s | 1.017 | [1.000, 1.030] | <= 1.050 | 2 | 0.500 | PASS |' "\n"
    '' "\n"
    'Why not PASS:' "\n"
    '- bench-rn50 train fp32 img/s: 0.800 of the reference' "\n"
    '' "\n"
    'Compared nowhere (one image only):' "\n"
    '- bench-rn50:infer.trt.fp16.ips (candidate only)' "\n"
    '' "\n"
    'Every round (candidate / reference; round 00 is the discarded warm-up):' "\n"
    '' "\n"
    '| metric | 00 | 01 | 02 |' "\n"
    '| --- | ---: | ---: | ---: |' "\n"
    '| bench-rn50 train fp32 img/s | 7.5 / 9.5 | 8 / 10 | 8 / 10 |' "\n"
    '| validation suite wall time | - | 61 / 60 | - |' "\n"
    '' "\n"
    "Plot: rounds.svg (each image's figure at the time its run started)." "\n"
)

PASS_MD = (
    '# A/B comparison' "\n"
    '' "\n"
    '- verdict: **PASS** (threshold 5 %, 2 rounds, order alternated)' "\n"
    '- candidate: reg/ngc-paddle@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' "\n"
    '- reference: reg/ngc-paddle@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb' "\n"
    '' "\n"
    '| metric | candidate | reference | ratio | 95 % CI | bound | rounds | paired test p | verdict |' "\n"
    '| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |' "\n"
    '| validation suite wall time | 61 s | 60 s | 1.017 | [1.000, 1.030] | <= 1.050 | 2 | 0.500 | PASS |' "\n"
    '' "\n"
    'Notes:' "\n"
    '- rounds 1 and 2 ran 10 min apart' "\n"
    '' "\n"
    'Every round (candidate / reference; round 00 is the discarded warm-up):' "\n"
    '' "\n"
    '| metric | 01 |' "\n"
    '| --- | ---: |' "\n"
    '| validation suite wall time | 61 / 60 |' "\n"
    '' "\n"
    "Plot: rounds.svg (each image's figure at the time its run started)." "\n"
)


def passed() -> dict:
    summary = copy.deepcopy(SUMMARY)
    summary.update(verdict="PASS", reasons=["rounds 1 and 2 ran 10 min apart"], warmup_rounds=0, node={},
                   missing=[], metrics=[SUMMARY["metrics"][2]], samples=SUMMARY["samples"][6:8])
    summary["candidate"].pop("env")
    return summary


def test_the_markdown_report_of_a_fail_shows_every_part() -> None:
    assert ab_report.markdown(SUMMARY, "A/B of cpu@cpu on node1") == FAIL_MD


def test_the_markdown_report_of_a_pass_shows_its_notes_and_nothing_it_lacks() -> None:
    assert ab_report.markdown(passed()) == PASS_MD


def test_the_plot_has_a_panel_per_timed_metric_and_every_round_of_both_images() -> None:
    svg = ET.fromstring(ab_report.svg(SUMMARY))
    ns = "{http://www.w3.org/2000/svg}"
    assert (svg.get("width"), svg.get("height")) == ("920", "220")  # two columns, one row of 190, the title
    texts = ["".join(t.itertext()) for t in svg.iter(ns + "text")]
    assert texts[0].startswith("A/B FAIL: candidate ") and texts[0].endswith(" over time (minutes since the first run)")
    assert "bench-rn50 train fp32 img/s (img/s): ratio 0.800 [0.780, 0.820] FAIL" in texts
    assert "validation suite wall time (s): ratio 1.017 [1.000, 1.030] PASS" in texts
    assert not any(t.startswith("image size") for t in texts)  # no panel for the size: one figure per image
    assert "10.5" in texts and "7.12" in texts and "5.0" in texts  # the train panel's scale: 5 % around, 5 minutes
    circles = list(svg.iter(ns + "circle"))
    colours = ab_report.COLOURS
    train = [c for c in circles if c.get("stroke") in colours.values()]
    assert len(train) == 6  # the validation runs have no start time: no point
    open_ = [c for c in train if c.get("fill") == "none"]
    assert sorted(c.get("stroke") for c in open_) == sorted(colours.values())  # each image's warm-up: open
    first = next(c for c in train if c.get("fill") == "none" and c.get("stroke") == colours["candidate"])
    assert (first.get("cx"), first.get("cy")) == ("50.0", f"{50 + 130 - 130 * (7.5 - 7.125) / (10.5 - 7.125):.1f}")
    lines = list(svg.iter(ns + "polyline"))
    assert len(lines) == 2 and all(len(p.get("points").split()) == 2 for p in lines)  # rounds 1 and 2, no warm-up
    last = max(train, key=lambda c: float(c.get("cx")))
    assert float(last.get("cx")) == 50 + 390  # the last run at the right edge of the time axis


def test_the_headline_names_the_reference_the_worst_metrics_and_why_not_pass() -> None:
    assert ab_report.headline(SUMMARY) == (
        f"A/B FAIL against reg/ngc-paddle@{B} (2 rounds): bench-rn50 train fp32 img/s 0.800 [0.780, 0.820] FAIL; "
        "validation suite wall time 1.017 [1.000, 1.030] PASS (bench-rn50 train fp32 img/s: 0.800 of the reference)")
    assert ab_report.headline(passed()) == (  # a PASS gives no reason
        f"A/B PASS against reg/ngc-paddle@{B} (2 rounds): validation suite wall time 1.017 [1.000, 1.030] PASS")
    unnamed = copy.deepcopy(SUMMARY)
    unnamed["reference"] = {"image": "reg/other@" + B}
    unnamed["metrics"] = [{**m, "status": s} for m, s in zip(SUMMARY["metrics"] * 2, ("PASS", "INFO", "NOT RUN",
                                                                                      "FAIL", "PASS", "PASS"),
                                                             strict=True)]
    said = ab_report.headline(unnamed)
    assert said.startswith(f"A/B FAIL against reg/other@{B} (2 rounds): ")
    shown = said.split(" (2 rounds): ", 1)[1].split(" (bench-rn50 train fp32 img/s: 0.800", 1)[0].split("; ")
    assert [part.rsplit(" ", 1)[-1] for part in shown] == ["FAIL", "RUN", "PASS"]  # worst first, three at most
    info = {**unnamed, "verdict": "PASS", "metrics": [{**SUMMARY["metrics"][1], "status": "INFO"},
                                                      {**SUMMARY["metrics"][0], "status": "PASS"}]}
    assert ab_report.headline(info).endswith(": bench-rn50 train fp32 img/s 0.800 [0.780, 0.820] PASS")  # no INFO
    assert ab_report.headline({**unnamed, "reference": {}, "reasons": [], "metrics": []}) == \
        "A/B FAIL against ? (2 rounds)"


def test_an_ab_size_keeps_the_smoke_and_validation_choices_it_was_given() -> None:
    from ngc_paddle.release.ab import plan

    assert plan.Size.of(None, True, True) == plan.Size(plan.SMOKE_ROUNDS, True, True)
    assert plan.Size.of(7, False, False) == plan.Size(7, False, False)
    assert plan.Size.of(None, False, True) == plan.Size(plan.ROUNDS, False, True)


def test_an_image_is_named_as_asked_with_what_ran_beside_it() -> None:
    """The report says what a person asked for and what ran (the pulled digest, the image id), each once."""
    digest = "127.0.0.1:5000/ngc-paddle@sha256:" + "a" * 64
    image_id = "sha256:" + "b" * 64
    assert ab_report._named({"name": "ngc-paddle:26.11-cpu", "image": digest, "id": image_id}) == (
        f"ngc-paddle:26.11-cpu ({digest[:80]}; {image_id[:80]})")
    assert ab_report._named({"name": "ngc-paddle:26.12-cpu", "image": "ngc-paddle:26.12-cpu", "id": ""}) == (
        "ngc-paddle:26.12-cpu")
    assert ab_report._named({"image": digest}) == digest  # no name: the image it ran, said once
    assert ab_report._named({}) == "?"
