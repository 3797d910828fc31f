"""Import each named top-level module in this one interpreter, in order, and say which failed (JSON).

Usage: imports.py MODULE... One process for all of them: Paddle, which several components import,
is loaded once, so the build can afford the check right after each layer. Output: {module: null when it
imported, else "ErrorType: message"}.
"""

import importlib
import json
import sys
import warnings

warnings.simplefilter("ignore")
results: dict[str, str | None] = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
        results[name] = None
    except BaseException as exc:  # SystemExit, or a failing native init, must name the module too
        results[name] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
print(json.dumps(results))
