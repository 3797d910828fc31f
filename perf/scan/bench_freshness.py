"""How long the scan's freshness check takes on an image: first fetch of the indexes, then from the cache.

Why: the check runs on every scan and downloads the Debian indexes (bookworm main is about 9 MB);
the cache under build/cache/debian-indexes should make repeated scans cheap. Figures printed here,
not asserted. Reads the image's dpkg status and manifest with `docker run` (no full scan needed).

  python -m perf.scan.bench_freshness [IMAGE] [--source NAME=URL]
"""

import argparse
import tempfile
import time
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.dpkg_status import DPKG_STATUS, installed
from ngc_paddle.scan.source.image_release import of_image
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities import freshness


def image_packages(image: str) -> tuple[list[Package], dict]:
    def cat(path: str) -> str:
        return engine.run(image, path, flags=("--network", "none", "--user", "0", "--entrypoint", "cat"),
                          check=True).stdout

    packages = [Package("deb", p.package, p.version, "image", arch=p.architecture)
                for p in installed(cat(DPKG_STATUS).encode())]
    config = engine.inspect_image(image)
    return packages, config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("image", nargs="?", default="ngc-paddle:26.12-cpu")
    ap.add_argument("--source", action="append", default=[], metavar="NAME=URL")
    args = ap.parse_args()
    overrides = dict(s.split("=", 1) for s in args.source)
    packages, config = image_packages(args.image)
    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory(prefix="bench-freshness-") as cache:
        for label in ("first fetch (empty cache)", "cached"):
            start = time.perf_counter()
            found = of_image(config, None, root, overrides)  # the image's release, resolved as a scan resolves it
            result = freshness.check(packages, config, found, root, cache_dir=Path(cache), say=lambda _line: None)
            took = time.perf_counter() - start
            print(f"{label:<28} {took:6.1f} s  {result.debian_compared} Debian packages, "
                  f"{len(result.pending)} pending ({sum(p['security'] for p in result.pending)} security), "
                  f"{result.python_checked} Python pins, {len(result.yanked)} yanked, NOT RUN: {result.not_run or '-'}")
    for p in result.pending:
        print(f"  {p['package']}:{p['arch']} {p['installed']} -> {p['candidate']} ({p['suite']})")


if __name__ == "__main__":
    main()
