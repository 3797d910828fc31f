"""Print the start-up banner from the manifest baked into the image (runs at every start)."""

import json
import os

from ngc_common.image_paths import MANIFEST

# Components shown in the banner, in this order, when the flavor has them.
KEY_COMPONENTS = [
    ("paddle", "PaddlePaddle"), ("cuda-runtime", "CUDA runtime"), ("cudnn", "cuDNN"), ("cublas", "cuBLAS"),
    ("nccl", "NCCL"), ("tensorrt", "TensorRT"), ("dali", "DALI"), ("paddle2onnx", "paddle2onnx"),
    ("onnxruntime", "ONNX Runtime"), ("python", "Python"), ("os", "OS"),
]


def main() -> None:
    with open(MANIFEST) as fh:
        m = json.load(fh)
    title = f"== {m['product']} {m['release']} ({m['flavor']}) =="
    print("=" * len(title), title, "=" * len(title), sep="\n")
    print(f"\nPaddlePaddle container release {m['release']}, flavor {m['flavor']}: {m['description']}")
    if m.get("cuda"):
        c = m["cuda"]
        print(f"Based on CUDA {c['version']}; needs NVIDIA driver {c['min_driver']} or later "
              f"({c['full_driver']} or later for full functionality).")
    absent = {name: (layer, entry["reason"]) for layer, entry in (m.get("left_out") or {}).items()
              for name in entry["components"]}
    for key, label in KEY_COMPONENTS:
        comp = m["components"].get(key)
        if key in absent:  # an optional layer the lock left out (its source unreachable when it was locked)
            layer, why = absent[key]
            print(f"  {label:<14} {'absent':<12} (layer {layer} left out of this image: {why})")
        if comp:
            version = comp["version"]
            if key == "os" and m.get("distribution"):  # "Debian 12", "Ubuntu 20.04": the manifest says which
                version = f"{m['distribution']['name']} {m['distribution']['version']}"
            print(f"  {label:<14} {version:<12} ({comp['package']})")
    if os.environ.get("NGC_PADDLE_THREADS_FROM") == "detected":
        threads = os.environ.get("NGC_PADDLE_THREADS", "?")
        origin = ("the CPUs this container may use, as MKL_NUM_THREADS and OMP_THREAD_LIMIT: OMP_NUM_THREADS > 1 "
                  "makes every 'import paddle' print a warning")
    else:
        threads, origin = os.environ.get("OMP_NUM_THREADS", "?"), "OMP_NUM_THREADS as given"
    print(f"  CPU threads    {threads:<12} ({origin}; set OMP_NUM_THREADS to change)")
    if "No ccache found" in os.environ.get("PYTHONWARNINGS", ""):
        print("  Paddle's 'No ccache found' warning is silenced (PYTHONWARNINGS): it is about caching C++ custom-op "
              "builds, and the image has no compiler.")
    print(
        "\nEach bundled component is subject to its own license (see 'license' per component in"
        f"\n{MANIFEST}). Commands: validate, bench-rn50, bench-hgnet.\n"
    )


if __name__ == "__main__":
    main()
