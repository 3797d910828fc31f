"""Which precision TensorRT really built each compute layer in, read from its engine inspector.

Why: asking TensorRT for FP16 or INT8 allows those kernels; it does not force them. Where a layer has no
faster kernel at that precision (or no INT8 scales), TensorRT keeps it in FP32, and a figure labelled
"fp16" could be FP32 work. The engine inspector (built with ProfilingVerbosity.DETAILED, its execution
context set so formats are resolved) lists every layer with its inputs' and outputs' "Format/Datatype";
the compute layers (convolutions, GEMMs, matrix multiplies) are counted by the datatype of their first
input (an INT8 kernel reads INT8 and may write FP32 where no quantize follows).
A run asked for fp16 or int8 in which no compute layer runs at that precision is refused (NotAvailable),
never reported under that label; otherwise the result carries the counts ("layer_precisions").
"""

import json
import re
from collections import Counter

COMPUTE = re.compile(r"convolution|gemm|matrixmultiply|fullyconnected", re.I)
DATATYPES = (("int8", re.compile(r"\bint8\b", re.I)), ("fp16", re.compile(r"\b(fp16|half)\b", re.I)),
             ("bf16", re.compile(r"\bbf16\b", re.I)), ("fp32", re.compile(r"\b(fp32|float)\b", re.I)))


def _datatype(text: str) -> str:
    return next((name for name, pattern in DATATYPES if pattern.search(text)), "unknown")


def compute_layer_precisions(engine_information: str) -> Counter:
    """Compute layers per input datatype, from the inspector's JSON (LayerInformationFormat.JSON, DETAILED)."""
    info = json.loads(engine_information)
    counts: Counter = Counter()
    for layer in info.get("Layers", []):
        if not isinstance(layer, dict):  # LAYER_NAMES_ONLY verbosity lists bare names: no precision to read
            continue
        kind = f"{layer.get('LayerType', '')} {layer.get('ParameterType', '')}"
        inputs = layer.get("Inputs") or []
        if COMPUTE.search(kind) and inputs and isinstance(inputs[0], dict):
            counts[_datatype(str(inputs[0].get("Format/Datatype", "")))] += 1
    return counts


def checked(wanted: str, counts: Counter) -> dict[str, int]:
    """The counts to report, once at least one compute layer runs at `wanted`; NotAvailable-worthy ValueError
    (with the counts) otherwise. fp32 needs no proof (TensorRT never lowers precision unasked)."""
    if wanted == "fp32":
        return dict(counts)
    if not counts:
        raise ValueError("the engine inspector listed no compute layer with its precision (engine built without "
                         "ProfilingVerbosity.DETAILED?)")
    if counts.get(wanted, 0) == 0:
        found = ", ".join(f"{n} {name}" for name, n in counts.most_common())
        raise ValueError(f"TensorRT built no {wanted.upper()} compute layer ({found}): not reported as {wanted}")
    return dict(counts)
