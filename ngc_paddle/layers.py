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


# A pip layer of another platform than the default one: its wheels installed on the build platform, copied into the
# target's layer (docs/building.md, "Another platform"). The os and suite layers keep their own Dockerfiles there.
FOREIGN_PIP_DOCKERFILE = Path("layers/foreign/Dockerfile")


def dockerfile_for(layer: str, foreign: bool = False) -> Path:
    """Path of a layer's Dockerfile relative to the repository root; `foreign`: on another platform than the default
    one (linux/arm64), where a pip layer installs natively for the target."""
    if foreign and layer not in (BASE_LAYER, TOP_LAYER):
        return FOREIGN_PIP_DOCKERFILE
    return Path("Dockerfile") if layer == TOP_LAYER else Path("layers") / layer / "Dockerfile"


def bake_target(layer: str, flavor: str) -> str:
    """Name of the bake target (generated into build/bake/<release>.json) that builds `layer` for `flavor` (a
    flavor's build name: `cpu`, or `cpu-arm64` on another platform, ResolvedFlavor.build_name)."""
    return f"{layer}-{flavor}"
