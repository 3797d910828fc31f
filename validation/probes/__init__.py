"""Probes: small scripts the checks run in the image under test, each printing JSON."""
