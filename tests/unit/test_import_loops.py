"""No import loop between the project's files: ngc_paddle, ngc_common, benchmarks, validation and perf.

Why: two files that import each other (directly or around a longer ring) can be read, tested or moved only
together, and the loop usually hides behind a function-level import that runs late. Every import counts here:
module level, function level and type checking. `from package import name` points at the submodule `name`
when there is one, else at the package's __init__. A file of validation/ also finds the files beside its
folder's root (pytest runs the suite with validation/ on sys.path: `from conftest import ...`).

Parent packages: importing `a.b.c` first runs a/__init__.py and a/b/__init__.py when they have not started yet, so
the import is also an edge to each of those __init__ files (with the import's line), except the packages the
importing file lies in itself: Python starts a package's __init__ before the first line of any file inside it, so
a file's import of a sibling or a cousin never runs its own package's __init__ again. The rule, precisely: F
imports a.b.c -> edges F -> a/b/c.py and F -> P/__init__.py for each package P in {a, a/b} that does not hold F.
So a package's own __init__ importing its submodules (manifest/__init__ -> loader -> consistency -> schema) is no
loop: the submodules' imports of each other add no edge back to their package's __init__. A file outside the
package that imports one of its submodules, while that package's __init__ (at any level) leads back to the file,
is a loop, and a real one: moved to module level, such a lazy import fails with "cannot import name ... from
partially initialized module".
The failure lists each loop as a ring of files, with the line of each import, so the next loop is seen
when it is written.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("ngc_paddle", "ngc_common", "benchmarks", "validation", "perf")
SEARCHED_FROM_OWN_ROOT = ("validation",)  # folders whose files import each other by their path below the folder


def _module_file(base: Path, dotted: str) -> Path | None:
    path = base.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _targets(node: ast.AST, path: Path, repo: Path) -> list[str]:
    """The dotted names an import statement may load, most specific first for each name it imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        package = path.parent.relative_to(repo).parts
        package = package[: len(package) - (node.level - 1)]
        module = ".".join([*package, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    return [f"{module}.{alias.name}" for alias in node.names] + [module]


def import_graph(repo: Path, roots: tuple[str, ...] = ROOTS) -> dict[Path, dict[Path, int]]:
    """Each file of the roots -> the files of the roots it imports, with the line of the first such import."""
    files = sorted(p for root in roots if (repo / root).is_dir() for p in (repo / root).rglob("*.py"))
    graph: dict[Path, dict[Path, int]] = {}
    for path in files:
        bases = [repo] + [repo / r for r in SEARCHED_FROM_OWN_ROOT if path.is_relative_to(repo / r)]
        edges: dict[Path, int] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = _targets(node, path, repo)
            wanted = names if isinstance(node, ast.Import) else names[:-1]
            for name in wanted:
                found = next(((base, f) for base in bases if (f := _module_file(base, name))), None)
                if found is None and isinstance(node, ast.ImportFrom):  # a name defined in the module itself
                    found = next(((base, f) for base in bases if (f := _module_file(base, names[-1]))), None)
                if found is None:
                    continue
                for target in (*_parent_inits(*found, importer=path), found[1]):
                    if target != path and any(target.is_relative_to(repo / r) for r in roots):
                        edges.setdefault(target, node.lineno)
        graph[path] = edges
    return graph


def _parent_inits(base: Path, module: Path, importer: Path) -> list[Path]:
    """The __init__ files an import of `module` (found below `base`) runs first: those of its packages, outermost
    first, less those of the packages that hold the importing file (already started before its first line)."""
    package = module.parent.parent if module.name == "__init__.py" else module.parent
    inits = []
    while package != base and package.is_relative_to(base):
        init = package / "__init__.py"
        if init.is_file() and not importer.is_relative_to(package):
            inits.append(init)
        package = package.parent
    return inits[::-1]


def knots(graph: dict[Path, dict[Path, int]]) -> list[set[Path]]:
    """The strongly connected groups of more than one file (Tarjan): files that all reach each other."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    groups: list[set[Path]] = []

    def visit(start: Path) -> None:  # iterative, so a long chain cannot exhaust the recursion limit
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(set(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def loops(graph: dict[Path, dict[Path, int]]) -> list[list[Path]]:
    """One ring of files through each knot."""
    return [_ring(graph, knot) for knot in knots(graph)]


def _ring(graph: dict[Path, dict[Path, int]], group: set[Path]) -> list[Path]:
    """One cycle inside a strongly connected group: from its first file, breadth first back to it."""
    start = min(group)
    came: dict[Path, Path] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node]):
                if child not in group:
                    continue
                if child == start:
                    ring = [node]
                    while ring[-1] != start:
                        ring.append(came[ring[-1]])
                    return [start, *reversed(ring[:-1])]
                if child not in came:
                    came[child] = node
                    nxt.append(child)
        frontier = nxt
    return sorted(group)


def describe(graph: dict[Path, dict[Path, int]], ring: list[Path], repo: Path) -> str:
    steps = [f"{a.relative_to(repo)}:{graph[a][b]}" for a, b in zip(ring, [*ring[1:], ring[0]], strict=True)]
    return " -> ".join(steps) + f" -> {ring[0].relative_to(repo)}"


def test_no_import_loop_between_the_projects_files() -> None:
    graph = import_graph(REPO)
    assert {p.relative_to(REPO).parts[0] for p in graph} == set(ROOTS)  # every root was read
    found = [describe(graph, _ring(graph, knot), REPO) + f" (the knot: {len(knot)} files, "
             f"{', '.join(sorted(str(p.relative_to(REPO)) for p in knot))})" for knot in knots(graph)]
    assert found == [], "import loops (break each: move what both need below both):\n" + "\n".join(found)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_the_detector_sees_a_ring_through_a_function_level_and_a_relative_import(tmp_path: Path) -> None:
    repo = _tree(tmp_path, {
        "ngc_paddle/__init__.py": "",
        "ngc_paddle/a.py": "from ngc_paddle import b\n",
        "ngc_paddle/b.py": "def f():\n    from .c import g\n",
        "ngc_paddle/c.py": "import ngc_paddle.a\ndef g(): ...\n",
        "ngc_paddle/d.py": "from ngc_paddle.a import x\n",  # into the ring, not part of it
        "benchmarks/__init__.py": "",
        "benchmarks/m/__init__.py": "from benchmarks.h.reg import register\n",
        "benchmarks/h/__init__.py": "",
        "benchmarks/h/reg.py": "def register(): ...\n",
        "validation/conftest.py": "from checks.one import x\n",
        "validation/checks/__init__.py": "",
        "validation/checks/one.py": "from conftest import y\n",
    })
    graph = import_graph(repo)
    rings = [[p.relative_to(repo).as_posix() for p in ring] for ring in loops(graph)]
    assert sorted(rings) == [["ngc_paddle/a.py", "ngc_paddle/b.py", "ngc_paddle/c.py"],
                             ["validation/checks/one.py", "validation/conftest.py"]]
    assert describe(graph, loops(graph)[0], repo) == (
        "ngc_paddle/a.py:1 -> ngc_paddle/b.py:2 -> ngc_paddle/c.py:1 -> ngc_paddle/a.py")


def test_the_detector_sees_a_ring_through_a_parent_packages_init_but_not_through_a_packages_own(
        tmp_path: Path) -> None:
    """The loop the fleet had: a module outside a package imports one of its submodules, whose package's __init__
    leads back (lazily) to the module. A package whose __init__ imports its own submodules, which import each
    other, is no loop: their imports of a sibling do not run their own package's __init__ again."""
    repo = _tree(tmp_path, {
        "ngc_paddle/__init__.py": "",
        "ngc_paddle/fleet/__init__.py": "",
        "ngc_paddle/fleet/client.py": "from ngc_paddle.fleet.runners.base import State\n",
        "ngc_paddle/fleet/runners/__init__.py": "def pick():\n    from ngc_paddle.fleet.runners.one import One\n",
        "ngc_paddle/fleet/runners/base.py": "class State: ...\n",
        "ngc_paddle/fleet/runners/one.py": "from ngc_paddle.fleet.client import Client\n",
        "ngc_paddle/manifest/__init__.py": "from ngc_paddle.manifest.loader import load\n",
        "ngc_paddle/manifest/loader.py": "from ngc_paddle.manifest import schema\n",
        "ngc_paddle/manifest/schema.py": "import ngc_paddle.manifest.loader\n",  # a real loop inside: still seen
        "ngc_paddle/manifest/check.py": "from ngc_paddle.manifest.schema import S\n",
    })
    graph = import_graph(repo)
    rings = sorted(describe(graph, ring, repo) for ring in loops(graph))
    assert rings == [
        "ngc_paddle/fleet/client.py:1 -> ngc_paddle/fleet/runners/__init__.py:2 -> ngc_paddle/fleet/runners/one.py:1"
        " -> ngc_paddle/fleet/client.py",
        "ngc_paddle/manifest/loader.py:1 -> ngc_paddle/manifest/schema.py:1 -> ngc_paddle/manifest/loader.py"]
    assert tmp_path / "ngc_paddle/manifest/__init__.py" not in graph[tmp_path / "ngc_paddle/manifest/check.py"]
