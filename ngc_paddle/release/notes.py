"""Release notes in the form of NGC's framework container notes, and the support matrix.

Sections: contents of the container (every component, read back from the built image, beside the
manifest's pin), driver requirements (derived from the CUDA version), GPU requirements, what
changed since the previous release, gate results, benchmark tables, known issues (a hand-written
file per release) and the image digests.
"""

import json

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ngc_common import image_paths
from ngc_paddle import engine
from ngc_paddle.distro import from_base_image
from ngc_paddle.driver import driver_sentence, requirement
from ngc_paddle.manifest.schema import Flavor, Manifest

LABELS = {"os": "OS", "python": "Python", "cuda-runtime": "CUDA runtime", "cublas": "cuBLAS", "cudnn": "cuDNN",
          "nccl": "NCCL", "tensorrt": "TensorRT", "dali": "DALI", "paddle": "PaddlePaddle"}
# GPU families of compute capability 6.0 and later that CUDA 11.8 and 12.x support.
ARCHITECTURES = ("NVIDIA Pascal, NVIDIA Volta, NVIDIA Turing, NVIDIA Ampere architecture, NVIDIA Hopper, and "
                 "NVIDIA Ada Lovelace architecture families")
PROBE = f"{image_paths.PROBES}/distributions.py"


def read_back(image: str, flavor: Flavor) -> dict[str, str]:
    """Each component's version as installed in the image (pip distributions, Python, OS release)."""
    proc = engine.run(image, "bash", "-c", f"python {PROBE}; . /etc/os-release; echo \"$VERSION_ID\"",
                      flags=("--network", "none", "-e", "NGC_PADDLE_QUIET=1"), check=True)
    lines = proc.stdout.strip().splitlines()
    dists, os_version = json.loads(lines[-2]), lines[-1]
    found = {}
    for name, comp in flavor.components.items():
        if comp.kind == "pip":
            dist = dists["distributions"].get(canonicalize_name(comp.package or ""), {})
            found[name] = dist.get("version", "missing")
        elif name == "python":
            found[name] = ".".join(dists["python"].split(".")[:2])
        elif name == "os":
            found[name] = os_version
    return found


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


def render(manifest: Manifest, previous: Manifest | None, flavors: dict[str, dict], known_issues: str | None) -> str:
    """`flavors`: per flavor, the record of ngc_paddle.release.record: {"image", "readback", "stages": {stage:
    {"status", "detail", ...}}, "digest", "digest_note", "bench_md", "not_built"}, every flavor stored for the
    release (not only those of the last run); a flavor without one shows the manifest alone."""
    rel = manifest.release
    flavors = {name: flavors[name] for name in [*manifest.flavors, *flavors] if name in flavors}  # manifest order
    built = [f for f, info in flavors.items() if info.get("readback")]
    out = [f"# PaddlePaddle Release {rel}", "",
           f"The ngc-paddle {rel} images are available as " +
           ", ".join(f"`{manifest.image}:{rel}-{f}`" for f in manifest.flavors) +
           f" (`{manifest.image}:{rel}` is the {manifest.default_flavor} flavor).", "",
           "## Contents of the PaddlePaddle container", ""]
    for name, flavor in manifest.flavors.items():
        info = flavors.get(name, {})
        readback = info.get("readback")
        out += [f"### {name}: {flavor.description}", "",
                "| component | package | version | in the image | source |", "| --- | --- | --- | --- | --- |"]
        for cname, comp in flavor.components.items():
            found = "not built" if readback is None else readback.get(cname, "-")
            agrees = readback is None or found in (comp.version, "-") or found.startswith(comp.version)
            mark = "" if agrees else " (MISMATCH)"
            source = manifest.sources[comp.source]
            where = source.url or source.path
            out.append(f"| {LABELS.get(cname, cname)} | {comp.package or comp.image} | {comp.version} | "
                       f"{found}{mark} | {comp.source} ({where}) |")
        out.append("")
    out += ["## Driver Requirements", ""]
    for name, flavor in manifest.flavors.items():
        if flavor.cuda is None:
            out += [f"{name}: needs no NVIDIA driver.", ""]
        else:
            out += [f"{name}: {driver_sentence(rel, flavor.cuda.version)}", ""]
    gpu = [f for f in manifest.flavors.values() if f.cuda]
    if gpu:
        out += ["## GPU Requirements", "", f"Release {rel} supports CUDA compute capability 6.0 and later. This "
                f"corresponds to GPUs in the {ARCHITECTURES}.", ""]
    out += ["## Key Features and Enhancements", ""]
    since = f" since {previous.release}" if previous else ""
    for name, flavor in manifest.flavors.items():
        prev = previous.flavors.get(name) if previous else None
        out += [f"Changes{since} ({name}):", ""] + [f"- {line}" for line in changes(prev, flavor)] + [""]
    out += ["## Release gates", "", "| flavor | stage | result | detail |", "| --- | --- | --- | --- |"]
    for name, info in flavors.items():
        for stage, result in info.get("stages", {}).items():
            status = result.get("status", "-")
            shown = "NOT PROVEN, pushed on a person's word" if status == "accepted unproven" else status
            shown = "not built" if info.get("not_built") and stage == "build" else shown
            out.append(f"| {name} | {stage} | {shown} | {result.get('detail', '')} |")
    out.append("")
    for name, info in flavors.items():
        month = info.get("stages", {}).get("month-over-month", {})
        if month.get("changes"):
            out += [f"## Package changes since {month.get('since')} ({name})", "",
                    *[f"- {line}" for line in month["changes"]], ""]
    for name, info in flavors.items():
        if info.get("bench_md"):
            out += [f"## Benchmarks ({name})", "", info["bench_md"].strip(), ""]
    out += ["## Known Issues", "", (known_issues or "None known.").strip(), "",
            "## Image digests", "", "| image | digest |", "| --- | --- |"]
    for name, info in flavors.items():
        digest = info.get("digest") or (f"not built: {info['not_built']}" if info.get("not_built") else
                                         f"not pushed ({info['digest_note']})" if info.get("digest_note") else
                                         "not pushed")
        out.append(f"| `{info.get('image') or f'{manifest.image}:{rel}-{name}'}` | {digest} |")
    if not built:
        out += ["", "No image of this release was built yet: the contents table shows the manifest only."]
    return "\n".join(out) + "\n"


def _matrix_cell(flavor: Flavor, column: str) -> str:
    """A component's version; for the OS, the distribution and release ("Debian 12", "Ubuntu 20.04")."""
    comp = flavor.components.get(column)
    if comp is None:
        return "-"
    if column == "os":
        distro = from_base_image(comp.image, comp.version)
        return str(distro) if distro else comp.version
    return comp.version


def support_matrix(manifests: list[Manifest]) -> str:
    columns = ["os", "python", "cuda-runtime", "cudnn", "nccl", "tensorrt", "dali", "paddle"]
    out = ["# ngc-paddle support matrix", "",
           "Generated from releases/*.yaml; driver figures (the oldest that runs the image / the one with "
           "every feature of its CUDA) from ngc_paddle/driver.py.", "",
           "| release | flavor | CUDA | driver (runs / full) | " + " | ".join(LABELS[c] for c in columns) + " |",
           "| --- | --- | --- | --- | " + " | ".join("---" for _ in columns) + " |"]
    for m in sorted(manifests, key=lambda m: m.release, reverse=True):
        for name, flavor in m.flavors.items():
            cells = [_matrix_cell(flavor, c) for c in columns]
            cuda = flavor.cuda.version if flavor.cuda else "-"
            req = requirement(flavor.cuda.version) if flavor.cuda else None
            driver = f"{req.minimum} / {req.full}" if req else "-"
            out.append(f"| {m.release} | {name} | {cuda} | {driver} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"
