"""Cross-field rules a manifest must satisfy before anything is built.

Why: a structurally valid manifest can still describe an image that cannot work (a CUDA-12 DALI
in a CUDA-11 flavor, a Paddle built for TensorRT 8 beside TensorRT 10, a layer without the
component it installs). Each rule yields a Problem naming the field and the fix.
"""

import re
from dataclasses import dataclass

from pydantic import ValidationError

from ngc_paddle.layers import CUDA_LAYERS, MANDATORY_LAYERS, REQUIRED_COMPONENTS
from ngc_paddle.manifest.schema import Component, Flavor, Manifest
from ngc_paddle.platforms import DEFAULT_PLATFORM, KNOWN, PLATFORMS

# Which source kinds can serve which component kinds.
SOURCE_KINDS_FOR: dict[str, tuple[str, ...]] = {
    "pip": ("pip-index", "wheel-dir"),
    "apt": ("debian",),
    "image": ("debian",),
    "archive": ("archive",),
}

# Components whose versions follow the CUDA toolkit's own numbering (12.6.x ships with CUDA 12.6).
TOOLKIT_VERSIONED = ("cuda-runtime", "cuda-nvrtc", "nvjitlink")  # not cuBLAS: CUDA 11.8 ships cuBLAS 11.11

# CUDA major encoded in a wheel's name: nvidia-cublas-cu12, tensorrt-cu12-libs, nvidia-dali-cuda120.
_CUDA_NAME_PATTERNS = (re.compile(r"-cu(\d{2})(?:-|$)"), re.compile(r"-cuda(\d{2})0(?:-|$)"))


@dataclass(frozen=True)
class Problem:
    where: str
    message: str
    fix: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}; fix: {self.fix}"


def cuda_major_of(component: Component) -> int | None:
    """The CUDA major a component is built for: explicit `cuda`, else read from its package name."""
    if component.cuda is not None:
        return component.cuda
    for pattern in _CUDA_NAME_PATTERNS:
        match = pattern.search(component.package or "")
        if match:
            return int(match.group(1))
    return None


def check(manifest: Manifest) -> list[Problem]:
    """All consistency problems of a manifest, in file order."""
    problems: list[Problem] = []
    for flavor_name, flavor in manifest.flavors.items():
        problems += _check_layers(flavor_name, flavor)
        problems += _check_driver(flavor_name, flavor)
        problems += _check_components(manifest, flavor_name, flavor)
        problems += _check_platforms(flavor_name, flavor)
    return problems


def _check_platforms(name: str, flavor: Flavor) -> list[Problem]:
    """The flavor's platforms are known ones, each once; a component's pin on a platform is for one the flavor
    builds (not its first, whose version is `version:` itself), says why, and is a version of the component's kind."""
    where = f"flavors.{name}.platforms"
    problems = [Problem(where, f"{p!r} is not a known platform", f"use {KNOWN}")
                for p in [*flavor.platforms, *flavor.platforms_pending] if p not in PLATFORMS]
    if not flavor.platforms:
        problems.append(Problem(where, "names no platform", "list at least one (e.g. [linux/amd64])"))
    if DEFAULT_PLATFORM in flavor.platforms[1:]:  # its build name, tag and release entry are the flavor's own
        problems.append(Problem(where, f"lists {DEFAULT_PLATFORM} after {flavor.platforms[0]} (the default "
                                "platform's image is the flavor's own tag and release entry)",
                                f"list {DEFAULT_PLATFORM} first"))
    twice = sorted({p for p in flavor.platforms if flavor.platforms.count(p) > 1})
    if twice:
        problems.append(Problem(where, f"lists {', '.join(twice)} twice", "keep one"))
    both = sorted(set(flavor.platforms) & set(flavor.platforms_pending))
    if both:
        problems.append(Problem(f"flavors.{name}.platforms_pending", f"{', '.join(both)} is built and pending at once",
                                f"drop it from flavors.{name}.platforms or from platforms_pending"))
    for comp_name, comp in flavor.components.items():
        for platform, pin in comp.on_platform.items():
            at = f"flavors.{name}.components.{comp_name}.on_platform.{platform}"
            if platform not in PLATFORMS:
                problems.append(Problem(at, f"{platform!r} is not a known platform", f"use {KNOWN}"))
            elif platform not in flavor.platforms:
                problems.append(Problem(at, f"flavor {name} does not build {platform} (its platforms: "
                                        f"{', '.join(flavor.platforms)})",
                                        f"add {platform} to {where} or drop the pin"))
            elif platform == flavor.platforms[0]:
                problems.append(Problem(at, f"{platform} is the flavor's first platform, which `version:` pins",
                                        f"set version: {pin.version} or drop the pin"))
            if not (pin.why or "").strip():
                problems.append(Problem(at, f"pins {comp.package or comp_name} {pin.version} without a reason",
                                        f"add why: (e.g. which version the registries lack for {platform})"))
            if pin.version == comp.version:
                problems.append(Problem(at, f"pins the version {comp.version} that `version:` already gives",
                                        "drop the pin"))
            try:
                Component.model_validate({**comp.model_dump(exclude={"on_platform"}), "version": pin.version})
            except ValidationError as exc:
                problems.append(Problem(at, exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, "),
                                        "write a version of the component's kind"))
    return problems


def _check_layers(name: str, flavor: Flavor) -> list[Problem]:
    where = f"flavors.{name}.layers"
    problems = []
    missing = sorted(MANDATORY_LAYERS - set(flavor.layers))
    if missing:
        problems.append(Problem(where, f"missing mandatory layer(s) {missing}", f"add {missing} to the list"))
    cuda_layers = sorted(CUDA_LAYERS & set(flavor.layers))
    if cuda_layers and flavor.cuda is None:
        problems.append(
            Problem(where, f"layer(s) {cuda_layers} need a CUDA flavor", f"add flavors.{name}.cuda or drop them")
        )
    if flavor.cuda is not None and "cuda" not in flavor.layers:
        problems.append(Problem(where, "a flavor with a CUDA version has no 'cuda' layer", "add 'cuda'"))
    for layer in flavor.layers:
        absent = sorted(REQUIRED_COMPONENTS[layer] - set(flavor.components))
        if absent:
            problems.append(
                Problem(
                    f"flavors.{name}.components",
                    f"layer {layer!r} needs component(s) {absent}",
                    f"pin {absent} under flavors.{name}.components",
                )
            )
    return problems


def _check_driver(name: str, flavor: Flavor) -> list[Problem]:
    """A CUDA flavor needs NVIDIA's driver facts for its CUDA version (the label, notes and entrypoint use them)."""
    from ngc_paddle.driver import requirement

    if flavor.cuda is None:
        return []
    try:
        requirement(flavor.cuda.version)
    except KeyError:
        return [Problem(f"flavors.{name}.cuda.version", f"no driver facts for CUDA {flavor.cuda.major_minor}",
                        "add its minimum and toolkit driver to ngc_paddle/driver.py (NVIDIA's CUDA release notes)")]
    return []


def _check_components(manifest: Manifest, name: str, flavor: Flavor) -> list[Problem]:
    problems = []
    for comp_name, comp in flavor.components.items():
        where = f"flavors.{name}.components.{comp_name}"
        if comp.layer not in flavor.layers:
            problems.append(
                Problem(where, f"layer {comp.layer!r} is not in this flavor's layers {flavor.layers}",
                        f"add {comp.layer!r} to flavors.{name}.layers or move the component")
            )
        source = manifest.sources.get(comp.source)
        if source is None:
            problems.append(
                Problem(where, f"source {comp.source!r} is not defined",
                        f"use one of {sorted(manifest.sources)} or add it under sources")
            )
        elif source.kind not in SOURCE_KINDS_FOR[comp.kind]:
            problems.append(
                Problem(where, f"a {comp.kind} component cannot come from {source.kind} source {comp.source!r}",
                        f"use a source of kind {' or '.join(SOURCE_KINDS_FOR[comp.kind])}")
            )
        problems += _check_cuda(name, flavor, where, comp_name, comp)
        problems += _check_built_against(flavor, where, comp)
    return problems


def _check_cuda(name: str, flavor: Flavor, where: str, comp_name: str, comp: Component) -> list[Problem]:
    major = cuda_major_of(comp)
    if flavor.cuda is None:
        if comp.package == "paddlepaddle-gpu":
            return [Problem(where, "a CPU flavor cannot ship paddlepaddle-gpu", "use package: paddlepaddle")]
        return []
    problems = []
    if major is not None and major != flavor.cuda.major:
        problems.append(
            Problem(where, f"{comp.package} is built for CUDA {major} but flavor {name!r} declares CUDA "
                    f"{flavor.cuda.version}",
                    f"pin a CUDA {flavor.cuda.major} build or change flavors.{name}.cuda.version")
        )
    if comp.package == "paddlepaddle":
        problems.append(Problem(where, "a CUDA flavor ships the CPU-only paddlepaddle wheel",
                                "use package: paddlepaddle-gpu"))
    if comp_name in TOOLKIT_VERSIONED and ".".join(comp.version.split(".")[:2]) != flavor.cuda.major_minor:
        problems.append(Problem(where, f"{comp.package} {comp.version} belongs to CUDA "
                                f"{'.'.join(comp.version.split('.')[:2])} but flavor {name!r} declares CUDA "
                                f"{flavor.cuda.version}", f"pin the CUDA {flavor.cuda.major_minor} release of it "
                                f"or move the flavor (cuda.version, drivers) to the newer CUDA"))
    return problems


def _check_built_against(flavor: Flavor, where: str, comp: Component) -> list[Problem]:
    """Each dependency a component was built against is pinned at that version, or at the one `runs_with` gives
    (with its reason), which must keep the major built against: the soname major (libnvinfer.so.8) is what the
    loader asks for, and Paddle's own check of the TensorRT it finds compares with the one it was compiled against
    (paddle/fluid/inference/analysis/ir_passes/tensorrt_subgraph_pass.cc: a warning on another major.minor)."""
    problems = []
    for dep, prefix in comp.built_against.items():
        other = flavor.components.get(dep)
        runs = comp.runs_with.get(dep)
        if other is None:
            problems.append(Problem(where, f"built_against names {dep!r}, which this flavor does not pin",
                                    f"pin {dep!r} or drop it from built_against"))
        elif runs is not None and runs.version.split(".")[0] != prefix.split(".")[0]:
            problems.append(Problem(f"{where}.runs_with.{dep}", f"{dep} {runs.version} is another major than the "
                                    f"{prefix} {comp.package} is built against, which it cannot load",
                                    f"pin {dep} {prefix.split('.')[0]}.x"))
        elif not _version_has_prefix(other.version, runs.version if runs is not None else prefix):
            wanted = runs.version if runs is not None else prefix
            problems.append(
                Problem(where, f"{comp.package} {comp.version} is built against {dep} {prefix}"
                        f"{f' (runs with {wanted})' if runs is not None else ''} but the flavor pins {dep} "
                        f"{other.version}", f"pin {dep} {wanted}.x or a {comp.package} built for {dep} {other.version}")
            )
    return problems


def _version_has_prefix(version: str, prefix: str) -> bool:
    return version == prefix or version.startswith(prefix + ".")
