"""docs/measurements.md: a script's run replaces its own section and keeps every other one."""

import argparse
from pathlib import Path

import pytest

from perf.measurements import Matrix, Part, matrix, part_of, record


def test_a_section_is_replaced_and_the_others_kept(tmp_path: Path) -> None:
    path = tmp_path / "measurements.md"
    record("perf-scan", "Scan", "| a | b |\n| 1 | 2 |", path=path)
    record("perf-repro", "Repro", "8 of 8 identical", path=path)
    record("perf-scan", "Scan", "| a | b |\n| 3 | 4 |", path=path)
    text = path.read_text()
    assert text.count("<!-- section: perf-scan -->") == 1
    assert "| 3 | 4 |" in text and "| 1 | 2 |" not in text
    assert "8 of 8 identical" in text
    assert "`make perf-scan`, 20" in text and "cores (" in text  # stamped with the date and the machine
    assert text.index("perf-repro") < text.index("perf-scan")  # sections in a stable order


def test_a_section_one_target_writes_among_several_names_the_command_that_ran(tmp_path: Path) -> None:
    """perf-repro writes a section per engine and platform: each said `make perf-repro-arm64`, a target that is not."""
    path = tmp_path / "measurements.md"
    record("perf-repro-arm64", "Repro", "8 of 8 identical", path=path, command="make perf-repro PLATFORMS=linux/arm64")
    text = path.read_text()
    assert "<!-- section: perf-repro-arm64 -->" in text and "`make perf-repro PLATFORMS=linux/arm64`, 20" in text
    assert "make perf-repro-arm64" not in text


def test_a_bad_section_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="section name"):
        record("bad name -->", "x", "y", path=tmp_path / "m.md")


def test_a_run_of_part_of_the_matrix_keeps_the_other_parts_and_a_covering_run_replaces_them(tmp_path: Path) -> None:
    path = tmp_path / "measurements.md"
    defaults = {"ISAS": ["native", "avx2"], "MODELS": ["rn50", "hgnet"]}
    assert part_of(defaults, defaults) is None
    assert part_of({"ISAS": ["avx2", "native", "avx2"], "MODELS": ["hgnet", "rn50"]}, defaults) is None  # as sets
    avx2 = part_of({"ISAS": ["avx2"], "MODELS": ["rn50", "hgnet"]}, defaults)
    assert avx2 == Part("avx2", "ISAS=avx2")
    avx2_hgnet = part_of({"ISAS": ["avx2"], "MODELS": ["hgnet"]}, defaults)
    assert avx2_hgnet == Part("avx2-hgnet", "ISAS=avx2 MODELS=hgnet")

    def put(body: str, **chosen: list[str]) -> str:
        record("perf-gate-power", "Power", body, Matrix({**defaults, **chosen}, defaults), path=path)
        return path.read_text()

    put("native figures", ISAS=["native"])
    put("avx2 hgnet figures", ISAS=["avx2"], MODELS=["hgnet"])
    text = put("avx2 figures", ISAS=["avx2"])
    assert "native figures" in text and "avx2 figures" in text  # the AVX2 run did not overwrite the native one
    assert "avx2 hgnet figures" not in text  # ... but replaced the narrower part it measured again
    assert "`make perf-gate-power ISAS=avx2`, 20" in text  # the command that ran it, as a user would type it
    text = put("whole figures")
    assert "whole figures" in text and "native figures" not in text and "avx2 figures" not in text
    assert text.count("<!-- section: perf-gate-power") == 1


def test_a_whole_run_keeps_a_part_outside_its_matrix(tmp_path: Path) -> None:
    path = tmp_path / "measurements.md"
    defaults = {"ISAS": ["native", "avx2"], "MODEL": ["rn50"]}
    record("perf-ab-power", "A/B", "hgnet figures", Matrix({**defaults, "MODEL": ["hgnet"]}, defaults), path=path)
    record("perf-ab-power", "A/B", "rn50 figures", Matrix(defaults, defaults), path=path)
    text = path.read_text()
    assert "hgnet figures" in text and "rn50 figures" in text  # the default run never measured hgnet


def test_a_part_name_with_a_dot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="section name"):
        record("perf-ab-power", "x", "y", Matrix({"ISAS": ["a.b"]}, {"ISAS": ["native"]}), path=tmp_path / "m.md")


def test_one_table_gives_a_runs_values_and_the_whole_matrix_from_the_parser() -> None:
    """matrix(): list options parsed from comma lists (their string defaults before the type applies), a single
    choice as a one-item list; a run that narrows one variable is the part named by it."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--isas", default="native,avx2", type=lambda t: [x for x in t.split(",") if x])
    parser.add_argument("--mode", choices=("all", "train"), default="all")
    variables = {"ISAS": "isas", "MODE": "mode"}
    whole = matrix(parser, parser.parse_args([]), variables)
    assert whole == Matrix({"ISAS": ["native", "avx2"], "MODE": ["all"]}, {"ISAS": ["native", "avx2"], "MODE": ["all"]})
    assert whole.part is None
    ran = matrix(parser, parser.parse_args(["--isas", "avx2", "--mode", "train"]), variables)
    assert ran.chosen == {"ISAS": ["avx2"], "MODE": ["train"]} and ran.defaults == whole.defaults
    assert ran.part == Part("avx2-train", "ISAS=avx2 MODE=train")
