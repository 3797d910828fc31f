"""Fleet files are checked at the door: the shipped ones load, and every kind of bad input is one line, exit 2."""

from pathlib import Path

import pytest
import yaml

from ngc_paddle.release.fleet import fleet_schema
from ngc_paddle.release.fleet.fanout import Target, applies, benches_of
from ngc_paddle.release.fleet.hardware_profiles import gates_profiles

GOOD = {"profiles": {"cpu": {"slurm": {"partition": "cpu"}}}}


def load(tmp_path: Path, repo: Path, data) -> fleet_schema.Fleet:
    path = tmp_path / "fleet.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return fleet_schema.load(path, repo)


def test_the_shipped_fleet_files_load(repo: Path) -> None:
    files = sorted((repo / "fleets").glob("*.yaml"))
    assert {f.name for f in files} >= {"local-slurm.yaml", "local.yaml", "example-gpu-site.yaml"}
    for path in files:
        fleet = fleet_schema.load(path, repo)
        assert fleet.profiles
    site = fleet_schema.load(repo / "fleets" / "example-gpu-site.yaml", repo)
    assert {p.runner for p in site.profiles.values()} == {"slurm", "ssh"}
    assert {p.slurm.container for p in site.profiles.values() if p.slurm} == {"pyxis", "enroot", "apptainer", "docker"}
    assert site.profiles["A100-80GB"].gpus == 8 and site.profiles["H100-SXM"].gpus == 8
    # what `gates` runs without a file
    assert fleet_schema.load(repo / "fleets" / "local.yaml", repo) == fleet_schema.LOCAL


@pytest.mark.parametrize(("data", "where", "what"), [
    ({"profiles": {"cpu": {"slurm": {"partition": "cpu", "partiton": "x"}}}}, "profiles.cpu.slurm.partiton",
     "unknown key"),
    ({"profiles": {"cpu": {"slurm": {"partition": "cpu q"}}}}, "profiles.cpu.slurm.partition", "not a Slurm name"),
    ({"profiles": {"cpu": {"slurm": {"partition": "--wrap=rm"}}}}, "profiles.cpu.slurm.partition", "not a Slurm name"),
    ({"profiles": {"A100-80GB": {"slurm": {"partition": "a", "gres": "gpu"}}}}, "profiles.A100-80GB.slurm.gres",
     "gpu:N or gpu:TYPE:N"),
    ({"profiles": {"cpu": {"slurm": {"partition": "cpu", "time": "forever"}}}}, "profiles.cpu.slurm.time",
     "time limit"),
    ({"profiles": {"cpu": {"slurm": {"partition": "cpu", "container": "podman"}}}}, "profiles.cpu.slurm.container",
     "Input should be"),
    ({"profiles": {"cpu": {"slurm": {"partition": "cpu"}, "local": {}}}}, "profiles.cpu", "exactly one place"),
    ({"profiles": {"cpu": {}}}, "profiles.cpu", "exactly one place"),
    ({"profiles": {"cpu": {"local": {}, "bench": {"bench-resnet": []}}}}, "profiles.cpu.bench.bench-resnet.[key]",
     "not a benchmark"),
    ({"profiles": {"cpu": {"local": {}, "validate": ["-m", "fast\nrm -rf /"]}}}, "profiles.cpu.validate.1",
     "one line"),
    ({"profiles": {"cpu": {"ssh": {"hosts": ["gpu01 -oProxyCommand=x"]}}}}, "profiles.cpu.ssh.hosts.0",
     "[USER@]HOST[:PORT]"),
    ({"profiles": {"cpu": {"ssh": {"hosts": []}}}}, "profiles.cpu.ssh.hosts", "at least 1"),
    ({"profiles": {}}, "profiles", "at least 1"),
    ({"profile": {}}, "profiles", "required key is missing"),
    ([1, 2], "(top level)", "valid dictionary"),
    ({"profiles": {"cpu": {"local": {}, "platform": "linux/s390x"}}}, "profiles.cpu.platform",
     "'linux/s390x' is not a known platform (linux/amd64, linux/arm64)"),
    ({"profiles": {"cpu": {"local": {}, "platform": "arm64"}}}, "profiles.cpu.platform",
     "'arm64' is not a known platform (linux/amd64, linux/arm64)"),
])
def test_a_bad_fleet_file_is_one_line_naming_the_field(tmp_path: Path, repo: Path, data, where: str, what: str) -> None:
    with pytest.raises(fleet_schema.FleetError) as caught:
        load(tmp_path, repo, data)
    line = str(caught.value)
    assert caught.value.exit_code == 2 and "\n" not in line
    assert line.startswith(f"{tmp_path / 'fleet.yaml'}: {where}: ") and what in line and "fix: " in line, line


def test_profiles_are_those_of_the_gates_file(tmp_path: Path, repo: Path) -> None:
    known = gates_profiles(repo)
    assert "cpu" in known and "A100-80GB" in known and known["A100-80GB"]
    with pytest.raises(fleet_schema.FleetError, match=r"profiles.A100: 'A100' is not a hardware profile .*A100-80GB"):
        load(tmp_path, repo, {"profiles": {"A100": {"slurm": {"partition": "a100", "gres": "gpu:1"}}}})
    fleet = load(tmp_path, repo, {"profiles": {"big-a100": {"hardware": "A100-80GB",
                                                            "slurm": {"partition": "a100", "gres": "gpu:a100:4"}}}})
    assert fleet.profiles["big-a100"].gpus == 4


def test_a_gpu_profile_must_ask_for_a_gpu(tmp_path: Path, repo: Path) -> None:
    with pytest.raises(fleet_schema.FleetError,
                       match=r"profiles.A100-80GB.slurm.gres: the A100-80GB profile asks for no "):
        load(tmp_path, repo, {"profiles": {"A100-80GB": {"slurm": {"partition": "a100"}}}})
    with pytest.raises(fleet_schema.FleetError, match=r"profiles.A10.ssh.gpus: "):
        load(tmp_path, repo, {"profiles": {"A10": {"ssh": {"hosts": ["gpu01"]}}}})


def test_which_profiles_prove_which_flavor(tmp_path: Path, repo: Path) -> None:
    fleet = fleet_schema.load(repo / "fleets" / "example-gpu-site.yaml", repo)
    cpu = Target("cpu", False, "r/x@sha256:" + "a" * 64, tmp_path)
    gpu = Target("gpu", True, "r/x@sha256:" + "a" * 64, tmp_path)
    assert [n for n, p in fleet.profiles.items() if applies(n, p, cpu)] == ["cpu-grace", "cpu"]
    assert [n for n, p in fleet.profiles.items() if applies(n, p, gpu)] == ["A100-80GB", "H100-SXM", "GH200", "A10",
                                                                             "V100"]
    named = load(tmp_path, repo, {"profiles": {"A10": {"local": {"gpus": 1}, "flavors": ["cpu"]}}})
    assert applies("A10", named.profiles["A10"], cpu) and not applies("A10", named.profiles["A10"], gpu)


def test_the_benchmarks_a_profile_runs(repo: Path) -> None:
    fleet = fleet_schema.load(repo / "fleets" / "example-gpu-site.yaml", repo)
    asked = ("bench-rn50", "bench-hgnet")
    assert benches_of(fleet.profiles["A100-80GB"], asked)[1] == ("bench-hgnet", ("--model", "tiny"))
    assert benches_of(fleet.profiles["H100-SXM"], asked) == (("bench-rn50", ("--gpus", "8", "--precision",
                                                                             "tf32,amp")),)
    assert benches_of(fleet.profiles["V100"], ("bench-rn50",)) == (("bench-rn50", ()),)  # no bench: the release's


def test_sigterm_stops_a_run_as_ctrl_c_does_with_exit_143(monkeypatch, capsys) -> None:
    import os
    import signal
    import time

    from ngc_paddle import cli

    def command(args) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # interrupted at once
        return 0

    parser = cli.parser()
    monkeypatch.setattr(cli, "parser", lambda: parser)
    monkeypatch.setattr(parser, "parse_args", lambda argv: type("A", (), {"func": staticmethod(command)})())
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert cli.main(["gates"]) == 143
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert capsys.readouterr().err == ("error: terminated (SIGTERM); the release tag was not moved; rerun the same "
                                       "command to resume\n")


def test_a_profile_names_its_platform(tmp_path: Path, repo: Path) -> None:
    fleet = load(tmp_path, repo, {"profiles": {"grace": {"hardware": "cpu", "platform": "linux/arm64",
                                                         "slurm": {"partition": "gh200"}},
                                               "cpu": {"slurm": {"partition": "cpu"}}}})
    assert fleet.profiles["grace"].platform == "linux/arm64"
    assert fleet.profiles["cpu"].platform == "linux/amd64"  # the default: the nodes every release so far ran on
    site = fleet_schema.load(repo / "fleets" / "example-gpu-site.yaml", repo)
    assert site.profiles["GH200"].platform == "linux/arm64" and site.profiles["GH200"].gpus == 1
    assert site.profiles["cpu-grace"].platform == "linux/arm64"
