"""`ngc-paddle release YY.MM`: the release stages in order for each flavor, their state, and the push decision.

The long form: docs/design-notes.md, section `ngc_paddle/release/pipeline.py`.
"""

import dataclasses
from collections.abc import Callable
from functools import partial

from ngc_paddle import engine, platforms
from ngc_paddle.flavor import ResolvedFlavor, ResolvedRelease, build_name
from ngc_paddle.host_errors import Failed, NgcPaddleError, NotProven
from ngc_paddle.image_build import image_index
from ngc_paddle.release.fleet import fleet_schema
from ngc_paddle.release.options import ReleaseOptions
from ngc_paddle.release.stages import (
    Built,
    Outcome,
    Step,
    ab,
    attest,
    bench,
    build,
    candidate,
    gates,
    month_over_month,
    notes,
    push,
    release_folder,
    scan,
    validate,
)
from ngc_paddle.release.state_file import State

# The gates of a built flavor, in the order they run; bench reads the A/B (a benchmark that no CPU floor decides
# takes the A/B's verdict: ngc_paddle.release.ab.gate_without_floor), month-over-month reads the SBOM the scan wrote.
GATES: tuple[Callable[[Built], Step], ...] = (validate.plan, ab.plan, bench.plan, scan.plan, month_over_month.plan)
# With a fleet, validate, bench and ab run as the fan-out (stages/gates.py: each job its A/B on its node); these stay
# on this host.
LOCAL_GATES: tuple[Callable[[Built], Step], ...] = (scan.plan, month_over_month.plan)
# The gates of each further platform of a flavor's index (cpu's linux/arm64), run on that platform's digest and kept
# under its build name (cpu-arm64): validation, the benchmarks (no baseline or A/B: those are the first platform's)
# and the scan. Run under emulation, their performance checks are NOT PROVEN, saying `emulated`.
PLATFORM_GATES: tuple[Callable[[Built], Step], ...] = (validate.plan, bench.plan_platform, scan.plan)
# Stages that must pass on a flavor's gated digest (built.resolved.reference: REGISTRY/REPO@sha256:...) after its
# gates and before the release tag moves to it: `attest` (signed provenance, SBOM, lock and verdict attestations,
# verified by read-back). Each returns an Outcome; anything but passed (or unsigned, with --no-attest) blocks the push.
BEFORE_RELEASE_TAG: tuple[Callable[[Built, State, Callable[[str], None]], Outcome], ...] = (attest.run,)
RELEASE_TAG_MAY_MOVE = ("passed", "unsigned")
# "not run": only the A/B stage of a first release says it (no previous image to compare with): not a block.
PASSING = ("passed", "accepted unproven", "not run")


class ReleaseBlocked(Failed):
    """A gate failed: nothing is pushed (exit 1)."""


class ReleaseNotProven(NotProven, ReleaseBlocked):
    """Held back only by gates without evidence (e.g. GPU gates on a host without a GPU): NOT PROVEN, exit 3."""


def requested_flavors(release: ResolvedRelease, names: list[str]) -> tuple[list[ResolvedFlavor], bool]:
    """The flavors to release, resolved (names given, split on spaces as `make FLAVOR="cpu gpu"` passes them, in
    the manifest's order; an unknown one is one line), and whether `all` was asked for: every flavor this host can
    build."""
    wanted = [w for name in names for w in name.split()]
    if "all" in wanted:
        return list(release.flavors().values()), True
    asked = {release.flavor(name).name for name in wanted or [release.manifest.default_flavor]}
    return [f for name, f in release.flavors().items() if name in asked], False


@dataclasses.dataclass
class Tally:
    """One release run's record across its phases: per flavor its stages (`infos`), the flavors not built and why,
    the failures that block the push, and which of those are NOT PROVEN gates."""

    state: State
    say: Callable[[str], None]
    accept_unproven: str | None
    infos: dict[str, dict] = dataclasses.field(default_factory=dict)
    not_built: dict[str, str] = dataclasses.field(default_factory=dict)
    failures: list[str] = dataclasses.field(default_factory=list)
    unproven: list[str] = dataclasses.field(default_factory=list)  # alone, they make the release NOT PROVEN

    def gate(self, built: Built, step: Step) -> None:
        """Run one gate of one flavor unless its inputs are unchanged since it passed; record and report it.

        A gate that was NOT PROVEN with the same inputs (the image, and for the GPU gates whether this host
        offers a GPU) would be NOT PROVEN again: when a person accepts that, the stored result is taken as it
        is rather than run again, with their reason."""
        state, say, accept_unproven = self.state, self.say, self.accept_unproven
        name = built.entry  # the flavor, or one further platform of it (cpu-arm64)
        stages = self.infos[name]["stages"]
        previous = state.done(name, step.name, step.key)
        if previous:
            say(f"--> {step.name}: unchanged since {previous['finished']}, skipped ({previous['detail']})")
            stages[step.name] = previous
            return
        stored = state.unproven(name, step.name, step.key) if accept_unproven else None
        if stored:
            say(f"--> {step.name}: NOT PROVEN with the same inputs on {stored['finished']}, not run again")
            status, evidence = "not proven", stored.get("evidence", stored["detail"])
            extra = {k: v for k, v in stored.items() if k not in ("key", "status", "detail", "finished", "evidence")}
        else:
            say(f"--> {step.name}")
            outcome = step.run()
            status, evidence = outcome.status, outcome.detail
            extra = {"image_id": built.image_id, **outcome.stored}
        detail = evidence
        if status == "not proven" and accept_unproven:
            status, detail = "accepted unproven", f"{evidence}; accepted by a person: {accept_unproven}"
        entry = state.record(name, step.name, step.key, status, detail, evidence=evidence, **extra)
        say(f"    {step.name}: {status}: {detail}")
        if status == "not proven":
            self.failures.append(f"{name}: {step.name} gate NOT PROVEN ({detail}; to push anyway: "
                                 "--accept-unproven REASON)")
            self.unproven.append(self.failures[-1])
        elif status not in PASSING:
            self.failures.append(f"{name}: {step.name} gate ({detail})")
        stages[step.name] = entry


def run(opts: ReleaseOptions, say: Callable[[str], None] = print) -> dict:
    """Gates every requested flavor, then pushes all of them or none: a release is one set of images, and
    a registry holding 26.12-cpu of this run beside 26.12-gpu of an older one would be a release nobody
    gated together. With `all`, a flavor whose build fails on this host (e.g. its index is unreachable) is
    reported as not built, with the build's one-line reason, and does not hold back the others."""
    release = ResolvedRelease.load(opts.root, opts.release, opts.sources)  # the one load of the manifest
    root, manifest = release.root, release.manifest
    resolved, every = requested_flavors(release, opts.flavors)
    ab.check_references(release, opts.references)
    ab.size(opts)  # --ab-rounds out of range: exit 2 before anything is built
    flavors = [flavor.name for flavor in resolved]
    # a bad fleet file (or one naming a flavor the release lacks): exit 2, nothing pushed
    fleet = fleet_schema.load(opts.fleet, root, release) if opts.fleet else None
    tally = Tally(State(release_folder(root, manifest.release) / "state.json"), say, opts.accept_unproven)
    attest.signing_key(opts)  # no key (and no --no-attest): exit 2 before anything is built
    builts = _build_candidates(resolved, every, opts, tally)
    _run_gates(builts, fleet, release, opts, tally)
    built_names = [name for name in flavors if name not in tally.not_built]
    if not built_names:
        tally.failures.append("no flavor could be built on this host")
    if not tally.failures:
        _before_release_tag(builts, tally)
    notes.write(release, tally.state)
    if tally.failures:
        say("==> push skipped: " + "; ".join(tally.failures))
        _summary(flavors, tally.not_built, {}, say)
        blocked = ReleaseNotProven if len(tally.unproven) == len(tally.failures) else ReleaseBlocked
        raise blocked(f"release {manifest.release} blocked by: {'; '.join(tally.failures)}; the registry keeps "
                      "the previous release")
    infos = tally.infos
    gated = {b.flavor: b for b in builts}
    for name in built_names:
        digests = {p: ref.rsplit("@", 1)[1] for p, ref in gated[name].platform_refs.items()}
        infos[name]["digest"] = push.push(tally.state, name, infos[name]["image"], opts.registry, say,
                                          gated=gated[name].resolved.reference.rsplit("@", 1)[1],
                                          **({"platforms": digests} if digests else {}))
    notes.write(release, tally.state)
    say(f"==> release {manifest.release} pushed to {opts.registry}: "
        + ", ".join(f"{n} {infos[n]['digest'][:19]}" for n in built_names))
    _summary(flavors, tally.not_built, {n: infos[n]["digest"] for n in built_names}, say)
    return infos


def _build_candidates(resolved: list[ResolvedFlavor], every: bool, opts: ReleaseOptions, tally: Tally) -> list[Built]:
    """Build each flavor and push it as a candidate (the gates run that digest); a flavor that does not build is
    recorded as not built, and blocks the release unless `all` flavors were asked for."""
    state, say = tally.state, tally.say
    builts: list[Built] = []
    for flavor in resolved:
        name = flavor.name
        say(f"=== release {opts.release}: flavor {name}")
        info = tally.infos[name] = {"stages": {}}
        try:
            built, outcome = build.run(flavor, opts, say)
        except NgcPaddleError as exc:
            outcome = build.failed(exc)
            info["stages"][build.NAME] = state.record(name, build.NAME, "", outcome.status, outcome.detail)
            say(f"    not built: {outcome.detail}")
            tally.not_built[name] = outcome.detail
            if not every:
                tally.failures.append(f"{name}: build ({outcome.detail})")
            continue
        info["image"] = built.image
        info["stages"][build.NAME] = state.record(name, build.NAME, built.image_id, outcome.status, outcome.detail,
                                                  **outcome.stored)
        if not builts:
            push.ensure_registry(opts.registry)
        # The gates run this digest; a registry that refuses the push stops the run here (a login: exit 2).
        ref = candidate.push(state, name, built.image, opts.registry, say)
        builts.append(dataclasses.replace(built, resolved=built.resolved.with_digest(ref),
                                          platform_refs=_platform_refs(state, built, ref, say)))
    return builts


def _run_gates(builts: list[Built], fleet, release: ResolvedRelease, opts: ReleaseOptions, tally: Tally) -> None:
    """Every gate of every built flavor: here, or with a fleet the scan and month-over-month here while the fleet's
    jobs run validation, benchmarks and the A/B (their verdict is the `gates` stage)."""
    say = tally.say
    references = partial(ab.reference_for, release, references=opts.references, registry=opts.registry)
    fan = gates.Gates(fleet, release, opts.benchmarks, tally.state, say, references=references,
                      ab_size=ab.size(opts)) if fleet else None
    try:
        if fan:
            say(f"==> gates on fleet {opts.fleet}: validation and benchmarks of "
                f"{', '.join(b.flavor for b in builts) or 'no flavor'} per hardware profile")
            fan.start([(b.flavor, b.resolved.needs_gpu, b.resolved.reference) for b in builts],
                      background=True)  # its progress shows while the local gates run
        for built in builts:
            say(f"=== gates of {built.flavor}" + (" on this host (scan, month-over-month)" if fan else ""))
            # every key first: the inputs as they were before any gate ran
            for step in [plan(built) for plan in (LOCAL_GATES if fan else GATES)]:
                tally.gate(built, step)
            for other in built.on_platforms()[1:]:
                _platform_gates(other, tally)
        fanned = fan.wait() if fan else {}
    except BaseException as exc:  # Ctrl-C, SIGTERM, a failing stage: the fleet's jobs are cancelled first
        if fan:
            fan.abort(exc)
        raise
    for built in builts:
        if built.flavor in fanned:
            key, result = fanned[built.flavor]
            say(f"=== fleet gates of {built.flavor}")
            tally.gate(built, Step(gates.NAME, key, lambda result=result: result))


def _platform_refs(state: State, built: Built, ref: str, say: Callable[[str], None]) -> dict[str, str]:
    """Each platform's REGISTRY/REPO@sha256:... in the flavor's candidate index, in the manifest's platform order
    (checked against the index the build folded); {} for a flavor of one platform, or whose image is not the index
    its build recorded (released as one image, and said so: an earlier run's gates of its further platforms are
    dropped from the state, so that the notes show no platform this release does not ship)."""
    record = built.resolved.reports_dir / image_index.RECORD
    if len(built.spec.platforms) < 2:
        return {}
    if image_index.recorded_index(record) != built.image_id:
        say(f"    note: {built.image} ({built.image_id[:19]}) is not the image index of {built.flavor}'s platforms "
            f"that {record} records: released as one image")
        for further in (build_name(built.flavor, platform) for platform in built.spec.platforms[1:]):
            if state.forget(further):
                say(f"    note: the gates an earlier run stored for {further} dropped")
        return {}
    first = built.spec.platforms[0]
    if platforms.foreign(first):  # the first platform's gates run the index tag: docker picks the host's platform
        raise NgcPaddleError(f"{built.flavor}: its gates of {first} run {built.image}, which this "
                             f"{platforms.host_or_default()} host runs as its own platform's image; fix: release "
                             f"{built.flavor} from a {first} host")
    refs = candidate.platform_refs(state, built.flavor, ref, record)
    return {p: refs[p] for p in built.spec.platforms}


def _platform_gates(built: Built, tally: Tally) -> None:
    """The gates of one further platform of a flavor (PLATFORM_GATES), on its digest: the local image of that
    platform (its own tag) must be that digest, which the build folded and the registry serves."""
    say, name = tally.say, built.entry
    found = engine.image_id(built.image)
    if found != built.image_id:
        raise NgcPaddleError(f"{built.image} is {found or 'not there'}, not {built.image_id} of the index gated; "
                             "fix: rerun the release (another build moved the tag)")
    say(f"=== gates of {name} ({built.resolved.platform}, {built.resolved.reference})")
    tally.infos[name] = {"stages": {}, "image": built.image}
    tally.infos[name]["stages"][build.NAME] = tally.state.record(
        name, build.NAME, built.image_id, "passed", f"{built.image} {built.image_id[7:19]} ({built.resolved.platform} "
        f"of {built.flavor}'s index)", image=built.image)
    for step in [plan(built) for plan in PLATFORM_GATES]:
        tally.gate(built, step)


def _before_release_tag(builts: list[Built], tally: Tally) -> None:
    """The stages that must pass on each gated digest before the release tag moves (attestations)."""
    for built in builts:
        for hook in BEFORE_RELEASE_TAG:
            outcome = hook(built, tally.state, tally.say)
            tally.infos[built.flavor]["stages"][attest.NAME] = tally.state.data[built.flavor].get(attest.NAME, {})
            if outcome.status not in RELEASE_TAG_MAY_MOVE:
                tally.failures.append(f"{built.flavor}: {outcome.detail}")


def _summary(flavors: list[str], not_built: dict[str, str], digests: dict[str, str],
             say: Callable[[str], None]) -> None:
    say("==> summary:")
    for name in flavors:
        say(f"    {name}: " + (f"not built: {not_built[name]}" if name in not_built
                                 else f"pushed {digests[name]}" if name in digests else "built and gated, not pushed"))
