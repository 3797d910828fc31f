"""Release manifests: the one source of truth for what goes into an image."""

from ngc_paddle.cuda import CudaSpec
from ngc_paddle.manifest.loader import find_manifest, load_manifest
from ngc_paddle.manifest.schema import Component, Flavor, Manifest, Source

__all__ = ["Component", "CudaSpec", "Flavor", "Manifest", "Source", "find_manifest", "load_manifest"]
