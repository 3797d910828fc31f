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
    for key, label in KEY_COMPONENTS:
        comp = m["components"].get(key)
        if comp:
            version = comp["version"]
            if key == "os" and m.get("distribution"):  # "Debian 12", "Ubuntu 20.04": the manifest says which
                version = f"{m['distribution']['name']} {m['distribution']['version']}"
            print(f"  {label:<14} {version:<12} ({comp['package']})")
    threads = os.environ.get("OMP_NUM_THREADS", "?")
    origin = "the CPUs this container may use" if os.environ.get("NGC_PADDLE_THREADS_FROM") == "detected" \
        else "OMP_NUM_THREADS as given"
    print(f"  CPU threads    {threads:<12} ({origin}; set OMP_NUM_THREADS to change)")
    print(
        "\nEach bundled component is subject to its own license (see 'license' per component in"
        f"\n{MANIFEST}). Commands: validate, bench-rn50, bench-hgnet.\n"
    )


if __name__ == "__main__":
    main()
