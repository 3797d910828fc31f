"""Release stage `notes`: release-notes/<release>.md in the form of NGC's framework container notes, its
record, and the support matrix.

The long form: docs/design-notes.md, section `ngc_paddle/release/stages/notes.py`.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ngc_common import bounded_read
from ngc_common.error_line import one_line
from ngc_common.strict_model import Strict
from ngc_paddle.distro import from_base_image
from ngc_paddle.driver import driver_sentence, requirement
from ngc_paddle.flavor import ResolvedRelease, build_name, release_tags
from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.manifest.loader import load_manifest
from ngc_paddle.manifest.resolve import platform_differences
from ngc_paddle.manifest.schema import Flavor, Manifest
from ngc_paddle.outputs import ensure_folder, staged
from ngc_paddle.platforms import DEFAULT_PLATFORM, PLATFORMS
from ngc_paddle.release.fleet import hardware_profiles
from ngc_paddle.release.options import BENCHMARKS
from ngc_paddle.release.stages import ab, bench, gates, release_folder
from ngc_paddle.release.state_file import MAX_DETAIL, State

LABELS = {"os": "OS", "python": "Python", "cuda-runtime": "CUDA runtime", "cublas": "cuBLAS", "cudnn": "cuDNN",
          "nccl": "NCCL", "tensorrt": "TensorRT", "dali": "DALI", "paddle": "PaddlePaddle"}
# GPU families of compute capability 6.0 and later that CUDA 11.8 and 12.x support.
ARCHITECTURES = ("NVIDIA Pascal, NVIDIA Volta, NVIDIA Turing, NVIDIA Ampere architecture, NVIDIA Hopper, and "
                 "NVIDIA Ada Lovelace architecture families")


# ---- the record ---------------------------------------------------------------------------------------

FIX = "regenerate it with 'make release' or restore it with 'git checkout'"


class StageResult(BaseModel):
    # A copy of a stage entry of state.json: the notes read status, detail, changes and since (typed as the
    # state file types them); the rest (key, finished, digest, ...) belongs to the pipeline's state and is kept.
    model_config = ConfigDict(extra="allow", strict=True)
    status: Literal["passed", "failed", "not proven", "accepted unproven", "unsigned", "stale", "not run"]
    detail: Annotated[str, Field(max_length=MAX_DETAIL + 200)] = ""
    changes: list[Annotated[str, Field(max_length=500)]] | None = None
    since: Annotated[str, Field(max_length=20)] | None = None


class FlavorRecord(Strict):
    image: str | None = None
    readback: dict[str, str] | None = None  # component -> version as installed in the image
    stages: dict[str, StageResult] = Field(default_factory=dict)
    bench_md: str | None = None
    ab_md: str | None = None  # this month vs last month: the A/B against the previous release (stages/ab.py)
    digest: str | None = None
    # a flavor of several platforms: `digest` is its image index, this each platform's manifest digest in it
    platform_digests: dict[str, str] | None = None
    digest_note: str | None = None  # why the current image has no digest although an earlier one was pushed
    not_built: str | None = None  # the build's one-line reason


class Record(Strict):
    release: str
    flavors: dict[str, FlavorRecord]


def load_record(path: Path) -> dict:
    """The record as plain data (empty when there is none yet); a damaged one is one line, exit 2."""
    if not path.exists():
        return {"release": path.stem, "flavors": {}}
    return check_record(bounded_read.load_json(path, NgcPaddleError), path)


def check_record(data: object, path: Path | str) -> dict:
    try:
        record = Record.model_validate(data).model_dump(exclude_none=True)
    except ValidationError as exc:
        raise NgcPaddleError(one_line(path, exc, FIX)) from None
    if record["release"] != Path(path).stem:  # release-notes/inputs/26.12.json holds release 26.12's record only
        raise NgcPaddleError(f"{path}: release: the record is of release {record['release'][:20]!r}, not "
                             f"{Path(path).stem}; fix: {FIX}")
    return record


def table_cell(text: object) -> str:
    """A value as one Markdown table cell: on one line, its pipes escaped (a tool's output may hold both)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def record_text(data: dict) -> str:
    return json.dumps(data, indent=2) + "\n"


# ---- the notes ----------------------------------------------------------------------------------------

def _direction(old: str, new: str) -> str:
    try:
        return "up" if Version(new) > Version(old) else "down"
    except InvalidVersion:
        return "changed"


def changes(previous: Flavor | None, current: Flavor) -> list[str]:
    if previous is None:
        return ["New flavor in this release."]
    lines = []
    for name, comp in current.components.items():
        old = previous.components.get(name)
        if old is None:
            lines.append(f"New: {name} {comp.version}")
        else:
            old_pkg, new_pkg = old.package or old.image, comp.package or comp.image
            if old_pkg != new_pkg:  # another package or image: versions are not comparable
                lines.append(f"{name}: {old_pkg} {old.version} -> {new_pkg} {comp.version} (changed)")
            elif old.version != comp.version:
                lines.append(f"{name}: {old.version} -> {comp.version} ({_direction(old.version, comp.version)})")
    lines += [f"Removed: {name} (was {old.version})" for name, old in previous.components.items()
              if name not in current.components]
    if previous.cuda and current.cuda and previous.cuda.version != current.cuda.version:
        lines.insert(0, f"Based on CUDA {current.cuda.version} (was {previous.cuda.version})")
    return lines or ["No component changed."]


def runs_as(manifest: Manifest) -> str:
    """Who the images run as, from the manifest's `user` (root is printed with its reason)."""
    user = manifest.user
    if user is None:
        return "They run as a non-root user."
    if user.uid == 0:
        return f"They run as root: {table_cell(user.root_reason)}."
    return f"They run as the non-root user {user.name} (uid {user.uid}, gid {user.gid})."


def notes_text(release: ResolvedRelease, flavors: dict[str, dict], known_issues: str | None) -> str:
    """The notes of a release, resolved (its flavors' locks say which optional layers are absent; its previous
    release, what changed since). `flavors`: per flavor, its record (FlavorRecord): {"image", "readback", "stages":
    {stage: {"status", "detail", ...}}, "digest", "digest_note", "bench_md", "not_built"}, every flavor stored for
    the release (not only those of the last run); a flavor without one shows the manifest alone."""
    manifest = release.manifest
    flavors = {name: flavors[name] for name in [*manifest.flavors, *flavors] if name in flavors}  # manifest order
    out = [*_intro(manifest), *_contents(manifest, flavors, left_out_layers(release)), *_requirements(manifest),
           *_features(manifest, release.previous_release), *_gates(flavors), *_evidence(flavors),
           "## Known Issues", "", (known_issues or "None known.").strip(), "", *_digests(manifest, flavors)]
    return "\n".join(out) + "\n"


def _intro(manifest: Manifest) -> list[str]:
    """The title and where the images are: NGC's notes open with the tags."""
    rel = manifest.release
    return [f"# PaddlePaddle Release {rel}", "",
            f"The ngc-paddle {rel} images are available as " +
            ", ".join(f"`{release_tags(manifest, f)[0]}`" for f in manifest.flavors) +
            f" (`{release_tags(manifest, manifest.default_flavor)[1]}` is the {manifest.default_flavor} flavor). "
            f"{runs_as(manifest)}", ""]


def _contents(manifest: Manifest, flavors: dict[str, dict], left_out: dict[str, dict[str, str]]) -> list[str]:
    """Each flavor's components as the manifest pins them beside what its image holds (a mismatch marked)."""
    out = ["## Contents of the PaddlePaddle container", ""]
    for name, flavor in manifest.flavors.items():
        readback = flavors.get(name, {}).get("readback")
        absent = left_out.get(name, {})  # optional layers its lock leaves out: absent from the image
        out += [f"### {name}: {flavor.description}", "", *platforms_lines(flavor),
                "| component | package | version | in the image | source |", "| --- | --- | --- | --- | --- |"]
        out += [_component_row(manifest, flavor, cname, readback, absent) for cname in flavor.components]
        out.append("")
        differences = platform_differences(manifest, name)
        out += [f"On {table_cell(line)}" for line in differences] + ([""] if differences else [])
        out += [f"{LABELS.get(cname, cname)} {comp.version} is built against {dep} {comp.built_against[dep]} and runs "
                f"with {dep} {runs.version}: {table_cell(runs.why)}" for cname, comp in flavor.components.items()
                for dep, runs in comp.runs_with.items()]
        out += [""] if any(comp.runs_with for comp in flavor.components.values()) else []
        out += [f"Layer {layer} is not in this image: {table_cell(why)}" for layer, why in absent.items()]
        out += [""] if absent else []
    return out


def _component_row(manifest: Manifest, flavor: Flavor, cname: str, readback: dict[str, str] | None,
                   absent: dict[str, str]) -> str:
    """One component's row: the version pinned and the one read back from the image (or why there is none)."""
    comp = flavor.components[cname]
    found = "not built" if readback is None else readback.get(cname, "-")
    found = f"absent (layer {comp.layer} left out)" if comp.layer in absent else found
    agrees = readback is None or comp.layer in absent or found in (comp.version, "-") or \
        found.startswith(comp.version)
    mark = "" if agrees else " (MISMATCH)"
    source = manifest.sources[comp.source]
    where = source.url or source.path
    package = f"{comp.file} (libraries, {comp.package} wheel)" if comp.kind == "archive" else \
        comp.package or comp.image
    return (f"| {LABELS.get(cname, cname)} | {package} | {table_cell(versions_cell(flavor, cname))} | "
            f"{table_cell(found)}{mark} | {comp.source} ({where}) |")


def _requirements(manifest: Manifest) -> list[str]:
    """The driver each flavor needs, and the GPUs when a flavor has CUDA."""
    out = ["## Driver Requirements", ""]
    for name, flavor in manifest.flavors.items():
        if flavor.cuda is None:
            out += [f"{name}: needs no NVIDIA driver.", ""]
        else:
            out += [f"{name}: {driver_sentence(manifest.release, flavor.cuda.version)}", ""]
    if any(f.cuda for f in manifest.flavors.values()):
        out += ["## GPU Requirements", "", f"Release {manifest.release} supports CUDA compute capability 6.0 and "
                f"later. This corresponds to GPUs in the {ARCHITECTURES}.", ""]
    return out


def _features(manifest: Manifest, previous: ResolvedRelease | None) -> list[str]:
    """What changed in each flavor since the previous release."""
    out = ["## Key Features and Enhancements", ""]
    since = f" since {previous.release}" if previous else ""
    for name, flavor in manifest.flavors.items():
        prev = previous.flavor(name).spec if previous and previous.has_flavor(name) else None
        out += [f"Changes{since} ({name}):", ""] + [f"- {line}" for line in changes(prev, flavor)] + [""]
    return out


def _gates(flavors: dict[str, dict]) -> list[str]:
    """Every stage's result per flavor, then the gates per hardware profile."""
    out = ["## Release gates", "", "| flavor | stage | result | detail |", "| --- | --- | --- | --- |"]
    for name, info in flavors.items():
        for stage, result in info.get("stages", {}).items():
            status = result.get("status", "-")
            shown = "NOT PROVEN, pushed on a person's word" if status == "accepted unproven" else status
            shown = "not built" if info.get("not_built") and stage == "build" else shown
            row = (name, stage, shown, result.get("detail", ""))
            out.append("| " + " | ".join(table_cell(part) for part in row) + " |")
    out.append("")
    table = profile_table(flavors)
    if table:
        out += ["### Gates per hardware profile", "", *table, ""]
    return out


def _evidence(flavors: dict[str, dict]) -> list[str]:
    """The sections the gates left: package changes month over month, the benchmarks and the A/B."""
    out = []
    for name, info in flavors.items():
        month = info.get("stages", {}).get("month-over-month", {})
        if month.get("changes"):
            out += [f"## Package changes since {month.get('since')} ({name})", "",
                    *[f"- {table_cell(line)}" for line in month["changes"]], ""]
    for name, info in flavors.items():
        if info.get("bench_md"):
            out += [f"## Benchmarks ({name})", "", info["bench_md"].strip(), ""]
    for name, info in flavors.items():
        if info.get("ab_md"):
            out += [f"## This month vs last month: A/B ({name})", "", info["ab_md"].strip(), ""]
    return out


def _digests(manifest: Manifest, flavors: dict[str, dict]) -> list[str]:
    """Each image's pushed digest, or why it has none; an image index's, then each of its platforms' (whose gates
    have their own rows above, under the platform's build name)."""
    out = ["## Image digests", "", "| image | digest |", "| --- | --- |"]
    platforms_of = {build_name(name, p) for name, info in flavors.items()
                    for p in info.get("platform_digests") or {} if build_name(name, p) != name}
    for name, info in flavors.items():
        if name in platforms_of:
            continue
        digest = info.get("digest") or (f"not built: {info['not_built']}" if info.get("not_built") else
                                         f"not pushed ({info['digest_note']})" if info.get("digest_note") else
                                         "not pushed")
        image = table_cell(info.get("image") or release_tags(manifest, name)[0])
        out.append(f"| `{image}` | {table_cell(digest)}{' (image index)' if info.get('platform_digests') else ''} |")
        out += [f"| `{image}` {platform} | {table_cell(found)} |"
                for platform, found in (info.get("platform_digests") or {}).items()]
    if not any(info.get("readback") for info in flavors.values()):
        out += ["", "No image of this release was built yet: the contents table shows the manifest only."]
    return out


def platforms_lines(flavor: Flavor) -> list[str]:
    """The platforms a flavor's image is built for, and those it is not built for yet with why (nothing for a
    flavor of the default platform alone, as releases before there were platforms)."""
    if flavor.platforms == [DEFAULT_PLATFORM] and not flavor.platforms_pending:
        return []
    pending = "".join(f" Not built for {p} yet: {table_cell(why)}." for p, why in flavor.platforms_pending.items())
    return [f"Platforms: {', '.join(flavor.platforms)}.{pending}", ""]


def versions_cell(flavor: Flavor, component: str) -> str:
    """A component's version, with another platform's where it differs: `3.3.1 (linux/arm64: 3.2.2)`."""
    versions = flavor.platform_versions(component)
    first = versions.pop(flavor.platforms[0])
    others = [f"{platform}: {version}" for platform, version in versions.items() if version != first]
    return f"{first} ({', '.join(others)})" if others else first


def _matrix_cell(flavor: Flavor, column: str) -> str:
    """A component's version; for the OS, the distribution and release ("Debian 12", "Ubuntu 20.04")."""
    comp = flavor.components.get(column)
    if comp is None:
        return "-"
    if column == "os":
        distro = from_base_image(comp.image, comp.version)
        return str(distro) if distro else comp.version
    return versions_cell(flavor, column)


def support_matrix(manifests: list[Manifest], pushed: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None) \
        -> str:
    """Each release's flavors with their main versions; a platforms column once a flavor builds more than the
    default platform (the matrix of releases before that is as it was), each platform with the digest its pushed
    image index holds for it (`pushed`: release -> flavor -> platform -> digest, from the releases' records)."""
    pushed = pushed or {}
    platforms = any(f.platforms != [DEFAULT_PLATFORM] for m in manifests for f in m.flavors.values())
    columns = ["os", "python", "cuda-runtime", "cudnn", "nccl", "tensorrt", "dali", "paddle"]
    out = ["# ngc-paddle support matrix", "",
           "Generated from releases/*.yaml; driver figures (the oldest that runs the image / the one with "
           "every feature of its CUDA) from ngc_paddle/driver.py.", "",
           "| release | flavor | CUDA | driver (runs / full) | " + " | ".join(LABELS[c] for c in columns) +
           (" | platforms |" if platforms else " |"),
           "| --- | --- | --- | --- | " + " | ".join("---" for _ in columns) + (" | --- |" if platforms else " |")]
    for m in sorted(manifests, key=lambda m: m.release, reverse=True):
        for name, flavor in m.flavors.items():
            cells = [_matrix_cell(flavor, c) for c in columns]
            cuda = flavor.cuda.version if flavor.cuda else "-"
            req = requirement(flavor.cuda.version) if flavor.cuda else None
            driver = f"{req.minimum} / {req.full}" if req else "-"
            out.append(f"| {m.release} | {name} | {cuda} | {driver} | " + " | ".join(cells) +
                       (f" | {_platforms_cell(flavor, pushed.get(m.release, {}).get(name, {}))} |" if platforms
                        else " |"))
    return "\n".join(out) + "\n"


def _platforms_cell(flavor: Flavor, digests: Mapping[str, str]) -> str:
    """`linux/amd64 sha256:..., linux/arm64 sha256:...` (a platform without a pushed digest: its name alone)."""
    return ", ".join(f"{p} {digests[p]}" if p in digests else p for p in flavor.platforms)


def pushed_platforms(record: dict) -> dict[str, dict[str, str]]:
    """flavor -> platform -> digest of every image index a release's record says was pushed."""
    return {name: info["platform_digests"] for name, info in record.get("flavors", {}).items()
            if info.get("platform_digests")}


# ---- the stage ----------------------------------------------------------------------------------------

def notes_path(root: Path, release: str) -> Path:
    return root / "release-notes" / f"{release}.md"


def record_path(root: Path, release: str) -> Path:
    """The committed inputs of a release's notes (per flavor: gates, contents read back, benchmark
    tables, digest), so that `make notes` and the tests re-render the committed notes without build/."""
    return root / "release-notes" / "inputs" / f"{release}.json"


def known_issues(root: Path, release: str) -> str | None:
    known = root / "release-notes" / "known-issues" / f"{release}.md"
    return known.read_text() if known.exists() else None


def profile_table(flavors: dict[str, dict]) -> list[str]:
    """The fan-out's verdicts as a table of flavor x hardware profile: each cell's verdict, its validation and
    benchmark verdicts, the node it ran on (GPU model and count, driver, CUDA) and the job; why, when not PASS."""
    cells = [(name, profile, cell) for name, info in flavors.items()
             for profile, cell in ((info.get("stages", {}).get("gates") or {}).get("profiles") or {}).items()]
    if not cells:
        return []
    benches = [b for b in BENCHMARKS if any(b in (cell.get("bench") or {}) for _, _, cell in cells)]
    lines = ["| flavor | profile | verdict | validate | " + "".join(f"{b} | " for b in benches) + "node | job | why |",
             "| --- | --- | --- | --- | " + "--- | " * len(benches) + "--- | --- | --- |"]
    for name, profile, cell in cells:
        hw = cell.get("hardware", profile)
        shown = profile if hw in (profile, "-") else f"{profile} ({hw})"
        node = hardware_profiles.describe(cell["facts"]) if cell.get("facts") else cell.get("node") or "-"
        job = cell.get("job") or "-"
        if cell.get("attempts"):
            job += f" (requeued; {len(cell['attempts'])} attempt(s) without a verdict)"
        why = "" if cell.get("status") == "PASS" else cell.get("detail", "").replace("|", "\\|")[:500]
        lines.append(f"| {name} | {shown} | {cell.get('status')} | {cell.get('validation') or '-'} | "
                     + "".join(f"{(cell.get('bench') or {}).get(b, '-')} | " for b in benches)
                     + f"{node} | {job} | {why} |")
    return lines


def collect(root: Path, release: str, state: dict) -> dict[str, dict]:
    """Every flavor's notes inputs: the committed record, overlaid by the flavors of the stored state
    (build/release/<release>/state.json and each flavor's stored benchmark results). Releasing one
    flavor thus keeps what an earlier run stored for the others; a flavor's further platforms (cpu-arm64) are the
    state's where it holds the flavor (one released as one image has none: the record's are an earlier index's)."""
    merged = load_record(record_path(root, release))["flavors"]
    for name, stages in state.items():
        build = stages.get("build")
        if not isinstance(build, dict):
            continue
        for further in {build_name(name, platform) for platform in PLATFORMS} - {name}:
            if further not in state:
                merged.pop(further, None)
        info: dict = {"stages": {}}
        if build.get("status") != "passed":
            info["not_built"] = build.get("detail", "")
            info["stages"]["build"] = build
        else:
            info["image"] = build.get("image")
            info["readback"] = build.get("readback")
            for stage, entry in stages.items():
                if stage in ("push", "candidate") or not isinstance(entry, dict):  # not gates: the digests table
                    continue
                if entry.get("image_id", build["key"]) != build["key"]:  # stored for an earlier image
                    entry = {**entry, "status": "stale", "detail": f"ran on an earlier image: {entry.get('detail')}"}
                info["stages"][stage] = {k: v for k, v in entry.items() if k != "readback"}  # kept once, above
            info["bench_md"] = "\n".join(part for part in (
                bench.markdown(release_folder(root, release) / name / "bench"),
                gates.markdown(root, (stages.get(gates.NAME) or {}).get("profiles") or {})) if part)
            info["ab_md"] = ab.markdown(root, release_folder(root, release) / name, stages) or None
        push = stages.get("push")
        if isinstance(push, dict) and push.get("status") == "passed":
            current = push.get("image_id", build.get("key")) == build.get("key") and "not_built" not in info
            info["digest"] = push.get("digest") if current else None
            info["platform_digests"] = push.get("platform_digests") if current else None
            if not current:
                info["digest_note"] = f"the registry keeps an earlier image: {push.get('digest')}"
        merged[name] = {k: v for k, v in info.items() if v is not None}
    return merged


def write(release: ResolvedRelease, state: State) -> Path:
    """Merge the notes inputs of every flavor and write them with the notes and the support matrix."""
    infos = collect(release.root, release.release, state.data)
    return _write(release, {"release": release.release, "flavors": infos})


def render(root: Path, release: str) -> Path:
    """Re-render release-notes/<release>.md and the support matrix from the committed record with the current
    code (`make notes`), all files or none."""
    return _write(ResolvedRelease.load(root, release))


def left_out_layers(release: ResolvedRelease) -> dict[str, dict[str, str]]:
    """Per flavor, the optional layers its committed lock leaves out (layer -> why): absent from its image."""
    return {name: dict(flavor.left_out_layers) for name, flavor in release.flavors().items()
            if flavor.left_out_layers}


def _write(release: ResolvedRelease, data: dict | None = None) -> Path:
    """Write the record (default: the committed one), the notes and the support matrix, all files or none."""
    root = release.root
    path = record_path(root, release.release)
    data = load_record(path) if data is None else check_record(data, path)
    text = notes_text(release, data["flavors"], known_issues(root, release.release))
    # Every release's manifest for the matrix; this release's is the one the run loaded (no second load).
    others = [load_manifest(p) for p in sorted((root / "releases").glob("*.yaml")) if p.stem != release.release]
    pushed = {m.release: pushed_platforms(load_record(record_path(root, m.release))) for m in others}
    pushed[release.release] = pushed_platforms(data)
    ensure_folder(path.parent)
    with staged() as out:
        out.write_text(path, record_text(data))
        out.write_text(notes_path(root, release.release), text)
        out.write_text(root / "release-notes" / "support-matrix.md",
                       support_matrix([*others, release.manifest], pushed))
    return notes_path(root, release.release)
