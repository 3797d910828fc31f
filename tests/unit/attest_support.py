"""Pipeline tests that are not about signing: the attest stage left out, as a release with --no-attest would."""

from ngc_paddle.release import pipeline as release_pipeline
from ngc_paddle.release.stages import attest


def no_signing(monkeypatch) -> None:
    """No key asked for and nothing attached (tests/unit/test_attest.py tests the stage itself)."""
    monkeypatch.setattr(attest, "signing_key", lambda opts: None)
    monkeypatch.setattr(release_pipeline, "BEFORE_RELEASE_TAG", ())
