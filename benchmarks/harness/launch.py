"""Data-parallel runs: re-run the same command under paddle.distributed.launch, and join its group.

Why: one command serves one process and many; the process that a user starts re-runs itself under
Paddle's launcher (one process per GPU with NCCL; --procs processes per node on a CPU with gloo, the
CPU threads split between them), and each launched process joins the process group before it trains
its shard. A training run first measures the one-process reference in the same job (one process on one
GPU, or on one rank's share of the CPU threads), which rank 0 reads to report (and, where DLE published
the scaling, gate) the scaling efficiency. The long form: docs/benchmarks.md, section "Data-parallel runs".
"""

import contextlib
import dataclasses
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import launch_watch, library_noise
from benchmarks.harness.model_spec import ModelSpec
from benchmarks.harness.run_config import RunConfig
from ngc_common import stop
from ngc_common.errors import InputError
from ngc_common.exit_codes import ExitCode, for_verdict

REPO = Path(__file__).resolve().parents[2]  # the folder that holds `benchmarks` (/opt/ngc-paddle in the image)
REFERENCE_ENV = "NGC_PADDLE_DP_REFERENCE"  # the one-process reference's training img/s by precision (JSON)
LAUNCH_LOGS = "launch-logs"  # under --output: the launcher's and each rank's log (workerlog.N)
LAUNCHER_LOG = "launcher.log"  # the launcher's own output, in LAUNCH_LOGS
REFERENCE_LOG = "reference.log"  # the one-process reference's output, in LAUNCH_LOGS
REFERENCE_STEPS = 20  # the reference's measured steps at most (img/s needs no run as long as the ranks')


def launched() -> bool:
    """Is this process a rank started by paddle.distributed.launch?"""
    return "PADDLE_TRAINER_ID" in os.environ


def per_rank_threads(config: RunConfig) -> int:
    """Each CPU rank's share of the run's threads (run_config refused fewer threads than processes)."""
    return max(1, config.threads // max(1, config.procs))


def loopback(master: str) -> bool:
    """Is the --master HOST:PORT on this host's loopback (the ranks then advertise 127.0.0.1 too)?"""
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(master.rsplit(":", 1)[0].strip("[]")).is_loopback
    return master.rsplit(":", 1)[0] == "localhost"


def launcher_command(config: RunConfig, spec: ModelSpec, argv: list[str]) -> list[str]:
    """paddle.distributed.launch running this command on every rank: one per GPU, or --procs on a CPU node."""
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--max_restart", "0",
           "--log_dir", str(Path(config.output) / LAUNCH_LOGS), "--log_overwrite", "True"]
    if config.gpu:
        cmd += ["--devices", ",".join(map(str, range(config.gpus)))]
    else:
        cmd += ["--nproc_per_node", str(config.procs)]
    if config.nnodes > 1:
        cmd += ["--nnodes", str(config.nnodes), "--master", str(config.master)]
        if loopback(str(config.master)):  # nodes on one host (containers on the host network): no other address
            cmd += ["--host", "127.0.0.1"]
    extra = [] if config.gpu else ["--threads", str(per_rank_threads(config))]  # the last --threads given wins
    # The launcher takes a script, not -m (an unknown option sends it to its legacy launcher): the model's __main__.py,
    # which imports the harness through PYTHONPATH (relaunch_distributed puts the repository there).
    return [*cmd, str(REPO / "benchmarks" / spec.name / "__main__.py"), *argv, *extra]


def reference_command(spec: ModelSpec, argv: list[str], config: RunConfig, folder: str) -> list[str]:
    """The one-process reference: this command's training alone, in one process, writing under `folder`. On GPUs
    on one GPU for as many steps as the ranks (its figure is the denominator of a gated scaling efficiency); on a
    CPU on one rank's share of the threads, for at most REFERENCE_STEPS measured steps (a reported figure only)."""
    cmd = [sys.executable, "-m", f"benchmarks.{spec.name}", *argv, "--mode", "train", "--nnodes", "1",
           "--output", folder]
    if config.gpu:
        return [*cmd, "--gpus", "1", "--steps", str(config.steps)]
    return [*cmd, "--procs", "1", "--threads", str(per_rank_threads(config)),
            "--steps", str(min(config.steps, REFERENCE_STEPS))]


def reference_ips(spec: ModelSpec, argv: list[str], config: RunConfig, log: Path) -> dict[str, float]:
    """The one-process reference's img/s by precision (reference_command), its output in `log`; {} where it wrote
    no figures: the scaling efficiency is then not reported (nor gated: NOT RUN where a gate applies)."""
    on = "one GPU" if config.gpu else f"{per_rank_threads(config)} thread(s)"
    with tempfile.TemporaryDirectory(prefix="ngc-dp-reference-") as folder:
        cmd = reference_command(spec, argv, config, folder)
        print(f"data-parallel: the one-process reference first ({on}, its output: {log})", flush=True)
        stop.set_on_stop(lambda _name: "during the one-process reference, before the ranks started: no report")
        with open(log, "wb") as out:
            code = subprocess.run(cmd, check=False, stdout=out, stderr=subprocess.STDOUT).returncode
        results = sorted(Path(folder).glob("*/result.json"))
        if not results:
            print(f"data-parallel: the one-process reference wrote no result (exit {code}, its output: {log}); the "
                  "scaling efficiency will not be reported", file=sys.stderr, flush=True)
            return {}
        train = json.loads(results[-1].read_text())["results"].get("train", {})
        return {precision: figures["ips"] for precision, figures in train.items() if "ips" in figures}


def relaunch_distributed(config: RunConfig, spec: ModelSpec) -> int | None:
    """The launcher's exit code when this run needs several processes; None when it runs here, in one.
    (run_config.resolve refused --nnodes > 1 without --master, and --procs on GPUs.)"""
    per_node = config.gpus if config.gpu else config.procs
    if (per_node <= 1 and config.nnodes <= 1) or launched():
        return None
    if not config.gpu and config.procs > config.threads:  # a rank's --threads is its share: checked here, once
        raise InputError(f"--procs {config.procs} with {config.threads} CPU thread(s): each process needs one thread "
                         "at least; fix: lower --procs or raise --threads")
    argv = sys.argv[1:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    if config.nnodes <= 1 or loopback(str(config.master)):  # every rank on this host: gloo on the loopback (which
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # works where the host name resolves to nothing: --network none)
    output, logs = Path(config.output), Path(config.output) / LAUNCH_LOGS
    shutil.rmtree(logs, ignore_errors=True)  # this run's logs only: the launcher appends, and they are followed
    logs.mkdir(parents=True)
    if config.mode in ("train", "all"):
        env[REFERENCE_ENV] = json.dumps(reference_ips(spec, argv, config, logs / REFERENCE_LOG))
    before = set(output.glob(f"{spec.name}-*"))
    proc = launch_watch.start(launcher_command(config, spec, argv), env, logs / LAUNCHER_LOG)

    def written() -> list[Path]:
        return sorted(p / "result.json" for p in set(output.glob(f"{spec.name}-*")) - before
                      if (p / "result.json").is_file())

    def on_stop(signal_name: str) -> str:  # the ranks get the signal; rank 0 writes its INTERRUPTED report
        launch_watch.stop_group(proc, logs, getattr(signal, signal_name), launch_watch.STOP_WAIT_S)
        reports = written()
        return f"partial results: {reports[-1]}" if reports else "no rank had written a report"

    stop.set_on_stop(on_stop)
    where = f"{config.nnodes} node(s), master {config.master}" if config.nnodes > 1 else "one node"
    watched = launch_watch.watch(proc, logs, logs / LAUNCHER_LOG, per_node, where)
    stop.wait_if_stopping()  # the launcher ended because of a stop: the stop ends this process, with its report
    if watched.problem:
        print(f"bench-{spec.name}: {watched.problem}", file=sys.stderr, flush=True)
        return watched.code
    reports = written()
    if watched.code == 0 and reports:  # rank 0's verdict (a rank exits 0 once its report is written)
        return for_verdict(json.loads(reports[-1].read_text())["verdict"])
    if watched.code == 0 and config.nnodes > 1 and "0" not in {p.name.removeprefix(launch_watch.JOINED)
                                                                for p in logs.glob(f"{launch_watch.JOINED}*")}:
        print(f"bench-{spec.name}: this node's ranks finished; rank 0's report is on the node that ran it",
              flush=True)
        return ExitCode.PASS
    print(f"bench-{spec.name}: the launcher ended with exit {watched.code} and no report; its output: "
          f"{logs / LAUNCHER_LOG}", file=sys.stderr, flush=True)
    return watched.code or ExitCode.FAIL


def reference() -> dict[str, float]:
    """In a rank: the one-process reference the launching process measured ({} where it failed)."""
    try:
        found = json.loads(os.environ.get(REFERENCE_ENV, "{}"))
    except ValueError:
        return {}
    return {k: float(v) for k, v in found.items() if isinstance(v, int | float)} if isinstance(found, dict) else {}


def join(config: RunConfig) -> tuple[int, int, RunConfig]:
    """(rank, world size, config) of this process; one started by the launcher joins its group first, and on GPUs
    its config (a new one) counts the whole run's devices in `gpus` (each launched process may see one device)."""
    import paddle.distributed as dist

    if not launched():
        return 0, dist.get_world_size() if dist.is_initialized() else 1, config
    library_noise.quiet_flags_banner(dist.init_parallel_env)
    world = dist.get_world_size()
    logs = os.environ.get("PADDLE_LOG_DIR")  # the launcher's --log_dir: the launching process counts who joined
    if logs and Path(logs).is_dir():
        (Path(logs) / f"{launch_watch.JOINED}{dist.get_rank()}").write_text(str(os.getpid()))
    return dist.get_rank(), world, dataclasses.replace(config, gpus=world) if config.gpu else config
