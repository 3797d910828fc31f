"""The CUDA release a GPU flavor is based on, as the manifest names it.

Why here, below both the manifest schema and ngc_paddle/driver.py: the manifest holds it and the driver
figures (NVIDIA_REQUIRE_CUDA, the notes' driver sentence) are derived from it, so both import it from a
module that imports neither.
"""

import re

from pydantic import field_validator

from ngc_common.strict_model import Strict


class CudaSpec(Strict):
    """The CUDA release a GPU flavor is based on; the drivers that run it follow from ngc_paddle/driver.py."""

    version: str

    @field_validator("version")
    @classmethod
    def _cuda_version(cls, v: str) -> str:
        if not re.match(r"^[0-9]{2}\.[0-9](\.[0-9]{1,4})?\Z", v):
            raise ValueError(f"CUDA version {v!r} must look like 12.6 or 12.6.3")
        return v

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def major_minor(self) -> str:
        return ".".join(self.version.split(".")[:2])
