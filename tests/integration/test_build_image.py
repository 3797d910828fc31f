"""`make image` end to end: the default flavor builds, runs, reports, caches and fails safely."""

import json
import re
import subprocess
import urllib.request
import uuid
from pathlib import Path

from ngc_paddle import engine
from ngc_paddle.scan.source.layer_source import DEFAULT_REGISTRY, MANIFEST_TYPES
from tests.integration.conftest import AMD64, REPO, Built, docker, one_worker_at_a_time, run_cli

KEY = ["paddle", "dali", "paddle2onnx", "onnxruntime"]


def run_in(image: str, *cmd: str, env: dict[str, str] | None = None, extra: tuple[str, ...] = ()):
    flags = [f for k, v in (env or {}).items() for f in ("-e", f"{k}={v}")]
    return docker("run", "--rm", "--network", "none", *extra, *flags, image, *cmd, check=False)


def test_build_reports_every_layer(built: Built) -> None:
    report = built.report
    flavor = built.manifest.flavors[built.flavor]
    # "unchanged": the images were already there with today's inputs digests (nothing was built)
    assert report["status"] in ("success", "unchanged") and report["image"] == built.image
    assert [layer["layer"] for layer in report["layers"]] == flavor.layers
    for layer in report["layers"]:
        assert layer["status"] in ("built", "cached", "unchanged") and layer["image_id"].startswith("sha256:")
        assert layer["inputs_digest"].startswith("sha256:")
        assert layer["duration_s"] >= 0
    sizes = {layer["layer"]: layer["size_added_bytes"] for layer in report["layers"]}
    assert sizes["paddle"] > 100_000_000 and sizes["dali"] > 100_000_000
    # The Markdown says what the JSON says. Read both under the build's lock: another xdist worker's `built` builds
    # the same flavor again (unchanged) and rewrites both after this worker's fixture read them.
    folder = REPO / "build" / "reports" / f"{built.release}-{built.flavor}"
    with one_worker_at_a_time("build-default"):
        on_disk, md = json.loads((folder / "build.json").read_text()), (folder / "build.md").read_text()
    assert f"# Build {built.release}-{built.flavor}: {on_disk['status']}" in md
    for n, layer in enumerate(flavor.layers, start=1):
        assert f"[{n}/{len(flavor.layers)}] {layer}:" in built.output, "progress is shown layer by layer"


def test_container_imports_paddle_and_dali_at_manifest_versions(built: Built) -> None:
    proc = run_in(built.image, "python", "-c",
                  "import paddle, nvidia.dali, json; print(json.dumps([paddle.__version__, nvidia.dali.__version__]))",
                  env={"NGC_PADDLE_QUIET": "1"})
    assert proc.returncode == 0, proc.stderr
    comps = built.manifest.flavors[built.flavor].components
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [comps["paddle"].version, comps["dali"].version]


def test_banner_shows_manifest_versions(built: Built) -> None:
    proc = run_in(built.image, "true")
    assert proc.returncode == 0
    assert f"{built.manifest.image} {built.release} ({built.flavor})" in proc.stderr
    comps = built.manifest.flavors[built.flavor].components
    for key in KEY:
        assert re.search(rf"\s{re.escape(comps[key].version)}\s+\({re.escape(comps[key].package)}\)", proc.stderr), key
    assert run_in(built.image, "true", env={"NGC_PADDLE_QUIET": "1"}).stderr == ""


def test_shm_and_driver_warnings(built: Built) -> None:
    default = run_in(built.image, "true")
    assert "SHMEM allocation limit is set to the default of 64MB" in default.stderr
    assert "--ipc=host --ulimit memlock=-1 --ulimit stack=67108864" in default.stderr
    roomy = run_in(built.image, "true", extra=("--shm-size", "1g"))
    assert "SHMEM" not in roomy.stderr
    assert "NVIDIA Driver was not detected" not in default.stderr, "no GPU warning in a CPU flavor"
    as_gpu = run_in(built.image, "bash", "-c", "echo cpu_only=$NGC_PADDLE_CPU_ONLY",
                    env={"NVIDIA_REQUIRE_CUDA": "cuda>=12.6"})
    assert "WARNING: The NVIDIA Driver was not detected." in as_gpu.stderr
    assert "cpu_only=1" in as_gpu.stdout


def test_oci_labels_and_baked_manifest(built: Built) -> None:
    labels = json.loads(docker("image", "inspect", "--format", "{{json .Config.Labels}}", built.image).stdout)
    assert labels["org.opencontainers.image.version"] == built.release
    assert labels["org.opencontainers.image.title"] == "ngc-paddle"
    assert labels["ngc-paddle.flavor"] == built.flavor and labels["ngc-paddle.release"] == built.release
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    revision = labels["org.opencontainers.image.revision"].removesuffix("-dirty")
    if head and built.report["status"] == "success":
        assert revision == head
    elif head:  # answered from the labels: the image of the commit that built it, whose inputs equal today's
        ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", revision, "HEAD"], cwd=REPO)
        assert ancestor.returncode == 0, f"{revision} is not a commit of this history"
    assert labels["ngc-paddle.inputs-digest"] == built.report["inputs_digest"]
    assert re.match(r"\d{4}-\d\d-\d\dT", labels["org.opencontainers.image.created"])
    baked = json.loads(run_in(built.image, "cat", "/opt/ngc-paddle/manifest.json").stdout)
    assert baked["release"] == built.release and baked["flavor"] == built.flavor
    assert baked["components"]["paddle"]["version"] == built.manifest.flavors[built.flavor].components["paddle"].version


def test_subcommands_are_on_path(built: Built) -> None:
    for command in ("bench-rn50", "bench-hgnet", "validate"):
        proc = run_in(built.image, "bash", "-c", f"command -v {command}", env={"NGC_PADDLE_QUIET": "1"})
        assert proc.returncode == 0 and proc.stdout.strip() == f"/opt/ngc-paddle/bin/{command}"


def test_no_caches_apt_lists_or_secrets_in_image(built: Built) -> None:
    script = (
        "find /var/lib/apt/lists /var/cache/apt /run/secrets -type f ! -name lock; "
        "ls -d /root/.cache /tmp/ngc /wheelhouse 2>/dev/null; "
        "find / -xdev -path /proc -prune -o -name '*.pem' -path '/run/*' -print 2>/dev/null; true"
    )
    proc = run_in(built.image, "bash", "-c", script, env={"NGC_PADDLE_QUIET": "1"})
    leftovers = [line for line in proc.stdout.splitlines() if line.strip()]
    assert leftovers == [], leftovers


def assert_unchanged(proc: subprocess.CompletedProcess[str], root: Path, built: Built) -> dict:
    """The build answered from the labels: every layer checked and unchanged, no buildx build, no checks."""
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    layers = built.manifest.flavors[built.flavor].layers
    for n, layer in enumerate(layers, start=1):
        assert f"[{n}/{len(layers)}] {layer}: unchanged (inputs sha256:" in proc.stdout
    assert ": building " not in proc.stdout and "[internal] load build definition" not in proc.stdout
    assert "checks" not in proc.stdout and "smoke test" not in proc.stdout
    summaries = [line for line in proc.stdout.splitlines() if line.startswith(("==> unchanged ", "==> success"))]
    assert summaries and all(line.startswith("==> unchanged ") for line in summaries)  # each platform's build
    report = json.loads((root / "build/reports" / f"{built.release}-{built.flavor}/build.json").read_text())
    assert report["status"] == "unchanged" and [x["status"] for x in report["layers"]] == ["unchanged"] * len(layers)
    return report


def test_rebuild_without_changes_answers_from_labels(built: Built) -> None:
    before = docker("image", "inspect", "--format", "{{.Id}}", built.image).stdout.strip()
    assert_unchanged(run_cli("build"), REPO, built)
    assert docker("image", "inspect", "--format", "{{.Id}}", built.image).stdout.strip() == before


def test_suite_change_rebuilds_only_the_top_layer(built: Built, scratch_repo: Path) -> None:
    assert run_cli("build", *AMD64, root=scratch_repo).returncode == 0
    assert_unchanged(run_cli("build", *AMD64, root=scratch_repo), scratch_repo, built)  # built twice: nothing to do
    # A change no earlier run made (BuildKit's cache outlives a test run and would take the same change from it).
    nonce = uuid.uuid4().hex
    banner = scratch_repo / "image" / "lib" / "banner.py"
    banner.write_text(banner.read_text() + f"\n# a change to the suite's own files {nonce}\n")
    check = scratch_repo / "validation" / "checks" / "test_contract.py"
    check.write_text(check.read_text() + f"\n# a change to a check the suite layer copies {nonce}\n")
    proc = run_cli("build", *AMD64, root=scratch_repo)
    assert proc.returncode == 0, proc.stderr
    top = len(built.manifest.flavors[built.flavor].layers)
    assert f"[{top}/{top}] suite: inputs changed" in proc.stdout
    report = json.loads((scratch_repo / "build/reports" / f"{built.release}-{built.flavor}/build.json").read_text())
    statuses = [layer["status"] for layer in report["layers"]]
    assert statuses == ["cached"] * (len(statuses) - 1) + ["built"]


def test_missing_version_fails_and_previous_image_keeps_its_tag(built: Built, scratch_repo: Path) -> None:
    assert run_cli("build", *AMD64, root=scratch_repo).returncode == 0
    image = f"ngc-paddle-itest:{built.release}-{built.flavor}"
    good = docker("image", "inspect", "--format", "{{.Id}}", image).stdout.strip()
    manifest = scratch_repo / "releases" / f"{built.release}.yaml"
    version = built.manifest.flavors[built.flavor].components["paddle2onnx"].version
    text = manifest.read_text()
    pinned = f"package: paddle2onnx, version: {version}"
    assert pinned in text
    manifest.write_text(text.replace(pinned, "package: paddle2onnx, version: 0.0.1"))
    stale = run_cli("build", *AMD64, root=scratch_repo)  # the manifest moved, the lock did not: nothing is built
    assert stale.returncode == 2 and stale.stderr.count("\n") == 1
    assert f"{built.release}-{built.flavor}.lock.json: inputs.components.paddle2onnx.version" in stale.stderr
    manifest.write_text(text)

    # A locked version the source does not have (yanked, deleted): the build stops at that layer.
    lock_file = scratch_repo / "releases" / f"{built.release}-{built.flavor}.lock.json"
    lock = json.loads(lock_file.read_text())
    entry = next(e for e in lock["pip"] if e["name"] == "onnxoptimizer")
    entry["version"] = "0.0.1"
    lock_file.write_text(json.dumps(lock, indent=1))
    proc = run_cli("build", *AMD64, root=scratch_repo)
    assert proc.returncode == 1
    error = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1
    assert f"layer {entry['layer']}: onnxoptimizer 0.0.1 (dependency, locked in releases/" in error[0]
    assert "from source pypi (https://pypi.org/simple): the source no longer has this version" in error[0]
    assert "the release tag was not moved" in error[0]
    assert docker("image", "inspect", "--format", "{{.Id}}", image).stdout.strip() == good
    reports = scratch_repo / "build" / "reports" / f"{built.release}-{built.flavor}"
    assert json.loads((reports / "build.json").read_text())["status"] == "success"
    assert json.loads((reports / "build-failed.json").read_text())["status"] == "failed"


def test_unknown_flavor_or_release_is_one_line_and_exit_2() -> None:
    for args, needle in ((["build", "--flavor", "tpu"], "has no flavor 'tpu'"),
                         (["build", "--release", "99.01"], "no manifest for release 99.01")):
        proc = run_cli(*args)
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error:") and needle in proc.stderr


def test_bake_file_parses_on_its_own_and_with_the_manifest(built: Built) -> None:
    # The HCL alone holds templates only: every target and group comes from the generated files.
    plain = subprocess.run(["docker", "buildx", "bake", "-f", "docker-bake.hcl", "--print", "_common"], cwd=REPO,
                           capture_output=True, text=True)
    assert plain.returncode == 0, plain.stderr
    assert set(json.loads(plain.stdout)["target"]) == {"_common"}
    # Bake's own entry point, typed with no -f: it reads docker-bake.override.json beside the HCL by itself.
    typed = subprocess.run(["docker", "buildx", "bake", "--print"], cwd=REPO, capture_output=True, text=True)
    assert typed.returncode == 0, typed.stderr
    default = json.loads(typed.stdout)
    assert default["group"]["default"]["targets"] == [built.flavor]
    assert {f"{layer}-{built.flavor}" for layer in ("os", "suite")} <= set(default["target"])
    proc = run_cli("bake-file")
    assert proc.returncode == 0
    release_file = proc.stdout.split()[-1]  # it prints docker-bake.override.json, then build/bake/<release>.json
    assert release_file == f"build/bake/{built.release}.json", proc.stdout
    merged = subprocess.run(["docker", "buildx", "bake", "-f", "docker-bake.hcl", "-f", release_file,
                             "--print", "gpu"], cwd=REPO, capture_output=True, text=True,
                            env={**__import__("os").environ, "RELEASE": built.release})
    assert merged.returncode == 0, merged.stderr
    targets = json.loads(merged.stdout)["target"]
    assert targets["cuda-gpu"]["args"]["NVIDIA_REQUIRE_CUDA"] == "driver>=525.60.13"  # minor-version compat
    assert targets["tensorrt-gpu"]["contexts"] == {"ngc-layer-below": "target:dali-gpu"}  # chained by bake itself


def test_one_tag_holds_every_platform_each_as_its_own_build_made_it(built: Built) -> None:
    """`make image` folds the flavor's platforms into one image index under its tags: docker runs the host's entry,
    or --platform's, and each entry is that platform's own image (its manifest, same digest, as a registry reads it)."""
    platforms = built.manifest.flavors[built.flavor].platforms
    assert platforms == ["linux/amd64", "linux/arm64"]
    tags = [built.image, f"{built.manifest.image}:{built.release}"]
    assert f"==> tagged {', '.join(tags)}: image index " in built.output
    with one_worker_at_a_time("build-default"):  # another worker's `built` may fold (the same index) meanwhile
        folder = REPO / "build" / "reports" / f"{built.release}-{built.flavor}"
        record = json.loads((folder / "index.json").read_text())
        top = json.loads((folder / "build.json").read_text())["layers"][-1]["image_id"]
        arm64 = engine.image_id(f"{built.image}-arm64")
    assert record["index"] == engine.image_id(tags[0]) == engine.image_id(tags[1])
    assert record["platforms"] == {"linux/amd64": top, "linux/arm64": arm64} and top != arm64
    for platform, machine in (("linux/amd64", "x86_64"), ("linux/arm64", "aarch64")):
        run = docker("run", "--rm", "--network", "none", "--platform", platform, "--entrypoint", "uname", built.image,
                     "-m")
        assert run.stdout.strip() == machine
    engine.ensure_registry(DEFAULT_REGISTRY)
    pushed = f"{DEFAULT_REGISTRY}/ngc-paddle-itest-index:{record['index'].removeprefix('sha256:')[:16]}"
    engine.tag(built.image, pushed)
    try:
        assert engine.push(pushed).returncode == 0
    finally:
        engine.untag(pushed)
    request = urllib.request.Request(f"http://{DEFAULT_REGISTRY}/v2/ngc-paddle-itest-index/manifests/{record['index']}",
                                     headers={"Accept": ", ".join(MANIFEST_TYPES)})
    with urllib.request.urlopen(request, timeout=60) as resp:
        index = json.loads(resp.read())
    entries = {f"{m['platform']['os']}/{m['platform']['architecture']}": m["digest"] for m in index["manifests"]}
    assert entries == record["platforms"]  # nothing else in it: no provenance or SBOM entries
