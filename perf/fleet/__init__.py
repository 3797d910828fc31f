"""The fleet fan-out's measurements (`make perf-fleet`)."""
