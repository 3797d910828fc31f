"""Locks: every distribution, Debian package and base of a release flavor, with hashes."""
