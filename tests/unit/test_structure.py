"""The host package's shape: its parts stack in layers with no import pointing up, and one adapter runs docker.

Why: a folder that imports one above it (lock importing image_build for the engine wrapper, driver and
manifest importing each other) cannot be read, tested or moved without the folders above it. The layers,
bottom first, are written down here once; an import between two parts must go from a higher layer to a
lower one. Function-level and type-checking imports count too.
"""

import ast
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "ngc_paddle"
# The parts of ngc_paddle (a folder or a top-level module), bottom layer first. Parts of one layer do
# not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("host_errors", "fields", "layers", "distro"),  # facts and types
    ("engine", "cosign", "outputs", "cuda"),  # the docker and cosign CLI adapters, writing files, the CUDA spec
    ("driver",),  # driver figures of a CUDA version
    ("manifest",),  # the release manifest: schema, checks, loading, the image's resolved view
    # locks: what one is, how it is made and checked against the manifest, each layer's build arguments, the base
    # image; below flavor, since resolving a flavor reads its lock. lock/ reads a flavor through lock/subject.py
    # (what ngc_paddle.flavor.ResolvedFlavor satisfies), never as the raw manifest and a name to look up again.
    ("lock",),
    ("flavor",),  # a release and its flavors resolved once per run
    ("validate_layer", "attestations"),  # the validation suite's layer checks from the host, signed evidence
    # the commands' own machinery, each taking the release or flavor the run resolved: `ngc-paddle lock`
    # (lock_command: above flavor, it takes the resolved release), the build, validation, image names, the scan
    ("lock_command", "image_build", "validate_image", "image_ref", "scan"),
    ("release",),  # the monthly pipeline
    ("cli",),
)
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}
# Whoever runs docker does it through ngc_paddle/engine.py; the image side (validation/) is not the host's.
DOCKER_FREE = ("ngc_paddle", "perf")
ADAPTER = PACKAGE / "engine.py"


def _part(module: str) -> str | None:
    pieces = module.split(".")
    return pieces[1] if pieces[0] == "ngc_paddle" and len(pieces) > 1 else None


@cache
def _edges() -> dict[tuple[str, str], list[str]]:
    """(importing part, imported part) -> where, for every import between two different parts."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        source = rel.parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "ngc_paddle" else []
                targets = names or [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                part = _part(target)
                if part and part != source and part != "__init__":
                    edges.setdefault((source, part), []).append(f"{rel}:{node.lineno}")
    return edges


def test_every_part_of_the_package_has_its_layer() -> None:
    parts = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert parts == set(RANK), f"add {sorted(parts - set(RANK))} to LAYERS, or drop {sorted(set(RANK) - parts)}"


def test_no_import_points_up_or_sideways() -> None:
    wrong = [f"{a} (layer {RANK[a]}) imports {b} (layer {RANK[b]}) at {', '.join(where[:3])}"
             for (a, b), where in sorted(_edges().items()) if RANK[b] >= RANK[a]]
    assert wrong == []


@pytest.mark.parametrize("part", ["lock", "manifest", "driver", "validate_layer"])
def test_what_the_build_uses_does_not_import_the_build(part: str) -> None:
    assert [where for (a, b), where in _edges().items() if a == part and b == "image_build"] == []


def test_no_two_parts_import_each_other() -> None:
    edges = _edges()
    assert sorted({tuple(sorted(pair)) for pair in edges if pair[::-1] in edges}) == []


def _runs_docker(node: ast.AST) -> bool:
    """A command line that starts with docker: `["docker", ...]`, `("docker", ...)` or a shell string."""
    if isinstance(node, ast.List | ast.Tuple) and node.elts:
        first = node.elts[0]
        return isinstance(first, ast.Constant) and first.value == "docker"
    if isinstance(node, ast.Call):
        func = ast.unparse(node.func)
        if func.startswith(("subprocess.", "os.system", "os.popen")) and node.args:
            first = node.args[0]
            text = first.value if isinstance(first, ast.Constant) else ast.unparse(first)
            return isinstance(text, str) and text.lstrip("f'\"").startswith("docker")
    return False


def test_every_docker_call_goes_through_the_engine_adapter() -> None:
    found = []
    for folder in DOCKER_FREE:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path == ADAPTER:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if _runs_docker(node):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)[:70]}")
    assert found == [], "run docker through ngc_paddle/engine.py"


def test_the_docker_detector_sees_each_form() -> None:
    code = ('subprocess.run(["docker", "run", image])\n' 'cmd = ("docker", "save")\n'
            'subprocess.run(f"docker image ls {x} | xargs -r docker image rm", shell=True)\n'
            'os.system("docker ps")\n' 'subprocess.run(["git", "status"])\n' 'engine.docker("run", image)\n')
    flagged = [node for node in ast.walk(ast.parse(code)) if _runs_docker(node)]
    lines = sorted({node.lineno for node in flagged})
    assert lines == [1, 2, 3, 4]


# The scan gate's stages, bottom first (a folder of ngc_paddle/scan/ or one of its top modules): the image's bytes
# and the finding shape; the policy; what is checked and the vulnerabilities found; the gate that judges them all.
SCAN = PACKAGE / "scan"
SCAN_STAGES: tuple[tuple[str, ...], ...] = (
    ("source", "findings"),
    ("policy",),
    ("checks", "vulnerabilities", "sbom"),
    ("gate",),
)
SCAN_RANK = {stage: rank for rank, stages in enumerate(SCAN_STAGES) for stage in stages}


def _scan_stage(module: str) -> str | None:
    pieces = module.split(".")
    return pieces[2] if pieces[:2] == ["ngc_paddle", "scan"] and len(pieces) > 2 else None


def test_every_scan_stage_has_its_rank_and_says_what_it_holds() -> None:
    stages = {p.stem if p.is_file() else p.name for p in SCAN.iterdir()
              if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert stages == set(SCAN_RANK), f"add {sorted(stages - set(SCAN_RANK))} to SCAN_STAGES"
    for folder in [SCAN, *(SCAN / s for s in stages if (SCAN / s).is_dir())]:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        assert len(doc.splitlines()) == 2, f"{folder.relative_to(REPO)}/__init__.py: say what it holds and may import"


def test_scan_stages_import_only_the_stages_below() -> None:
    wrong = []
    for path in sorted(SCAN.rglob("*.py")):
        rel = path.relative_to(SCAN)
        source = rel.parts[0].removesuffix(".py")
        if source == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = ([f"{node.module}.{a.name}" for a in node.names] if node.module == "ngc_paddle.scan"
                           else [node.module])
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for stage in filter(None, map(_scan_stage, targets)):
                if stage != source and SCAN_RANK[stage] >= SCAN_RANK[source]:
                    wrong.append(f"scan/{rel}:{node.lineno}: {source} imports {stage}")
    assert wrong == []
