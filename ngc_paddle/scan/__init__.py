"""The security scan gate: the image read (source/), checked (checks/, vulnerabilities/), judged and reported here.
Here: gate.py (imports every stage), sbom.py, and findings.py and policy.py, which every stage may import."""
