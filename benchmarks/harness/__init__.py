"""The benchmark harness shared by bench-rn50 and bench-hgnet: timing, logs, environment, gates, reports."""
