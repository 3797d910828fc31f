"""What a CUDA release asks of the host driver: NVIDIA_REQUIRE_CUDA, the entrypoint's limits, the notes' sentence.

Why: the image label, the entrypoint's warning (through the baked manifest), the banner, the release
notes and the support matrix all state driver figures; every one of them is derived here, from the
CUDA version of the flavor, never written by hand in a manifest or in the notes.

The image ships NVIDIA's CUDA libraries from PyPI and no CUDA forward-compatibility package
(`cuda-compat-12-x` comes only from NVIDIA's own apt repository, which no source of the manifest
provides). So the only way an older driver runs it is CUDA *minor-version compatibility*, and the
figures below are NVIDIA's for that, on Linux x86_64:

The long form: docs/design-notes.md, section `ngc_paddle/driver.py`.
"""

from dataclasses import dataclass

from packaging.version import Version

from ngc_paddle.cuda import CudaSpec

# CUDA major -> the oldest Linux driver that runs any toolkit of that major (minor-version compatibility).
MINOR_COMPAT_MINIMUM: dict[int, str] = {11: "450.80.02", 12: "525.60.13"}
# CUDA major.minor -> the Linux driver shipped with that toolkit (its GA release): full functionality.
TOOLKIT_DRIVER: dict[str, str] = {
    "11.7": "515.43.04",
    "11.8": "520.61.05",
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
}
# What a driver between the two can not do; said by the entrypoint and the notes.
LIMITS = ("PTX JIT compilation fails (kernels compiled at run time, e.g. by NVRTC, or for a GPU without "
          "prebuilt code in a library), and CUDA calls newer than the driver return "
          "cudaErrorCallRequiresNewerDriver")


@dataclass(frozen=True)
class DriverRequirement:
    cuda: str  # major.minor
    minimum: str  # oldest driver that runs the image at all
    full: str  # oldest driver with every feature of the toolkit

    @property
    def limited(self) -> bool:
        """Whether some drivers run the image with limits (minimum older than full)."""
        return Version(self.minimum) < Version(self.full)


def requirement(cuda_version: str) -> DriverRequirement:
    key = ".".join(cuda_version.split(".")[:2])
    major = int(key.split(".")[0])
    if key not in TOOLKIT_DRIVER or major not in MINOR_COMPAT_MINIMUM:
        raise KeyError(f"no driver facts for CUDA {key}; add them to ngc_paddle/driver.py TOOLKIT_DRIVER")
    return DriverRequirement(key, MINOR_COMPAT_MINIMUM[major], TOOLKIT_DRIVER[key])


def nvidia_require_cuda(cuda: CudaSpec) -> str:
    """The NVIDIA Container Toolkit's constraint: refuse a host whose driver cannot run the image at all.

    `driver>=` compares the host's driver version (libnvidia-container's requirement syntax, where a
    space is OR and a comma AND); `cuda>=X.Y` would demand the full driver and refuse hosts that
    minor-version compatibility serves.
    """
    return f"driver>={requirement(cuda.version).minimum}"


def image_driver_facts(cuda: CudaSpec) -> dict[str, str]:
    """The driver fields of the manifest baked into the image, read by the banner and the entrypoint."""
    req = requirement(cuda.version)
    return {"min_driver": req.minimum, "full_driver": req.full, "limits": LIMITS,
            "nvidia_require_cuda": nvidia_require_cuda(cuda)}


def driver_sentence(release: str, cuda_version: str) -> str:
    """The notes' "Driver Requirements" paragraph for a flavor based on `cuda_version`."""
    req = requirement(cuda_version)
    major = req.cuda.split(".")[0]
    text = f"Release {release} is based on CUDA {cuda_version}, which needs NVIDIA driver {req.minimum} or later"
    if req.limited:
        text += (f" (Linux; the oldest driver that runs CUDA {major}.x applications through CUDA minor-version "
                 f"compatibility). With a driver older than {req.full}, the driver of CUDA {req.cuda}, it runs "
                 f"with limits: {LIMITS}; use {req.full} or later for full functionality.")
    else:
        text += f" (Linux), the driver of CUDA {req.cuda}."
    text += (" The image ships no CUDA forward-compatibility package, so older drivers, data-center branches "
             f"included, cannot run it; NVIDIA_REQUIRE_CUDA=driver>={req.minimum} lets the NVIDIA Container "
             "Toolkit refuse them.")
    return text
