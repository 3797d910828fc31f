"""What the installed Paddle was compiled for: CUDA, cuDNN, TensorRT (JSON)."""

import json

import paddle

info = {
    "version": paddle.__version__,
    "compiled_with_cuda": paddle.is_compiled_with_cuda(),
    "cuda": paddle.version.cuda(),
    "cudnn": paddle.version.cudnn(),
}
try:
    from paddle.inference import get_trt_compile_version, get_trt_runtime_version

    info["trt_compile"] = ".".join(str(x) for x in get_trt_compile_version())
    info["trt_runtime"] = ".".join(str(x) for x in get_trt_runtime_version()) if info["compiled_with_cuda"] else None
except Exception as exc:  # a CPU build has no TensorRT support compiled in
    info["trt_compile"] = None
    info["trt_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(info))
