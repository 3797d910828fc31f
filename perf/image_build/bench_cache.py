"""A build cache shared between build hosts: the same flavor built on this engine, then on a second one that has
nothing but the registry's cache, side by side in one run.

Why: a monthly release is built on several hosts (CPU builders, a GPU lab's own). With each layer's BuildKit
cache in the release registry (`make image CACHE_REGISTRY=host:port`), a host that has never built the flavor
takes every step from there. Host A builds (and writes the cache) in a scratch copy on this engine; host B is a
fresh engine instance (own data root, containerd and cache, its own base bootstrap: toolchain/ensure-engine.sh)
that builds the same copy with only the registry's cache. Prints each host's wall time and, per layer, the
steps it ran and took from a cache: B must run none. Speed is a figure printed here (and in
docs/measurements.md), not a test; tests/integration/test_build_cache.py checks that B rebuilds nothing.

  python -m perf.image_build.bench_cache [--release YY.MM] [--flavor cpu] [--registry 127.0.0.1:5000] [--keep]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine
from ngc_paddle.image_build.scratch import scratch_copy
from perf.measurements import REPO, record

SECOND = "cache2"  # the second build host's engine instance
IMAGE = "ngc-paddle-cachebench"


def ensure_registry(registry: str) -> None:
    port = registry.rsplit(":", 1)[-1]
    proc = subprocess.run(["bash", str(REPO / "toolchain" / "ensure-registry.sh")], env={"REGISTRY_PORT": port,
                          "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"error: registry {registry}: {proc.stderr.strip()[-300:]}; fix: start one or pass --registry")


def build(root: Path, release: str | None, flavor: str | None, registry: str) -> tuple[float, dict]:
    """`ngc-paddle build --force --cache-registry` in `root`; its wall time and build report."""
    args = [sys.executable, "-m", "ngc_paddle.cli", "--root", str(root), "build", "--force", "--cache-registry",
            registry, *(["--release", release] if release else []), *(["--flavor", flavor] if flavor else [])]
    started = time.monotonic()
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"error: build in {root} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    report = json.loads(next((root / "build" / "reports").glob("*/build.json")).read_text())
    return seconds, report


def table(runs: dict[str, tuple[float, dict]]) -> str:
    lines = ["| host | wall (s) | layer | steps run | steps from cache |", "| --- | ---: | --- | ---: | ---: |"]
    for host, (seconds, report) in runs.items():
        for index, layer in enumerate(report["layers"]):
            lines.append(f"| {host if index == 0 else ''} | {f'{seconds:.0f}' if index == 0 else ''} | "
                         f"{layer['layer']} | {len(layer['steps_run'])} | {layer['steps_cached']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release")
    parser.add_argument("--flavor")
    parser.add_argument("--registry", default="127.0.0.1:5000", help="the registry holding the cache")
    parser.add_argument("--keep", action="store_true", help="keep the second engine instance afterwards")
    args = parser.parse_args(argv)
    ensure_registry(args.registry)
    runs: dict[str, tuple[float, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="ngc-cachebench-") as tmp:
        root = scratch_copy(REPO, Path(tmp) / "repo", IMAGE)
        print(f"host A (this engine): building with --cache-registry {args.registry} ...", flush=True)
        runs["A (writes the cache)"] = build(root, args.release, args.flavor, args.registry)
        print(f"host B (engine instance {SECOND}, nothing but the registry's cache) ...", flush=True)
        try:
            with engine.using(engine.instance_host(SECOND)):
                runs[f"B ({SECOND}, fresh)"] = build(root, args.release, args.flavor, args.registry)
        finally:
            if not args.keep:
                engine.remove_instance(SECOND)
    text = table(runs)
    print(text)
    (seconds_a, _), (seconds_b, report_b) = runs.values()
    rebuilt = [layer["layer"] for layer in report_b["layers"] if layer["steps_run"]]
    summary = (f"B rebuilt {len(rebuilt)} layer(s){': ' + ', '.join(rebuilt) if rebuilt else ''}; "
               f"B's build took {seconds_b / seconds_a:.2f}x A's ({seconds_b:.0f} s against {seconds_a:.0f} s)")
    print(summary)
    record("perf-cache", "Build cache shared between build hosts (registry cache)", f"{text}\n\n{summary}")
    return ExitCode.FAIL if rebuilt else ExitCode.PASS


if __name__ == "__main__":
    sys.exit(main())
