"""A third benchmark model for the tests: a folder with a spec.py, and no edit to the harness."""
