"""The SLSA provenance BuildKit records for the final image of a build, kept beside the build report.

Why: the release signs BuildKit's own provenance (mode=max) and attaches it to the pushed digest. Our
images are built with `--load` and without an attestation manifest (docker-bake.hcl: an attestation
manifest would turn every image into an index whose digest changes each build), so the provenance is
taken where buildx writes it for such builds: the bake metadata file (`--metadata-file`, with
`BUILDX_METADATA_PROVENANCE=max`, key `buildx.build.provenance`; checked with Docker 26.1 / buildx 0.29,
which emit SLSA v0.2). It is saved as build/reports/<release>-<flavor>/provenance.json with the image id
it describes, so a later no-change build keeps the provenance of the build that made the image.
"""

import json
from pathlib import Path

from ngc_paddle.attestations import SLSA_V02, SLSA_V1
from ngc_paddle.host_errors import NgcPaddleError

ENV = {"BUILDX_METADATA_PROVENANCE": "max"}  # what buildx needs to write the provenance into the metadata file
METADATA_KEY = "buildx.build.provenance"
# The image's ids in the metadata: its config digest (the classic image store's id) and its manifest digest (the
# containerd image store's id); either names the image the provenance describes.
ID_KEYS = ("containerimage.config.digest", "containerimage.digest")
FILE_NAME = "provenance.json"


class MissingProvenance(NgcPaddleError):
    """No provenance of this very image is at hand (exit 2: rebuild it)."""


def predicate_type(predicate: dict) -> str:
    """The SLSA version BuildKit wrote: v1 has buildDefinition/runDetails, v0.2 buildType/invocation."""
    return SLSA_V1 if "buildDefinition" in predicate else SLSA_V02


def flags(metadata_file: Path) -> tuple[str, ...]:
    """The bake flags that write a target's metadata (provenance included with ENV) to `metadata_file`."""
    return ("--metadata-file", str(metadata_file))


def capture(metadata_file: Path, target: str, reports_dir: Path) -> Path:
    """Save the provenance of bake target `target` from its metadata file into the reports folder."""
    try:
        entry = json.loads(metadata_file.read_text())[target]
        predicate, image_ids = entry[METADATA_KEY], [entry[key] for key in ID_KEYS]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NgcPaddleError(f"{metadata_file}: no {METADATA_KEY} for target {target} ({exc}); fix: use buildx >= 0.11 "
                             f"with {' '.join(f'{k}={v}' for k, v in ENV.items())}") from None
    out = reports_dir / FILE_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"image_ids": image_ids, "predicateType": predicate_type(predicate), "predicate": predicate}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(out)
    return out


def recorded(reports_dir: Path, image_id: str) -> bool:
    """Whether the provenance of image `image_id` is at hand (a no-change build keeps the image only then)."""
    try:
        load(reports_dir, image_id)
    except MissingProvenance:
        return False
    return True


def load(reports_dir: Path, image_id: str) -> tuple[str, dict]:
    """(predicate type, predicate) of the image `image_id` as its build recorded it."""
    path = reports_dir / FILE_NAME
    fix = "fix: rebuild the image with `ngc-paddle build --force` (it records BuildKit's provenance)"
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise MissingProvenance(f"{path}: no build provenance for {image_id[:19]}; {fix}") from None
    except (OSError, ValueError) as exc:
        raise MissingProvenance(f"{path}: not readable as JSON ({exc}); {fix}") from None
    ids = record.get("image_ids") if isinstance(record, dict) else None
    if not isinstance(ids, list) or image_id not in ids or not isinstance(record.get("predicate"), dict):
        described = ", ".join(str(i)[:19] for i in ids or []) if isinstance(ids, list) else "no image"
        raise MissingProvenance(f"{path}: describes {described or 'no image'}, not {image_id[:19]}; {fix}")
    return predicate_type(record["predicate"]), record["predicate"]
