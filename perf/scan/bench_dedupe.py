"""Deduplicating scan findings: 5k against 50k findings in one run, and their ratio (linear work: about 10x).

Why: the scan gate merges findings reported by several scanners (trivy, grype, OSV) through their
aliases; a pairwise merge took 13.6 s for 10k findings. Speed is a figure printed here, not a test.

  python -m perf.scan.bench_dedupe [--repeats 3]
"""

import argparse
import statistics
import time

from ngc_paddle.scan.findings import Finding, dedupe


def findings(count: int) -> list[Finding]:
    half = count // 2
    return [Finding("vulnerability", f"CVE-{i % half}", "HIGH", "t", package=f"p{i % half}", installed="1",
                    aliases=[f"GHSA-{i}"]) for i in range(count)]


def seconds(count: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        batch = findings(count)
        start = time.perf_counter()
        dedupe(batch)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    small, large = seconds(5_000, args.repeats), seconds(50_000, args.repeats)
    print(f"dedupe: 5k findings {small * 1000:.0f} ms, 50k findings {large * 1000:.0f} ms (median of {args.repeats}); "
          f"50k / 5k = {large / small:.1f}x (linear: about 10x)")


if __name__ == "__main__":
    main()
