"""Checks of the os layer (the distribution, Python and /opt/venv)."""
