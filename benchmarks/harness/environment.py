"""What the benchmark ran on: CPU, GPUs and driver, and the image's component versions."""

import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

from benchmarks.harness import cpus
from ngc_common import image_paths

MANIFEST = Path(os.environ.get("NGC_PADDLE_MANIFEST", image_paths.MANIFEST))


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def gpus() -> list[dict[str, str]]:
    """Visible NVIDIA GPUs from nvidia-smi (name, memory, driver); none where there is no driver."""
    if os.environ.get("NGC_PADDLE_CPU_ONLY") == "1" or shutil.which("nvidia-smi") is None:
        return []
    proc = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return []
    found = []
    for line in proc.stdout.strip().splitlines():
        name, memory, driver = (part.strip() for part in line.split(","))
        found.append({"name": name, "memory": memory, "driver": driver})
    return found


def image_manifest() -> dict:
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}


def capture() -> dict:
    manifest = image_manifest()
    return {
        "cpu": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "cpu_budget": cpus.budget().explain(),
        "gpus": gpus(),
        "python": platform.python_version(),
        "release": manifest.get("release"),
        "flavor": manifest.get("flavor"),
        "versions": {name: c["version"] for name, c in manifest.get("components", {}).items()},
    }


def left_out(layer: str) -> str | None:
    """Why the image has no `layer` (its lock left that optional layer pending: the image manifest's
    `left_out`), or None when it has the layer or says nothing (not an image)."""
    entry = (image_manifest().get("left_out") or {}).get(layer)
    return f"layer {layer} left out of this image: {entry['reason']}" if entry else None


def shipped() -> set[str]:
    """The components the image ships (its manifest's `components`; empty outside an image)."""
    return set(image_manifest().get("components") or {})
