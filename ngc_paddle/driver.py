"""What a CUDA release asks of the host driver: NVIDIA_REQUIRE_CUDA and NGC's driver sentence.

Why: both are derived from the flavor's CUDA version, never written by hand. The table holds
NVIDIA's published facts per CUDA major.minor: the minimum driver branch, and the data-center
driver releases that can still run it through the CUDA forward-compatibility package.
"""

from dataclasses import dataclass

from ngc_paddle.manifest.schema import CudaSpec


@dataclass(frozen=True)
class DriverRequirement:
    min_branch: int
    datacenter: tuple[str, ...]  # driver releases, e.g. "470.57"


# CUDA major.minor -> requirement (NVIDIA's NGC release notes of the matching containers).
REQUIREMENTS: dict[str, DriverRequirement] = {
    "11.7": DriverRequirement(515, ("450.51", "470.57", "510.47")),
    "11.8": DriverRequirement(520, ("450.51", "470.57", "510.47", "515.65")),
    "12.0": DriverRequirement(525, ("450.51", "470.57", "510.47", "515.65", "525.85")),
    "12.1": DriverRequirement(530, ("450.51", "470.57", "510.47", "515.65", "525.85", "530.30")),
    "12.2": DriverRequirement(535, ("450.51", "470.57", "510.47", "515.65", "525.85", "535.54")),
    "12.3": DriverRequirement(545, ("450.51", "470.57", "510.47", "515.65", "525.85", "535.86", "545.23")),
    "12.4": DriverRequirement(545, ("470.57", "525.85", "535.86", "545.23")),
    "12.6": DriverRequirement(560, ("470.57", "525.85", "535.86", "545.23", "550.54")),
}
# Data-center driver branches in release order; those below the minimum and not allowed must be left.
DATACENTER_BRANCHES = (418, 440, 450, 460, 470, 510, 515, 525, 535, 545, 550, 560)


def requirement(cuda_version: str) -> DriverRequirement:
    key = ".".join(cuda_version.split(".")[:2])
    if key not in REQUIREMENTS:
        raise KeyError(f"no driver facts for CUDA {key}; add them to ngc_paddle/driver.py REQUIREMENTS")
    return REQUIREMENTS[key]


def nvidia_require_cuda(cuda: CudaSpec) -> str:
    """`cuda>=X.Y` OR a Tesla GPU on one of the data-center branches (space = OR, comma = AND)."""
    terms = [f"cuda>={cuda.major_minor}"]
    for driver in cuda.datacenter_drivers:
        branch = int(driver.split(".")[0])
        terms.append(f"brand=tesla,driver>={branch},driver<{branch + 1}")
    return " ".join(terms)


def _series(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f", or {items[-1]}"


def driver_sentence(release: str, cuda_version: str) -> str:
    """NGC's "Driver Requirements" paragraph for a release based on `cuda_version`."""
    req = requirement(cuda_version)
    major_minor = ".".join(cuda_version.split(".")[:2])
    allowed = [f"{d} (or later R{d.split('.')[0]})" for d in req.datacenter]
    allowed_branches = {int(d.split(".")[0]) for d in req.datacenter}
    leave = [f"R{b}" for b in DATACENTER_BRANCHES if b < req.min_branch and b not in allowed_branches]
    text = (f"Release {release} is based on CUDA {cuda_version}, which requires NVIDIA Driver release "
            f"{req.min_branch} or later. However, if you are running on a data center GPU (for example, T4 or any "
            f"other data center GPU), you can use NVIDIA driver release {_series(allowed)}. The CUDA driver's "
            "compatibility package only supports particular drivers.")
    if leave:
        joined = leave[0] if len(leave) == 1 else ", ".join(leave[:-1]) + f", and {leave[-1]}"
        text += (f" Thus, users should upgrade from all {joined} drivers, which are not forward-compatible with "
                 f"CUDA {major_minor}.")
    return text
