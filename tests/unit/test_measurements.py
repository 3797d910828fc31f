"""docs/measurements.md: a script's run replaces its own section and keeps every other one."""

from pathlib import Path

import pytest

from perf.measurements import record


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
