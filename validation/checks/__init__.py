"""The suite's own checks: the container contract and image hygiene, beside the per-layer checks."""
