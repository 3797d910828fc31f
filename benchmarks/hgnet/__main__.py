"""bench-hgnet (`python -m benchmarks.hgnet`): the shared benchmark command with PP-HGNet's ModelSpec (spec.py)."""

from benchmarks.harness.bench_cli import entry
from benchmarks.hgnet.spec import SPEC

if __name__ == "__main__":
    entry(SPEC)
