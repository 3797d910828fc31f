"""The validation suite's measurement: serial against parallel."""
