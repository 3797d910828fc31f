"""The names Paddle's loader dlopen()s per component of the stack: what the images must answer to.

Why: Paddle opens cuDNN, cuBLAS, NCCL, TensorRT... by name at run time (paddle/phi/backends/dynload/
dynamic_loader.cc and tensorrt.cc); a name missing from the image fails only on a GPU host, at the first use. The
layers make the unversioned names (layers/lib/register-libs.sh) and the check `link.runtime.<component>` opens
exactly these names in the image without a GPU (validation/layers/test_linking.py). Standard library only.

A Paddle built without pip's CUDA libraries (Paddle 2.6, gpu-cu118: its paddle.version has no
with_pip_cuda_libraries; read back from its libphi.so: "libcudnn.so", "libcublas.so", "libnvinfer.so"...) opens the
unversioned development names; one built with them (WITH_PIP_CUDA_LIBRARIES, Paddle 3's Linux x86_64 GPU wheels,
which depend on NVIDIA's nvidia-*-cuXX wheels) opens their sonames for its CUDA major. TensorRT is libnvinfer.so and
libnvinfer_plugin.so either way, nvrtc libnvrtc.so either way.
"""

UNVERSIONED = {
    "cudnn": ("libcudnn.so",), "cublas": ("libcublas.so", "libcublasLt.so"), "nccl": ("libnccl.so",),
    "curand": ("libcurand.so",), "cusolver": ("libcusolver.so",), "cusparse": ("libcusparse.so",),
    "cufft": ("libcufft.so",), "cuda-nvrtc": ("libnvrtc.so",),
    "tensorrt": ("libnvinfer.so", "libnvinfer_plugin.so"),
}
PIP_CUDA = {  # CUDA major -> component -> sonames
    11: {"cudnn": ("libcudnn.so.8",), "cublas": ("libcublas.so.11", "libcublasLt.so.11"), "nccl": ("libnccl.so.2",),
         "curand": ("libcurand.so.10",), "cusolver": ("libcusolver.so.11",), "cusparse": ("libcusparse.so.11",),
         "cufft": ("libcufft.so.10",)},
    12: {"cudnn": ("libcudnn.so.9",), "cublas": ("libcublas.so.12", "libcublasLt.so.12"), "nccl": ("libnccl.so.2",),
         "curand": ("libcurand.so.10",), "cusolver": ("libcusolver.so.11",), "cusparse": ("libcusparse.so.12",),
         "cufft": ("libcufft.so.11",)},
}
FIRST_PIP_CUDA_PADDLE = 3  # WITH_PIP_CUDA_LIBRARIES reached Paddle's wheels after 2.6 (PaddlePaddle/Paddle#61235)


def paddle_uses_pip_cuda(manifest: dict) -> bool:
    """Whether the flavor's Paddle (an image manifest: its `cuda` and `components.paddle`) opens NVIDIA's wheels by
    their sonames: decided from the manifest, since a layer image below the paddle layer has no Paddle to ask."""
    paddle = manifest["components"].get("paddle")
    return bool(manifest.get("cuda")) and paddle is not None and \
        int(paddle["version"].split(".")[0]) >= FIRST_PIP_CUDA_PADDLE


def paddle_opens(manifest: dict, component: str) -> tuple[str, ...]:
    """The names Paddle's loader opens for one component of the flavor."""
    if paddle_uses_pip_cuda(manifest):
        major = int(manifest["cuda"]["version"].split(".")[0])
        return PIP_CUDA.get(major, {}).get(component) or UNVERSIONED[component]
    return UNVERSIONED[component]
