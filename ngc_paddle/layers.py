"""The image's layer stack: order, folders and what each layer needs from the manifest.

Why: one place says which layers exist, in which order they stack, and which components a
flavor must pin for a layer to be buildable; the manifest schema and checks, the build, the bake
file generator and the scan read the names from here. Which layers a flavor has, in which order,
is said by the manifest alone (releases/*.yaml); the in-image suite reads it from the manifest
the image carries.
"""

from pathlib import Path

# Canonical stacking order. `suite` is the root Dockerfile and sits on top of every flavor.
LAYER_ORDER: tuple[str, ...] = ("os", "cuda", "dali", "tensorrt", "paddle", "suite")

# The first layer (FROM the base image; installs Debian packages) and the top one (the suite).
BASE_LAYER, TOP_LAYER = LAYER_ORDER[0], LAYER_ORDER[-1]

# A regular-expression alternation of the layer names, for reading them out of build output and history.
LAYER_PATTERN = "|".join(LAYER_ORDER)

# Layers that only make sense on a flavor that declares a CUDA version.
CUDA_LAYERS: frozenset[str] = frozenset({"cuda", "tensorrt"})

# Layers every flavor has.
MANDATORY_LAYERS: frozenset[str] = frozenset({"os", "paddle", "suite"})

# Components a flavor must pin for each layer it includes.
REQUIRED_COMPONENTS: dict[str, frozenset[str]] = {
    "os": frozenset({"os", "python"}),
    "cuda": frozenset({"cuda-runtime", "cublas", "cudnn", "nccl"}),
    "dali": frozenset({"dali"}),
    "tensorrt": frozenset({"tensorrt"}),
    "paddle": frozenset({"paddle"}),
    "suite": frozenset(),
}


def dockerfile_for(layer: str) -> Path:
    """Path of a layer's Dockerfile relative to the repository root."""
    return Path("Dockerfile") if layer == TOP_LAYER else Path("layers") / layer / "Dockerfile"


def bake_target(layer: str, flavor: str) -> str:
    """Name of the bake target (generated into build/bake/<release>.json) that builds `layer` for `flavor`."""
    return f"{layer}-{flavor}"
