"""Inputs that used to end in a traceback or pass without a word: each is now one line (exit 2) naming the thing
and the fix, or the right result. No engine: engine calls are faked where a command would reach them."""

import contextlib
import io
import json
from pathlib import Path

import pytest

from ngc_paddle import cli
from ngc_paddle.release.ab import compare

REPO = Path(__file__).resolve().parents[2]
IMAGE_ID = "sha256:" + "ab" * 32


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["--root", str(REPO), *argv])
    return code, err.getvalue()


def one_line(code: int, err: str) -> str:
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and "; fix: " in err, (code, err)
    return err


@pytest.fixture
def images_here(monkeypatch) -> None:
    """Every image is on this host (no pull, no run: a test reaching a job would fail loudly)."""
    monkeypatch.setattr(compare.engine, "image_id", lambda ref: IMAGE_ID)
    monkeypatch.setattr(compare, "run_job", lambda *a, **k: pytest.fail("the A/B ran"))


@pytest.mark.parametrize("under", [False, True])
def test_bench_compare_output_that_is_a_file_or_under_one(tmp_path: Path, images_here, under: bool) -> None:
    (tmp_path / "taken").write_text("keep")
    output = tmp_path / "taken" / "deeper" if under else tmp_path / "taken"
    err = one_line(*run("bench-compare", "ngc-paddle:26.12-cpu", "--reference", f"r/x@{IMAGE_ID}",
                        "--output", str(output)))
    assert ("lies under" if under else "is a file, not a folder") in err
    assert (tmp_path / "taken").read_text() == "keep"


def test_a_round_whose_figure_overflows_to_infinity_is_a_missing_figure_not_a_crash(tmp_path: Path) -> None:
    from ngc_paddle.release.ab import ab_report

    ab = tmp_path / "bench-ab"
    ab.mkdir()
    (ab / "outcome").write_text("done\n")
    lines = []
    for r in range(0, 6):
        for side in ("candidate", "reference"):
            out = ab / f"round-{r:02d}" / side / "bench-rn50" / "rn50-1"
            out.mkdir(parents=True)
            ips = "1e400" if (r, side) == (3, "candidate") else "10.5"  # JSON's grammar allows it; it parses as inf
            (out / "result.json").write_text(json.dumps({"results": {"train": {"fp32": {"ips": 10.5}}}})
                                             .replace("10.5", ips))
            lines.append(f"round-{r:02d}\t{side}\tbench-rn50\t0\t{1000 + r}\t900")
    (ab / "rounds.tsv").write_text("\n".join(lines) + "\n")
    summary = ab_report.analyze(ab, 5.0)
    assert summary["rounds"] == 5
    assert any("round 03 candidate bench-rn50" in r and "results.train.fp32.ips: inf is not a finite number" in r
               for r in summary["reasons"]), summary["reasons"]
