"""The benchmarks: bench-rn50 and bench-hgnet (shipped in the image), and the tooling's speed benchmarks."""
