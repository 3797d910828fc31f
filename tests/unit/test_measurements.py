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


def test_a_run_of_part_of_the_matrix_keeps_the_other_parts_and_a_covering_run_replaces_them(tmp_path: Path) -> None:
    path = tmp_path / "measurements.md"
    defaults = {"ISAS": ["native", "avx2"], "MODELS": ["rn50", "hgnet"]}
    assert part_of(defaults, defaults) is None
    assert part_of({"ISAS": ["avx2", "native", "avx2"], "MODELS": ["hgnet", "rn50"]}, defaults) is None  # as sets
    avx2 = part_of({"ISAS": ["avx2"], "MODELS": ["rn50", "hgnet"]}, defaults)
    assert avx2 == Part("avx2", "ISAS=avx2")
    avx2_hgnet = part_of({"ISAS": ["avx2"], "MODELS": ["hgnet"]}, defaults)
    assert avx2_hgnet == Part("avx2-hgnet", "ISAS=avx2 MODELS=hgnet")

    def put(body: str, part: Part | None) -> str:
        record("bench-gate-power", "Power", body, path, part=part, defaults=defaults)
        return path.read_text()

    put("native figures", part_of({**defaults, "ISAS": ["native"]}, defaults))
    put("avx2 hgnet figures", avx2_hgnet)
    text = put("avx2 figures", avx2)
    assert "native figures" in text and "avx2 figures" in text  # the AVX2 run did not overwrite the native one
    assert "avx2 hgnet figures" not in text  # ... but replaced the narrower part it measured again
    assert "`make bench-gate-power ISAS=avx2`, 20" in text  # the command that ran it, as a user would type it
    text = put("whole figures", None)
    assert "whole figures" in text and "native figures" not in text and "avx2 figures" not in text
    assert text.count("<!-- section: bench-gate-power") == 1


def test_a_whole_run_keeps_a_part_outside_its_matrix(tmp_path: Path) -> None:
    path = tmp_path / "measurements.md"
    defaults = {"ISAS": ["native", "avx2"], "MODEL": ["rn50"]}
    hgnet = part_of({"ISAS": ["native", "avx2"], "MODEL": ["hgnet"]}, defaults)
    record("bench-ab-power", "A/B", "hgnet figures", path, part=hgnet, defaults=defaults)
    record("bench-ab-power", "A/B", "rn50 figures", path, defaults=defaults)
    text = path.read_text()
    assert "hgnet figures" in text and "rn50 figures" in text  # the default run never measured hgnet


def test_a_part_name_with_a_dot_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="section name"):
        record("bench-ab-power", "x", "y", tmp_path / "m.md", part=Part("a.b", "ISAS=a.b"))
