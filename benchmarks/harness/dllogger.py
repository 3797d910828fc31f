"""JSON-lines logs in the form of NVIDIA's DLLogger (`DLLL {json}` per line).

Written by hand: the `nvidia-dllogger` project on PyPI is a placeholder that installs from
NVIDIA's own index, which build hosts may not reach. The line format matches DLLogger's JSON
stream backend (timestamp, datetime, elapsedtime, type, step, data) so its tools can read it.
"""

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO


class DLLogger:
    def __init__(self, path: Path | None, echo: TextIO | None = None) -> None:
        self.start = time.time()
        self.file = path.open("a") if path else None
        self.echo = echo
        self.last_step: str | None = None  # what the run was doing when stopped

    def _write(self, kind: str, step: Any, data: dict[str, Any]) -> None:
        now = time.time()
        record = {"timestamp": f"{now:.6f}", "datetime": datetime.now(UTC).isoformat(),
                  "elapsedtime": round(now - self.start, 6), "type": kind, "step": step, "data": data}
        line = "DLLL " + json.dumps(record, default=str)
        if kind == "LOG":
            self.last_step = step if isinstance(step, str) else " ".join(map(str, step))
        if self.file:
            self.file.write(line + "\n")
            self.file.flush()
        if self.echo:
            shown = " ".join(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}" for k, v in data.items())
            print(f"{step if isinstance(step, str) else tuple(step)} {shown}", file=self.echo, flush=True)

    def metadata(self, metric: str, meta: dict[str, Any]) -> None:
        self._write("METADATA", [], {"name": metric, **meta})

    def log(self, step: str | tuple | list, data: dict[str, Any]) -> None:
        self._write("LOG", step if isinstance(step, str) else list(step), data)

    def close(self) -> None:
        if self.file:
            self.file.close()
