"""A failed build writes its own report and never replaces the last good one."""

import json
from pathlib import Path

from ngc_paddle.image_build.build_report import BuildReport, LayerResult


def test_failed_report_leaves_good_report(tmp_path: Path) -> None:
    good = BuildReport("26.12", "cpu", "base", "t0", status="success", image="ngc-paddle:26.12-cpu",
                       layers=[LayerResult("os", "os-cpu", "x:os", status="cached", cached=True)])
    good.write(tmp_path)
    bad = BuildReport("26.12", "cpu", "base", "t1", status="failed", error="layer dali: boom",
                      layers=[LayerResult("dali", "dali-cpu", "x:dali", status="failed")])
    bad.write(tmp_path)
    assert json.loads((tmp_path / "build.json").read_text())["status"] == "success"
    failed = json.loads((tmp_path / "build-failed.json").read_text())
    assert failed["error"] == "layer dali: boom" and failed["layers"][0]["status"] == "failed"
    assert "| dali | failed |" in (tmp_path / "build-failed.md").read_text()
