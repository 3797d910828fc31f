"""bench-hgnet in the built image: published parameter counts, back-end agreement, --classify, weights."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.integration.conftest import EXIT_OF_VERDICT, Built, assert_cpu_floors_decide
from tests.integration.test_bench_rn50 import bench, in_image

PHOTO_WHEEL = "scikit-image==0.26.0"  # ships a few real photographs under skimage/data/
ORT_WARNING = "Removing initializer"  # what ONNX Runtime printed per unused initializer at warning level


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> Path:
    """Real photographs (a cat, a cup of coffee) from scikit-image's wheel, fetched from PyPI."""
    folder = tmp_path_factory.mktemp("photos")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q", "-d",
                    str(folder), PHOTO_WHEEL], check=True, capture_output=True)
    wheel = next(folder.glob("scikit_image-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        for name in ("chelsea.png", "coffee.png"):
            (folder / name).write_bytes(zf.read(f"skimage/data/{name}"))
    folder.chmod(0o777)
    return folder


def test_parameter_counts_and_output_shape(built: Built, tmp_path: Path) -> None:
    proc = in_image(built.image, tmp_path, """
import json, paddle
from benchmarks.hgnet.model import pphgnet, parameter_count, PUBLISHED_PARAMS
out = {}
for variant in ("tiny", "small", "base"):
    m = pphgnet(variant); m.eval()
    out[variant] = {"params": parameter_count(m), "published": PUBLISHED_PARAMS[variant],
                    "shape": list(m(paddle.randn([2, 3, 224, 224])).shape)}
print(json.dumps(out))
""")
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {v: f["params"] for v, f in found.items()} == {"tiny": 14_750_904, "small": 24_381_864,
                                                          "base": 71_624_584}
    assert all(f["shape"] == [2, 1000] for f in found.values())


@pytest.mark.alone
def test_default_run_agrees_across_back_ends_and_evaluates_cpu_gates(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, command="bench-hgnet")
    assert proc.returncode == EXIT_OF_VERDICT[result["verdict"]], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert_cpu_floors_decide(result, floors=2)
    assert result["config"]["model"] == "tiny" and result["config"]["infer_image_size"] == 224
    train = result["results"]["train"]["fp32"]
    assert train["ips"] > 0 and train["efficiency"] > 0
    infer = result["results"]["infer"]
    assert set(infer["paddle-inference"]["fp32"]) == {"bs1", "bs8"}
    assert infer["paddle-inference"]["fp32"]["bs1"]["flops_per_sample"] == 2 * 4_530_447_104  # PaddleClas: 4.54 G
    # training at 128 px: 3 x a forward pass, about (128/224)^2 of the 224 px one
    assert 0.9 < train["flops_per_sample"] / (3 * 2 * 4_530_447_104 * (128 / 224) ** 2) < 1.1
    assert set(infer["onnxruntime"]["fp32"]) == {"bs1", "bs8"}
    assert infer["agreement"]["onnxruntime"] < 1e-4
    assert ORT_WARNING not in proc.stdout + proc.stderr
    verdicts = {g["gate"]: g for g in result["gates"]}
    assert verdicts["Paddle Inference and ONNX Runtime agree (max rel. diff)"]["status"] == "PASS"
    assert verdicts["top-1 %, tiny"]["status"] == "N/A" and "--eval-data" in verdicts["top-1 %, tiny"]["reason"]


def test_onnx_runtime_logs_errors_only(built: Built, tmp_path: Path) -> None:
    """ONNX Runtime warned once per initializer the ONNX export leaves unused: hundreds of lines per run."""
    proc, result = bench(built.image, tmp_path, "--smoke", "--backends", "paddle-inference,onnxruntime",
                         command="bench-hgnet")
    assert proc.returncode == 0 and result["verdict"] == "SMOKE", proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "bs1" in result["results"]["infer"]["onnxruntime"]["fp32"]  # a session ran
    assert ORT_WARNING not in proc.stdout + proc.stderr


def test_accuracy_preprocessing_follows_paddleclas_pphgnet_configs(built: Built, tmp_path: Path) -> None:
    proc = in_image(built.image, tmp_path, """
import json
import numpy as np
from PIL import Image
from benchmarks.hgnet.preprocess import EVAL_RESIZE_SHORT, preprocess, preprocess_eval
Image.fromarray(np.random.default_rng(0).integers(0, 255, (300, 400, 3), dtype=np.uint8)).save("/workspace/x.png")
a = preprocess_eval("/workspace/x.png", "tiny"); b = preprocess_eval("/workspace/x.png", "small")
c = preprocess("/workspace/x.png")
print(json.dumps({"sizes": EVAL_RESIZE_SHORT, "shape": list(a.shape), "differ": bool(np.abs(a - b).max() > 0),
                  "deploy_differs": bool(np.abs(a - c).max() > 0)}))
""")
    assert proc.returncode == 0, proc.stderr[-1500:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["sizes"] == {"tiny": 232, "small": 236, "base": 236} and found["shape"] == [1, 3, 224, 224]
    assert found["differ"] and found["deploy_differs"]


def test_classify_prints_five_imagenet_labels(built: Built, photos: Path) -> None:
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", "-e", "NGC_PADDLE_QUIET=1", "-v",
                           f"{photos}:/workspace", built.image, "bench-hgnet", "--classify", "chelsea.png",
                           "coffee.png"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    labels = json.loads(in_image(built.image, photos, "import json; from benchmarks.hgnet.preprocess import "
                                 "imagenet_labels; print(json.dumps(imagenet_labels()))").stdout.splitlines()[-1])
    assert len(labels) == 1000 and labels[0].startswith("tench") and labels[281].startswith("tabby")
    for photo in ("chelsea.png", "coffee.png"):
        block = proc.stdout.split(f"{photo}:\n", 1)[1].splitlines()[:5]
        assert [line.split(".", 1)[0].strip() for line in block] == ["1", "2", "3", "4", "5"]
        for line in block:
            label = line.split(". ", 1)[1].rsplit(" (class ", 1)[0]
            index = int(line.rsplit("(class ", 1)[1].split(")")[0])
            assert labels[index] == label
    assert "random weights" in proc.stdout and "deploy preprocessing (short side 256, bilinear" in proc.stdout


def test_paddleclas_named_weights_load_and_wrong_ones_are_refused(built: Built, tmp_path: Path) -> None:
    proc = in_image(built.image, tmp_path, """
import paddle
from benchmarks.hgnet.model import pphgnet
state = pphgnet("tiny").state_dict()
# Names as PaddleClas's PPHGNet saves them.
for key in ("stem.0.conv.weight", "stem.2.bn._variance", "stages.0.blocks.0.layers.4.conv.weight",
            "stages.1.downsample.conv.weight", "stages.2.blocks.1.aggregation_conv.bn._mean",
            "stages.3.blocks.0.att.conv.bias", "last_conv.weight", "fc.weight", "fc.bias"):
    assert key in state, key
paddle.save(state, "/workspace/PPHGNet_tiny_pretrained.pdparams")
state["stages.0.blocks.0.att.conv.b"] = state.pop("stages.0.blocks.0.att.conv.bias")
paddle.save(state, "/workspace/renamed.pdparams")
""")
    assert proc.returncode == 0, proc.stderr[-2000:]
    weights = "/workspace/PPHGNet_tiny_pretrained.pdparams"
    good, result = bench(built.image, tmp_path, "--mode", "infer", "--weights", weights, "--batch-sizes", "1",
                         "--infer-iters", "2", "--backends", "paddle-inference", command="bench-hgnet")
    assert good.returncode == EXIT_OF_VERDICT[result["verdict"]] != 2, good.stderr[-1500:]
    bad, _ = bench(built.image, tmp_path, "--mode", "infer", "--weights", "/workspace/renamed.pdparams",
                   command="bench-hgnet")
    assert bad.returncode != 0
    assert "does not fit PP-HGNet tiny: 1 missing" in bad.stdout + bad.stderr


def test_gpu_and_tensorrt_paths_report_not_available(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, "--mode", "infer", "--backends", "paddle-trt,tensorrt",
                         "--batch-sizes", "1", "--infer-iters", "2", command="bench-hgnet")
    assert proc.returncode == 3 and result["verdict"] == "NOT PROVEN", proc.stderr[-1500:]  # no cpu gate ran
    infer = result["results"]["infer"]
    assert infer["paddle-trt"]["fp32"] == {"status": "not available", "reason": "Paddle-TRT needs a GPU"}
    assert infer["tensorrt"]["fp32"] == {"status": "not available", "reason": "TensorRT needs a GPU"}
