"""bench-hgnet's entry: what PP-HGNet brings to the shared benchmark command (its ModelSpec).

Training and inference (Paddle Inference, Paddle-TRT, TensorRT via ONNX, ONNX Runtime) with acceptance
gates; --classify for real images. `python -m benchmarks.hgnet --help`.
"""

import argparse

from benchmarks.harness.cli import entry
from benchmarks.harness.spec import ModelSpec
from ngc_common.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", choices=("tiny", "small", "base"), default="tiny", help="PP-HGNet variant")
    parser.add_argument("--weights", help="PaddleClas .pdparams (e.g. PPHGNet_tiny_pretrained.pdparams)")
    parser.add_argument("--ssld", action="store_true", help="the weights are the _ssld (distilled) ones")
    parser.add_argument("--classify", nargs="+", metavar="IMAGE", help="print the top-5 ImageNet labels and exit")
    parser.add_argument("--eval-data", help="ImageNet-1k validation folder: measure top-1/top-5 (needs --weights)")
    parser.add_argument("--eval-limit", type=int, help="evaluate only the first N images")


def before_run(args: argparse.Namespace) -> int | None:
    if args.classify:
        from benchmarks.hgnet.evaluate import classify

        return classify(args.classify, args.model, args.weights)
    if args.eval_data and not args.weights:
        raise InputError("--eval-data: needs --weights (trained PaddleClas weights); fix: add --weights FILE")
    return None


def build(args, num_classes: int, data_format: str):
    from benchmarks.hgnet.evaluate import load_model
    from benchmarks.hgnet.model import pphgnet

    if args.weights and num_classes == 1000:
        return load_model(args.model, args.weights, data_format)
    return pphgnet(args.model, num_classes, data_format)


def extra_results(args) -> dict:
    if not args.eval_data:
        return {}
    from benchmarks.hgnet.evaluate import accuracy

    return {"eval": accuracy(args.eval_data, args.model, args.weights, limit=args.eval_limit)}


SPEC = ModelSpec(name="hgnet", title="PP-HGNet", build=build,
                 backends_cpu=["paddle-inference", "onnxruntime"],
                 backends_gpu=["paddle-inference", "paddle-trt", "tensorrt", "onnxruntime"],
                 gpu_batch=128, infer_image_size=224,
                 add_arguments=add_arguments, before_run=before_run,
                 config_extra=lambda args: {"model": args.model, "ssld": args.ssld}, extra_results=extra_results)

if __name__ == "__main__":
    entry(SPEC)
