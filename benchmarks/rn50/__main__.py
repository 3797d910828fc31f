"""bench-rn50 (`python -m benchmarks.rn50`): the shared benchmark command with ResNet50 v1.5's ModelSpec (spec.py)."""

from benchmarks.harness.bench_cli import entry
from benchmarks.rn50.spec import SPEC

if __name__ == "__main__":
    entry(SPEC)
