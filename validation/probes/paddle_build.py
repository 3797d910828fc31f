"""What the installed Paddle was compiled for: CUDA, cuDNN, TensorRT (JSON).

The TensorRT it was compiled against and the one it finds at run time are asked separately: the runtime
question raises where no libnvinfer is on the loader path (an image whose TensorRT layer was left out), which
says nothing about the compile-time figure.
"""

import json

import paddle

info = {
    "version": paddle.__version__,
    "compiled_with_cuda": paddle.is_compiled_with_cuda(),
    "cuda": paddle.version.cuda(),
    "cudnn": paddle.version.cudnn(),
    "trt_compile": None,
    "trt_runtime": None,
}
try:
    from paddle.inference import get_trt_compile_version, get_trt_runtime_version
except ImportError as exc:  # a build without Paddle Inference's TensorRT API
    info["trt_error"] = f"{type(exc).__name__}: {exc}"
else:
    try:
        info["trt_compile"] = ".".join(str(x) for x in get_trt_compile_version())
    except Exception as exc:  # a CPU build has no TensorRT support compiled in
        info["trt_error"] = f"{type(exc).__name__}: {exc}"
    if info["compiled_with_cuda"]:
        try:
            info["trt_runtime"] = ".".join(str(x) for x in get_trt_runtime_version())
        except Exception as exc:  # no libnvinfer on the loader path
            info["trt_runtime_error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
print(json.dumps(info))
