"""`ngc-paddle release YY.MM`: build, validate, benchmark gates, scan gate + SBOM, notes, push.

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
"""

import hashlib
import json
import os
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from ngc_paddle.build import engine, pipeline
from ngc_paddle.errors import NgcPaddleError, NotProven
from ngc_paddle.manifest.loader import find_manifest, load_manifest
from ngc_paddle.manifest.resolve import flavor_of
from ngc_paddle.release import notes
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


class State:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = json.loads(path.read_text()) if path.exists() else {}

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


def registry_digest(registry: str, repository: str, tag: str) -> str | None:
    request = urllib.request.Request(f"http://{registry}/v2/{repository}/manifests/{tag}", method="HEAD", headers={
        "Accept": "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.headers.get("Docker-Content-Digest")
    except OSError:
        return None


def run(opts: ReleaseOptions, say: Callable[[str], None] = print) -> dict:
    root = opts.root.resolve()
    manifest = load_manifest(find_manifest(opts.release, root / "releases"))
    flavors = opts.flavors or [manifest.default_flavor]
    for name in flavors:
        flavor_of(manifest, name)
    rdir = root / "build" / "release" / manifest.release
    state = State(rdir / "state.json")
    failures: list[str] = []
    infos: dict[str, dict] = {}
    osv_dir = sources.resolve_osv_dir(opts.osv_dir, root)
    for name in flavors:
        say(f"=== release {manifest.release}: flavor {name}")
        info = infos[name] = {"stages": {}}
        try:
            report = pipeline.build(pipeline.BuildRequest(manifest.release, name, None, root), say=say)
        except NgcPaddleError as exc:
            info["stages"]["build"] = state.record(name, "build", "", "failed", str(exc))
            failures.append(f"{name}: build ({exc})")
            continue
        image = info["image"] = report.image
        image_id = engine.image_id(image) or ""
        layers = ", ".join(r.status for r in report.layers)
        detail = f"{image} {image_id[7:19]} ({layers})"
        info["stages"]["build"] = state.record(name, "build", image_id, "passed", detail)
        baselines = previous_bench_results(root, manifest.release, name, opts.benchmarks)
        for stage, key, action in (
            ("validate", _hash(image_id), lambda n=name, i=image: _validate(i, rdir / n / "validation")),
            ("bench", _hash(image_id, opts.benchmarks, sorted(map(str, baselines.values()))),
             lambda n=name, i=image, b=baselines: _bench(i, rdir / n / "bench", opts.benchmarks, b)),
            ("scan", scan_key(image_id, root / opts.policy, osv_dir, datetime.now(UTC).date()),
             lambda n=name, i=image: _scan(i, rdir / n / "scan", root / opts.policy, osv_dir, root)),
        ):
            previous = state.done(name, stage, key)
            if previous:
                say(f"--> {stage}: unchanged since {previous['finished']}, skipped ({previous['detail']})")
                info["stages"][stage] = previous
                continue
            say(f"--> {stage}")
            status, detail = action()
            if status == "not proven" and opts.accept_unproven:
                status, detail = "accepted unproven", f"{detail}; accepted by a person: {opts.accept_unproven}"
            info["stages"][stage] = state.record(name, stage, key, status, detail)
            say(f"    {stage}: {status}: {detail}")
            if status == "not proven":
                failures.append(f"{name}: {stage} gate NOT PROVEN ({detail}; to push anyway: --accept-unproven "
                                "REASON)")
            elif status not in ("passed", "accepted unproven"):
                failures.append(f"{name}: {stage} gate ({detail})")
        if image_id:
            info["readback"] = notes.read_back(image, manifest.flavors[name])
            info["bench_md"] = _bench_markdown(rdir / name / "bench")
    write_notes(root, manifest, infos)
    if failures:
        say("==> push skipped: " + "; ".join(failures))
        raise ReleaseBlocked(f"release {manifest.release} blocked by: {'; '.join(failures)}; the registry keeps "
                             "the previous release")
    ensure_registry(opts.registry)
    for name in flavors:
        infos[name]["digest"] = _push(state, name, infos[name]["image"], opts.registry, say)
    write_notes(root, manifest, infos)
    say(f"==> release {manifest.release} pushed to {opts.registry}: "
        + ", ".join(f"{n} {i['digest'][:19]}" for n, i in infos.items()))
    return infos


def write_notes(root: Path, manifest, infos: dict) -> Path:
    previous = _previous_manifest(root, manifest.release)
    known = root / "release-notes" / "known-issues" / f"{manifest.release}.md"
    path = root / "release-notes" / f"{manifest.release}.md"
    path.write_text(notes.render(manifest, previous, infos, known.read_text() if known.exists() else None))
    manifests = [load_manifest(p) for p in sorted((root / "releases").glob("*.yaml"))]
    (root / "release-notes" / "support-matrix.md").write_text(notes.support_matrix(manifests))
    return path


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


def _verdict(result: Path) -> str | None:
    try:
        data = json.loads(result.read_text())
    except (OSError, ValueError):
        return None
    return data.get("verdict") if isinstance(data, dict) else None


def _bench(image: str, out: Path, commands: tuple[str, ...], baselines: dict[str, Path]) -> tuple[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    out.chmod(0o777)
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
            proc = subprocess.run(["docker", "run", "--rm", "--name", name, *engine.run_flags(), "-e",
                                   "NGC_PADDLE_QUIET=1", *mounts, image, command, "--output",
                                   f"/workspace/out/{command}", *extra], capture_output=True, text=True)
        except BaseException:  # interrupted: the container must not run on and write into the next attempt
            engine.docker("rm", "-f", name, check=False)
            raise
        results = sorted(set(folder.glob("*/result.json")) - before)
        if proc.returncode not in BENCH_STATUS or not results:
            return "failed", f"{command} could not run (exit {proc.returncode}): {proc.stderr.strip()[-200:]}"
        result = json.loads(results[-1].read_text())
        gates = result["gates"]
        counts = {s: sum(g["status"] == s for g in gates) for s in ("PASS", "FAIL", "NOT RUN", "N/A")}
        failed = [g["gate"] for g in gates if g["status"] == "FAIL"]
        baseline = f", baseline {baselines[command].parent.name}" if command in baselines else ", no baseline"
        details.append(f"{command}: {result.get('verdict', '?')} ({counts['PASS']} pass, {counts['FAIL']} fail, "
                       f"{counts['NOT RUN']} not run, {counts['N/A']} n/a{baseline})"
                       + (f" (failed: {', '.join(failed)})" if failed else "")
                       + "".join(f"; {r}" for r in result.get("verdict_reasons", []) if result["verdict"] != "FAIL"))
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


def _scan(image: str, out: Path, policy: Path, osv: Path | None, root: Path) -> tuple[str, str]:
    report = scan_gate.run(image, out, policy, osv, [], None, None, root, say=lambda _line: None)
    counts = report["counts"]
    detail = (f"{counts['blocking']} blocking, {counts['suppressed']} allowlisted, "
              f"{counts['informational']} informational; SBOM {Path(report['sbom']).name}")
    if report["blocked"]:
        first = ", ".join(f"{f['kind']} {f['id']} {f['package']}" for f in report["blocking"][:3])
        detail += f" (blocking: {first})"
    status = report["vulnerabilities"]["status"]
    if status == "waived":
        detail = f"{scan_gate.waiver_line(report)}; {detail}"
    elif status == "NOT RUN":
        detail = f"{scan_gate.not_run_line(report)}; {detail}"
    if report["blocked"]:
        return "failed", detail
    return ("not proven" if status == "NOT RUN" else "passed"), detail


def _push(state: State, flavor: str, image: str, registry: str, say: Callable[[str], None]) -> str:
    repository, tag = image.split(":", 1)
    target = f"{registry}/{repository}:{tag}"
    key = _hash(engine.image_id(image), registry)
    previous = state.done(flavor, "push", key)
    if previous and registry_digest(registry, repository, tag) == previous["digest"]:
        say(f"--> push {target}: already there ({previous['digest'][:19]}), skipped")
        return previous["digest"]
    engine.tag(image, target)
    say(f"--> push {target}")
    proc = subprocess.run(["docker", "push", target], capture_output=True, text=True)
    if proc.returncode != 0:
        state.record(flavor, "push", key, "failed", proc.stderr.strip()[-300:])
        raise NgcPaddleError(f"docker push {target} failed: {proc.stderr.strip().splitlines()[-1:]}; "
                             f"fix: check that the registry {registry} answers")
    pushed = next((w for w in proc.stdout.split() if w.startswith("sha256:")), "")
    served = registry_digest(registry, repository, tag)
    if not pushed or served != pushed:
        raise NgcPaddleError(f"pushed {target} as {pushed or '?'} but the registry serves {served or 'nothing'}")
    state.record(flavor, "push", key, "passed", f"{target}@{pushed}", digest=pushed)
    say(f"    pushed {target}@{pushed}")
    return pushed
