"""The TensorRT Python API differences between the versions the images ship, in one place for the image's sides.

Why: the benchmarks' TensorRT path (benchmarks/harness/tensorrt_python.py) and the validation's GPU probe
(validation/probes/gpu_tensorrt.py) build networks with the same API on TensorRT 8.6 (gpu-cu118, NVIDIA's CUDA 11.8
tar) and TensorRT 10 (gpu); they ship separately and share code through ngc_common only. Standard library only:
`trt` is the imported tensorrt module, passed in.
"""

NAMED_IO = (8, 5)  # the first TensorRT with set_input_shape / set_tensor_address / execute_async_v3


def version_of(trt) -> tuple[int, int]:
    """(major, minor) of the tensorrt module (its __version__; a module that says none counts as TensorRT 10)."""
    major, minor = [*str(getattr(trt, "__version__", "10.0")).split("."), "0"][:2]
    return int(major), int(minor)


def network_flags(trt) -> int:
    """create_network's flags for an explicit-batch network, what the ONNX parser and execute_async_v3 need:
    TensorRT 8 makes an implicit-batch one from create_network(0), so the EXPLICIT_BATCH flag; TensorRT 10 has
    only explicit-batch networks and deprecates the flag (0)."""
    if version_of(trt)[0] >= 10:
        return 0
    return 1 << int(trt.NetworkDefinitionCreationFlag.EXPLICIT_BATCH)
