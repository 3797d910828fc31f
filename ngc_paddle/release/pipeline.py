"""`ngc-paddle release YY.MM`: build, validate, benchmark gates, scan gate + SBOM, month-over-month gate, notes, push.

Each stage of each flavor records its result and the key of its inputs (the image id, plus the
benchmark options, or the policy's content, the date and the digest of the vulnerability data) in
build/release/<release>/state.json, written after every stage. A rerun skips stages whose key did
not change and resumes after an interruption or a failure; the build itself always runs,
BuildKit's cache making an unchanged build a no-op. Any failed gate stops the push and is named;
the registry then keeps the previous release. A gate that is NOT PROVEN (GPU checks or benchmarks
of a GPU flavor on a host without a GPU, a scan whose vulnerability part did not run for want of a
source) stops the push too, unless `accept_unproven` gives a reason, which the release notes print
in the gate table.
Containers the stages start get the host's GPUs where it has them (engine.run_flags).
The notes are merged from every flavor's stored results (state.json, stored benchmark tables, and
the committed record release-notes/inputs/<release>.json), not from the last run alone.
"""

import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from ngc_paddle.errors import NgcPaddleError, NotProven
from ngc_paddle.image_build import engine, pipeline
from ngc_paddle.manifest.loader import find_manifest, load_manifest
from ngc_paddle.manifest.resolve import apply_source_overrides, flavor_of
from ngc_paddle.outputs import ensure_folder, staged
from ngc_paddle.release import bench_result, month, notes, record, state_file
from ngc_paddle.release.registry import push_and_verify, served_digest
from ngc_paddle.scan import gate as scan_gate
from ngc_paddle.scan import sources
from ngc_paddle.validate import ValidationFailed, validate

DEFAULT_REGISTRY = "127.0.0.1:5000"
BENCHMARKS = ("bench-rn50", "bench-hgnet")


class ReleaseBlocked(NgcPaddleError):
    exit_code = 1


@dataclass
class ReleaseOptions:
    release: str
    flavors: list[str] = field(default_factory=list)
    registry: str = DEFAULT_REGISTRY
    policy: Path = Path("security/policy.yaml")
    osv_dir: Path | None = None
    benchmarks: tuple[str, ...] = BENCHMARKS
    root: Path = Path(".")
    accept_unproven: str | None = None  # the reason a person gives for pushing a flavor whose gates are not proven
    sources: dict[str, str] = field(default_factory=dict)  # mirrors for the build stage (NAME -> URL or path)


class State:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = state_file.read(path)  # checked at the door: a malformed file is one line, exit 2

    def done(self, flavor: str, stage: str, key: str) -> dict | None:
        """The stage's last result when its inputs are unchanged and it passed (a NOT PROVEN one always reruns)."""
        entry = self.data.get(flavor, {}).get(stage)
        return entry if entry and entry.get("key") == key and entry.get("status") == "passed" else None

    def record(self, flavor: str, stage: str, key: str, status: str, detail: str, **extra) -> dict:
        entry = {"key": key, "status": status, "detail": detail,
                 "finished": datetime.now(UTC).isoformat(timespec="seconds"), **extra}
        self.data.setdefault(flavor, {})[stage] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2) + "\n")
        tmp.replace(self.path)
        return entry


def _hash(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()[:16]


def ensure_registry(registry: str) -> None:
    host, _, port = registry.partition(":")
    if host != "127.0.0.1":
        return
    script = Path(__file__).resolve().parents[2] / "toolchain" / "ensure-registry.sh"
    proc = subprocess.run(["bash", str(script)], env={**os.environ, "REGISTRY_PORT": port or "5000"},
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise NgcPaddleError((proc.stderr.strip().splitlines() or ["registry failed"])[-1].removeprefix("error: "))


def requested_flavors(manifest, names: list[str]) -> tuple[list[str], bool]:
    """The flavors to release (names given, split on spaces as `make FLAVOR="cpu gpu"` passes them, in the
    manifest's order), and whether `all` was asked for: every flavor this host can build."""
    wanted = [w for name in names for w in name.split()]
    if "all" in wanted:
        return list(manifest.flavors), True
    for name in wanted:
        flavor_of(manifest, name)
    wanted = wanted or [manifest.default_flavor]
    return [f for f in manifest.flavors if f in wanted], False


def run(opts: ReleaseOptions, say: Callable[[str], None] = print) -> dict:
    """Gates every requested flavor, then pushes all of them or none: a release is one set of images, and
    a registry holding 26.12-cpu of this run beside 26.12-gpu of an older one would be a release nobody
    gated together. With `all`, a flavor whose build fails on this host (e.g. its index is unreachable) is
    reported as not built, with the build's one-line reason, and does not hold back the others."""
    root = opts.root.resolve()
    manifest = load_manifest(find_manifest(opts.release, root / "releases"))
    flavors, every = requested_flavors(manifest, opts.flavors)
    apply_source_overrides(manifest, opts.sources)  # a mirror for a source the release lacks: bad input, first
    rdir = root / "build" / "release" / manifest.release
    state = State(rdir / "state.json")
    failures: list[str] = []
    not_built: dict[str, str] = {}
    infos: dict[str, dict] = {}
    osv_dir = sources.resolve_osv_dir(opts.osv_dir, root)
    for name in flavors:
        say(f"=== release {manifest.release}: flavor {name}")
        info = infos[name] = {"stages": {}}
        try:
            report = pipeline.build(pipeline.BuildRequest(manifest.release, name, opts.sources, root), say=say)
        except NgcPaddleError as exc:
            reason = " ".join(str(exc).split())
            info["stages"]["build"] = state.record(name, "build", "", "failed", reason)
            say(f"    not built: {reason}")
            not_built[name] = reason
            if not every:
                failures.append(f"{name}: build ({reason})")
            continue
        image = info["image"] = report.image
        image_id = engine.image_id(image) or ""
        layers = ", ".join(r.status for r in report.layers)
        detail = f"{image} {image_id[7:19]} ({layers})"
        readback = notes.read_back(image, manifest.flavors[name])
        size = engine.image_size(image)
        info["stages"]["build"] = state.record(name, "build", image_id, "passed", detail, image=image,
                                               readback=readback, size=size)
        baselines = previous_bench_results(root, manifest.release, name, opts.benchmarks)
        last = previous_results(root, manifest.release, name)
        allowed = manifest.flavors[name].month_over_month
        for stage, key, action in (
            ("validate", _hash(image_id), lambda n=name, i=image: _validate(i, rdir / n / "validation")),
            ("bench", _hash(image_id, opts.benchmarks, sorted(map(str, baselines.values()))),
             lambda n=name, i=image, b=baselines: _bench(i, rdir / n / "bench", opts.benchmarks, b)),
            ("scan", scan_key(image_id, root / opts.policy, osv_dir, datetime.now(UTC).date()),
             lambda n=name, i=image: _scan(i, rdir / n / "scan", root / opts.policy, osv_dir, root, opts.sources)),
            ("month-over-month", _hash(image_id, last[0], _file_hash(last[1]), last[2], allowed.model_dump()),
             lambda n=name, s=size, p=last, a=allowed: _month(p, rdir / n / "scan" / "sbom.cdx.json", s, a)),
        ):
            previous = state.done(name, stage, key)
            if previous:
                say(f"--> {stage}: unchanged since {previous['finished']}, skipped ({previous['detail']})")
                info["stages"][stage] = previous
                continue
            say(f"--> {stage}")
            status, detail, *extra = action()
            if status == "not proven" and opts.accept_unproven:
                status, detail = "accepted unproven", f"{detail}; accepted by a person: {opts.accept_unproven}"
            info["stages"][stage] = state.record(name, stage, key, status, detail, image_id=image_id,
                                                 **(extra[0] if extra else {}))
            say(f"    {stage}: {status}: {detail}")
            if status == "not proven":
                failures.append(f"{name}: {stage} gate NOT PROVEN ({detail}; to push anyway: --accept-unproven "
                                "REASON)")
            elif status not in ("passed", "accepted unproven"):
                failures.append(f"{name}: {stage} gate ({detail})")
    built = [name for name in flavors if name not in not_built]
    if not built:
        failures.append("no flavor could be built on this host")
    write_notes(root, manifest, state)
    if failures:
        say("==> push skipped: " + "; ".join(failures))
        _summary(flavors, not_built, {}, say)
        raise ReleaseBlocked(f"release {manifest.release} blocked by: {'; '.join(failures)}; the registry keeps "
                             "the previous release")
    ensure_registry(opts.registry)
    for name in built:
        infos[name]["digest"] = _push(state, name, infos[name]["image"], opts.registry, say)
    write_notes(root, manifest, state)
    say(f"==> release {manifest.release} pushed to {opts.registry}: "
        + ", ".join(f"{n} {infos[n]['digest'][:19]}" for n in built))
    _summary(flavors, not_built, {n: infos[n]["digest"] for n in built}, say)
    return infos


def _summary(flavors: list[str], not_built: dict[str, str], digests: dict[str, str],
             say: Callable[[str], None]) -> None:
    say("==> summary:")
    for name in flavors:
        say(f"    {name}: " + (f"not built: {not_built[name]}" if name in not_built
                                 else f"pushed {digests[name]}" if name in digests else "built and gated, not pushed"))


def notes_path(root: Path, release: str) -> Path:
    return root / "release-notes" / f"{release}.md"


def record_path(root: Path, release: str) -> Path:
    """The committed inputs of a release's notes (per flavor: gates, contents read back, benchmark
    tables, digest), so that `make notes` and the tests re-render the committed notes without build/."""
    return root / "release-notes" / "inputs" / f"{release}.json"


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
                if stage == "push" or not isinstance(entry, dict):
                    continue
                if entry.get("image_id", build["key"]) != build["key"]:  # stored for an earlier image
                    entry = {**entry, "status": "stale", "detail": f"ran on an earlier image: {entry.get('detail')}"}
                info["stages"][stage] = {k: v for k, v in entry.items() if k != "readback"}  # kept once, above
            info["bench_md"] = _bench_markdown(root / "build" / "release" / release / name / "bench")
        push = stages.get("push")
        if isinstance(push, dict) and push.get("status") == "passed":
            current = push.get("image_id", build.get("key")) == build.get("key") and "not_built" not in info
            info["digest"] = push.get("digest") if current else None
            if not current:
                info["digest_note"] = f"the registry keeps an earlier image: {push.get('digest')}"
        merged[name] = {k: v for k, v in info.items() if v is not None}
    return merged


def write_notes(root: Path, manifest, state: "State") -> Path:
    """Merge the notes inputs of every flavor and write them with the notes and the support matrix."""
    infos = collect(root, manifest.release, state.data)
    return render_notes(root, manifest.release, {"release": manifest.release, "flavors": infos})


def render_notes(root: Path, release: str, data: dict | None = None) -> Path:
    """Write release-notes/<release>.md from its record (default: the committed one) and the support
    matrix, all files or none (`make notes` re-renders them with the current code)."""
    manifest = load_manifest(find_manifest(release, root / "releases"))
    path = record_path(root, release)
    data = record.load(path) if data is None else record.check(data, path)
    text = notes.render(manifest, _previous_manifest(root, release), data["flavors"], known_issues(root, release))
    manifests = [load_manifest(p) for p in sorted((root / "releases").glob("*.yaml"))]
    ensure_folder(path.parent)
    with staged() as out:
        out.write_text(path, record.dumps(data))
        out.write_text(notes_path(root, release), text)
        out.write_text(root / "release-notes" / "support-matrix.md", notes.support_matrix(manifests))
    return notes_path(root, release)


def known_issues(root: Path, release: str) -> str | None:
    known = root / "release-notes" / "known-issues" / f"{release}.md"
    return known.read_text() if known.exists() else None


def previous_results(root: Path, release: str, flavor: str) -> tuple[str | None, Path, int | None]:
    """The previous release that has this flavor (None: nothing to compare), its stored SBOM and image size."""
    previous = _previous_manifest(root, release)
    if previous is None or flavor not in previous.flavors:
        return None, Path("/nonexistent"), None
    folder = root / "build" / "release" / previous.release
    build = State(folder / "state.json").data.get(flavor, {}).get("build", {})
    size = build.get("size") if build.get("status") == "passed" else None
    return previous.release, folder / flavor / "scan" / "sbom.cdx.json", size if isinstance(size, int) else None


def _month(last: tuple[str | None, Path, int | None], sbom: Path, size: int, allowed) -> tuple[str, str, dict]:
    verdict = month.gate(last[0], last[1], last[2], sbom, size, allowed.packages, allowed.size_growth)
    return verdict.status, verdict.detail, {"changes": verdict.changes, "since": last[0]}


def _previous_manifest(root: Path, release: str):
    older = sorted(p for p in (root / "releases").glob("*.yaml") if p.stem < release)
    return load_manifest(older[-1]) if older else None


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else "-"


def scan_key(image_id: str, policy: Path, osv_dir: Path | None, today: date) -> str:
    """The scan's inputs: the image, the policy's content, the date (an allowlist entry or a waiver can expire,
    a source can age past the policy's limit) and the vulnerability data at hand (OSV folder, trivy DB)."""
    return _hash(image_id, _file_hash(policy), today.isoformat(), sources.digest(osv_dir, sources.trivy_cache()))


def _validate(image: str, out: Path) -> tuple[str, str]:
    try:
        validate(image, None, out, Path("."), [], say=lambda _line: None)
        status = "passed"
    except ValidationFailed:
        status = "failed"
    except NotProven:
        status = "not proven"
    report = json.loads((out / "validation.json").read_text())
    counts = report["counts"]
    detail = f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
    return status, detail + "".join(f"; {reason}" for reason in report.get("verdict_reasons", []))


BENCH_STATUS = {0: "passed", 1: "failed", 3: "not proven"}


def previous_bench_results(root: Path, release: str, flavor: str, commands: tuple[str, ...]) -> dict[str, Path]:
    """The newest stored result.json of each benchmark in the previous release's run of this flavor, on this
    host: the baseline its regressions are gated against (the benchmark refuses other hardware itself)."""
    previous = _previous_manifest(root, release)
    found = {}
    for command in commands if previous else ():
        folder = root / "build" / "release" / previous.release / flavor / "bench" / command
        passed = [path for path in sorted(folder.glob("*/result.json")) if _verdict(path) == "PASS"]
        if passed:  # a failed or unproven run is no baseline
            found[command] = passed[-1]
    return found


def _verdict(result: Path) -> str:
    """The verdict of a stored result; one that cannot be read is bad input (exit 2), not a silently lost baseline."""
    fix = f"delete {result.parent} (the previous release's run of it then gives no baseline) or restore the file"
    return bench_result.read(result, fix).verdict


def _bench(image: str, out: Path, commands: tuple[str, ...], baselines: dict[str, Path]) -> tuple[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    details, statuses = [], []
    for command in commands:
        folder = out / command
        before = set(folder.glob("*/result.json"))
        mounts, extra = ["-v", f"{out}:/workspace/out"], []
        if command in baselines:
            mounts += ["-v", f"{baselines[command]}:/workspace/baseline.json:ro"]
            extra = ["--baseline", "/workspace/baseline.json"]
        name = f"ngc-release-bench-{os.getpid()}-{command}"
        try:
            proc = subprocess.run(["docker", "run", "--rm", "--name", name, *engine.run_flags(writes_mounts=True), "-e",
                                   "NGC_PADDLE_QUIET=1", *mounts, image, command, "--output",
                                   f"/workspace/out/{command}", *extra], capture_output=True, text=True)
        except BaseException:  # interrupted: the container must not run on and write into the next attempt
            engine.docker("rm", "-f", name, check=False)
            raise
        results = sorted(set(folder.glob("*/result.json")) - before)
        if proc.returncode not in BENCH_STATUS or not results:
            return "failed", f"{command} could not run (exit {proc.returncode}): {proc.stderr.strip()[-200:]}"
        try:  # written by the image's benchmark just now: one it cannot have written fails the stage
            result = bench_result.read(results[-1], "check the benchmark in the image")
        except NgcPaddleError as exc:
            return "failed", f"{command} wrote a result.json that cannot be read: {exc}"
        gates = result.gates
        counts = {s: sum(g.status == s for g in gates) for s in ("PASS", "FAIL", "NOT RUN", "N/A")}
        failed = [g.gate for g in gates if g.status == "FAIL"]
        baseline = f", baseline {baselines[command].parent.name}" if command in baselines else ", no baseline"
        details.append(f"{command}: {result.verdict} ({counts['PASS']} pass, {counts['FAIL']} fail, "
                       f"{counts['NOT RUN']} not run, {counts['N/A']} n/a{baseline})"
                       + (f" (failed: {', '.join(failed)})" if failed else "")
                       + "".join(f"; {r}" for r in result.verdict_reasons if result.verdict != "FAIL"))
        statuses.append(BENCH_STATUS[proc.returncode])
    status = "failed" if "failed" in statuses else "not proven" if "not proven" in statuses else "passed"
    return status, "; ".join(details)


def _bench_markdown(folder: Path) -> str:
    parts = []
    for command in BENCHMARKS:
        results = sorted((folder / command).glob("*/result.md"))
        if results:
            text = results[-1].read_text().split("\n", 1)[1]
            parts.append(f"### {command}\n{text}")
    return "\n".join(parts)


def _scan(image: str, out: Path, policy: Path, osv: Path | None, root: Path,
          source_overrides: dict[str, str] | None = None) -> tuple[str, str]:
    report = scan_gate.run(image, out, policy, osv, [], None, None, root, say=lambda _line: None,
                           source_overrides=source_overrides)
    counts = report["counts"]
    detail = (f"{counts['blocking']} blocking, {counts['suppressed']} allowlisted, "
              f"{counts['informational']} informational; SBOM {Path(report['sbom']).name}")
    if report["blocked"]:
        first = ", ".join(f"{f['kind']} {f['id']} {f['package']}" for f in report["blocking"][:3])
        detail += f" (blocking: {first})"
    if report["vulnerabilities"]["status"] == "waived":
        detail = f"{scan_gate.waiver_line(report)}; {detail}"
    detail = "".join(f"{part}; " for part in scan_gate.not_run_parts(report)) + detail
    return {"BLOCKED": "failed", "NOT RUN": "not proven", "PASS": "passed"}[scan_gate.headline(report)], detail


def _push(state: State, flavor: str, image: str, registry: str, say: Callable[[str], None]) -> str:
    repository, tag = image.split(":", 1)
    target = f"{registry}/{repository}:{tag}"
    image_id = engine.image_id(image)
    key = _hash(image_id, registry)
    previous = state.done(flavor, "push", key)
    if previous and served_digest(target) == previous["digest"]:
        say(f"--> push {target}: already there ({previous['digest'][:19]}), skipped")
        return previous["digest"]
    engine.tag(image, target)
    say(f"--> push {target}")
    try:
        pushed = push_and_verify(target)
    except NgcPaddleError as exc:
        state.record(flavor, "push", key, "failed", str(exc), image_id=image_id)
        raise
    state.record(flavor, "push", key, "passed", f"{target}@{pushed}", digest=pushed, image_id=image_id)
    say(f"    pushed {target}@{pushed} (the registry serves the same digest)")
    return pushed
