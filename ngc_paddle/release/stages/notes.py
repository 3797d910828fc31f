"""Release stage `notes`: release-notes/<release>.md merged from every flavor's stored results, and its record.

Inputs: none kept; the notes are written after the gates of every run (pushed or blocked) and again
  after the push, from state.json of every flavor (not the last run alone), each flavor's stored
  benchmark tables, the committed record release-notes/inputs/<release>.json (flavors released
  earlier, on a fresh checkout too) and the hand-written release-notes/known-issues/<release>.md.
Run: `collect` merges the inputs, `render` writes the notes, the record and the support matrix, all
  files or none (`make notes` re-renders the committed record with the current code).
Report: the notes themselves: a gate table row per flavor and stage (its status and detail; an entry
  stored for an earlier image shows as stale), a digest per flavor, the benchmark tables.
"""

from pathlib import Path

from ngc_paddle.manifest.loader import find_manifest, load_manifest
from ngc_paddle.manifest.schema import Manifest
from ngc_paddle.outputs import ensure_folder, staged
from ngc_paddle.release import notes, record
from ngc_paddle.release.stages import bench, gates, previous_manifest, release_folder
from ngc_paddle.release.state_file import State


def notes_path(root: Path, release: str) -> Path:
    return root / "release-notes" / f"{release}.md"


def record_path(root: Path, release: str) -> Path:
    """The committed inputs of a release's notes (per flavor: gates, contents read back, benchmark
    tables, digest), so that `make notes` and the tests re-render the committed notes without build/."""
    return root / "release-notes" / "inputs" / f"{release}.json"


def known_issues(root: Path, release: str) -> str | None:
    known = root / "release-notes" / "known-issues" / f"{release}.md"
    return known.read_text() if known.exists() else None


def collect(root: Path, release: str, state: dict) -> dict[str, dict]:
    """Every flavor's notes inputs: the committed record, overlaid by the flavors of the stored state
    (build/release/<release>/state.json and each flavor's stored benchmark results). Releasing one
    flavor thus keeps what an earlier run stored for the others."""
    merged = record.load(record_path(root, release))["flavors"]
    for name, stages in state.items():
        build = stages.get("build")
        if not isinstance(build, dict):
            continue
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
        push = stages.get("push")
        if isinstance(push, dict) and push.get("status") == "passed":
            current = push.get("image_id", build.get("key")) == build.get("key") and "not_built" not in info
            info["digest"] = push.get("digest") if current else None
            if not current:
                info["digest_note"] = f"the registry keeps an earlier image: {push.get('digest')}"
        merged[name] = {k: v for k, v in info.items() if v is not None}
    return merged


def write(root: Path, manifest: Manifest, state: State) -> Path:
    """Merge the notes inputs of every flavor and write them with the notes and the support matrix."""
    infos = collect(root, manifest.release, state.data)
    return render(root, manifest.release, {"release": manifest.release, "flavors": infos})


def render(root: Path, release: str, data: dict | None = None) -> Path:
    """Write release-notes/<release>.md from its record (default: the committed one) and the support
    matrix, all files or none (`make notes` re-renders them with the current code)."""
    manifest = load_manifest(find_manifest(release, root / "releases"))
    path = record_path(root, release)
    data = record.load(path) if data is None else record.check(data, path)
    text = notes.render(manifest, previous_manifest(root, release), data["flavors"], known_issues(root, release))
    manifests = [load_manifest(p) for p in sorted((root / "releases").glob("*.yaml"))]
    ensure_folder(path.parent)
    with staged() as out:
        out.write_text(path, record.dumps(data))
        out.write_text(notes_path(root, release), text)
        out.write_text(root / "release-notes" / "support-matrix.md", notes.support_matrix(manifests))
    return notes_path(root, release)
