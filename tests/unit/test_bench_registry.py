"""Models register with the harness: the harness names none, and a third model is one new folder.

The tiny model lives in tests/unit/bench_models/tiny/ (spec.py, as benchmarks/rn50/ has); adding that folder
to the benchmarks package's search path is all it takes for the harness to list it, document it, parse its
own option and run its command up to where Paddle loads.
"""

import sys
from pathlib import Path

import pytest

import benchmarks
from benchmarks.harness import bench_cli, model_registry
from benchmarks.harness.run_config import Hardware, docs_section, parser, requested, resolve
from benchmarks.hgnet.spec import SPEC as HGNET
from benchmarks.rn50.spec import SPEC as RN50

MODELS = Path(__file__).resolve().parent / "bench_models"


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch):
    """The tiny model's folder beside rn50/ and hgnet/; the registry and the imported modules as they were after."""
    monkeypatch.setattr(benchmarks, "__path__", [*benchmarks.__path__, str(MODELS)])
    monkeypatch.setattr(model_registry, "_SPECS", dict(model_registry._SPECS))
    yield
    for name in [m for m in sys.modules if m == "benchmarks.tiny" or m.startswith("benchmarks.tiny.")]:
        del sys.modules[name]


def test_the_shipped_models_register_themselves_in_their_order() -> None:
    assert list(model_registry.models().items()) == [("rn50", RN50), ("hgnet", HGNET)]


def test_a_third_model_is_one_folder(tiny) -> None:
    found = model_registry.models()
    assert list(found) == ["rn50", "hgnet", "tiny"]
    spec = found["tiny"]
    assert "### bench-tiny" in docs_section() and "| `--width` | 8 | same | this suite |" in docs_section()
    assert "--width WIDTH" in parser(spec).format_help()
    config = resolve(requested(spec, ["--width", "4", "--smoke"]), spec, Hardware(0, 2, "test"))
    assert config.model_options["width"] == 4 and config.steps == 1


def test_the_third_models_command_runs_up_to_paddle(tiny, tmp_path: Path, capsys) -> None:
    spec = model_registry.models()["tiny"]
    assert bench_cli.main(spec, ["--gates", str(tmp_path / "none.yaml"), "--output", str(tmp_path)]) == 2
    assert "none.yaml" in capsys.readouterr().err


def test_a_folder_whose_spec_registers_another_name_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    (tmp_path / "wrong").mkdir()
    (tmp_path / "wrong" / "__init__.py").write_text("")
    (tmp_path / "wrong" / "spec.py").write_text("")
    monkeypatch.setattr(benchmarks, "__path__", [*benchmarks.__path__, str(tmp_path)])
    monkeypatch.setattr(model_registry, "_SPECS", dict(model_registry._SPECS))
    try:
        with pytest.raises(ValueError, match=r"benchmarks/wrong/spec.py registers no model named 'wrong'"):
            model_registry.models()
    finally:
        sys.modules.pop("benchmarks.wrong.spec", None)
        sys.modules.pop("benchmarks.wrong", None)


def test_two_models_of_one_name_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_registry, "_SPECS", dict(model_registry._SPECS))
    with pytest.raises(ValueError, match="two models are named 'rn50'"):
        model_registry.register(HGNET.__class__(**{**HGNET.__dict__, "name": "rn50"}))
