"""The security scan gate: SBOM, vulnerabilities, secrets and hardening checks, and a policy."""
