"""bench-rn50 in the built image: gates on the cpu profile, ASP 2:4, convergence, GPU paths, failures."""

import json
import subprocess
from pathlib import Path

from tests.integration.conftest import Built, docker


def bench(image: str, work: Path, *args: str, command: str = "bench-rn50", timeout: int = 600):
    """Run a bench command in the image with /workspace on the host; return the process and result.json."""
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o777)
    proc = docker("run", "--rm", "--network", "none", "-e", "NGC_PADDLE_QUIET=1", "-v", f"{work}:/workspace",
                  image, command, "--output", "/workspace/out", *args, check=False, timeout=timeout)
    results = sorted((work / "out").glob("*/result.json"))
    return proc, (json.loads(results[-1].read_text()) if results else None)


def in_image(image: str, work: Path, script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    flags = [f for k, v in (env or {}).items() for f in ("-e", f"{k}={v}")]
    return docker("run", "--rm", "--network", "none", "-e", "NGC_PADDLE_QUIET=1", "-e", "PYTHONPATH=/opt/ngc-paddle",
                  *flags, "-v", f"{work}:/workspace", image, "python", "-W", "ignore", "-c", script,
                  check=False, timeout=600)


def test_default_run_trains_infers_and_passes_cpu_gates(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert result["config"]["device"] == "cpu" and result["passed"]
    train = result["results"]["train"]["fp32"]
    assert train["ips"] > 0 and train["steps"] == result["config"]["steps"]
    assert set(train["latency_ms"]) == {"mean", "p50", "p90", "p95", "p99"}
    infer = result["results"]["infer"]["paddle-inference"]["fp32"]
    assert set(infer) == {"bs1", "bs8"}
    verdicts = {g["gate"]: g for g in result["gates"]}
    cpu = [g for g in verdicts.values() if g["profile"] == "cpu"]
    assert cpu and all(g["status"] == "PASS" for g in cpu), cpu
    run = next((tmp_path / "out").glob("rn50-*"))
    assert {"result.json", "result.md", "throughput.png", "dllogger.jsonl"} <= {p.name for p in run.iterdir()}
    lines = (run / "dllogger.jsonl").read_text().splitlines()
    assert lines and all(line.startswith("DLLL {") for line in lines)
    assert "PASS" in proc.stdout and "gates against profile cpu" in proc.stdout


def test_asp_prunes_to_2_4_and_training_keeps_the_pattern(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, "--mode", "train", "--asp", "--steps", "3", "--warmup", "0",
                         "--image-size", "64", "--num-classes", "4", "--checkpoint-dir", "/workspace/ck")
    assert proc.returncode == 0, proc.stderr[-2000:]
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
                         "--num-classes", "4", "--lr", "0.5")
    assert proc.returncode == 0, proc.stderr[-2000:]
    train = result["results"]["train"]["fp32"]
    assert result["config"]["loader"] == "dali"
    losses = train["losses"]
    assert train["loss_last"] < 0.6 * losses[0], losses  # ln(4) = 1.39 at the start


def test_gpu_paths_report_not_available_here(built: Built, tmp_path: Path) -> None:
    proc, result = bench(built.image, tmp_path, "--mode", "infer", "--backends", "paddle-inference,paddle-trt",
                         "--batch-sizes", "1", "--infer-iters", "4")
    assert proc.returncode == 0, proc.stderr[-2000:]
    trt = result["results"]["infer"]["paddle-trt"]["fp32"]
    assert trt == {"status": "not available", "reason": "Paddle-TRT needs a GPU"}
    markdown = (next((tmp_path / "out").glob("rn50-*")) / "result.md").read_text()
    assert "not available: Paddle-TRT needs a GPU" in markdown


def test_failed_gate_and_bad_input_exit_codes(built: Built, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    tmp_path.mkdir(exist_ok=True)
    baseline.write_text(json.dumps({"results": {"infer": {"paddle-inference": {"fp32": {"bs1": {"ips": 1e9}}}}}}))
    proc, result = bench(built.image, tmp_path, "--mode", "infer", "--batch-sizes", "1", "--infer-iters", "4",
                         "--baseline", "/workspace/baseline.json")
    assert proc.returncode == 1, proc.stdout[-1500:]
    failed = [g for g in result["gates"] if g["status"] == "FAIL"]
    assert [g["metric"] for g in failed] == ["infer.paddle-inference.fp32.bs1.ips"]
    assert "FAIL     regression infer.paddle-inference.fp32.bs1.ips" in proc.stdout
    for args, needle in ((["--gpus", "1"], "--gpus 1 asked for, but 0 CUDA GPU(s) are visible"),
                         (["--precision", "amp"], "--precision amp needs a GPU"),
                         (["--data", "/nope"], "--data /nope: no such folder")):
        bad, _ = bench(built.image, tmp_path / "bad", *args)
        assert bad.returncode == 2 and bad.stderr.startswith("error:") and needle in bad.stderr, bad.stderr
