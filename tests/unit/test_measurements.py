"""docs/measurements.md: a script's run replaces its own section and keeps every other one."""

from pathlib import Path

import pytest

from perf.measurements import Part, part_of, record


def test_a_section_is_replaced_and_the_others_kept(tmp_path: Path) -> None:
    path = tmp_path / "measurements.md"
    record("bench-scan", "Scan", "| a | b |\n| 1 | 2 |", path)
    record("bench-repro", "Repro", "8 of 8 identical", path)
    record("bench-scan", "Scan", "| a | b |\n| 3 | 4 |", path)
    text = path.read_text()
    assert text.count("<!-- section: bench-scan -->") == 1
    assert "| 3 | 4 |" in text and "| 1 | 2 |" not in text
    assert "8 of 8 identical" in text
    assert "`make bench-scan`, 20" in text and "cores (" in text  # stamped with the date and the machine
    assert text.index("bench-repro") < text.index("bench-scan")  # sections in a stable order


def test_a_bad_section_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="section name"):
        record("bad name -->", "x", "y", tmp_path / "m.md")


def test_a_run_of_part_of_the_matrix_keeps_the_other_parts_and_a_whole_run_replaces_them(tmp_path: Path) -> None:
    path = tmp_path / "measurements.md"
    defaults = {"ISAS": ["native", "avx2"], "MODELS": ["rn50", "hgnet"]}
    assert part_of(defaults, defaults) is None
    avx2 = part_of({"ISAS": ["avx2"], "MODELS": ["rn50", "hgnet"]}, defaults)
    assert avx2 == Part("avx2", "ISAS=avx2")
    record("bench-ab-power", "A/B", "native figures", path, part=part_of({**defaults, "ISAS": ["native"]}, defaults))
    record("bench-ab-power", "A/B", "avx2 figures", path, part=avx2)
    text = path.read_text()
    assert "native figures" in text and "avx2 figures" in text  # the AVX2 run did not overwrite the native one
    assert "`make bench-ab-power ISAS=avx2`, 20" in text  # the command that ran it, as a user would type it
    record("bench-ab-power", "A/B", "whole figures", path)
    text = path.read_text()
    assert "whole figures" in text and "native figures" not in text and "avx2 figures" not in text
    assert text.count("<!-- section: bench-ab-power") == 1
