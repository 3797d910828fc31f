"""The trips a flavor's resolution feeds, run without docker from fixed inputs, and the reports each leaves.

Why: issue 31 changed how every command resolves a release and its flavors; the reports must say what they said
before for the same inputs. Each trip here goes through a command's real code (the CLI, or the module function the
CLI calls) with only the docker engine and the network faked (FakeEngine), so that the code before the resolve-once
change can run the same trips: `python tests/unit/flavor_report_trips.py INPUTS OUT.json` with that code's checkout
first on PYTHONPATH writes the goldens (tests/unit/golden/resolve_once/reports-*.json) that test_flavor_reports.py
compares with what the current code leaves. Only names that the code before the change has too are used here.

A trip's root is a scratch copy of the repository's build context (what the inputs digests hash) with the fixed
inputs' releases/ and release-notes/ in place of the repository's. What varies from run to run is masked: times
(`started`, `duration_s`, `scanned`, `timings_s`, `seconds`), the inputs digests (they hash the repository's own
files, which every commit changes) and the scratch folder's path.
"""

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[2]
# What a trip's root copies from the repository: the build context and the files the build and the scan read.
CONTEXT = ("Dockerfile", "docker-bake.hcl", ".dockerignore", ".hadolint.yaml", "layers", "image", "validation",
           "benchmarks", "wheelhouse", "security", "ngc_common")
MIRRORS = {"pypi": "https://mirror.example/pypi/simple"}
CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens, a connection is refused at once
SCAN_MIRRORS = {"debian": f"{CLOSED}/debian", "pypi": f"{CLOSED}/simple"}
TODAY = "2026-12-15"
BASE = "ngc-paddle-base:bookworm"
PREVIOUS_DIGEST = "sha256:" + "12" * 32
MASK = "<masked>"
TIMES = {"started", "duration_s", "scanned", "seconds", "timings_s", "timestamp", "serialNumber"}  # and a run's uuid
DIGEST_LABELS = ("ngc-paddle.inputs-digest",)


# ---- patching without pytest (the goldens are made by a plain script) ---------------------------------------

class Patches:
    def __init__(self) -> None:
        self._undo: list[tuple[object, str, object]] = []

    def set(self, owner: object, name: str, value: object) -> None:
        self._undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def undo(self) -> None:
        while self._undo:
            owner, name, value = self._undo.pop()
            setattr(owner, name, value)


def _id(ref: str) -> str:
    return "sha256:" + hashlib.sha256(ref.encode()).hexdigest()


class FakeEngine:
    """The docker engine as the build, the scan and the gates use it (ngc_paddle.engine), answering from a dict of
    images: a bake target builds its tag, `--print` answers with the generated bake file's targets."""

    def __init__(self) -> None:
        self.images: dict[str, str] = {BASE: _id(BASE)}
        self.calls: list[str] = []

    def install(self, patches: Patches) -> None:
        from ngc_paddle import engine

        for name in ("ensure_engine", "image_id", "inspect_images", "image_size", "image_size_or_none", "tag",
                     "untag", "stream", "docker", "run", "host_has_nvidia_gpus", "image_labels"):
            patches.set(engine, name, getattr(self, name))

    def ensure_engine(self) -> None:
        self.calls.append("ensure_engine")

    def image_id(self, ref: str) -> str | None:
        return self.images.get(ref)

    def inspect_images(self, refs: list[str]) -> dict[str, dict]:
        return {}  # no image carries an inputs digest here: a build builds

    def image_size(self, ref: str) -> int:
        return 100_000_000 + int(hashlib.sha256(ref.encode()).hexdigest()[:6], 16) * 100

    def image_size_or_none(self, ref: str) -> int | None:
        return self.image_size(ref) if ref in self.images else None

    def tag(self, source: str, target: str) -> None:
        self.images[target] = self.images[source]

    def untag(self, ref: str) -> None:
        self.images.pop(ref, None)

    def host_has_nvidia_gpus(self) -> bool:
        return False

    def image_labels(self, ref: str) -> dict[str, str]:
        release, _, flavor = ref.rsplit(":", 1)[-1].partition("-")
        return {"ngc-paddle.release": release, "ngc-paddle.flavor": flavor}

    @staticmethod
    def printed(args: tuple[str, ...], cwd: Path | None, env) -> dict:
        """What `bake --print` gives of the generated bake file: its targets with docker-bake.hcl's functions
        (layer_tag, candidate_tag) evaluated with bake's variables (the run's environment)."""
        files = [args[i + 1] for i, a in enumerate(args) if a == "-f"]
        text = ((cwd or Path(".")) / files[-1]).read_text()
        values = dict(env or {})

        def call(match: re.Match) -> str:
            params = re.findall(r'\\?"([^"\\]*)\\?"', match.group(2))
            if match.group(1) == "layer_tag":
                return f"{values['LAYER_REPO']}:{values['RELEASE']}-{params[0]}-{params[1]}"
            return f"{values['IMAGE']}:{values['RELEASE']}-{params[0]}{values.get('CANDIDATE_SUFFIX', '')}"

        return json.loads(re.sub(r"\$\{(layer_tag|candidate_tag)\(([^)]*)\)\}", call, text))

    def docker(self, *args: str, check: bool = True, timeout: float | None = None, cwd: Path | None = None,
               env=None, **_: object) -> subprocess.CompletedProcess[str]:
        self.calls.append(" ".join(args[:3]))
        if args[:2] == ("buildx", "bake") and "--print" in args:
            return subprocess.CompletedProcess(list(args), 0, json.dumps(self.printed(args, cwd, env)), "")
        return subprocess.CompletedProcess(list(args), 0, "", "")

    @contextlib.contextmanager
    def stream(self, *args: str, cwd: Path | None = None, env=None) -> Iterator[SimpleNamespace]:
        """`docker buildx bake ... TARGET`: two steps, the first from the cache; the target's tag exists after."""
        target = args[-1]
        for tag in self.printed(args, cwd, env)["target"][target]["tags"]:
            self.images[tag] = _id(tag)
        if "--metadata-file" in args:
            metadata = Path(args[args.index("--metadata-file") + 1])
            metadata.parent.mkdir(parents=True, exist_ok=True)
            metadata.write_text(json.dumps({target: {
                "buildx.build.provenance": {"buildType": "https://mobyproject.org/buildkit@v1", "target": target},
                "containerimage.config.digest": _id(target + "-config"),
                "containerimage.digest": _id(target)}}))
        lines = [f"#5 [{target} stage-0 1/2] COPY layers/lib /tmp/ngc/lib\n", "#5 CACHED\n",
                 f"#6 [{target} stage-0 2/2] RUN /tmp/ngc/layer/install.sh\n", f"#6 0.500 [{target}] installed\n",
                 "#6 DONE 0.5s\n"]
        yield SimpleNamespace(stdout=iter(lines), wait=lambda: 0)

    def run(self, image: str, *cmd: str, flags=(), check: bool = False, timeout: float | None = None,
            **_: object) -> subprocess.CompletedProcess[str]:
        self.calls.append(f"run {image}")
        return subprocess.CompletedProcess([image, *cmd], 0, "smoke test: paddle (faked)\n", "")


def fake_layer_checks(patches: Patches) -> None:
    """Each layer's fast checks pass; the manifest the build hands them (the flavor's, resolved) is their report."""
    from ngc_paddle.image_build import build_flavor

    def check_layer(root: Path, image: str, expected: dict, layer: str, folder: Path, marker: str = "fast"):
        folder.mkdir(parents=True, exist_ok=True)
        report = folder / "layer-checks.json"
        report.write_text(json.dumps({"image": image, "layer": layer, "expected": expected}, indent=1,
                                     sort_keys=True) + "\n")
        return SimpleNamespace(passed=2, skipped=0, failed=[], seconds=0.5, report=report)

    patches.set(build_flavor, "check_layer", check_layer)
    patches.set(build_flavor, "ensure_base_image", lambda *args, **kwargs: BASE)
    patches.set(build_flavor, "compare_base", lambda *args, **kwargs: True)
    from ngc_paddle.image_build import nochange

    patches.set(nochange, "present_base_image", lambda *args, **kwargs: None)


# ---- a trip's root -----------------------------------------------------------------------------------------

def make_root(inputs: Path, work: Path) -> Path:
    """The repository's build context with the fixed inputs' releases/ and release-notes/."""
    root = work / "root"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for name in CONTEXT:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=ignore)
        elif source.is_file():
            shutil.copy2(source, root / name)
    for name in ("releases", "release-notes"):
        shutil.copytree(inputs / name, root / name)
    return root


def _cli(root: Path, *args: str) -> tuple[int, str, str]:
    from ngc_paddle import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--root", str(root), *args])
    return code, out.getvalue(), err.getvalue()


def _masked(value: object, key: str = "") -> object:
    if key in TIMES:
        return MASK
    if isinstance(value, dict):
        return {k: MASK if k in DIGEST_LABELS or k == "inputs_digest" else _masked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _text(text: str, root: Path) -> str:
    """A report's text with the scratch root, times and inputs digests masked."""
    text = text.replace(str(root), "ROOT")
    text = re.sub(r"\b\d+\.\d+ ?s\b", "N s", text)
    text = re.sub(r"\| \d+\.\d \|", "| N |", text)  # a layer's time (s) in the build report's table
    text = re.sub(r"phases: .*", f"phases: {MASK}", text)  # the scan's phases, in the order its threads ended
    text = re.sub(r"(inputs digest: `|inputs )sha256:[0-9a-f]{12,64}", rf"\1{MASK}", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\+00:00|Z)", MASK, text)
    return re.sub(r"(started: )\S+", rf"\1{MASK}", text)


def _json(path: Path, root: Path) -> str:
    if not path.exists():
        return "(absent)"
    data = _masked(json.loads(path.read_text()))
    return _text(json.dumps(data, indent=1, sort_keys=True), root)


# ---- the trips ---------------------------------------------------------------------------------------------

def build_trip(root: Path, flavor: str, sources: dict[str, str]) -> dict[str, str]:
    """`ngc-paddle build --flavor F [--source ...]` with the engine faked: its report, its progress lines, the
    manifest each layer's checks were given and the bake file the build wrote (inputs labels masked)."""
    engine = FakeEngine()
    patches = Patches()
    engine.install(patches)
    fake_layer_checks(patches)
    try:
        code, out, err = _cli(root, "build", "--flavor", flavor, *(f"--source={k}={v}" for k, v in sources.items()))
    finally:
        patches.undo()
    release = "26.12"
    reports = root / "build" / "reports" / f"{release}-{flavor}"
    found = {"exit": str(code), "stderr": _text(err, root), "progress": _text(out, root)}
    for name in ("build.json", "build-failed.json"):
        if (reports / name).exists():
            found[name] = _json(reports / name, root)
            found[name.replace(".json", ".md")] = _text((reports / name.replace(".json", ".md")).read_text(), root)
    checks = [json.loads(p.read_text()) for p in
              sorted((root / "build" / "logs" / f"{release}-{flavor}").glob("*-checks/layer-checks.json"))]
    found["layer_checks"] = "\n".join(f"{c['layer']}: {c['image']}" for c in checks)
    expected = {json.dumps(c["expected"], indent=1, sort_keys=True) for c in checks}
    found["layer_checks_expect"] = "\n".join(sorted(expected))  # one manifest for every layer's checks
    found["bake_file"] = _json(root / "build" / "bake" / f"{release}.json", root)
    return found


def _saved_image(root: Path, work: Path, flavor: str) -> Path:
    """A saved image of the flavor as its build labels it: the Debian packages and Python distributions its lock
    names (one Debian package older, one missing, one distribution missing: what the image-against-its-lock check
    finds), and the suite layer's baked manifest (the flavor's, as the fixed inputs resolve it)."""
    golden = json.loads((Path(__file__).resolve().parent / "golden" / "resolve_once" / "golden.json").read_text())
    baked = golden["flavors"][flavor]["manifest_text"].encode()
    lock = json.loads((root / "releases" / f"26.12-{flavor}.lock.json").read_text())
    debs = {p["package"]: (p["version"], p["architecture"]) for p in [*lock["base"]["packages"], *lock["debian"]]}
    names = sorted(debs)
    debs[names[0]] = ("0.0-old", debs[names[0]][1])
    del debs[names[1]]

    def layer(files: dict[str, bytes]) -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path, content in files.items():
                info = tarfile.TarInfo(path.lstrip("/"))
                info.size, info.mode = len(content), 0o644
                tar.addfile(info, io.BytesIO(content))
        return out.getvalue()

    status = "".join(f"Package: {name}\nStatus: install ok installed\nArchitecture: {arch}\nVersion: {version}\n\n"
                     for name, (version, arch) in sorted(debs.items()))
    site = "/opt/venv/lib/python3.11/site-packages"
    dists = {f"{site}/{e['name'].replace('-', '_')}-{e['version']}.dist-info/METADATA":
             f"Metadata-Version: 2.1\nName: {e['name']}\nVersion: {e['version']}\n".encode() for e in lock["pip"][1:]}
    layers = {
        "base": layer({"/etc/os-release": b'ID=debian\nVERSION_ID="12"\n',
                       "/etc/passwd": b"root:x:0:0:root:/root:/bin/bash\npaddle:x:1000:1000::/home/paddle:/bin/bash\n",
                       "/etc/group": b"root:x:0:\npaddle:x:1000:\n"}),
        "os": layer({"/var/lib/dpkg/status": status.encode()}),
        "paddle": layer(dists),
        "suite": layer({"/opt/ngc-paddle/manifest.json": baked}),
    }
    history = [{"created_by": "Imported from -"}, {"created_by": "RUN APT_PACKAGES=python3 /bin/sh -c install"},
               {"created_by": 'RUN LAYER_SPEC={"layer": "paddle"} /bin/sh -c install'},
               {"created_by": "COPY /opt/ngc-paddle /opt/ngc-paddle"}]
    config = {"architecture": "amd64", "os": "linux", "history": history,
              "rootfs": {"type": "layers", "diff_ids": [_id(name) for name in layers]},
              "config": {"User": "1000:1000", "Labels": {"ngc-paddle.release": "26.12", "ngc-paddle.flavor": flavor,
                                                         "ngc-paddle.layer": "suite"}}}
    members = {f"{name}/layer.tar": data for name, data in layers.items()}
    members["config.json"] = json.dumps(config).encode()
    members["manifest.json"] = json.dumps([{"Config": "config.json", "RepoTags": [f"ngc-paddle:26.12-{flavor}"],
                                            "Layers": [f"{name}/layer.tar" for name in layers]}]).encode()
    saved = work / f"{flavor}.tar"
    with tarfile.open(saved, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return saved


def scan_trip(root: Path, work: Path, flavor: str = "cpu") -> dict[str, str]:
    """`ngc-paddle scan IMAGE --source ...` of a saved image of the flavor (no trivy, grype or hadolint here; the
    archive and index mirrors refuse the connection): scan.json, scan.md and the SBOM."""
    from ngc_paddle.scan import gate
    from ngc_paddle.scan.checks.layer_cache import CACHE_ENV
    from ngc_paddle.scan.source import layer_source
    from ngc_paddle.scan.source.saved_image import SavedImage
    from ngc_paddle.scan.vulnerabilities import scanners, sources

    saved = _saved_image(root, work, flavor)
    patches = Patches()
    patches.set(layer_source, "open_image", lambda image, tmp, say=print: (SavedImage(saved), "docker save"))
    patches.set(scanners, "tool_binary", lambda name: None)
    patches.set(sources, "trivy_cache", lambda: Path("/nonexistent/trivy"))
    patches.set(gate, "hadolint_findings", lambda root: [])
    from ngc_paddle import engine

    patches.set(engine, "inspect_images", lambda refs: {})  # no layer image of this host's engine is the trip's
    output = work / "scan"
    # the per-layer cache where the code that made the goldens kept it (in the checkout), so the progress line agrees
    cache_before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(root / "build" / "scan-cache" / "layers")
    try:
        code, out, err = _cli(root, "scan", f"ngc-paddle:26.12-{flavor}", "--output", str(output), "--today", TODAY,
                              "--policy", str(root / "security" / "policy.yaml"),
                              *(f"--source={k}={v}" for k, v in SCAN_MIRRORS.items()))
    finally:
        patches.undo()
        if cache_before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = cache_before
    found = {"exit": str(code), "stderr": _text(err.replace(str(output), "OUT"), root),
             "progress": _text(out.replace(str(output), "OUT"), root)}
    for name in ("scan.json", "sbom.cdx.json"):
        found[name] = _json(output / name, root).replace(str(output), "OUT")
    found["scan.md"] = _text((output / "scan.md").read_text().replace(str(output), "OUT"), root)
    return found


def gates_trip(root: Path) -> dict[str, str]:
    """`ngc-paddle gates 26.12 --flavor all` on this host with the fan-out faked (each profile's cell as given): what
    the jobs were started with (image, GPU or not, the candidate's digest), gates.json and gates.md."""
    from ngc_paddle.release.fleet.cells import Cell
    from ngc_paddle.release.stages import candidate, gates, push

    engine = FakeEngine()
    started: list[list] = []
    cells = {"cpu": {"cpu": {"status": "PASS", "detail": "validation and benchmarks passed", "job": "local job 1",
                             "node": "host-a", "key": "k1", "profile": "cpu", "hardware": "cpu", "runner": "local",
                             "finished": "2026-12-15T10:00:00+00:00"}},
             "gpu-cu118": {"-": {"status": "N/A", "detail": "no profile of the fleet has a GPU", "key": "k2",
                                 "profile": "-", "hardware": "-", "runner": "-",
                                 "finished": "2026-12-15T10:00:00+00:00"}}}

    class FakeGates:
        def __init__(self, *args, **kwargs) -> None:
            self.flavors: list[str] = []

        def start(self, flavors, background: bool = False) -> None:
            started.append([list(f) for f in flavors])
            self.flavors = [f[0] for f in flavors]

        def wait(self) -> dict:
            return {f: gates.outcome({p: Cell.model_validate(c) for p, c in cells.get(f, {}).items()})
                    for f in self.flavors}

    for name in ("ngc-paddle:26.12-cpu", "ngc-paddle:26.12-gpu-cu118", "ngc-paddle:26.12-gpu"):
        engine.images[name] = _id(name)
    patches = Patches()
    engine.install(patches)
    patches.set(gates, "Gates", FakeGates)
    patches.set(push, "ensure_registry", lambda registry: None)
    patches.set(candidate, "push", lambda state, flavor, image, registry, say:
                f"{registry}/ngc-paddle@{_id(image + '@candidate')}")
    try:
        code, out, err = _cli(root, "gates", "26.12", "--flavor", "cpu gpu-cu118")
    finally:
        patches.undo()
    folder = root / "build" / "release" / "26.12"
    return {"exit": str(code), "stderr": _text(err, root), "progress": _text(out, root),
            "started": json.dumps(started, indent=1), "gates.json": _json(folder / "gates.json", root),
            "gates.md": (folder / "gates.md").read_text() if (folder / "gates.md").exists() else "(absent)"}


def reference_trip(root: Path) -> dict[str, str]:
    """The A/B's default reference of each flavor's candidate (bench-compare without --reference): the previous
    release's image of the flavor by the digest its committed notes record holds, or why there is none."""
    from ngc_paddle.host_errors import NgcPaddleError
    from ngc_paddle.release.ab import compare

    record = root / "release-notes" / "inputs" / "23.01.json"
    record.write_text(json.dumps({"release": "23.01", "flavors": {"gpu": {"digest": PREVIOUS_DIGEST}}}))
    engine = FakeEngine()
    patches = Patches()
    engine.install(patches)
    found = {}
    try:
        for flavor in ("cpu", "gpu", "gpu-cu118"):
            try:
                found[flavor] = compare.default_reference(root, f"ngc-paddle:26.12-{flavor}", "reg:5000")
            except NgcPaddleError as exc:
                found[flavor] = f"error: {exc}"
    finally:
        patches.undo()
        record.unlink()
    return found


def command_trip(root: Path) -> dict[str, str]:
    """The commands that print what a resolution says: manifest check and show, bake-file, image_ref, and the notes
    re-rendered from the committed record (`release notes`)."""
    from ngc_paddle import image_ref

    found = {}
    for name, args in (("manifest check", ("manifest", "check")),
                       *((f"manifest show {f}", ("manifest", "show", "26.12", "--flavor", f))
                         for f in ("cpu", "gpu", "gpu-cu118")),
                       ("bake-file mirrors", ("bake-file", "26.12", *(f"--source={k}={v}" for k, v in
                                                                     MIRRORS.items()))),
                       ("bake-file", ("bake-file", "26.12")), ("release notes", ("release", "notes", "26.12"))):
        code, out, err = _cli(root, *args)
        found[name] = _text(f"exit {code}\n{out}{err}", root)
    # the bake files themselves: golden.json (override) and build_trip (the build's, with mirrors, base and labels)
    found["release-notes/26.12.md"] = (root / "release-notes" / "26.12.md").read_text()
    found["release-notes/support-matrix.md"] = (root / "release-notes" / "support-matrix.md").read_text()
    for flavor in (None, "gpu-cu118"):
        found[f"image_ref {flavor}"] = " | ".join(image_ref.resolve(None, "26.12", flavor, root))
    return found


def lock_trip(root: Path, flavor: str | None, sources: dict[str, str]) -> dict[str, str]:
    """`ngc-paddle lock 26.12 [--flavor F] --source ...` with the network and the engine faked: every source
    answers, pip's resolution gives the flavor's committed entries, the os layer's trial install its committed
    Debian packages. The current code's trip only (the lock command moved in issue 31): the resolve-once counter
    runs it. Whether each written lock has the committed lock's inputs (the manifest's part) is its report."""
    from functools import partial

    from ngc_paddle import lock_command
    from ngc_paddle.lock import pip_lock
    from ngc_paddle.lock.lock_file import read_lock

    committed = {p.name: read_lock(p) for p in (root / "releases").glob("26.12-*.lock.json")}
    locking: list[str] = []

    def pip_report(cmd: list[str]) -> dict:
        return {"install": [{"metadata": {"name": e.name, "version": e.version, "requires_dist": []},
                             "download_info": {"url": e.url, "archive_info": {"hashes": {"sha256": e.sha256}}}}
                            for e in committed[locking[-1]].pip]}

    def lock_pip(subject, root: Path):
        locking.append(f"26.12-{subject.name}.lock.json")
        return pip_lock.lock_pip(subject, run=pip_report, root=root)

    def rows(entries) -> str:
        return "".join(f"ii \t{e.package}\t{e.version}\t{e.architecture}\n" for e in entries)

    class LockEngine(FakeEngine):
        def run(self, image: str, *cmd: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
            lock = committed[locking[-1]]
            out = f"=== before\n{rows(lock.base.packages)}=== after\n{rows(lock.base.packages)}{rows(lock.debian)}"
            return subprocess.CompletedProcess([image, *cmd], 0, out, "")

    patches = Patches()
    LockEngine().install(patches)
    answers = partial(pip_lock.check_reachable, prober=lambda *args: None)
    patches.set(lock_command, "check_reachable", answers)
    patches.set(lock_command, "unreachable_optional_layers",
                partial(pip_lock.unreachable_optional_layers, prober=lambda *args: None))
    patches.set(lock_command, "lock_pip", lock_pip)
    patches.set(lock_command, "ensure_base_image", lambda *args, **kwargs: BASE)
    patches.set(lock_command, "base_facts", lambda *args: committed[locking[-1]].base)
    try:
        code, out, err = _cli(root, "lock", "26.12", *(["--flavor", flavor] if flavor else []),
                              *(f"--source={k}={v}" for k, v in sources.items()))
    finally:
        patches.undo()
    same = {name: read_lock(root / "releases" / name).inputs == committed[name].inputs for name in locking}
    return {"exit": str(code), "progress": _text(out, root), "stderr": _text(err, root),
            "locked": json.dumps(same, sort_keys=True)}


TRIPS: dict[str, Callable[[Path, Path], dict[str, str]]] = {
    "commands": lambda root, work: command_trip(root),
    "build cpu (mirror)": lambda root, work: build_trip(root, "cpu", MIRRORS),
    "build gpu-cu118": lambda root, work: build_trip(root, "gpu-cu118", {}),
    "scan cpu": scan_trip,
    "gates": lambda root, work: gates_trip(root),
    "A/B reference": lambda root, work: reference_trip(root),
}


def reports(inputs: Path, work: Path) -> dict[str, dict[str, str]]:
    """Every trip's reports, each on a fresh root made from `inputs`."""
    found = {}
    for index, (name, trip) in enumerate(TRIPS.items()):
        found[name] = trip(make_root(inputs, work / str(index)), work / str(index))
    return found


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="resolve-once-") as scratch:
        produced = reports(Path(sys.argv[1]).resolve(), Path(scratch))
    Path(sys.argv[2]).write_text(json.dumps(produced, indent=1, sort_keys=True) + "\n")
