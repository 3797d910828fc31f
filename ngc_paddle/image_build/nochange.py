"""The no-change shortcut: answer a rebuild from the images' inputs-digest labels when nothing changed.

Why: with the manifest, lock, base image and build context unchanged, asking BuildKit, running the
layer checks and the smoke test again only confirms what the labels already say (about 8 s of a
100 s build); comparing digests takes a fraction of a second. Anything missing or different takes
the normal build path, which sets the labels again.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.host_errors import ToolchainError
from ngc_paddle.image_build import image_index, provenance
from ngc_paddle.image_build.build_report import BuildReport, LayerResult, human
from ngc_paddle.image_build.inputs import LABEL, FlavorInputs, flavor_inputs, short
from ngc_paddle.layers import bake_target
from ngc_paddle.lock.base_image import present_base_image
from ngc_paddle.platforms import platform_named


@dataclass(frozen=True)
class Expected:
    layer: str
    tag: str
    digest: str


def compute_inputs(flavor: ResolvedFlavor, base_ref: str, base_id: str) -> FlavorInputs:
    """The inputs digests of a flavor built on this base, from the same args the bake file gets."""
    flavor.build_lock()  # a flavor without a usable lock stops here, in one line
    layers = flavor.spec.layers
    args = {layer: flavor.layer_args(layer, base_ref) for layer in layers}
    return flavor_inputs(flavor.root, flavor.build_name, layers, args, base_id, flavor.lock_file,
                         flavor.image_manifest, {}, flavor.foreign)


def layer_labels(flavor_name: str, inputs: FlavorInputs) -> dict[str, dict[str, str]]:
    """Bake target -> the label that records its inputs digest."""
    return {bake_target(layer, flavor_name): {LABEL: digest} for layer, digest in inputs.layers.items()}


def expected_images(flavor: ResolvedFlavor, inputs: FlavorInputs) -> list[Expected]:
    """Each layer's tag (as docker-bake.hcl names them; the top one is the release tag) and its digest."""
    return [Expected(layer, flavor.layer_tags[layer], digest) for layer, digest in inputs.layers.items()]


def compare(expected: list[Expected], aliases: list[str], found: dict[str, dict]) -> tuple[bool, list[str]]:
    """Whether every image is there with the digest it would be built with now; one line per layer checked."""
    lines, same = [], True
    count = len(expected)
    for index, want in enumerate(expected, start=1):
        step = f"[{index}/{count}] {want.layer}"
        info = found.get(want.tag)
        if info is None:
            lines.append(f"{step}: not built ({want.tag} missing)")
            same = False
            continue
        have = ((info.get("Config") or {}).get("Labels") or {}).get(LABEL)
        image = info["Id"].removeprefix("sha256:")[:12]
        if have == want.digest:
            lines.append(f"{step}: unchanged (inputs {short(want.digest)}, image {image})")
        else:
            lines.append(f"{step}: inputs changed (image {image} has {short(have)}, now {short(want.digest)})")
            same = False
    if same:
        final_id = found[expected[-1].tag]["Id"]
        for alias in aliases:
            if (found.get(alias) or {}).get("Id") != final_id:
                lines.append(f"{alias} does not point at {expected[-1].tag}")
                same = False
    return same, lines


@dataclass(frozen=True)
class NoChange:
    """The answer to "did anything change?", asked once per build and carried through it: the report of a build
    that nothing changed (else None: build), and the inputs computed to ask, which the build labels its images
    with when it builds on the base that was compared (the inputs are hashed once)."""

    report: BuildReport | None = None
    base: tuple[str, str] | None = None  # (reference, image id) the inputs were computed on
    inputs: FlavorInputs | None = None

    def inputs_on(self, flavor: ResolvedFlavor, base_ref: str, base_id: str) -> FlavorInputs:
        """The inputs digests of the build on this base: those the question computed when it is the same base."""
        if self.inputs is not None and self.base == (base_ref, base_id):
            return self.inputs
        return compute_inputs(flavor, base_ref, base_id)


def ask(flavor: ResolvedFlavor, started: str, say: Callable[[str], None]) -> NoChange:
    """Whether every image carries today's inputs digest (the answer's report), with what was computed to say so."""
    t0 = time.monotonic()
    components = flavor.spec.components
    locked_base = flavor.lock.base if flavor.lock else None
    base = present_base_image(components["os"], flavor.manifest.sources[components["python"].source],
                              locked_base.snapshot if locked_base and locked_base.kind == "debootstrap" else None,
                              platform_named(flavor.platform))
    if base is None:
        say("==> no current base image here yet (or no engine answering): building")
        return NoChange()
    inputs = compute_inputs(flavor, *base)
    return NoChange(_unchanged_report(flavor, base, inputs, started, t0, say), base, inputs)


def _unchanged_report(flavor: ResolvedFlavor, base: tuple[str, str], inputs: FlavorInputs, started: str, t0: float,
                      say: Callable[[str], None]) -> BuildReport | None:
    """The report of a no-change build when the images' labels match `inputs` and the provenance is here, else None."""
    root, flavor_name, tags = flavor.root, flavor.build_name, list(flavor.tags)
    expected = expected_images(flavor, inputs)
    found = engine.inspect_images([e.tag for e in expected] + tags[1:] + [base[0]])
    same, lines = compare(expected, tags[1:], found)
    for line in lines:
        say(f"    {line}")
    if not same:
        say("==> inputs differ from the images' labels: building")
        return None
    reports_dir = flavor.reports_dir
    top_id = image_index.platform_image(found[tags[0]]["Id"], flavor.platform, reports_dir)  # the index's entry
    if not provenance.recorded(reports_dir, top_id):
        say(f"==> no BuildKit provenance of {tags[0]} recorded here (the release signs it): building (from the cache)")
        return None
    report = BuildReport(flavor.release, flavor_name, base[0], started, status="unchanged",
                         image=tags[0], tags=list(tags), inputs_digest=inputs.image)
    below = found.get(base[0], {}).get("Size", 0)
    for want in expected:
        info = found[want.tag]
        result = LayerResult(
            want.layer, bake_target(want.layer, flavor_name), want.tag, cached=True,
            image_id=top_id if want.tag == tags[0] else info["Id"],
            size_bytes=info.get("Size", 0), size_added_bytes=info.get("Size", 0) - below, status="unchanged",
            inputs_digest=want.digest)
        result.record_image(info)
        report.layers.append(result)
        below = info.get("Size", 0)
    report.image_size_bytes = report.layers[-1].size_bytes
    report.duration_s = round(time.monotonic() - t0, 1)
    json_path, _ = report.write(reports_dir)
    say(f"==> unchanged {', '.join(tags)} (image {top_id.removeprefix('sha256:')[:12]}, "
        f"{human(report.image_size_bytes)}, inputs {short(inputs.image)}): nothing built, checked or retagged, "
        f"{time.monotonic() - t0:.2f}s; report: {json_path.relative_to(root)} (FORCE=1 / --force rebuilds)")
    return report


def check_printed(printed: dict, flavor_name: str, inputs: FlavorInputs) -> None:
    """The digests were computed from the args bake resolved and bake carries them as labels, or the build stops:
    a digest of other inputs than those built would make a later no-change answer wrong."""
    for layer, digest in inputs.layers.items():
        target = printed["target"][bake_target(layer, flavor_name)]
        resolved = {k: v for k, v in target.get("args", {}).items() if k != "BASE_IMAGE"}
        if resolved != {k: v for k, v in inputs.args[layer].items() if k != "BASE_IMAGE"}:
            raise ToolchainError(f"bake target {bake_target(layer, flavor_name)} resolves other build args than "
                                 "its inputs digest was computed from; fix: set a target's args only in "
                                 "build/bake/<release>.json (ngc_paddle/lock/layer_args.py), not in docker-bake.hcl")
        if target.get("labels", {}).get(LABEL) != digest:
            raise ToolchainError(f"bake target {bake_target(layer, flavor_name)} lost its {LABEL} label; "
                                 "fix: keep the labels of build/bake/<release>.json mergeable in docker-bake.hcl")
