"""What a CUDA release asks of the host driver, in the forms the NVIDIA toolkit understands.

Why: `NVIDIA_REQUIRE_CUDA` lets the container toolkit refuse a host whose driver is too old; it is
derived from the flavor's CUDA version and driver branches, never written by hand.
"""

from ngc_paddle.manifest.schema import CudaSpec


def nvidia_require_cuda(cuda: CudaSpec) -> str:
    """`cuda>=X.Y` OR a Tesla GPU on one of the data-center branches (space = OR, comma = AND)."""
    terms = [f"cuda>={cuda.major_minor}"]
    for driver in cuda.datacenter_drivers:
        branch = int(driver.split(".")[0])
        terms.append(f"brand=tesla,driver>={branch},driver<{branch + 1}")
    return " ".join(terms)
