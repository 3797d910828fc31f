"""The models the benchmark command knows: each model package hands its ModelSpec to register(); the harness
names none.

Why: the harness is shared by every model and must not import them (that made a loop of nine files and meant
a harness edit per model). A model is a folder beside the harness, benchmarks/<name>/, whose spec.py calls
register() when imported; models() imports every such folder's spec.py, so a new model is one new folder.
The folder's name is the spec's name: the multi-GPU relaunch runs `python -m benchmarks.<name>`.
"""

import importlib
import pkgutil

import benchmarks
from benchmarks.harness.model_spec import ModelSpec

_SPECS: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    """Add a model (called by its own spec.py); returns the spec, so `SPEC = register(ModelSpec(...))`."""
    known = _SPECS.get(spec.name)
    if known is not None and known is not spec:
        raise ValueError(f"two models are named {spec.name!r}: {known.title} and {spec.title}")
    _SPECS[spec.name] = spec
    return spec


def models() -> dict[str, ModelSpec]:
    """Every model of benchmarks/ by name, in listing order (ModelSpec.listed, then name)."""
    for info in pkgutil.iter_modules(benchmarks.__path__):
        if not info.ispkg or info.name == "harness":
            continue
        try:
            importlib.import_module(f"benchmarks.{info.name}.spec")
        except ModuleNotFoundError as exc:
            if exc.name != f"benchmarks.{info.name}.spec":
                raise
            continue  # a folder that is no model (it has no spec.py)
        if info.name not in _SPECS:
            raise ValueError(f"benchmarks/{info.name}/spec.py registers no model named {info.name!r}; fix: call "
                             f"register(ModelSpec(name={info.name!r}, ...)) there")
    return dict(sorted(_SPECS.items(), key=lambda item: (item[1].listed, item[0])))
