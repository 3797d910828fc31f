"""bench-rn50 in the built image: gate mechanics and exit codes, ASP 2:4, convergence, GPU paths, failures.

These tests check that gates are evaluated, reported and turned into exit codes; none asserts how
fast this machine is (a gate forced to pass or fail does that without depending on the host).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from benchmarks.harness import cpu_kind
from ngc_common.bench_result import LATENCY_KEYS, is_efficiency
from tests.integration.conftest import EXIT_OF_VERDICT, REPO, BenchRun, Built, assert_cpu_floors_decide, docker
from tests.unit.fuzz_support import bench_result

# Containers that write into a mounted host folder run as the invoking user, as the README says.
AS_ME = ("--user", f"{os.getuid()}:{os.getgid()}")


def bench(image: str, work: Path, *args: str, command: str = "bench-rn50", timeout: int = 600,
          flags: tuple[str, ...] = ()):
    """Run a bench command in the image with /workspace on the host; return the process and result.json."""
    work.mkdir(parents=True, exist_ok=True)
    proc = docker("run", "--rm", "--network", "none", *AS_ME, "-e", "NGC_PADDLE_QUIET=1", *flags, "-v",
                  f"{work}:/workspace", image, command, "--output", "/workspace/out", *args, check=False,
                  timeout=timeout)
    results = sorted((work / "out").glob("*/result.json"))
    return proc, (json.loads(results[-1].read_text()) if results else None)


def in_image(image: str, work: Path, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    flags = [f for k, v in (env or {}).items() for f in ("-e", f"{k}={v}")]
    return docker("run", "--rm", "--network", "none", *AS_ME, "-e", "NGC_PADDLE_QUIET=1", "-e",
                  "PYTHONPATH=/opt/ngc-paddle",
                  *flags, "-v", f"{work}:/workspace", image, "python", "-W", "ignore", "-c", script,
                  check=False, timeout=600)


@pytest.mark.alone
def test_default_run_trains_infers_and_evaluates_the_cpu_gates(rn50_default: BenchRun) -> None:
    proc, result, work = rn50_default
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == EXIT_OF_VERDICT[result["verdict"]], (proc.returncode, result["verdict"])
    assert result["config"]["device"] == "cpu"
    cpu = assert_cpu_floors_decide(result, floors=2)
    assert result["config"]["threads"] >= 1 and result["environment"]["threads"] == result["config"]["threads"]
    train = result["results"]["train"]["fp32"]
    assert train["ips"] > 0 and train["steps"] == result["config"]["steps"]
    assert set(train["latency_ms"]) == {"mean", "p50", "p90", "p95", "p99"}
    assert train["flops_per_sample"] > 0 and train["efficiency"] > 0 and train["peak_tflops"] > 0
    assert train["achieved_tflops"] == train["ips"] * train["flops_per_sample"] / 1e12
    peak = result["results"]["peak"]["float32"]  # both rooflines: the fastest kind is the hardware
    assert peak["peak_flops"] == max(peak["kind_peak_flops"].values()) > 0
    assert {"paddle", "paddle-inference", "blas"} <= set(peak["kind_peak_flops"])
    assert peak["kinds"]["cublas"].startswith("not available: cuBLAS needs a GPU")
    assert train["efficiency"] <= 1.0 and train["efficiency_paddle"] <= 1.0
    infer = result["results"]["infer"]["paddle-inference"]["fp32"]
    assert set(infer) == {"bs1", "bs8"} and all(r["efficiency"] > 0 for r in infer.values())
    assert {r["engine"] for r in infer.values()} == {"paddle-inference onednn fp32"}
    # DLE's recipe, inside its warm-up (an epoch of ImageNet-1k at batch 16 is 80072 steps), and its eval pass
    assert "DeepLearningExamples" in result["config"]["recipe"]["source"] and result["config"]["recipe"]["lr"] == 0.256
    assert train["lr_warmup_steps"] == 5 * (1_281_167 // 16) and 0 < train["lr_last"] < train["lr_peak"]
    evaluated = result["results"]["eval"]["fp32"]
    assert "synthetic" in evaluated["data"] and 0 <= evaluated["top1"] <= evaluated["top5"] <= 100
    assert result["config"]["eval"] is False  # a synthetic evaluation gates nothing
    assert all(is_efficiency(g["metric"]) for g in cpu)
    run = next((work / "out").glob("rn50-*"))
    assert {"result.json", "result.md", "throughput.png", "dllogger.jsonl"} <= {p.name for p in run.iterdir()}
    markdown = (run / "result.md").read_text()
    assert f"**Verdict: {result['verdict']}**" in markdown and "TFLOP/s" in markdown and "of the hardware" in markdown \
        and "of Paddle's kernels" in markdown
    lines = (run / "dllogger.jsonl").read_text().splitlines()
    assert lines and all(line.startswith("DLLL {") for line in lines)
    assert "gates against profile cpu" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == f"== verdict: {result['verdict']}" + (
        ": " + "; ".join(result["verdict_reasons"]) if result["verdict_reasons"] else "")


def forced_gates(tmp_path: Path, minimum: float) -> str:
    """The committed gates file with the cpu inference gate set to `minimum`: forced to pass or fail."""
    table = yaml.safe_load((REPO / "benchmarks" / "gates.yaml").read_text())
    when = {"gpus": 0, "cpu_kind": cpu_kind.detect(environ={}).name}  # the container's kind: this CPU, no cap
    table["models"]["rn50"]["cpu"] = [{"name": "forced", "metric": "infer.paddle-inference.fp32.bs1.efficiency",
                                       "min": minimum, "when": when, "source": "test"}]
    (tmp_path / "gates.yaml").write_text(yaml.safe_dump(table))
    return "/workspace/gates.yaml"


@pytest.mark.alone
def test_a_gate_forced_to_fail_exits_1_and_forced_to_pass_exits_0(built: Built, tmp_path: Path) -> None:
    quick = ("--mode", "infer", "--batch-sizes", "1", "--infer-iters", "2")
    failing, result = bench(built.image, tmp_path, *quick, "--gates", forced_gates(tmp_path, 1e9))
    assert failing.returncode == 1 and result["verdict"] == "FAIL", failing.stdout[-1500:]
    assert [g["status"] for g in result["gates"] if g["gate"] == "forced"] == ["FAIL"]
    assert "FAIL     forced:" in failing.stdout and "== verdict: FAIL: forced:" in failing.stdout
    passing, result = bench(built.image, tmp_path, *quick, "--gates", forced_gates(tmp_path, 0.0))
    assert passing.returncode == 0 and result["verdict"] == "PASS", passing.stdout[-1500:]


def test_no_applicable_gate_is_not_proven_with_exit_3(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, "--mode", "infer", "--batch-sizes", "1", "--infer-iters", "2",
                         "--profile", "H200")  # a profile without gates of its own
    assert proc.returncode == 3 and result["verdict"] == "NOT PROVEN", proc.stdout[-1500:]
    assert "no acceptance gate applies" in result["verdict_reasons"][0]
    assert "== verdict: NOT PROVEN: no acceptance gate applies" in proc.stdout


def test_threads_follow_the_cpu_quota_and_the_users_setting(built: Built, tmp_path: Path) -> None:
    quick = ("--mode", "infer", "--batch-sizes", "1", "--infer-iters", "2")
    _, quota = bench(built.image, tmp_path / "quota", *quick, flags=("--cpus", "1"))
    assert quota["config"]["threads"] == 1 and quota["config"]["threads_from"] == "detected at start-up"
    _, given = bench(built.image, tmp_path / "given", *quick, flags=("-e", "OMP_NUM_THREADS=3"))
    assert given["config"]["threads"] == 3 and given["config"]["threads_from"] == "OMP_NUM_THREADS"
    _, flag = bench(built.image, tmp_path / "flag", *quick, "--threads", "2")
    assert flag["config"]["threads"] == 2 and flag["config"]["threads_from"] == "--threads"
    banner = docker("run", "--rm", "--cpus", "1", built.image, "true", check=False).stderr
    assert "CPU threads    1 " in banner and "the CPUs this container may use" in banner


def test_smoke_mode_runs_through_in_one_tiny_step(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, "--smoke")
    assert proc.returncode == 0 and result["verdict"] == "SMOKE", proc.stderr[-1500:]
    assert result["config"]["steps"] == 1 and result["results"]["train"]["fp32"]["steps"] == 1
    assert set(result["results"]["infer"]["paddle-inference"]["fp32"]) == {"bs1"}


def test_asp_prunes_to_2_4_and_training_keeps_the_pattern(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, "--mode", "train", "--asp", "--steps", "3", "--warmup", "0",
                         "--image-size", "64", "--num-classes", "4", "--checkpoint-dir", "/workspace/ck")
    assert proc.returncode == 3 and result["verdict"] == "NOT PROVEN", proc.stderr[-2000:]  # 64 px: no cpu gate
    assert result["config"]["asp"] and result["results"]["train"]["fp32"]["loss_finite"]
    check = in_image(built.image, tmp_path, """
import json, paddle
from benchmarks.rn50.model import resnet50
from benchmarks.harness.training import sparsity_24
m = resnet50(4)
m.set_state_dict(paddle.load("/workspace/ck/model.pdparams"))
trained = sparsity_24(m)
w = m.stages[0][0].conv2.conv.weight.numpy(); w[0, 0:4, 0, 0] = 1.0
m.stages[0][0].conv2.conv.weight.set_value(w)
broken = sparsity_24(m)
print(json.dumps({"pruned": len(trained), "all_24": all(trained.values()),
                  "broken_detected": sum(not v for v in broken.values())}))
""", env={"FLAGS_enable_pir_api": "0"})
    assert check.returncode == 0, check.stderr[-2000:]
    found = json.loads(check.stdout.strip().splitlines()[-1])
    # every conv and linear weight but the 3-channel stem (ASP skips inputs narrower than 4)
    assert found["pruned"] == 53 and found["all_24"]
    assert found["broken_detected"] == 1


def test_training_on_a_learnable_dataset_lowers_the_loss(built: Built, tmp_path: Path) -> None:
    made = in_image(built.image, tmp_path, "from benchmarks.harness.data import make_image_folder; "
                    "make_image_folder('/workspace/images', classes=4, per_class=32, size=(96, 128))")
    assert made.returncode == 0, made.stderr
    proc, result = bench(built.image, tmp_path, "--mode", "train", "--data", "/workspace/images", "--loader", "dali",
                         "--image-size", "64", "--batch-size", "16", "--steps", "24", "--warmup", "0",
                         "--num-classes", "4", "--lr", "0.5", "--zero-init-residual", "--lr-warmup-epochs", "1",
                         "--epochs", "4", "--eval-data", "/workspace/images")
    # 128 images at batch 16: 8 steps an epoch, so the warm-up (one epoch here) ends at step 8 of 24, then cosine
    assert proc.returncode == 3, proc.stderr[-2000:]  # a 64 px run: no acceptance gate applies
    train = result["results"]["train"]["fp32"]
    assert result["config"]["loader"] == "dali"
    assert (train["lr_warmup_steps"], train["lr_total_steps"]) == (8, 32) and train["lr_peak"] == 0.5 * 16 / 256
    losses = train["losses"]
    assert train["loss_last"] < 0.6 * losses[0], losses  # ln(4) = 1.39 at the start
    evaluated = result["results"]["eval"]["fp32"]  # the eval pass on the folder (4 classes: top-5 always hits)
    assert evaluated["images"] == 128 and evaluated["top5"] == 100.0 and evaluated["data"] == "/workspace/images"
    assert result["config"]["eval"] is True


def test_gpu_paths_report_not_available_here(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, "--mode", "infer", "--backends", "paddle-inference,paddle-trt",
                         "--batch-sizes", "1", "--infer-iters", "4", "--infer-image-size", "224",
                         "--profile", "A100-80GB")
    assert proc.returncode == 3 and result["verdict"] == "NOT PROVEN", proc.stderr[-2000:]
    trt = result["results"]["infer"]["paddle-trt"]["fp32"]
    assert trt == {"status": "not available", "reason": "Paddle-TRT needs a GPU"}
    markdown = (next((tmp_path / "out").glob("rn50-*")) / "result.md").read_text()
    assert "not available: Paddle-TRT needs a GPU" in markdown
    latency = next(g for g in result["gates"] if g["gate"] == "Paddle-TRT TF32 latency bs1 (ms)")
    assert latency["status"] == "NOT RUN" and "Paddle-TRT needs a GPU" in latency["reason"]


@pytest.mark.alone
def test_failed_gate_and_bad_input_exit_codes(built: Built, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    tmp_path.mkdir(exist_ok=True)
    previous = bench_result("rn50")  # a result.json as report.write writes it (made-up figures), one of them huge
    previous["environment"]["hardware"] = None  # compared whatever this host is
    # bs1's throughput huge (the one figure that must FAIL), its latencies too (a lower latency is no regression);
    # whole figures, as the baseline reader accepts only what the harness writes
    figures = {"ips": 1e9, "latency_ms": dict.fromkeys(LATENCY_KEYS, 1e9)}
    previous["results"] = {"infer": {"paddle-inference": {"fp32": {"bs1": figures}}}}
    baseline.write_text(json.dumps(previous))
    proc, result = bench(built.image, tmp_path, "--mode", "infer", "--batch-sizes", "1", "--infer-iters", "4",
                         "--baseline", "/workspace/baseline.json")
    assert proc.returncode == 1, proc.stdout[-1500:]
    failed = [g for g in result["gates"] if g["status"] == "FAIL"]
    assert [g["metric"] for g in failed] == ["infer.paddle-inference.fp32.bs1.ips"]
    assert "FAIL     regression infer.paddle-inference.fp32.bs1.ips" in proc.stdout
    (tmp_path / "bad").mkdir()
    gates_text = (REPO / "benchmarks" / "gates.yaml").read_text()
    first_cpu_min = yaml.safe_load(gates_text)["models"]["rn50"]["cpu"][0]["min"]  # the gate models.rn50.cpu.0
    planted = gates_text.replace(f"min: {first_cpu_min}", 'min: "fast"', 1)
    assert planted != gates_text
    (tmp_path / "bad" / "gates.yaml").write_text(planted)
    for args, needle in ((["--gpus", "1"], "--gpus 1 asked for, but 0 CUDA GPU(s) are visible"),
                         (["--precision", "amp"], "--precision amp needs a GPU"),
                         (["--data", "/nope"], "--data /nope: no such folder"),
                         (["--gates", "/workspace/gates.yaml"], "/workspace/gates.yaml: models.rn50.cpu.0.min: "
                          "Input should be a valid number, not 'fast'")):
        bad, _ = bench(built.image, tmp_path / "bad", *args)
        assert bad.returncode == 2 and bad.stderr.startswith("error:") and needle in bad.stderr, bad.stderr


def test_int8_for_paddle_trt_is_a_ptq_program_calibrated_on_real_images(built: Built, tmp_path: Path) -> None:
    """paddle.quantization.PTQ on CPU (the calibration and export need no GPU): the exported PIR program holds
    quantize/dequantize ops, so Paddle-TRT gets its INT8 scales from it; without images INT8 is refused."""
    check = in_image(built.image, tmp_path, """
import json, tempfile
from pathlib import Path
from benchmarks.rn50.model import resnet50
from benchmarks.harness import data, inference, paddle_engines, quantization
from benchmarks.harness.paddle_engines import NotAvailable
data.make_image_folder("/workspace/calib", classes=2, per_class=16, size=(48, 64))
model = resnet50(4)
source = quantization.calibration_source("/workspace/calib", 32, "NCHW", gpu=False)
programs = quantization.ptq_export(model, source, inference.export, 32, "NCHW", Path(tempfile.mkdtemp()), [1, 4])
try:
    quantization.ptq_export(model, None, inference.export, 32, "NCHW", Path(tempfile.mkdtemp()), [1])
    refused = ""
except NotAvailable as exc:
    refused = str(exc)
print(json.dumps({str(bs): {"suffix": files[0].suffix, "quantized": paddle_engines.is_quantized(files[0]),
                            "fixed_batch": f'[{bs},3,32,32]' in files[0].read_text().replace(" ", ""),
                            "plan": paddle_engines.plan(files[0], "gpu", "int8", trt=True).label}
                  for bs, files in programs.items()} | {"refused": refused}))
""")
    assert check.returncode == 0, check.stderr[-3000:]
    found = json.loads(check.stdout.strip().splitlines()[-1])
    for bs in ("1", "4"):  # one program per batch size, each with its scales and its fixed batch
        assert found[bs] == {"suffix": ".json", "quantized": True, "fixed_batch": True,
                             "plan": "paddle-trt-pir int8"}, found
    assert found["refused"].startswith("INT8 needs real images to calibrate"), found
