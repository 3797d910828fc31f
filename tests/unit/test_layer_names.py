"""Every place that needs the layer names asks ngc_paddle/layers.py: the manifest schema, the build's
progress filter, the scan's layer attribution and the in-image linking check."""

import importlib.util
import typing
from pathlib import Path

import pytest

from ngc_paddle.host_errors import ManifestError
from ngc_paddle.image_build.build_flavor import PROGRESS_LINE
from ngc_paddle.layers import LAYER_ORDER, TOP_LAYER
from ngc_paddle.manifest import load_manifest
from ngc_paddle.manifest.schema import LayerName
from ngc_paddle.scan.source.saved_image import layer_names


def test_the_schema_accepts_exactly_the_layers_of_layers_py(current_manifest_data, write_manifest) -> None:
    assert typing.get_args(LayerName) == LAYER_ORDER
    data = current_manifest_data
    data["flavors"]["cpu"]["layers"] = ["os", "jax", "paddle", "suite"]
    with pytest.raises(ManifestError, match=r"flavors\.cpu\.layers"):
        load_manifest(write_manifest(data))


@pytest.mark.parametrize("layer", LAYER_ORDER)
def test_build_output_and_history_name_every_layer(layer: str) -> None:
    assert PROGRESS_LINE.match(f"#12 0.5 [{layer}] installing 3 wheels")
    history = ["Imported from -", f'RUN |1 LAYER_SPEC={{"layer": "{layer}"}} /bin/bash -c install',
               "COPY x /opt/ngc-paddle/ # buildkit"]
    assert layer_names(history) == ["base", layer, TOP_LAYER]


def test_an_unknown_layer_name_is_neither_echoed_nor_attributed() -> None:
    assert not PROGRESS_LINE.match("#12 0.5 [jax] installing 3 wheels")
    history = ["Imported from -", 'RUN |1 LAYER_SPEC={"layer": "jax"} /bin/bash -c install']
    assert layer_names(history)[1] != "jax"


def test_the_linking_check_reads_its_layers_from_the_image_manifest(repo: Path, request) -> None:
    """In the image ngc_paddle is not installed: the layers with native wheels come from the baked manifest."""
    for marker in ("fast", "check", "needs", "gpu", "slow", "exclusive"):  # the suite's (validation/pytest.ini)
        request.config.addinivalue_line("markers", f"{marker}: validation suite marker")
    spec = importlib.util.spec_from_file_location("test_linking", repo / "validation" / "layers" / "test_linking.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    manifest = {"layers": ["os", "dali", "paddle", "suite"], "components": {
        "python": {"kind": "apt", "layer": "os"}, "dali": {"kind": "pip", "layer": "dali"},
        "paddle": {"kind": "pip", "layer": "paddle"}, "pytest": {"kind": "pip", "layer": "suite"}}}
    assert module.native_components(manifest) == ["dali", "paddle"]
    manifest["layers"] = ["os", "paddle", "suite"]
    manifest["components"]["dali"]["layer"] = "suite"
    assert module.native_components(manifest) == ["paddle"]
