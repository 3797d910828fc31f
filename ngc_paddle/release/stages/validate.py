"""Release stage `validate`: the checks of every layer of the image and the suite's own, run from this host.

Inputs (resume key): the image id (the checks ship in the image, so a changed check is a new image) and
  whether this host gives containers a GPU (the GPU checks' evidence depends on it).
Run: ngc_paddle.validate_image.validate on the image; report files in <flavor>/validation/ (validation.json).
Report: `    validate: STATUS: N passed, N failed, N skipped[; verdict reasons]`, the same status and
  detail in state.json and in the notes' gate table. Failed checks: failed; a verdict resting on
  skipped checks (e.g. GPU checks without a GPU): not proven.
"""

import json
from pathlib import Path

from ngc_paddle.host_errors import NotProven
from ngc_paddle.release.stages import Built, Outcome, Step, digest
from ngc_paddle.validate_image import ValidationFailed, validate

NAME = "validate"


def plan(built: Built) -> Step:
    return Step(NAME, digest(built.image_id, "gpu" if built.gpu_host else "no gpu"),
                lambda: run_validation(built.image, built.folder / "validation"))


def run_validation(image: str, out: Path) -> Outcome:
    try:
        validate(image, None, out, Path("."), [], say=lambda _line: None)
        status = "passed"
    except ValidationFailed:
        status = "failed"
    except NotProven:
        status = "not proven"
    return Outcome(status, describe(json.loads((out / "validation.json").read_text())))


def describe(report: dict) -> str:
    """`N passed, N failed, N skipped[; verdict reasons]` of a validation.json."""
    counts = report["counts"]
    detail = f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
    return detail + "".join(f"; {reason}" for reason in report.get("verdict_reasons", []))
