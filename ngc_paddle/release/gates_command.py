"""`ngc-paddle gates RELEASE --flavor F [--fleet FILE]`: the release's validation and benchmark gates alone, on a fleet.

Why: a release engineer proves an image already built on the hardware of a fleet (or re-proves one profile
after fixing a node) without building, scanning or pushing a release tag. It is the release's `gates` stage:
the local image is pushed as the candidate (ngc_paddle.release.stages.candidate), the jobs run it by digest (and
each its A/B against the previous release's image of the flavor, or `--reference`, on its node),
and the verdicts land in the release's state.json, so that `ngc-paddle release` later keeps every cell that
passed with the same inputs. Without a fleet file the jobs run on this host (fleets/local.yaml).
Writes build/release/<release>/gates.json (the cells) and gates.md (the table of flavor x hardware profile).
Exit: 0 every cell PASS (or NOT PROVEN accepted with a reason), 1 a FAIL, 3 NOT RUN / NOT PROVEN / N/A.
"""

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.host_errors import Failed, NgcPaddleError, NotProven
from ngc_paddle.outputs import staged
from ngc_paddle.release.ab.plan import Size
from ngc_paddle.release.fleet import fleet_schema
from ngc_paddle.release.pipeline import requested_flavors
from ngc_paddle.release.stages import ab, candidate, gates, notes, push, release_folder
from ngc_paddle.release.state_file import State


class GatesFailed(Failed):
    """A profile's gates failed (exit 1)."""


class GatesNotProven(NotProven):
    """A profile's gates did not run, had no place or no evidence (exit 3)."""


def run(resolved: ResolvedRelease, flavor_names: list[str], fleet_file: Path | None, registry: str,
        benchmarks: tuple[str, ...], accept_unproven: str | None, say: Callable[[str], None] = print,
        references: dict[str, str] | None = None, ab_size: Size | None = None) -> dict:
    """`resolved`: the release, loaded once by the command."""
    root, manifest = resolved.root, resolved.manifest
    flavors = [f.name for f in requested_flavors(resolved, flavor_names)[0]]
    ab.check_references(resolved, references or {})
    # a bad fleet file: exit 2, nothing done
    fleet = fleet_schema.load(fleet_file, root, resolved) if fleet_file else fleet_schema.LOCAL
    images = {}
    for name in flavors:
        image = resolved.flavor(name).image
        if engine.image_id(image) is None:
            raise NgcPaddleError(f"image {image} not found; fix: build it first (make image RELEASE={manifest.release} "
                                 f"FLAVOR={name})")
        images[name] = image
    state = State(release_folder(root, manifest.release) / "state.json")
    push.ensure_registry(registry)
    refs = {name: candidate.push(state, name, image, registry, say) for name, image in images.items()}
    fan = gates.Gates(fleet, resolved, benchmarks, state, say,
                      references=partial(ab.reference_for, resolved, references=references or {}, registry=registry),
                      ab_size=ab_size)
    say(f"==> gates of {manifest.release} on {fleet_file or 'this host'}: {', '.join(flavors)}")
    fan.start([(name, resolved.flavor(name).needs_gpu, refs[name]) for name in flavors])
    fanned = fan.wait()
    statuses, report = [], {}
    for name, (key, outcome) in fanned.items():
        status, detail = outcome.status, outcome.detail
        if status == "not proven" and accept_unproven:
            status, detail = "accepted unproven", f"{detail}; accepted by a person: {accept_unproven}"
        report[name] = {"stages": {gates.NAME: state.record(name, gates.NAME, key, status, detail,
                                                             evidence=outcome.detail, **outcome.stored)}}
        statuses.append(status)
        say(f"    {name}: {status}: {detail}")
    write_report(release_folder(root, manifest.release), manifest.release, report)
    if "failed" in statuses:
        raise GatesFailed(f"gates of {manifest.release} failed; see {release_folder(root, manifest.release)}/gates.md")
    if "not proven" in statuses:
        raise GatesNotProven(f"gates of {manifest.release} NOT PROVEN (NOT RUN, NOT PROVEN or N/A on a profile); see "
                             f"{release_folder(root, manifest.release)}/gates.md; fix: run them where the hardware "
                             "is, or --accept-unproven REASON")
    return report


def write_report(folder: Path, release: str, report: dict) -> None:
    """gates.json (the cells of each flavor) and gates.md (their table), together or not at all."""
    table = notes.profile_table(report)
    text = "\n".join([f"# Gates of {release} per hardware profile", "", *table, ""])
    cells = {name: info["stages"][gates.NAME].get("profiles", {}) for name, info in report.items()}
    with staged() as out:
        out.write_text(folder / "gates.json", json.dumps({"release": release, "flavors": cells}, indent=2) + "\n")
        out.write_text(folder / "gates.md", text)
