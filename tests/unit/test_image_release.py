"""The scan resolves an image's release from its labels before reading layers, and reads the baked manifest only
for what the labels lack (scan/source/image_release.py)."""

from pathlib import Path

from ngc_paddle.scan.source.image_release import of_image, with_baked_manifest

REPO = Path(__file__).resolve().parents[2]
BAKED = {"release": "26.12", "flavor": "cpu"}


def config(**labels: str) -> dict:
    return {"config": {"Labels": {f"ngc-paddle.{k}": v for k, v in labels.items()}}}


def test_labels_naming_both_decide_without_the_manifest() -> None:
    labelled_config = config(release="26.12", flavor="cpu")
    labelled = of_image(labelled_config, None, REPO, {})
    assert labelled.flavor is not None and labelled.flavor.name == "cpu"
    assert with_baked_manifest(labelled, labelled_config, {"release": "26.12", "flavor": "gpu"}, REPO, {}) is labelled
    unknown_config = config(release="26.12", flavor="nosuch")
    unknown = of_image(unknown_config, None, REPO, {})
    assert unknown.flavor is None and "nosuch" in unknown.unknown
    assert with_baked_manifest(unknown, unknown_config, BAKED, REPO, {}) is unknown  # the labels named it


def test_a_missing_label_is_filled_from_the_baked_manifest() -> None:
    for partial in (config(release="26.12"), config()):
        labelled = of_image(partial, None, REPO, {})
        assert labelled.flavor is None
        found = with_baked_manifest(labelled, partial, BAKED, REPO, {})
        assert found.flavor is not None and (found.flavor.release, found.flavor.name) == ("26.12", "cpu")
        assert with_baked_manifest(labelled, partial, None, REPO, {}).flavor is None  # nothing names it
