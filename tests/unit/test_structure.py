"""The host package's shape beyond the import contracts: one adapter runs docker; each scan stage says what it holds.

The layers of ngc_paddle's parts and of the scan's stages (no import pointing up or sideways, every part in a
layer) are import-linter contracts in pyproject.toml (`host-layers`, `scan-stages`), checked by `make lint` and by
tests/unit/test_lint.py.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "ngc_paddle"
# Whoever runs docker does it through ngc_paddle/engine.py; the image side (validation/) is not the host's.
DOCKER_FREE = ("ngc_paddle", "perf")
ADAPTER = PACKAGE / "engine.py"


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


# The scan gate's stages (their order is the import-linter contract `scan-stages`): each folder's __init__ says in
# two lines what it holds and what it may import.
SCAN = PACKAGE / "scan"


def test_every_scan_stage_says_what_it_holds() -> None:
    stages = {p.name for p in SCAN.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    for folder in [SCAN, *(SCAN / s for s in sorted(stages))]:
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        assert len(doc.splitlines()) == 2, f"{folder.relative_to(REPO)}/__init__.py: say what it holds and may import"


def test_the_measurement_scripts_run_as_modules() -> None:
    """perf/ is a package run with `python -m perf.X`: no script edits sys.path, every folder is a package."""
    perf = REPO / "perf"
    edits = [f"{path.relative_to(REPO)}:{node.lineno}" for path in sorted(perf.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(node, ast.Attribute) and ast.unparse(node) == "sys.path"]
    assert edits == []
    assert [d for d in perf.rglob("*") if d.is_dir() and d.name != "__pycache__" and not (d / "__init__.py").exists()] \
        == []


def test_the_strict_model_config_is_declared_once() -> None:
    """Every strict schema derives from ngc_common/strict_model.py's Strict; a model reading another's format says
    so with its own config (extra ignored or allowed), never a second copy of the strict one."""
    declared = [f"{path.relative_to(REPO)}:{node.lineno}" for folder in ("ngc_paddle", "ngc_common", "benchmarks")
                for path in sorted((REPO / folder).rglob("*.py"))
                for node in ast.walk(ast.parse(path.read_text(), str(path)))
                if isinstance(node, ast.keyword) and node.arg == "extra" and ast.unparse(node.value) == "'forbid'"]
    assert [place.split(":")[0] for place in declared] == ["ngc_common/strict_model.py"]
