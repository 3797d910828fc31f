"""Known vulnerabilities: trivy/grype reports, OSV advisories and their import, the sources consulted, freshness.
May import source/ and findings.py; never checks/ or the gate."""
