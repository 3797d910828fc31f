"""perf/bench_stop.py: what each case expects, how its table reads, and its answer to bad input."""

from perf import bench_stop as stop


def test_each_case_expects_the_exit_of_its_signal() -> None:
    expected = {case: int(code) for case, (_cmd, _until, _how, code) in stop.CASES.items()}
    assert expected == {"stop-training": 143, "stop-inference": 143, "sigint-inference": 130, "timeout-40": 124,
                        "stop-validate": 143}
    assert all(until for case, (_cmd, until, how, _code) in stop.CASES.items() if how != "timeout")


def test_the_table_shows_spread_and_whether_each_run_met_its_target() -> None:
    runs = [{"case": "stop-training", "seconds": s, "exit": 143, "expected": 143, "verdict": "INTERRUPTED", "ok": True}
            for s in (0.5, 1.5, 0.9)]
    runs.append({"case": "timeout-40", "seconds": 41.0, "exit": 137, "expected": 124, "verdict": None, "ok": False})
    text = stop.markdown(runs, 3)
    assert "| stop-training | 3 | 143 (143) | 0.50 / 0.90 / 1.50 | <= 10 s (no SIGKILL) | INTERRUPTED | 3/3 |" in text
    assert "| timeout-40 | 1 | 137 (124) | 41.00 / 41.00 / 41.00 | <= 55 s | no report | 0/1 |" in text
    assert "sigint-inference" not in text  # a case not run has no row


def test_bad_input_is_one_line_and_exit_2(capsys) -> None:
    assert stop.main(["img", "--cases", "stop-training,nope", "--no-record"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: nope: not a case (stop-training, ") and "fix:" in err[0]
