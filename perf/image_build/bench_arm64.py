"""Time the arm64 build of a flavor on this (x86-64) host: cold, warm (every step from BuildKit's cache, new tags,
checks and smoke test run again) and a no-change rebuild, then each natively installed pip layer's locked wheels
installed both ways side by side (foreign_pip: natively vs under qemu), and record them in docs/measurements.md.

Why: the arm64 build runs its os and suite layers under qemu and installs its wheels natively for the target
(docs/building.md, "Another platform"); whether CI can afford it depends on these figures, above all on the warm
one (a CI host keeps the engine's cache). The BuildKit cache is never pruned here: a cold build is BuildKit's
--no-cache (`--cold`), or an earlier cold build's report (`--cold-report`, e.g. the first arm64 build of a host).

  python -m perf.image_build.bench_arm64 [--release YY.MM] [--flavor cpu] (--cold | --cold-report build.json)
"""

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedRelease
from ngc_paddle.image_build import build_flavor
from ngc_paddle.image_build.build_report import BuildReport, human
from ngc_paddle.image_build.scratch import scratch_copy
from ngc_paddle.layers import FOREIGN_PIP_DOCKERFILE, dockerfile_for
from ngc_paddle.manifest.loader import latest_release
from perf.image_build import foreign_pip
from perf.measurements import REPO, record

PLATFORM = "linux/arm64"
NATIVE_PIP = re.compile(r"\[(\w+)\] installed in (\d+(?:\.\d+)?)s")  # install_pip_layer.py's line, per layer


def timed(root: Path, release: str, flavor: str, no_cache: bool = False) -> tuple[float, BuildReport]:
    started = time.monotonic()
    report = build_flavor.build(ResolvedRelease.load(root, release).flavor(flavor, PLATFORM),
                                say=lambda line: print(f"  {line}", flush=True) if line.startswith("--> ") else None,
                                no_cache=no_cache)
    return time.monotonic() - started, report


def remove_scratch_images(report: BuildReport) -> None:
    """The scratch copy's images of a build (its layers' tags and the release tags), never the checkout's."""
    engine.remove_images(*[layer.tag for layer in report.layers[:-1]], *report.tags)


def native_pip_seconds(root: Path, report: dict) -> dict[str, float]:
    """Seconds each natively installed pip layer's install took in a build (from its log; a cached layer ran none;
    the suite layer's pip runs under qemu and writes the same line: not counted)."""
    found: dict[str, float] = {}
    for layer in report["layers"]:
        if dockerfile_for(layer["layer"], foreign=True) != FOREIGN_PIP_DOCKERFILE:
            continue
        log = root / layer["log"] if layer.get("log") else None
        if log is not None and log.is_file():
            for name, seconds in NATIVE_PIP.findall(log.read_text(errors="replace")):
                found[name] = found.get(name, 0.0) + float(seconds)
    return found


def native_os_layer(release: str, flavor: str) -> str:
    """The checkout's default-platform os layer, where the build's native pip runs (the scratch copy builds none)."""
    native_os = ResolvedRelease.load(REPO, release).flavor(flavor).layer_tags["os"]
    if engine.image_id(native_os) is None:
        raise SystemExit(f"error: {native_os}: not built; fix: make image PLATFORMS=linux/amd64 first")
    return native_os


def install_both_ways(root: Path, release: str, flavor: str, native_os: str, warm: BuildReport,
                      folder: Path) -> list[dict]:
    """Each pip layer's locked arm64 wheels installed natively and under qemu, side by side (foreign_pip)."""
    foreign = ResolvedRelease.load(root, release).flavor(flavor, PLATFORM)
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for layer in foreign.spec.layers:
        if dockerfile_for(layer, foreign=True) == FOREIGN_PIP_DOCKERFILE:  # installed natively by the build
            print(f"{layer}: its locked wheels installed natively, then under qemu ...", flush=True)
            results.append(foreign_pip.compare(foreign.lock_file, layer, native_os, warm.layers[0].tag,
                                               folder / layer, str(Path(sys.executable).with_name("pip"))))
    return results


def cold_from_report(path: Path) -> dict:
    report = json.loads(path.read_text())
    if report.get("status") != "success" or any(layer["status"] != "built" for layer in report["layers"]):
        raise SystemExit(f"error: {path}: status: not a cold build (every layer built); fix: pass the build.json "
                         "of the first arm64 build, or --cold")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default=None)
    parser.add_argument("--flavor", default="cpu")
    parser.add_argument("--image", default="ngc-paddle-arm64-bench", help="image name of the scratch copy's builds")
    cold = parser.add_mutually_exclusive_group(required=True)
    cold.add_argument("--cold", action="store_true", help="a cold build first, with BuildKit's --no-cache")
    cold.add_argument("--cold-report", type=Path, help="build.json of an earlier cold arm64 build (every layer built)")
    args = parser.parse_args()
    release = args.release or latest_release(REPO / "releases")
    native_os = native_os_layer(release, args.flavor)  # checked before the long builds

    with tempfile.TemporaryDirectory(prefix="ngc-bench-arm64-") as tmp:
        root = scratch_copy(REPO, Path(tmp) / "repo", args.image)
        if args.cold:
            print(f"cold arm64 build of {release}-{args.flavor} (--no-cache) ...", flush=True)
            cold_s, cold_report = timed(root, release, args.flavor, no_cache=True)
            layers = ", ".join(f"{x.layer} {x.duration_s:.0f} s" for x in cold_report.layers)
            print(f"  cold: {cold_s:.1f} s ({layers})", flush=True)
            cold_dict, cold_root = asdict(cold_report), root
            remove_scratch_images(cold_report)  # the warm build then takes the cache, not the no-change answer
        else:
            cold_dict, cold_root = cold_from_report(args.cold_report), REPO
            cold_s = float(cold_dict["duration_s"])
        pip = native_pip_seconds(cold_root, cold_dict)
        print("warm arm64 build (every step from the cache, new tags) ...", flush=True)
        warm_s, warm = timed(root, release, args.flavor)
        print(f"  warm: {warm_s:.1f} s\nno-change rebuild ...", flush=True)
        same_s, same = timed(root, release, args.flavor)
        print(f"  no change: {same_s:.2f} s", flush=True)
        installs = install_both_ways(root, release, args.flavor, native_os, warm, Path(tmp) / "wheels")
        remove_scratch_images(warm)

    rows = [("cold" + ("" if args.cold else " (an earlier build's report)"), cold_s,
             [layer["status"] for layer in cold_dict["layers"]]),
            ("warm (cache, new tags: steps cached, checks and smoke test run)", warm_s,
             [layer.status for layer in warm.layers]),
            ("no change", same_s, [layer.status for layer in same.layers])]
    layer_rows = [f"| {layer['layer']} | {layer['duration_s']:.1f} | "
                  f"{(layer.get('checks') or {}).get('seconds', 0):.1f} | {human(layer.get('size_added_bytes') or 0)} |"
                  for layer in cold_dict["layers"]]
    body = "\n".join([
        f"arm64 build of {release}-{args.flavor} on this x86-64 host ({PLATFORM}: os and suite layers under qemu, "
        "pip layers installed natively for the target). Image " + human(warm.image_size_bytes) + ".",
        "", "| build | seconds | vs cold | layers |", "| --- | ---: | ---: | --- |",
        *[f"| {name} | {s:.1f} | {s / cold_s:.3f} | {' '.join(status)} |" for name, s, status in rows],
        "", "Cold build per layer:", "", "| layer | build s | checks s | added |", "| --- | ---: | ---: | ---: |",
        *layer_rows, "",
        "Native install of the target's wheels in the cold build (`pip install --platform ... --target` on the "
        "build platform): " + (", ".join(f"{name} {s:.1f} s" for name, s in pip.items()) or "none (cached)") + ".",
        "", "The same locked arm64 wheels installed both ways in this run, offline from one folder (pip --platform "
        "--target in the amd64 os layer, as the build does, vs pip in the arm64 os layer under qemu):", "",
        "| layer | wheels | native s | under qemu s | qemu / native |", "| --- | ---: | ---: | ---: | ---: |",
        *[f"| {i['layer']} | {i['wheels']} | {i['native_s']:.1f} | {i['emulated_s']:.1f} | "
          f"{i['emulated_over_native']:.1f}x |" for i in installs],
    ])
    print("\n" + body)
    record("perf-arm64-build", "arm64 build under emulation (cold, warm, no change)", body)
    out = REPO / "build" / "bench" / f"arm64-build-{release}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"release": release, "flavor": args.flavor, "cold_s": round(cold_s, 1),
                               "warm_s": round(warm_s, 1), "no_change_s": round(same_s, 2),
                               "native_pip_s": pip, "install_both_ways": installs}, indent=2) + "\n")
    print(f"results: {out.relative_to(REPO)}; docs/measurements.md section perf-arm64-build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
