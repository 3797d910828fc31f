"""Install one layer's pinned pip components inside the image being built.

Why: every pip-based layer installs the same way (one pip run per source, pinned, wheels only for
the pinned components so that an index's download-at-install stub cannot sneak in), and a
failure must name the layer, the component and the source rather than end in pip's traceback.
Reads the layer's spec (generated from the release manifest) from the LAYER_SPEC build argument.
Plain standard library: it runs before anything else is installed.
"""

import json
import os
import re
import subprocess
import sys
import time

CA_SECRET = "/run/secrets/ca"
WHEELHOUSE = "/wheelhouse"
UNREACHABLE = re.compile(
    r"NewConnectionError|ConnectTimeout|Name or service not known|Temporary failure in name resolution"
    r"|ProxyError|SSLError|Connection refused|No route to host|HTTP error 40[13]"
)
NOT_FOUND = re.compile(
    r"(?:No matching distribution found for|Could not find a version that satisfies the requirement)"
    r"\s+([A-Za-z0-9_.\-]+)"
)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def fail(spec: dict, comp: dict | None, reason: str) -> None:
    layer = spec["layer"]
    if comp is None:
        print(f"NGC-PADDLE-ERROR layer {layer}: {reason}", flush=True)
    else:
        print(
            f"NGC-PADDLE-ERROR layer {layer}: component {comp['name']} ({comp['requirement']}) "
            f"from source {comp['source']} ({comp['location']}): {reason}; fix: check "
            f"flavors.{spec['flavor']}.components.{comp['name']} in {spec['manifest']} or point source "
            f"'{comp['source']}' at a reachable mirror (make image SOURCES={comp['source']}=URL)",
            flush=True,
        )
    sys.exit(1)


def pip_command(spec: dict, group: list[dict]) -> list[str]:
    first = group[0]
    cmd = [sys.executable, "-m", "pip", "install", "--progress-bar", "off", "--no-input"]
    if os.path.exists(CA_SECRET):
        cmd += ["--cert", CA_SECRET]
    if first["source_kind"] == "wheel-dir":
        cmd += ["--find-links", os.path.join(WHEELHOUSE, os.path.relpath(first["location"], "wheelhouse"))]
        cmd += ["--index-url", spec["dependency_index"]]
    else:
        cmd += ["--index-url", first["location"]]
        if first["location"] != spec["dependency_index"]:
            cmd += ["--extra-index-url", spec["dependency_index"]]
    # Pinned components must be real wheels: some indexes publish sdists that download at install time.
    cmd += ["--only-binary", ",".join(c["package"] for c in group)]
    return cmd + [c["requirement"] for c in group]


def run_group(spec: dict, group: list[dict]) -> None:
    cmd = pip_command(spec, group)
    names = ", ".join(c["requirement"] for c in group)
    print(f"[{spec['layer']}] pip install {names} from {group[0]['source']}", flush=True)
    started = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    sys.stdout.write(proc.stdout)
    if proc.returncode == 0:
        print(f"[{spec['layer']}] installed in {time.monotonic() - started:.1f}s", flush=True)
        return
    by_package = {canonical(c["package"]): c for c in group}
    missing = [canonical(m) for m in NOT_FOUND.findall(proc.stdout)]
    culprit = next((by_package[m] for m in missing if m in by_package), None)
    if UNREACHABLE.search(proc.stdout):
        fail(spec, culprit or group[0], "the source could not be reached")
    if culprit is not None:
        fail(spec, culprit, "no such version (or no wheel for this platform) at the source")
    if missing:
        fail(spec, group[0], f"a dependency ({missing[0]}) is not available from the dependency index")
    fail(spec, group[0], f"pip failed (exit {proc.returncode}); see the log above")


def main() -> None:
    spec = json.loads(os.environ["LAYER_SPEC"])
    groups: dict[str, list[dict]] = {}
    for comp in spec["components"]:
        groups.setdefault(comp["source"], []).append(comp)
    for group in groups.values():
        run_group(spec, group)


if __name__ == "__main__":
    main()
