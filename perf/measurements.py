"""Write a measurement script's figures into docs/measurements.md, one section per script, with date and machine.

Why: measured figures belong in one generated file, not scattered through the README, and each must say
when and on what it was measured (machines of one kind differ 4x in speed and may be busy). Each `make
bench-*` script calls `record()` at the end of a run that succeeded; the section it owns is replaced,
every other section is kept as it was. A failed or partial run records nothing (no figure overwritten).

  from perf.measurements import record
  record("bench-scan", "Scan gate against trivy", markdown_table_and_lines)
"""

import contextlib
import datetime as dt
import os
import platform
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEASUREMENTS = REPO / "docs" / "measurements.md"
HEADER = """# Measurements

Generated: each section is rewritten by the script named in it (`make bench-*`) after a successful run,
with the date and the machine it ran on. Do not edit by hand; run the script again. Figures are only
comparable within one section (ratios measured side by side in one run); machines of one kind differ.
"""
SECTION = re.compile(r"<!-- section: (?P<name>[\w.-]+) -->\n.*?<!-- /section: (?P=name) -->\n", re.S)


def machine() -> str:
    """Cores, CPU model and load: enough to tell whether two sections' figures can be compared."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores ({cpu}), load {load} at the end, {platform.system()} {platform.release()}"


def record(name: str, title: str, body: str, path: Path = MEASUREMENTS) -> None:
    """Replace section `name` of the measurements file with `body` (Markdown), stamped with date and machine."""
    if not re.fullmatch(r"[\w.-]+", name):
        raise ValueError(f"section name {name!r}: letters, digits, '.', '_' and '-' only")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"<!-- section: {name} -->\n## {title}\n\n`make {name}`, {stamp}, {machine()}.\n\n"
               f"{body.strip()}\n<!-- /section: {name} -->\n")
    text = path.read_text() if path.exists() else HEADER
    sections = {m.group("name"): m.group(0) for m in SECTION.finditer(text)}
    sections[name] = section
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(HEADER + "\n" + "\n".join(sections[key] for key in sorted(sections)))
    tmp.replace(path)
