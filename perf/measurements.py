"""Write a measurement script's figures into docs/measurements.md, one section per script, with date and machine.

Why: measured figures belong in one generated file, not scattered through the README, and each must say
when and on what it was measured (machines of one kind differ 4x in speed and may be busy). Each `make
perf-*` script calls `record()` at the end of a run that succeeded; the section it owns is replaced,
every other section is kept as it was. A failed or interrupted run records nothing (no figure overwritten).
A run of part of a script's matrix (one CPU kind of two, one model) writes its own section, `part`, so it does
not overwrite the figures of the part it did not run; any run drops the part sections it covers (each part's
choices are kept in its section), so a part's figures are never shown beside newer ones of the same cells.

The long form: docs/design-notes.md, section `perf/measurements.py`.
"""

import argparse
import contextlib
import datetime as dt
import os
import platform
import re
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
MEASUREMENTS = REPO / "docs" / "measurements.md"
HEADER = """# Measurements

Generated: each section is rewritten by the script named in it (`make perf-*`) after a successful run,
with the date and the machine it ran on. Do not edit by hand; run the script again. Figures are only
comparable within one section (ratios measured side by side in one run); machines of one kind differ.
"""
SECTION = re.compile(r"<!-- section: (?P<name>[\w.-]+) -->\n.*?<!-- /section: (?P=name) -->\n", re.S)
PART = re.compile(r"^<!-- part: (?P<choices>[^>]*) -->$", re.M)  # the choices a part section was measured with
Choices = dict[str, list[str]]  # make variable -> its values, e.g. {"ISAS": ["avx2"]}


def machine() -> str:
    """Cores, CPU model and load: enough to tell whether two sections' figures can be compared."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores ({cpu}), load {load} at the end, {platform.system()} {platform.release()}"


class Part(NamedTuple):
    """Which part of a script's matrix a run covered: a section-name suffix and the make variables that ran it."""

    suffix: str  # e.g. "avx2" or "avx2-hgnet"
    make_args: str  # e.g. "ISAS=avx2 MODELS=hgnet"


def part_of(chosen: Choices, defaults: Choices) -> Part | None:
    """The part a run covered: None when every option (make variable -> values) holds its default set (the whole
    matrix), else the options that narrowed or changed it, in a stable order."""
    narrowed = {name: sorted(set(values)) for name, values in sorted(chosen.items())
                if set(values) != set(defaults[name])}
    if not narrowed:
        return None
    return Part("-".join("-".join(values) for values in narrowed.values()),
                " ".join(f"{name}={','.join(values)}" for name, values in narrowed.items()))


class Matrix(NamedTuple):
    """What one run measured of a script's matrix: the values of each make variable, and the whole matrix's."""

    chosen: Choices
    defaults: Choices

    @property
    def part(self) -> Part | None:
        return part_of(self.chosen, self.defaults)


def _values(value: object) -> list[str]:
    """An option's values as a list: a comma-separated string (a default before its type applies) or a list."""
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


def matrix(parser: argparse.ArgumentParser, options: argparse.Namespace, variables: dict[str, str]) -> Matrix:
    """The run's values and the parser's defaults of the options `variables` names (make variable -> option dest),
    each as a list, the one table both come from."""
    return Matrix({name: _values(getattr(options, dest)) for name, dest in variables.items()},
                  {name: _values(parser.get_default(dest)) for name, dest in variables.items()})


def _choices(make_args: str) -> Choices:
    return {name: value.split(",") for name, _, value in (arg.partition("=") for arg in make_args.split())}


def _covers(run: Choices, part: Choices, defaults: Choices) -> bool:
    """Every cell of `part` (its unnamed variables at their defaults) is one `run` measured too."""
    return all(set(part.get(name, defaults[name])) <= set(run.get(name, defaults[name])) for name in defaults) \
        and set(part) <= set(defaults)


def record(name: str, title: str, body: str, ran: Matrix | None = None, path: Path = MEASUREMENTS,
           command: str | None = None) -> None:
    """Replace section `name` (or, when `ran` covered part of its matrix, that part's) of the measurements file with
    `body` (Markdown), stamped with date and machine; the part sections of `name` that the run covers are dropped
    too. Without `ran` the script has no matrix: its one section is replaced. `command`: how it was run, where that is
    not `make NAME` (one target writing several sections)."""
    part, defaults = (ran.part, ran.defaults) if ran else (None, None)
    if not re.fullmatch(r"[\w-]+", name) or (part and not re.fullmatch(r"[\w-]+", part.suffix)):
        raise ValueError(f"section name {name!r} (part {part!r}): letters, digits, '_' and '-' only")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    key = f"{name}.{part.suffix}" if part else name
    command = command or (f"make {name} {part.make_args}" if part else f"make {name}")
    marker = f"<!-- part: {part.make_args} -->\n" if part else ""
    section = (f"<!-- section: {key} -->\n{marker}## {title}{f' ({part.make_args})' if part else ''}\n\n`{command}`, "
               f"{stamp}, {machine()}.\n\n{body.strip()}\n<!-- /section: {key} -->\n")
    text = path.read_text() if path.exists() else HEADER
    sections = {m.group("name"): m.group(0) for m in SECTION.finditer(text)}
    if defaults is not None:
        mine = _choices(part.make_args) if part else {}
        for other in [k for k in sections if k.startswith(f"{name}.")]:
            found = PART.search(sections[other])
            if found and _covers(mine, _choices(found.group("choices")), defaults):
                del sections[other]
    sections[key] = section
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(HEADER + "\n" + "\n".join(sections[k] for k in sorted(sections)))
    tmp.replace(path)
