"""ngc_common, the package the image and the host share: what it may import, and that nothing else keeps a copy.

The copies it replaced (crash handler, bounded reader, result schema, PEP 503, secret patterns, exit-code
tables) are gone; these tests fail when one comes back: an exit code written as a number, a module that
imports a sibling tree it does not ship with, or an image-side module that needs more than the image has.
"""

import ast
import json
import os
import re
import sys
from functools import cache
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from ngc_common import bounded_read, error_line, image_paths
from ngc_common.errors import InputError, OneLineError
from ngc_common.exit_codes import ExitCode, for_verdict
from ngc_paddle.host_errors import BuildError, ManifestError, NgcPaddleError, NotProven

REPO = Path(__file__).resolve().parents[2]
# Modules the image loads where pydantic may be missing (a layer image, the installer at build time).
STDLIB_ONLY = ("__init__", "exit_codes", "errors", "crash", "error_line", "pep503", "secret_patterns", "image_paths",
               "credential_files", "token_rules", "tensorrt_api", "paddle_dlopen")
# Both sides have these: the image's suite layer installs PyYAML and pydantic for the benchmarks and the suite.
ALLOWED = {"pydantic", "yaml", "ngc_common"}
# Exit codes other than 0 and 1 (also counts and flags): written as a number, they are a copy of the enum.
EXIT_NUMBERS = {2, 3, 4, 130, 143}


@cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _runtime_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:` (imported for type hints only, never at run time)."""
    hidden = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and ast.unparse(block.test) ==
              "TYPE_CHECKING" for stmt in block.body for n in ast.walk(stmt)}
    return [n for n in ast.walk(tree) if id(n) not in hidden]


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _python_files(*folders: str) -> list[Path]:
    return [p for folder in folders for p in sorted((REPO / folder).rglob("*.py"))]


@pytest.mark.parametrize("path", sorted((REPO / "ngc_common").glob("*.py")), ids=lambda p: p.name)
def test_ngc_common_needs_only_what_the_image_has(path: Path) -> None:
    foreign = _imports(_parsed(path)) - set(sys.stdlib_module_names)
    allowed = {"ngc_common"} if path.stem in STDLIB_ONLY else ALLOWED
    assert foreign <= allowed, f"{path.name} imports {sorted(foreign - allowed)}"
    if path.stem in STDLIB_ONLY:  # and only the standard-library-only siblings
        siblings = {node.module.split(".")[1] for node in ast.walk(_parsed(path))
                    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ngc_common.")}
        siblings |= {alias.name for node in ast.walk(_parsed(path)) if isinstance(node, ast.ImportFrom)
                     and node.module == "ngc_common" for alias in node.names}
        assert siblings <= set(STDLIB_ONLY), f"{path.name} imports {sorted(siblings - set(STDLIB_ONLY))}"


def test_the_image_side_imports_neither_the_host_package_nor_a_sibling_tree() -> None:
    """validation/ and benchmarks/ ship separately (a layer image gets the probes alone): they share code
    through ngc_common only. ngc_common itself imports no project tree."""
    rules = {"validation": {"ngc_paddle", "benchmarks"}, "benchmarks": {"ngc_paddle", "validation"},
             "image": {"ngc_paddle", "benchmarks", "validation"},
             "ngc_common": {"ngc_paddle", "benchmarks", "validation"}}
    wrong = [f"{path.relative_to(REPO)} imports {sorted(_imports(_parsed(path)) & banned)}"
             for folder, banned in rules.items() for path in _python_files(folder)
             if _imports(_parsed(path)) & banned]
    assert wrong == []


def _exit_number(node: ast.AST) -> int | None:
    """N in `return N`, `sys.exit(N)`, `exit(N)`, `parser.exit(N, ...)`, `SystemExit(N)`, `exit_code = N`."""
    value = None
    if isinstance(node, ast.Return):
        value = node.value
    elif isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "exit")
            or (isinstance(node.func, ast.Name) and node.func.id in ("exit", "SystemExit"))):
        value = node.args[0]
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name | ast.Attribute) and "exit" in ast.unparse(t).lower() for t in targets):
            value = node.value
    if isinstance(value, ast.Constant) and type(value.value) is int and value.value in EXIT_NUMBERS:
        return value.value
    return None


def test_no_exit_code_is_written_as_a_number_outside_the_enum() -> None:
    found = []
    for path in _python_files("ngc_paddle", "ngc_common", "validation", "benchmarks", "perf", "image", "layers"):
        if path == REPO / "ngc_common" / "exit_codes.py":
            continue
        tree = _parsed(path)
        for node in ast.walk(tree):
            number = _exit_number(node)
            if number is not None:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.unparse(node)[:80]}")
            if isinstance(node, ast.Assign) and any(re.search(r"EXIT", ast.unparse(t)) for t in node.targets) \
                    and isinstance(node.value, ast.Dict):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: a table of exit codes")
    assert found == []


def test_the_detector_sees_each_way_of_writing_an_exit_code() -> None:
    """The scan above is only worth something if it recognises the forms it looks for."""
    source = ("def f():\n    return 2\n" "sys.exit(3)\n" "parser.exit(2, 'x')\n" "raise SystemExit(4)\n"
              "class E:\n    exit_code = 130\n" "def g():\n    return 1\n" "n = 2\n")
    hits = [node for node in ast.walk(ast.parse(source)) if _exit_number(node) is not None]
    assert [ast.unparse(h).split("(")[0] for h in hits] == ["return 2", "sys.exit", "parser.exit", "SystemExit",
                                                            "exit_code = 130"]


def test_one_enum_gives_every_error_class_its_code() -> None:
    assert [int(c) for c in ExitCode] == [0, 1, 2, 3, 4, 75, 130, 143]
    assert issubclass(NgcPaddleError, OneLineError) and issubclass(InputError, OneLineError)
    assert ManifestError("x").exit_code == InputError("x").exit_code == ExitCode.BAD_INPUT
    assert BuildError("x").exit_code == ExitCode.FAIL and NotProven("x").exit_code == ExitCode.NOT_PROVEN
    assert [for_verdict(v) for v in ("PASS", "SMOKE", "FAIL", "NOT PROVEN", "NOT RUN")] == [0, 0, 1, 3, 3]


class _Sample(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    count: int
    name: str = "x"


def _error(data: dict) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        _Sample.model_validate(data)
    return info.value


def test_one_line_of_a_validation_error() -> None:
    """A file a person writes gets the key's own fix; a file a tool wrote gets the caller's fix whatever is wrong."""
    assert error_line.one_line("f.yaml", _error({"count": 1, "other": 2}), "see the docs") == (
        "f.yaml: other: unknown key; fix: remove it or check its spelling")
    assert error_line.one_line("s.json", _error({"count": 1, "other": 2}), "delete it", written=True) == (
        "s.json: other: unknown key; fix: delete it")
    assert error_line.one_line("f.yaml", _error({"count": "7\nx", "name": 5}), "see the docs") == (
        "f.yaml: count: Input should be a valid integer, not '7\\nx'; fix: see the docs (and 1 more problem(s))")
    assert error_line.one_line("w.json", _error({"wrap": {}}), "x", skip=1).startswith("w.json: (top level): ")


def test_the_bounded_reader_raises_the_callers_error_type(tmp_path: Path) -> None:
    (tmp_path / "dup.yaml").write_text("a: 1\na: 2\n")
    with pytest.raises(ManifestError, match=r"dup.yaml: \(file\): not valid YAML at line 2.*duplicate key 'a'"):
        bounded_read.load_yaml(tmp_path / "dup.yaml", ManifestError)
    (tmp_path / "deep.json").write_text("[" * (bounded_read.MAX_DEPTH + 1) + "]" * (bounded_read.MAX_DEPTH + 1))
    with pytest.raises(InputError, match="nests deeper than 64 levels"):
        bounded_read.load_json(tmp_path / "deep.json")
    for depth in (100, 5000):  # the constructor's limit, and libyaml's own (1000 levels) before any recursion
        (tmp_path / "deep.yaml").write_text("x: " + "[" * depth + "]" * depth + "\n")
        with pytest.raises(InputError, match=r"deep.yaml: \(file\): nests deeper than 64 levels; fix: flatten"):
            bounded_read.load_yaml(tmp_path / "deep.yaml")
    (tmp_path / "ok.json").write_text(json.dumps({"a": [1, 2]}))
    assert bounded_read.load_json(tmp_path / "ok.json", max_bytes=20) == {"a": [1, 2]}
    with pytest.raises(InputError, match="more than the limit of 5"):
        bounded_read.load_json(tmp_path / "ok.json", max_bytes=5)


def test_the_bounded_readers_limits_hold_at_their_edges(tmp_path: Path) -> None:
    """Exactly at a limit passes and one past it is refused: the bytes, a name's and a path's length, the nesting
    depth and the values a file expands to."""
    ten = tmp_path / "ten"
    ten.write_bytes(b"0123456789")
    assert bounded_read.read_bytes(ten, max_bytes=10) == b"0123456789"
    with pytest.raises(InputError, match="is 10 bytes, more than the limit of 9"):
        bounded_read.read_bytes(ten, max_bytes=9)
    longest = tmp_path / ("n" * bounded_read.MAX_NAME)
    longest.write_text("x")
    assert bounded_read.read_text(longest) == "x"
    with pytest.raises(InputError, match=r"the path is too long \(\d+ bytes\)"):
        bounded_read.read_bytes(tmp_path / ("n" * (bounded_read.MAX_NAME + 1)))
    folders = "/" + "/".join(["d" * 200] * 20)  # 4020 bytes: a path of exactly MAX_PATH is looked up, one more is not
    at_limit = folders + "/" + "f" * (bounded_read.MAX_PATH - len(folders) - 1)
    with pytest.raises(InputError, match=r"\(file\): (no such file|cannot open it)"):  # the kernel's answer
        bounded_read.read_bytes(Path(at_limit))
    with pytest.raises(InputError, match=r"the path is too long \(4097 bytes\)"):
        bounded_read.read_bytes(Path(at_limit + "f"))
    deepest = tmp_path / "deepest.json"
    deepest.write_text("[" * bounded_read.MAX_DEPTH + "]" * bounded_read.MAX_DEPTH)
    assert bounded_read.load_json(deepest) is not None
    bounded_read.check_shape([[1, 2]], "x", max_nodes=5)  # the inner list: 2 values + itself; the outer: 1 + 1 + 3
    with pytest.raises(InputError, match="expands to more than 4 values"):
        bounded_read.check_shape([[1, 2]], "x", max_nodes=4)
    shared = [1]
    bounded_read.check_shape({"a": shared, "b": shared}, "x")  # an alias used twice is no loop
    looped: list = []
    looped.append(looped)
    with pytest.raises(InputError, match="holds a value that contains itself"):
        bounded_read.check_shape(looped, "x")


def test_the_bounded_reader_refuses_what_is_not_a_plain_utf8_file(tmp_path: Path) -> None:
    cases = {"bom": "\ufeffa: 1\n".encode(), "nul": b"a: 1\x00\n", "latin": b"caf\xe9\n"}
    for name, raw in cases.items():
        (tmp_path / name).write_bytes(raw)
    for name, what in (("bom", "starts with a byte-order mark"), ("nul", "holds a NUL byte at offset 4"),
                       ("latin", r"is not UTF-8 text \(byte 3: b'\\xe9'\)")):
        with pytest.raises(InputError, match=what):
            bounded_read.read_text(tmp_path / name)
    with pytest.raises(InputError, match="is a directory, not a regular file"):
        bounded_read.read_bytes(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(InputError, match="is a FIFO, not a regular file"):
        bounded_read.read_bytes(tmp_path / "fifo")
    with pytest.raises(InputError, match="is a device, not a regular file"):
        bounded_read.read_bytes(Path("/dev/null"))
    with pytest.raises(InputError, match="no such file"):
        bounded_read.read_bytes(tmp_path / "absent")


def test_the_strict_yaml_and_json_readers(tmp_path: Path) -> None:
    """Merge keys may be overridden, a duplicate key may not; a date that cannot exist, a key that is a list, NaN
    and a repeated JSON key are refused."""
    def yaml_of(text: str) -> object:
        (tmp_path / "f.yaml").write_text(text)
        return bounded_read.load_yaml(tmp_path / "f.yaml")

    assert yaml_of("base: &b {a: 1, c: 3}\nx: {<<: *b, a: 2}\n")["x"] == {"a": 2, "c": 3}
    assert str(yaml_of("d: 2026-02-28\n")["d"]) == "2026-02-28"
    with pytest.raises(InputError, match=r"not valid YAML at line 2, column 4: impossible date '2026-02-30' \(day "):
        yaml_of("a: 1\nd: 2026-02-30\n")  # where the date is, as every other YAML error says
    with pytest.raises(InputError, match="a mapping key must be a plain value"):
        yaml_of("? [1, 2]\n: x\n")
    with pytest.raises(InputError, match=r"not valid YAML at line 2, column 1: did not find expected"):
        yaml_of("a: [1, 2\n")
    (tmp_path / "f.json").write_text('{"a": NaN}')
    with pytest.raises(InputError, match=r"not valid JSON \(NaN is not a JSON number\)"):
        bounded_read.load_json(tmp_path / "f.json")
    (tmp_path / "f.json").write_text('{"a": 1, "a": 2}')
    with pytest.raises(InputError, match="duplicate key 'a'"):
        bounded_read.load_json(tmp_path / "f.json")
    (tmp_path / "f.json").write_text('{"a": 1, "b": [2]}')
    assert bounded_read.load_json(tmp_path / "f.json") == {"a": 1, "b": [2]}


def test_the_image_paths_are_the_dockerfiles() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert f"NGC_PADDLE_HOME={image_paths.HOME}" in dockerfile
    assert f'ENTRYPOINT ["{image_paths.INIT}", "-g", "--", "{image_paths.ENTRYPOINT}"]' in dockerfile
    assert "/opt/ngc-paddle/manifest.json" in dockerfile and image_paths.MANIFEST == "/opt/ngc-paddle/manifest.json"
    for command in ("validate", "bench-rn50", "bench-hgnet"):
        assert image_paths.HOME in (REPO / "image" / "bin" / command).read_text()


@pytest.mark.parametrize("text", ["[]", '{"results": 1}', '{"other": {}}'])
def test_a_round_result_without_a_results_mapping_is_one_line_naming_the_field(tmp_path, text: str) -> None:
    from ngc_common.bench_result import read_results
    from ngc_common.errors import InputError

    path = tmp_path / "result.json"
    path.write_text(text)
    with pytest.raises(InputError) as refused:
        read_results(path)
    assert str(refused.value) == (f"{path}: results: is missing or not a mapping; fix: rerun the round (a result.json "
                                  "the harness wrote holds only finite numbers)")


def test_a_round_result_is_read_up_to_its_4_mib_bound(tmp_path) -> None:
    from ngc_common.bench_result import read_results
    from ngc_common.errors import InputError

    path = tmp_path / "result.json"
    path.write_text('{"results": {"train": {"fp32": {"ips": 10.5}}}}')
    assert read_results(path) == {"results": {"train": {"fp32": {"ips": 10.5}}}}
    path.write_text('{"results": {}, "pad": "' + "x" * (4 * 1024 * 1024) + '"}')  # a result.json has tens of kB
    with pytest.raises(InputError) as large:
        read_results(path)
    assert str(path) in str(large.value) and "4194304" in str(large.value) and "\n" not in str(large.value)
