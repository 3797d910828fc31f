"""Build one flavor of one release: base image, each layer in order, smoke test, promote the tag.

Why: layers chain by tag, so they must be built one after another; doing it here lets us show
progress layer by layer, time and size each one, run each layer's own fast checks right after it
(ngc_paddle/validate_layer.py), stop at the first failure with the layer and the component, source or
check named, and move the release tag only once the final image has started and imported Paddle.
"""

import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ngc_common import image_paths
from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.host_errors import BuildError, NgcPaddleError
from ngc_paddle.image_build import foreign_build, layer_check_record, nochange, provenance
from ngc_paddle.image_build.bakefile import (
    bake_command,
    bake_env,
    registry_cache,
    resolved_group,
    write_build_inputs,
    write_override,
)
from ngc_paddle.image_build.build_report import BuildReport, LayerResult, human
from ngc_paddle.image_build.inputs import FlavorInputs
from ngc_paddle.layers import LAYER_PATTERN, bake_target
from ngc_paddle.lock.base_image import ensure_base_image
from ngc_paddle.lock.base_pin import compare_base
from ngc_paddle.lock.lock_file import lock_path
from ngc_paddle.platforms import DEFAULT_PLATFORM, platform_named
from ngc_paddle.validate_layer import check_layer

ERROR_LINE = re.compile(r"NGC-PADDLE-ERROR (.*)")
CHECKS_MARKER = "fast"  # the checks a build runs on each layer
# BuildKit plain progress: a step's header (`#12 [suite-cpu stage-0 2/3] RUN ...`) and its end (`#12 CACHED`/`DONE`).
STEP_HEADER = re.compile(r"^#(\d+) \[[^\]]*\d+/\d+\] ((?:RUN|ADD|COPY) .*)$")
STEP_END = re.compile(r"^#(\d+) (CACHED|DONE)\b")
STEP_OUTPUT = re.compile(r"^#(\d+) \d+\.\d+ ")  # what a step that runs prints: `#12 2.866 [dali] ...`
STEP_PULL = re.compile(r"^#(\d+) sha256:[0-9a-f]{64} ")  # a cached step's layer fetched from a registry cache
# BuildKit plain-progress lines worth echoing: step headers and our own install messages.
PROGRESS_LINE = re.compile(rf"^#\d+ (\[[^\]]+\] .*|.*\[({LAYER_PATTERN})\] .*)$")
SMOKE_TEST = (
    "import json, paddle; "
    f"m = json.load(open('{image_paths.MANIFEST}')); "
    "assert paddle.__version__ == m['components']['paddle']['version'], (paddle.__version__, m['release']); "
    "print('smoke test: paddle', paddle.__version__)"
)


def build(resolved: ResolvedFlavor, force: bool = False, say: Callable[[str], None] = print,
          cache_registry: str | None = None, no_cache: bool = False) -> BuildReport:
    """Build the resolved flavor; `force`: build even when the images' inputs digests say nothing changed;
    `cache_registry`: read and write each layer's BuildKit cache there (a cache shared between build hosts);
    `no_cache`: every step of each layer runs again (bake's no-cache for that target; a cold build's time without
    pruning the cache; a pip layer's stage on the build platform takes the default platform's os layer from it)."""
    root, manifest, flavor_name, flavor = resolved.root, resolved.manifest, resolved.build_name, resolved.spec
    lock = resolved.build_lock()  # nothing is resolved at build time
    where = f" {resolved.platform}" if resolved.foreign else ""  # progress names another platform than the default

    say(f"==> ngc-paddle {manifest.release}-{flavor_name}{where}: layers {' -> '.join(flavor.layers)}; "
        f"lock {lock_path(Path('releases'), manifest.release, resolved.name, resolved.platform)}: {len(lock.pip)} "
        f"wheels, {len(lock.debian)} Debian packages")
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    answer = nochange.ask(resolved, started_at, say) if not force and not no_cache else nochange.NoChange()
    if answer.report is not None:
        return answer.report
    if force:
        say("==> --force: building without comparing the images' inputs digests")
    bake = _bake_inputs(resolved, answer, cache_registry, say)

    report = BuildReport(manifest.release, flavor_name, bake.base, started_at, inputs_digest=bake.inputs.image)
    reports_dir = resolved.reports_dir
    started = time.monotonic()
    try:
        metadata = _build_layers(resolved, bake, report, no_cache, say)
        _promote(resolved, report, metadata, reports_dir, say)
    except Exception as exc:
        report.status, report.error = "failed", str(exc)
        raise
    finally:
        report.duration_s = round(time.monotonic() - started, 1)
        json_path, md_path = report.write(reports_dir)
        say(f"==> {report.status} in {report.duration_s:.1f}s; report: {json_path.relative_to(root)}, "
            f"{md_path.relative_to(root)}")
    say(f"==> tagged {', '.join(report.tags)} ({human(report.image_size_bytes)})")
    return report


@dataclass(frozen=True)
class _Bake:
    """What every layer's bake run takes: the bake file, its environment, the targets bake resolved from it, the
    base image and the inputs digests its labels carry."""

    file: Path
    env: dict[str, str]
    printed: dict
    base: str
    inputs: FlavorInputs


def _bake_inputs(resolved: ResolvedFlavor, answer: nochange.NoChange, cache_registry: str | None,
                 say: Callable[[str], None]) -> _Bake:
    """The engine, the base and the bake file, checked against the inputs digests before any layer is built: a
    digest of other args than bake resolves would make a later no-change answer wrong."""
    root, manifest, flavor_name, flavor = resolved.root, resolved.manifest, resolved.build_name, resolved.spec
    lock = resolved.build_lock()
    engine.ensure_engine()
    bases = foreign_build.prepare(resolved, say) if resolved.foreign else {}
    base = ensure_base_image(flavor.components["os"], manifest.sources[flavor.components["python"].source], say,
                             lock.base.snapshot if lock.base.kind == "debootstrap" else None,
                             platform_named(resolved.platform))
    compare_base(base, lock.base, say)
    inputs = answer.inputs_on(resolved, base, engine.image_id(base) or base)
    release = resolved.release_run  # the release's other flavors, resolved once: the bake file names them all
    if resolved.newest and write_override(release):
        say("==> docker-bake.override.json refreshed from the manifest and locks (commit it with them)")
    cache = registry_cache(resolved, cache_registry) if cache_registry else None
    bake_file = write_build_inputs(release, {**bases, flavor_name: base}, nochange.layer_labels(flavor_name, inputs),
                                   cache, resolved if resolved.foreign else None)
    env = {**bake_env(manifest, _source_labels(root)), **provenance.ENV}
    printed = resolved_group(bake_file, resolved, env)
    nochange.check_printed(printed, flavor_name, inputs)
    return _Bake(bake_file, env, printed, base, inputs)


def _build_layers(resolved: ResolvedFlavor, bake: _Bake, report: BuildReport, no_cache: bool,
                  say: Callable[[str], None]) -> Path:
    """Each layer in order, built and checked before the next (they chain by tag); the top layer's BuildKit
    metadata file, where its provenance is."""
    root, flavor_name, layers = resolved.root, resolved.build_name, resolved.spec.layers
    lock = resolved.build_lock()
    where = f" {resolved.platform}" if resolved.foreign else ""
    logs_dir = root / "build" / "logs" / f"{resolved.manifest.release}-{flavor_name}"
    below = bake.base
    expected = resolved.image_manifest  # what the checks expect (the final image carries it too)
    gpu = engine.host_has_nvidia_gpus()  # GPU checks skip without one: part of a check record's key
    for index, layer in enumerate(layers, start=1):
        target = bake_target(layer, flavor_name)
        result = LayerResult(layer, target, bake.printed["target"][target]["tags"][0],
                             inputs_digest=bake.inputs.layers[layer])
        report.layers.append(result)
        step = f"[{index}/{len(layers)}{where}]"
        say(f"--> {step} {layer}: building {result.tag}")
        if layer in lock.pending_layers:  # an optional layer whose lock is pending: built empty, said once
            say(f"    {step} {layer}: left out (lock pending): "
                f"{lock.pending_layers[layer]}")
        # The final image's candidate tag is removed after promotion: compare with the release tag.
        previous = resolved.image if layer == layers[-1] else result.tag
        metadata = logs_dir / f"{layer}.metadata.json"
        # --no-cache for this target alone: bake's --no-cache would build every layer below again for each layer
        flags = ("--progress", "plain", *provenance.flags(metadata),
                 *(("--set", f"{target}.no-cache=true") if no_cache else ()))
        _build_layer(root, bake_command(bake.file.relative_to(root), target, *flags), bake.env, result, previous,
                     logs_dir, say)
        if index > 1:
            check_chain(below, result.tag, layer)
        result.size_bytes = engine.image_size(result.tag)
        result.size_added_bytes = result.size_bytes - engine.image_size(below)
        say(f"    {step} {layer}: {result.status} in {result.duration_s:.1f}s, "
            f"+{human(result.size_added_bytes)}")
        _check_layer(root, expected, result, step, logs_dir, say, resolved.platform, gpu)
        below = result.tag
    return metadata


def check_chain(below: str, built: str, layer: str) -> None:
    """The layer just built must sit on the image below it that was built and checked: each layer's target re-solves
    the targets below it from BuildKit's cache, and where the cache holds two results of one step (a --no-cache build
    of the same steps leaves them: make perf-arm64-build, perf-repro) it can take other lower layers than those
    checked, which the scan then finds owned by no record. Such an image takes no tag (BuildError)."""
    infos = engine.inspect_images([below, built])
    under, over = (engine.diff_ids(infos.get(ref)) for ref in (below, built))
    if under is None or over is None:
        return  # an engine that shows no layers: nothing to compare
    if over[:len(under)] != under:
        differs = next((i for i, (a, b) in enumerate(zip(under, over, strict=False)) if a != b), len(over))
        raise BuildError(f"{built}: layer {layer} was built on other layers than the checked {below} (layer "
                         f"{differs + 1} of {len(under)} differs): BuildKit's cache holds two results of a step below "
                         "it (a --no-cache build of the same steps leaves them); fix: remove that step's records "
                         "(docker buildx du --verbose lists them; docker buildx prune --filter id=ID), then build "
                         "again")


def _promote(resolved: ResolvedFlavor, report: BuildReport, metadata: Path, reports_dir: Path,
             say: Callable[[str], None]) -> None:
    """The finished candidate smoke-tested, its provenance kept and every image's config recorded, then the release
    tags moved to it: only an image that started and imported Paddle gets them."""
    candidate = report.layers[-1].tag
    _smoke_test(candidate, say, resolved.platform)
    # BuildKit's provenance of the final image: the release signs it and attaches it to the pushed digest.
    provenance.capture(metadata, report.layers[-1].target, reports_dir)
    infos = engine.inspect_images([r.image_id for r in report.layers if r.image_id])
    for result in report.layers:  # the config of every image tagged, with its diff ids (the scan's record)
        result.record_image(infos.get(result.image_id or ""))
    for final in resolved.tags:
        engine.tag(candidate, final)
    engine.untag(candidate)
    report.tags = list(resolved.tags)
    report.image = report.tags[0]
    report.image_size_bytes = engine.image_size(report.image)
    report.status = "success"


def _build_layer(root: Path, cmd: list[str], env: dict[str, str], result: LayerResult, previous: str,
                 logs_dir: Path, say: Callable[[str], None]) -> None:
    logs_dir.mkdir(parents=True, exist_ok=True)
    log_path = logs_dir / f"{result.layer}.log"
    result.log = str(log_path.relative_to(root))
    before = engine.image_id(previous)
    t0 = time.monotonic()
    errors: list[str] = []
    steps = StepCounter()
    with log_path.open("w") as log, engine.stream(*cmd, cwd=root, env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            stripped = line.rstrip()
            steps.feed(stripped)
            if match := ERROR_LINE.search(stripped):
                errors.append(match.group(1))
            elif PROGRESS_LINE.match(stripped):
                say(f"    {stripped}")
        code = proc.wait()
    result.steps_run, result.steps_cached = steps.run, steps.cached
    result.duration_s = round(time.monotonic() - t0, 1)
    if code != 0:
        result.status = "failed"
        reason = errors[-1] if errors else f"layer {result.layer}: docker buildx bake {result.target} exited {code}"
        raise BuildError(f"{reason} (log: {result.log}); the release tag was not moved")
    result.image_id = engine.image_id(result.tag)
    # Cached: the same image as before, or (another build host) every step taken from the shared cache.
    result.cached = (before is not None and before == result.image_id) or (not steps.run and steps.cached > 0)
    result.status = "cached" if result.cached else "built"


class StepCounter:
    """Which Dockerfile steps of a build BuildKit ran and how many it took from a cache, from its plain progress
    (vertex ids: a header line names the step, a later `#ID CACHED` or `#ID DONE` line ends it). A step found in
    a registry cache whose layer is not here yet ends DONE too, after only layer downloads (`#ID sha256:...`) and
    none of the timestamped output of a step that runs: it counts as cached."""

    def __init__(self) -> None:
        self._steps: dict[str, str] = {}
        self._ran: set[str] = set()
        self._pulled: set[str] = set()
        self.run: list[str] = []
        self.cached = 0

    def feed(self, line: str) -> None:
        if header := STEP_HEADER.match(line):
            self._steps[header.group(1)] = " ".join(header.group(2).split())[:120]
        elif output := STEP_OUTPUT.match(line):
            self._ran.add(output.group(1))
        elif pull := STEP_PULL.match(line):
            self._pulled.add(pull.group(1))
        elif (end := STEP_END.match(line)) and end.group(1) in self._steps:
            vertex = end.group(1)
            step = self._steps.pop(vertex)
            if end.group(2) == "CACHED" or (vertex in self._pulled and vertex not in self._ran):
                self.cached += 1
            else:
                self.run.append(step)


def _check_layer(root: Path, resolved: dict, result: LayerResult, step: str, logs_dir: Path,
                 say: Callable[[str], None], platform: str = DEFAULT_PLATFORM, gpu: bool = False) -> None:
    """The layer's own `fast` checks on the image just built (of its platform: under qemu for another one); the
    first failure stops the build there. An image whose checks passed before with the same checks, manifest and
    host (ngc_paddle/image_build/layer_check_record.py) is not checked again: its recorded result stands."""
    output = logs_dir / f"{result.layer}-checks"
    record_key = layer_check_record.key(root, result.image_id or "", platform, result.layer, CHECKS_MARKER,
                                        resolved, gpu)
    records = layer_check_record.default_folder()
    recorded = layer_check_record.load(records, record_key, result.layer, output) if result.image_id else None
    try:
        foreign = {"platform": platform} if platform != DEFAULT_PLATFORM else {}  # the default: called as before
        checked = recorded or check_layer(root, result.tag, resolved, result.layer, output, marker=CHECKS_MARKER,
                                            **foreign)
    except NgcPaddleError as exc:
        result.status = "failed"
        raise BuildError(f"layer {result.layer}: {exc}; the release tag was not moved") from exc
    failed = [c["id"] for c in checked.failed or []]
    result.checks = {"passed": checked.passed, "skipped": checked.skipped, "failed": failed,
                     "seconds": checked.seconds,
                     "report": str(checked.report.relative_to(root)) if checked.report else None,
                     "recorded": recorded is not None}
    if checked.report is None:
        say(f"    {step} {result.layer}: no fast checks ({checked.seconds:.1f}s)")
        return
    if recorded is None and result.image_id:
        layer_check_record.save(records, record_key, result.layer, checked)
    say(f"    {step} {result.layer}: checks {checked.passed} passed"
        + (f", {checked.skipped} skipped" if checked.skipped else "")
        + (f", {len(failed)} failed" if failed else "")
        + (f" on this image before ({result.image_id[7:19]}), not run again" if recorded
           else f" in {checked.seconds:.1f}s"))
    if failed:
        result.status = "failed"
        first = checked.failed[0]
        more = f" (also failed: {', '.join(failed[1:])})" if failed[1:] else ""
        raise BuildError(f"layer {result.layer}: check {first['id']} failed: {first['message']}{more} "
                         f"(report: {result.checks['report'].removesuffix('.json')}.md); the release tag was not "
                         "moved and the layers above were not built")


def _smoke_test(image: str, say: Callable[[str], None], platform: str) -> None:
    proc = engine.run(image, "python", "-c", SMOKE_TEST,
                      flags=(*engine.platform_flags(platform), "--network", "none", "-e", "NGC_PADDLE_QUIET=1"))
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BuildError(f"smoke test of {image} failed ({tail}); the release tag was not moved")
    say(f"    {proc.stdout.strip()}")


def _source_labels(root: Path) -> dict[str, str]:
    """Revision and time for the OCI labels: the commit, marked -dirty when the tree has changes."""
    def git(*args: str) -> str:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    revision = git("rev-parse", "HEAD") or "unknown"
    if revision != "unknown" and git("status", "--porcelain", "--untracked-files=no"):
        revision += "-dirty"
    created = git("log", "-1", "--format=%cI") or "1970-01-01T00:00:00Z"
    return {"REVISION": revision, "CREATED": created}
