"""Benchmark the build itself: cold build, no-change rebuild, top-layer change, and image size.

Prints the three build times side by side and their ratios, and the image size against the sum
of the payloads the layers install (what `pip`/`apt` put on disk), measured in the same run.

  python -m perf.image_build.bench_build [--release YY.MM] [--flavor cpu] [--keep-cache]
  python -m perf.image_build.bench_build --skip-cold (--cold-s SECONDS | --cold-report build.json)

The long form: docs/design-notes.md, section `perf/image_build/bench_build.py`.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.flavor import resolve
from ngc_paddle.image_build import build_flavor
from ngc_paddle.image_build.build_report import human
from ngc_paddle.image_build.scratch import scratch_copy
from ngc_paddle.manifest.loader import latest_release
from perf.measurements import REPO

PAYLOAD_SCRIPT = (
    "du -sb /opt/venv/lib/python3*/site-packages | cut -f1; "
    "dpkg-query -W -f='${Installed-Size}\\n' | awk '{s+=$1} END {print s*1024}'"
)


def timed_build(root: Path, release: str, flavor: str | None, sources: dict[str, str]) -> tuple[float, list[str], str]:
    started = time.monotonic()
    report = build_flavor.build(resolve(root, release, flavor, sources), say=lambda _line: None)
    return time.monotonic() - started, [layer.status for layer in report.layers], report.image


def timed_cli(root: Path, release: str, flavor: str | None) -> tuple[float, str]:
    """A no-change rebuild as `make image` runs it: toolchain/ensure-engine.sh, then the ngc-paddle command."""
    started = time.monotonic()
    subprocess.run(["bash", str(REPO / "toolchain" / "ensure-engine.sh")], check=True, capture_output=True)
    cmd = [sys.executable, "-m", "ngc_paddle.cli", "--root", str(root), "build", "--release", release]
    proc = subprocess.run([*cmd, *(["--flavor", flavor] if flavor else [])], cwd=REPO, capture_output=True,
                          text=True, check=True)
    return time.monotonic() - started, proc.stdout.strip().splitlines()[-1]


def cold_figure(args: argparse.Namespace) -> float:
    if args.cold_s is not None:
        return args.cold_s
    report = json.loads(Path(args.cold_report).read_text())
    if report.get("status") != "success" or any(layer["status"] != "built" for layer in report["layers"]):
        raise SystemExit(f"error: {args.cold_report}: status: not a cold build (every layer built); "
                         "fix: pass the build.json of a build without cache, or --cold-s")
    return float(report["duration_s"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default=None)
    parser.add_argument("--flavor", default=None)
    parser.add_argument("--source", action="append", default=[], metavar="NAME=URL|PATH",
                        help="point a manifest source at a mirror or wheel folder, as in ngc-paddle build")
    parser.add_argument("--keep-cache", action="store_true", help="do not prune the BuildKit cache first")
    parser.add_argument("--image", default="ngc-paddle-bench", help="image name of the scratch copy's builds")
    parser.add_argument("--skip-cold", action="store_true",
                        help="no cold build (cache left alone): the cold figure from --cold-s/--cold-report")
    parser.add_argument("--cold-s", type=float, help="with --skip-cold: seconds of a cold build")
    parser.add_argument("--cold-report", help="with --skip-cold: build.json of a cold build (every layer built)")
    args = parser.parse_args()
    if args.skip_cold and (args.cold_s is None) == (args.cold_report is None):
        parser.error("--skip-cold needs exactly one of --cold-s, --cold-report")
    release = args.release or latest_release(REPO / "releases")
    sources = dict(item.split("=", 1) for item in args.source)

    with tempfile.TemporaryDirectory(prefix="ngc-bench-") as tmp:
        root = scratch_copy(REPO, Path(tmp) / "repo", args.image)
        if not args.keep_cache and not args.skip_cold:
            engine.remove_images(*engine.images(f"{args.image}-layers"))
            engine.prune_build_cache()
        print(f"{'warm-up' if args.skip_cold else 'cold'} build of {release} ...", flush=True)
        cold, cold_status, image = timed_build(root, release, args.flavor, sources)
        if args.skip_cold:
            cold, cold_status = cold_figure(args), ["(given)"]
        print("no-change rebuild ...", flush=True)
        warm, warm_status, _ = timed_build(root, release, args.flavor, sources)
        cli, cli_line = timed_cli(root, release, args.flavor)
        print(f"  {cli_line}", flush=True)
        banner = root / "image" / "lib" / "banner.py"
        banner.write_text(banner.read_text() + f"\n# touched by bench_build at {time.time()}\n")
        print("top-layer change rebuild ...", flush=True)
        top, top_status, _ = timed_build(root, release, args.flavor, sources)

        size = engine.image_size(image)
        payload = engine.run(image, "bash", "-c", PAYLOAD_SCRIPT, flags=("--network", "none", "-e",
                                                                         "NGC_PADDLE_QUIET=1"), check=True)
        site_packages, debian = (int(x) for x in payload.stdout.split())
        engine.remove_images(image, image.rsplit("-", 1)[0])

    results = {
        "release": release, "image": image,
        "cold_s": round(cold, 1), "cold_given": args.skip_cold, "no_change_s": round(warm, 2),
        "no_change_cli_s": round(cli, 2), "top_layer_s": round(top, 1),
        "no_change_over_cold": round(warm / cold, 4), "no_change_cli_over_cold": round(cli / cold, 4),
        "top_layer_over_cold": round(top / cold, 4),
        "layer_status": {"cold": cold_status, "no_change": warm_status, "top_layer": top_status},
        "image_bytes": size, "payload_bytes": site_packages + debian,
        "site_packages_bytes": site_packages, "debian_packages_bytes": debian,
        "image_over_payload": round(size / (site_packages + debian), 3),
    }
    print()
    print("| build | seconds | vs cold | layers |")
    print("| --- | ---: | ---: | --- |")
    print(f"| cold{' (given)' if args.skip_cold else ''} | {cold:.1f} | 1.000 | {' '.join(cold_status)} |")
    print(f"| no change | {warm:.2f} | {warm / cold:.4f} | {' '.join(warm_status)} |")
    print(f"| no change, as make image runs it | {cli:.2f} | {cli / cold:.4f} | {' '.join(warm_status)} |")
    print(f"| top layer changed | {top:.1f} | {top / cold:.3f} | {' '.join(top_status)} |")
    print(f"\nimage {human(size)}; installed payload {human(site_packages + debian)} "
          f"(site-packages {human(site_packages)} + Debian packages {human(debian)}); "
          f"image / payload = {size / (site_packages + debian):.3f}")
    out = REPO / "build" / "bench" / f"build-{release}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
