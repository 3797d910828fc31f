"""The security scan gate: the image read (source/), checked (checks/, vulnerabilities/), judged and reported here.
Here: per_platform.py (an index's platforms, each by gate.py, which imports every stage), sbom, findings, policy."""
