"""bench-hgnet's model: what PP-HGNet brings to the shared benchmark command (its ModelSpec).

Training with PaddleClas's PP-HGNet recipe, and inference (Paddle Inference, Paddle-TRT, TensorRT via
ONNX, ONNX Runtime) with acceptance gates; --classify for real images; --eval-data measures the
accuracy of given PaddleClas weights. `python -m benchmarks.hgnet --help`.
"""

from benchmarks.harness.model_registry import register
from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.recipes import PADDLECLAS_PPHGNET
from benchmarks.harness.run_config import Option
from ngc_common.errors import InputError

OPTIONS = (
    Option("--model", "PP-HGNet variant", "tiny", choices=("tiny", "small", "base")),
    Option("--weights", "PaddleClas .pdparams (e.g. PPHGNet_tiny_pretrained.pdparams); with --eval-data: their "
           "top-1/top-5 with PaddleClas's eval transform", metavar="FILE"),
    Option("--ssld", "the weights are the _ssld (distilled) ones", False, flag_kind="switch"),
    Option("--classify", "print the top-5 ImageNet labels of these images and exit", nargs="+", metavar="IMAGE"),
)


def before_run(config) -> int | None:
    own = config.model_options
    if own["classify"]:
        from benchmarks.hgnet.evaluate import classify

        return classify(list(own["classify"]), own["model"], own["weights"])
    if config.eval_data and not own["weights"]:
        raise InputError("--eval-data: needs --weights (trained PaddleClas weights); fix: add --weights FILE")
    return None


def build(config, num_classes: int, data_format: str):
    from benchmarks.hgnet.evaluate import load_model
    from benchmarks.hgnet.model import pphgnet

    if config.model_options["weights"] and num_classes == 1000:
        return load_model(config.model_options["model"], config.model_options["weights"], data_format)
    return pphgnet(config.model_options["model"], num_classes, data_format)


def extra_results(config) -> dict:
    if not config.eval_data:
        return {}
    from benchmarks.hgnet.evaluate import accuracy

    return {"eval": accuracy(config.eval_data, config.model_options["model"], config.model_options["weights"],
                             limit=config.eval_limit)}


SPEC = register(ModelSpec(name="hgnet", title="PP-HGNet", build=build,
                          backends_cpu=["paddle-inference", "onnxruntime"],
                          backends_gpu=["paddle-inference", "paddle-trt", "tensorrt", "onnxruntime"],
                          gpu_batch=128, recipe=PADDLECLAS_PPHGNET, infer_image_size=224, options=OPTIONS,
                          recorded=("model", "ssld"), evaluates_training=False, before_run=before_run,
                          extra_results=extra_results, listed=1))
