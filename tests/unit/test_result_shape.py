"""The result schema's rules for a data-parallel run's figures (ngc_common.bench_result): the sum and every rank with
its own throughput, by the names the harness writes; and which dpkg records the file scope takes as captured."""

import pytest

from ngc_common import bench_result
from ngc_paddle.scan.checks import file_scope

WHERE = "results.data_parallel.fp32"


def problem(figures) -> tuple[str, str] | None:
    return bench_result._data_parallel_problem(WHERE, figures)


def test_a_data_parallel_figure_needs_its_ranks_and_their_sum() -> None:
    rank = {"rank": 0, "node": "n01", "ips": 5.0}
    assert problem({"ips": 10.0, "procs": 2, "ranks": [rank, {**rank, "rank": 1}]}) is None
    whole = (WHERE, "must hold the ranks' figures and their sum 'ips' (renamed or missing)")
    for bad in ([], {"ips": 10.0}, {"ranks": [rank]}, {"ips": 10.0, "ranks": {"0": rank}}):
        assert problem(bad) == whole, bad
    assert problem({"ips": 10.0, "ranks": [rank, {"rank": 1}]}) == (f"{WHERE}.ranks.1",
                                                                       "must be a rank's figures with its 'ips'")
    assert problem({"ips": 10.0, "ranks": [rank, ["ips"]]}) == (f"{WHERE}.ranks.1",
                                                               "must be a rank's figures with its 'ips'")


def test_an_unknown_name_is_named_with_where_it_is() -> None:
    where, what = problem({"ips": 10.0, "ranks": [], "speedup": 2.0})
    assert where == f"{WHERE}.speedup" and what.startswith("is not a data-parallel figure the harness writes (")
    where, what = problem({"ips": 10.0, "ranks": [{"ips": 1.0, "gpu": "x"}]})
    assert where == f"{WHERE}.ranks.0.gpu" and what.startswith("is not a rank's figure the harness writes (")


@pytest.mark.parametrize(("path", "captured"), [
    ("/var/lib/dpkg/info/bash.list", True), ("/var/lib/dpkg/diversions", True),
    ("/var/lib/dpkg/info/bash.md5sums", False),  # captured already, by the md5sums reader
    ("/etc/bash.list", False), ("/var/lib/dpkg/status", False), ("/var/lib/dpkg/diversions-old", False)])
def test_the_dpkg_records_the_file_scope_captures(path: str, captured: bool) -> None:
    assert file_scope.captured(path) is captured
