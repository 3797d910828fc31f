"""Result reporting of the validation suite: check ids, one-line messages, JSON and Markdown.

Why: release engineers and the release pipeline need, per check, an id, the component, the layer,
the status and a one-line "expected X, found Y" message; pytest gives JUnit XML, this adds the JSON
summary (with one line per layer, in layer order) and the Markdown tables (and works the same under
pytest-xdist, on the controller).
"""

import json
import os
import time
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--report-dir", default=os.environ.get("NGC_PADDLE_REPORT_DIR"),
                     help="write validation.json and validation.md here")
    parser.addoption("--report-name", default="validation", help="file stem of the reports")


def check_identity(item: pytest.Item) -> tuple[str, str]:
    marker = item.get_closest_marker("check")
    params = getattr(getattr(item, "callspec", None), "params", {})
    if marker is None:
        return item.nodeid, params.get("pip_component") or params.get("any_component") or "-"
    check_id = marker.args[0].format(**params)
    component = marker.kwargs.get("component") or params.get("pip_component") or params.get("any_component") or "-"
    return check_id, component.format(**params) if isinstance(component, str) else component


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        check_id, component = check_identity(item)
        item.user_properties.append(("check_id", check_id))
        item.user_properties.append(("component", component))
        item.user_properties.append(("gpu", item.get_closest_marker("gpu") is not None))


def _one_line(report: pytest.TestReport) -> str:
    if report.skipped:
        longrepr = report.longrepr
        if isinstance(longrepr, tuple):
            return str(longrepr[2]).removeprefix("Skipped: ")
        return str(longrepr)
    if report.passed:
        return "ok"
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else str(report.longrepr)
    first = message.strip().splitlines()[0] if message.strip() else "failed"
    for prefix in ("AssertionError: ", "Failed: ", "E   "):
        first = first.removeprefix(prefix)
    return first


class Collector:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, dict] = {}
        self.started = time.time()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        entry = self.results.setdefault(report.nodeid, {
            "id": props.get("check_id", report.nodeid), "component": props.get("component", "-"),
            "layer": props.get("layer", "-"), "status": "passed", "message": "ok", "duration_s": 0.0,
            "nodeid": report.nodeid,
            "gpu": bool(props.get("gpu")),
        })
        if props.get("not_applicable"):
            entry["not_applicable"] = True
        if props.get("waived"):  # a failure the manifest names for this platform, with why: never a PASS
            entry["waived"] = True
        entry["duration_s"] = round(entry["duration_s"] + report.duration, 3)
        if report.when == "call" or report.outcome != "passed":
            if entry["status"] in ("failed", "error"):
                return
            if report.failed:
                entry["status"] = "failed" if report.when == "call" else "error"
            elif report.skipped:
                entry["status"] = "skipped"
            entry["message"] = _one_line(report)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        folder = self.config.getoption("report_dir")
        if not folder or hasattr(self.config, "workerinput"):
            return
        manifest = getattr(self.config, "_ngc_manifest", {})
        layers = getattr(self.config, "_ngc_layers", [])
        checks = in_layer_order(self.results.values(), layers)
        counts = count(checks)
        summary = {
            "release": manifest.get("release"), "flavor": manifest.get("flavor"),
            "gpu_flavor": manifest.get("cuda") is not None, "emulated": getattr(self.config, "_ngc_emulated", None),
            "layer": layers[-1] if layers else None,
            "flavor_layers": manifest.get("layers", []), "image_layers": layers,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            "duration_s": round(time.time() - self.started, 1), "counts": counts,
            "ok": counts["failed"] == 0 and counts["error"] == 0, "layers": per_layer(checks, layers), "checks": checks,
        }
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        stem = self.config.getoption("report_name")
        (out / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
        (out / f"{stem}.md").write_text(markdown(summary))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if hasattr(self.config, "workerinput"):
            return
        bad = [c for c in self.results.values() if c["status"] in ("failed", "error")]
        if bad:
            terminalreporter.section("failed checks")
            for c in sorted(bad, key=lambda r: r["id"]):
                terminalreporter.write_line(f"{c['id']} [layer {c['layer']}, {c['component']}]: {c['message']}")


STATUSES = ("passed", "failed", "error", "skipped")


def count(checks: list[dict]) -> dict[str, int]:
    return {s: sum(1 for c in checks if c["status"] == s) for s in STATUSES}


def in_layer_order(checks, layers: list[str]) -> list[dict]:
    """Checks sorted by their layer's place in the flavor's stack, then by id."""
    rank = {name: i for i, name in enumerate(layers)}
    return sorted(checks, key=lambda c: (rank.get(c.get("layer"), len(rank)), c["id"]))


def per_layer(checks: list[dict], layers: list[str]) -> list[dict]:
    """One entry per layer of the image, bottom up: its counts and seconds (a layer may have no checks)."""
    out = []
    for name in layers:
        mine = [c for c in checks if c.get("layer") == name]
        out.append({"layer": name, "counts": count(mine), "duration_s": round(sum(c["duration_s"] for c in mine), 1),
                    "ok": not any(c["status"] in ("failed", "error") for c in mine)})
    return out


def title(summary: dict) -> str:
    """The report's name: "26.12-cpu" for a flavor's image, "26.12-cpu up to layer dali" for a layer image."""
    name = f"{summary['release']}-{summary['flavor']}"
    flavor_layers = summary.get("flavor_layers") or []
    if summary.get("layer") and flavor_layers and summary["layer"] != flavor_layers[-1]:
        name += f" up to layer {summary['layer']}"
    return name


def gpu_check_not_run(summary: dict, check: dict) -> bool:
    """A GPU check of a GPU flavor that was skipped for want of a GPU (not for a component the flavor lacks)."""
    return bool(summary.get("gpu_flavor") and check.get("gpu") and check["status"] == "skipped"
                and not check.get("not_applicable"))


def verdict(summary: dict) -> tuple[str, list[str]]:
    """FAIL when a check failed; NOT PROVEN when a GPU flavor's GPU checks did not run, when a check was waived by
    the manifest (an upstream defect named with why), or when the run was emulated (qemu-user: its functional checks
    hold, but nothing it measured is the image's); else PASS.

    A skip in a cpu flavor (no CUDA stack, a component the flavor does not ship) is "not
    applicable"; a GPU check skipped in a GPU flavor is missing evidence, so the image is not proven.
    """
    counts = summary["counts"]
    if counts.get("failed") or counts.get("error") or not summary["checks"]:
        return "FAIL", []
    reasons = []
    unproven = [c for c in summary["checks"] if gpu_check_not_run(summary, c)]
    if unproven:
        reasons.append(f"{len(unproven)} GPU check(s) did not run ({', '.join(c['id'] for c in unproven)}): "
                       f"{unproven[0]['message']}")
    waived = [c for c in summary["checks"] if c.get("waived")]
    if waived:
        reasons.append(f"{len(waived)} check(s) waived by the manifest ({', '.join(c['id'] for c in waived)}): "
                       f"{waived[0]['message']}")
    if summary.get("emulated"):
        reasons.append(f"{summary['emulated']} (every functional check ran; performance is not proven)")
    return ("NOT PROVEN", reasons) if reasons else ("PASS", [])


def markdown(summary: dict) -> str:
    counts = summary["counts"]
    result, reasons = verdict(summary)
    lines = [
        f"# Validation of {title(summary)}: {result}",
        "",
        *[f"- {reason}" for reason in reasons],
        *([""] if reasons else []),
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped in {summary['duration_s']} s.",
        "",
        "| layer | passed | failed | errors | skipped | s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for layer in summary.get("layers", []):
        n = layer["counts"]
        lines.append(f"| {layer['layer']} | {n['passed']} | {n['failed']} | {n['error']} | {n['skipped']} | "
                     f"{layer['duration_s']:.1f} |")
    lines += ["", "| layer | check | component | status | message | s |", "| --- | --- | --- | --- | --- | ---: |"]
    for c in summary["checks"]:
        message = c["message"].replace("|", "\\|")
        status = "not run (GPU)" if gpu_check_not_run(summary, c) else c["status"]
        lines.append(f"| {c.get('layer', '-')} | {c['id']} | {c['component']} | {status} | {message} | "
                     f"{c['duration_s']:.2f} |")
    return "\n".join(lines) + "\n"


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Collector(config), "ngc-report-collector")
