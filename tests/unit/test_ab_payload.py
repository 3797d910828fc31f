"""The A/B round loop of the job script (payload.sh), run for real with a fake docker that writes result.json files:
the order of the rounds, the warm-up, both images' facts, the candidate-only environment, a reference that cannot
be pulled, and the whole path from the node's files to the verdict (a planted 2x slowdown FAILs, equal images PASS).
"""

import dataclasses
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from ngc_paddle.host_errors import NgcPaddleError
from ngc_paddle.release.ab import ab_report, compare, plan, rounds
from ngc_paddle.release.fleet.payload import JobSpec, write

CANDIDATE = "127.0.0.1:5019/ngc-paddle@sha256:" + "ab" * 32
REFERENCE = "127.0.0.1:5019/ngc-paddle@sha256:" + "cd" * 32

# A fake docker: logs its command line; `pull` fails for images named in FAKE_PULL_FAIL; `image inspect` answers
# an id (an id answers itself) or a size, and fails for images named in FAKE_GONE; `run ... bench-X --output DIR`
# writes DIR/x-N/result.json whose train img/s is FAKE_IPS_<side> (side: the image's digest begins with ab, or its
# id with 11: candidate; else reference), times NGC_PADDLE_BENCH_PLANTED_SLOWDOWN's inverse when the container got
# it (-e), with a little noise per call.
FAKE = r'''#!/usr/bin/env python3
import json, os, random, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(" ".join(__import__("shlex").quote(a) for a in ["docker", *args]) + "\n")
if args[0] == "pull":
    sys.exit(1 if args[-1] in os.environ.get("FAKE_PULL_FAIL", "").split() else 0)
if args[:2] == ["image", "inspect"]:
    ref = args[-1]  # an image id answers itself; one named in FAKE_GONE is not here
    if ref in os.environ.get("FAKE_GONE", "").split():
        sys.exit(1)
    print("952438573" if "Size" in " ".join(args) else ref if ref.startswith("sha256:") else
          "sha256:" + ("11" if "@sha256:ab" in ref else "22") * 32)
    sys.exit(0)
if args[0] == "version":
    print("26.1.5"); sys.exit(0)
if args[0] != "run":
    sys.exit(0)
mount = args[args.index("-v") + 1].split(":")[0]
image = next(a for a in args if "@sha256:" in a or a.startswith("sha256:"))  # a digest, or an id (bench-compare)
command = args[args.index(image) + 1:]
env = [args[i + 1] for i, a in enumerate(args) if a == "-e"]
if command[0].startswith("bench-"):
    out = Path(command[command.index("--output") + 1].replace("/workspace/out", mount, 1))
    side = "candidate" if "@sha256:ab" in image or image == "sha256:" + "11" * 32 else "reference"
    ips = float(os.environ[f"FAKE_IPS_{side.upper()}"])
    for e in env:
        if e.startswith("NGC_PADDLE_BENCH_PLANTED_SLOWDOWN="):
            ips /= float(e.split("=", 1)[1])
    ips *= 1 + random.uniform(-0.01, 0.01)
    run = out / f"rn50-{len(list(out.glob('*'))) if out.exists() else 0}"
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps({"results": {"train": {"fp32": {"ips": ips}}, "infer": {
        "paddle-inference": {"fp32": {"bs8": {"ips": 4 * ips, "engine": "paddle-inference onednn fp32",
                                              "latency_ms": {"p50": 2000 / ips}}}}}}}))
'''


@pytest.fixture
def docker(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE)
    (bin_dir / "docker").chmod(0o755)
    return bin_dir


def job(tmp_path: Path) -> JobSpec:
    """A fleet job of the cpu profile with its A/B part: 3 smoke rounds after a warm-up round."""
    base = JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=CANDIDATE, folder=tmp_path / "job",
                   validate_args=("-m", "fast"), benches=(("bench-rn50", ("--batch-size", "8")),))
    return plan.with_ab(base, REFERENCE, rounds=3, smoke=True, time_validation=False)


def run(tmp_path: Path, bin_dir: Path, spec: JobSpec, **env: str) -> subprocess.CompletedProcess:
    script = write([spec], tmp_path / "job.sh")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "CUDA_", "DOCKER_HOST"))}
    environment.update(PATH=f"{bin_dir}:/usr/bin:/bin", FAKE_LOG=str(tmp_path / "calls.log"), FAKE_IPS_CANDIDATE="10",
                       FAKE_IPS_REFERENCE="10", **env)
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=environment, timeout=60)


def docker_runs(tmp_path: Path) -> list[list[str]]:
    lines = (tmp_path / "calls.log").read_text().splitlines()
    return [shlex.split(line) for line in lines if line.startswith("docker run")]


def ab_folder(tmp_path: Path) -> Path:
    return tmp_path / "job" / "attempt-1" / "bench-ab"


def test_rounds_alternate_after_a_warm_up_and_both_images_are_recorded(tmp_path: Path, docker: Path) -> None:
    proc = run(tmp_path, docker, job(tmp_path))
    assert proc.returncode == 0, proc.stderr
    runs = docker_runs(tmp_path)
    # the job's own gates first (validation, the benchmark), then the A/B rounds of the same benchmark
    ab = [r for r in runs if "--name" in r and "-ab-round-" in r[r.index("--name") + 1]]
    order = [(r[r.index("--name") + 1].split("-ab-")[1].split("-bench")[0],
              "candidate" if CANDIDATE in r else "reference") for r in ab]
    assert order == [("round-00", "reference"), ("round-00", "candidate"), ("round-01", "candidate"),
                     ("round-01", "reference"), ("round-02", "reference"), ("round-02", "candidate"),
                     ("round-03", "candidate"), ("round-03", "reference")]
    first = ab[0]
    assert first[-6:] == ["bench-rn50", "--output", "/workspace/out/attempt-1/bench-ab/round-00/reference/bench-rn50",
                          "--batch-size", "8", "--smoke"]  # the profile's options, then the round's length
    assert len([r for r in runs if "validate" in " ".join(r)]) == 1  # no validation timing unless asked
    facts = dict(line.split("=", 1) for line in (ab_folder(tmp_path) / "facts.txt").read_text().splitlines())
    assert facts["candidate_image"] == CANDIDATE and facts["reference_digest"] == "sha256:" + "cd" * 32
    assert facts["candidate_id"] == "sha256:" + "11" * 32 and facts["reference_size"] == "952438573"
    assert (ab_folder(tmp_path) / "outcome").read_text() == "done\n"
    steps = [line.split("\t") for line in (ab_folder(tmp_path) / "rounds.tsv").read_text().splitlines()]
    assert len(steps) == 8 and all(s[3] == "0" and int(s[5]) >= 0 for s in steps)
    pulls = [line for line in (tmp_path / "calls.log").read_text().splitlines() if line.startswith("docker pull")]
    assert pulls == [f"docker pull --quiet --platform linux/amd64 {CANDIDATE}",
                     f"docker pull --quiet --platform linux/amd64 {REFERENCE}"]


def test_validation_time_and_a_candidate_only_environment(tmp_path: Path, docker: Path) -> None:
    spec = plan.with_ab(JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=CANDIDATE, folder=tmp_path / "job",
                                benches=(("bench-rn50", ()),), validate=False),
                        REFERENCE, rounds=5, smoke=True, time_validation=True, warmup=0)  # a FAIL needs 5 rounds
    spec = dataclasses.replace(spec, candidate_env=("NGC_PADDLE_BENCH_PLANTED_SLOWDOWN=2",))
    assert run(tmp_path, docker, spec).returncode == 0
    runs = docker_runs(tmp_path)
    validations = [r for r in runs if "validate" in " ".join(r)]
    assert len(validations) == 10 and all(r[r.index("--user") + 1] == "0:0" for r in validations)
    assert validations[0][-2:] == ["-m", "fast"]
    for r in runs:
        planted = "NGC_PADDLE_BENCH_PLANTED_SLOWDOWN=2" in r
        in_rounds = "-ab-round-" in r[r.index("--name") + 1]
        assert planted == (in_rounds and CANDIDATE in r), r  # the candidate's containers of the rounds only
    found = rounds.read(ab_folder(tmp_path))
    assert found.measured == [1, 2, 3, 4, 5] and 0 not in found.samples  # no warm-up asked for
    summary = ab_report.summarize(found, 5, {"hostname": "node1"})
    by_key = {m["key"]: m for m in summary["metrics"]}
    assert by_key["bench-rn50:train.fp32.ips"]["status"] == "FAIL"
    assert 0.45 < by_key["bench-rn50:train.fp32.ips"]["ratio"] < 0.55
    assert by_key["bench-rn50:infer.paddle-inference.fp32.bs8.latency_ms.p50"]["status"] == "FAIL"
    assert "validate.seconds" in by_key and by_key["image.size_bytes"]["status"] == "INFO"
    assert (by_key["validate.seconds"]["label"], by_key["validate.seconds"]["unit"]) == (
        "validation suite wall time", "s")
    assert summary["verdict"] == "FAIL" and summary["candidate"]["env"] == "NGC_PADDLE_BENCH_PLANTED_SLOWDOWN=2"
    assert summary["warmup_rounds"] == 0
    # each sample names when the step that measured it started (the plot's time axis), the validation's too
    starts = {(s["round"], s["image"], s["step"]): s["start"] for s in summary["steps"]}
    assert {s["metric"] for s in summary["samples"]} >= {"validate.seconds", "bench-rn50:train.fp32.ips"}
    for sample in summary["samples"]:
        if sample["metric"] != "image.size_bytes":
            step = "validate" if sample["metric"] == "validate.seconds" else sample["metric"].split(":")[0]
            assert sample["start"] == starts[(sample["round"], sample["image"], step)] is not None, sample
    assert {tuple(sorted(s)) for s in summary["steps"]} == {("exit", "image", "round", "seconds", "start", "step")}
    assert {s["exit"] for s in summary["steps"]} == {0} and all(s["seconds"] >= 0 for s in summary["steps"])


def test_equal_images_pass_and_the_reports_show_every_round(tmp_path: Path, docker: Path) -> None:
    assert run(tmp_path, docker, job(tmp_path)).returncode == 0
    summary = ab_report.analyze(ab_folder(tmp_path), 5, {"hostname": "node1"})
    assert summary["verdict"] == "PASS", summary["reasons"]
    assert summary["rounds"] == 3 and summary["warmup_rounds"] == 1
    assert all(m["low"] >= 0.95 for m in summary["metrics"] if m["direction"] == "higher")
    ab_report.write(tmp_path / "out", summary, "A/B test")
    md = (tmp_path / "out" / "ab.md").read_text()
    assert "- verdict: **PASS** (threshold 5 %, 3 rounds, order alternated, a warm-up round discarded)" in md
    assert "| bench-rn50 train fp32 img/s |" in md and "| metric | 00 | 01 | 02 | 03 |" in md
    assert json.loads((tmp_path / "out" / "ab.json").read_text())["candidate"]["image"] == CANDIDATE
    svg = (tmp_path / "out" / "rounds.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<circle") == 3 * 8  # 3 metrics x 4 rounds x 2 images


def test_a_reference_that_cannot_be_pulled_is_not_proven_with_the_fix_and_the_gates_still_run(tmp_path: Path,
                                                                                               docker: Path) -> None:
    """A previous image exists but this node cannot get it: not a first release (whose A/B is NOT RUN and does not
    block) but a comparison nobody made, so NOT PROVEN, one line naming the reference and the fix."""
    proc = run(tmp_path, docker, job(tmp_path), FAKE_PULL_FAIL=REFERENCE)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "job" / "attempt-1" / "outcome").read_text() == "done\n"  # the absolute gates ran
    outcome = (ab_folder(tmp_path) / "outcome").read_text()
    assert outcome.startswith(f"reference-failed: cannot get {REFERENCE}")
    summary = ab_report.analyze(ab_folder(tmp_path), 5)
    assert summary["verdict"] == "NOT PROVEN" and summary["rounds"] == 0 and len(summary["reasons"]) == 1
    reason = summary["reasons"][0]
    assert reason.startswith(f"the reference {REFERENCE} cannot be pulled here (") and "\n" not in reason
    assert "fix: make it pullable (docker login 127.0.0.1:5019, or push it there again), or name another with " \
           "--reference [FLAVOR=]IMAGE@DIGEST, or --accept-unproven REASON" in reason
    assert reason in ab_report.headline(summary)  # the stage's line and the cell's detail carry it whole


def test_no_reference_renders_no_ab_part(tmp_path: Path, docker: Path) -> None:
    base = JobSpec(flavor="cpu", profile="cpu", hardware="cpu", image=CANDIDATE, folder=tmp_path / "job",
                   benches=(("bench-rn50", ()),))
    assert plan.with_ab(base, None, 3, True, False) == base
    assert run(tmp_path, docker, base).returncode == 0
    assert not ab_folder(tmp_path).exists()


def _compare(tmp_path: Path, docker: Path, monkeypatch, rounds_n: int, gpu: bool = False, **fake: str):
    """bench-compare's own function (compare.compare) through the real job script and local runner, the fake docker
    on PATH: (the summary or the raised error, the lines it said, the docker runs)."""
    from ngc_paddle import engine
    from ngc_paddle.host_errors import NgcPaddleError
    from ngc_paddle.release.ab import compare

    repo = Path(__file__).resolve().parents[2]
    tmp_path.mkdir(exist_ok=True)
    env = {"PATH": f"{docker}:/usr/bin:/bin", "FAKE_LOG": str(tmp_path / "calls.log"), "FAKE_IPS_CANDIDATE": "10",
           "FAKE_IPS_REFERENCE": "10", **fake}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(engine, "host_has_nvidia_gpus", lambda: gpu)
    said: list[str] = []
    try:
        outcome = compare.compare(repo, CANDIDATE, REFERENCE, "rn50", rounds_n, True, tmp_path / "out", warmup=0,
                                  say=said.append)
    except NgcPaddleError as exc:
        outcome = exc
    return outcome, said, docker_runs(tmp_path)


def test_bench_compare_passes_equal_images_and_says_what_it_ran(tmp_path: Path, docker: Path, monkeypatch) -> None:
    summary, said, runs = _compare(tmp_path, docker, monkeypatch, 3)
    assert isinstance(summary, dict) and summary["verdict"] == "PASS", summary
    assert said[0] == (f"==> A/B on this host: {CANDIDATE} vs {REFERENCE}: 3 rounds of bench-rn50 (smoke), order "
                       "alternated, threshold 5 %")
    folder = next((tmp_path / "out").glob("ab-*"))
    assert folder.name[3:11].isdigit() and folder.name.endswith("Z") and (folder / "ab.md").is_file()
    assert said[-1] == f"    report: {folder}/ab.md, ab.json, rounds.svg"
    written = json.loads((folder / "ab.json").read_text())
    assert (written["candidate"]["name"], written["reference"]["name"]) == (CANDIDATE, REFERENCE)
    assert written["candidate"]["id"] == "sha256:" + "11" * 32 and written["reference"]["id"] == "sha256:" + "22" * 32
    rounds_run = [r for r in runs if "-ab-round-" in " ".join(r)]
    assert len(rounds_run) == 6 and not any("--gpus" in r for r in rounds_run)  # 3 rounds x 2 images, no warm-up
    assert all(r[-1] == "--smoke" for r in rounds_run)
    assert not any("did not reach" in reason for reason in written["reasons"]), written["reasons"]
    assert written["node"]["hostname"], written["node"]  # the job's facts.txt: where both images ran
    assert (folder / "ab.md").read_text().startswith(f"# A/B: {CANDIDATE} vs {REFERENCE}\n")
    assert said[-2] == f"==> {ab_report.headline(written)}"


def test_bench_compare_fails_a_slower_candidate_and_leaves_an_undecided_one_not_proven(tmp_path: Path, docker: Path,
                                                                                        monkeypatch) -> None:
    from ngc_paddle.release.ab.compare import CompareFailed, CompareNotProven

    failed, _, _ = _compare(tmp_path / "a", docker, monkeypatch, 5, FAKE_IPS_CANDIDATE="5")
    assert isinstance(failed, CompareFailed), failed
    folder = next((tmp_path / "a" / "out").glob("ab-*"))
    reasons = json.loads((folder / "ab.json").read_text())["reasons"]
    assert str(failed) == (f"{CANDIDATE} is slower than {REFERENCE}: " + "; ".join(reasons[:2])[:600]
                           + f"; see {folder}/ab.md") and len(reasons) >= 2
    undecided, _, _ = _compare(tmp_path / "b", docker, monkeypatch, 2)
    assert isinstance(undecided, CompareNotProven), undecided
    folder = next((tmp_path / "b" / "out").glob("ab-*"))
    reasons = json.loads((folder / "ab.json").read_text())["reasons"]
    assert str(undecided) == (f"A/B of {CANDIDATE} vs {REFERENCE} NOT PROVEN: " + "; ".join(reasons[:2])[:600]
                              + f"; fix: more --rounds, or a quieter host (see {folder}/ab.md)")


def test_bench_compare_on_a_gpu_host_and_a_job_that_never_reached_the_ab(tmp_path: Path, docker: Path,
                                                                         monkeypatch) -> None:
    from ngc_paddle.release.ab.compare import CompareNotProven

    smi = docker / "nvidia-smi"  # a node with one GPU
    smi.write_text("#!/bin/sh\ncase \"$*\" in *query-gpu*) echo '0, NVIDIA H100, 550.54';;\n"
                   "*) echo 'CUDA Version: 12.4';; esac\n")
    smi.chmod(0o755)
    summary, _, runs = _compare(tmp_path / "gpu", docker, monkeypatch, 3, gpu=True)
    smi.unlink()
    assert isinstance(summary, dict) and summary["verdict"] == "PASS", summary  # the one GPU was enough
    rounds_run = [r for r in runs if "-ab-round-" in " ".join(r)]
    assert len(rounds_run) == 6 and all(r[r.index("--gpus") + 1] == "all" for r in rounds_run)
    gone = "sha256:" + "11" * 32  # the candidate's id: gone from the host once the job starts, and not pullable
    lost, _, _ = _compare(tmp_path / "lost", docker, monkeypatch, 2, FAKE_GONE=gone, FAKE_PULL_FAIL=gone)
    assert isinstance(lost, CompareNotProven)
    assert str(lost).startswith(f"A/B of {CANDIDATE} vs {REFERENCE} NOT RUN: the job did not reach the A/B: "
                                f"start-failed: cannot get {gone}"), lost


def test_the_notes_table_is_whole_and_apart_from_the_verdict_line() -> None:
    """Markdown renders a table only after a blank line; a failed verdict lists its reasons below it."""
    summary = {"verdict": "FAIL", "rounds": 6, "threshold_pct": 5.0, "candidate": {"name": "new:26.12"},
               "reference": {"name": "old:26.11", "id": "sha256:1"}, "reasons": ["infer slower by 9 %"],
               "metrics": [{"label": "infer", "candidate": 91.0, "reference": 100.0, "unit": "img/s", "ratio": 0.91,
                            "low": 0.88, "high": 0.94, "status": "FAIL"}]}
    assert ab_report.notes_table(summary) == [
        "- verdict: **FAIL** (6 rounds interleaved on one node, threshold 5 %); this month: new:26.12; last month: "
        "old:26.11 (sha256:1)", "", "| metric | this month | last month | ratio | 95 % CI | verdict |",
        "| --- | ---: | ---: | ---: | --- | --- |", "| infer | 91 img/s | 100 img/s | 0.910 | [0.880, 0.940] | FAIL |",
        "", "- infer slower by 9 %"]
    passed = {**summary, "verdict": "PASS", "reasons": ["kept out"]}
    assert ab_report.notes_table(passed)[-1] == "| infer | 91 img/s | 100 img/s | 0.910 | [0.880, 0.940] | FAIL |"
    many = {**summary, "reasons": [f"reason {n}" for n in range(8)]}
    assert ab_report.notes_table(many)[-6:] == [f"- reason {n}" for n in range(6)]


def test_an_unpullable_reference_names_its_registry_and_the_fix() -> None:
    fix = ("or push it there again), or name another with --reference [FLAVOR=]IMAGE@DIGEST, or --accept-unproven "
           "REASON")
    assert ab_report.unpullable("reference-failed: cannot get reg.example:5000/team/paddle:26.11: denied") == (
        "the reference reg.example:5000/team/paddle:26.11 cannot be pulled here (denied); fix: make it pullable "
        f"(docker login reg.example:5000, {fix}")
    assert ab_report.unpullable("reference-failed: cannot get paddle:26.11-X:") == (
        "the reference paddle:26.11-X cannot be pulled here (no reason given); fix: make it pullable (docker login "
        f"its registry, {fix}")


def test_the_default_reference_needs_both_labels_of_the_candidate(monkeypatch) -> None:
    monkeypatch.setattr(compare.engine, "image_labels", lambda _image: {"ngc-paddle.release": "26.12"})
    with pytest.raises(NgcPaddleError, match=r"has no ngc-paddle\.release/ngc-paddle\.flavor labels"):
        compare.default_reference(Path("."), "candidate:1", "reg.example")
