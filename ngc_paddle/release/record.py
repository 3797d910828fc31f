"""The committed inputs of a release's notes: per flavor its gates, contents read back, benchmark tables, digest.

Why: the notes must be the output of the current code, and the stored state (build/release/) is not
committed; this record is (release-notes/inputs/<release>.json), so `make notes` and the tests can
re-render release-notes/<release>.md exactly, and releasing one flavor keeps what earlier runs stored
for the others even on a fresh checkout.
"""

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_paddle.errors import NgcPaddleError

FIX = "regenerate it with 'make release' or restore it with 'git checkout'"


class StageResult(BaseModel):
    # A copy of a stage entry of state.json: the notes read status and detail; the rest (key, finished,
    # digest, ...) belongs to the pipeline's state and is kept as it is.
    model_config = ConfigDict(extra="allow", strict=True)
    status: str
    detail: str = ""


class FlavorRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    image: str | None = None
    readback: dict[str, str] | None = None  # component -> version as installed in the image
    stages: dict[str, StageResult] = {}
    bench_md: str | None = None
    digest: str | None = None
    digest_note: str | None = None  # why the current image has no digest although an earlier one was pushed
    not_built: str | None = None  # the build's one-line reason


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    release: str
    flavors: dict[str, FlavorRecord]


def load(path: Path) -> dict:
    """The record as plain data (empty when there is none yet); a damaged one is one line, exit 2."""
    if not path.exists():
        return {"release": path.stem, "flavors": {}}
    return check(bounded_read.load_json(path, NgcPaddleError), path)


def check(data: object, path: Path | str) -> dict:
    try:
        return Record.model_validate(data).model_dump(exclude_none=True)
    except ValidationError as exc:
        raise NgcPaddleError(one_line(path, exc, FIX)) from None


def dumps(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"
