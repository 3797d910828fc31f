"""Installed Python distributions: versions, duplicates, top-level modules, license evidence (JSON)."""

import importlib.metadata as md
import json
import re
import sys

from ngc_common.pep503 import canonical  # installed in the image; in a layer image, copied beside this probe


def license_evidence(dist: md.Distribution) -> str | None:
    meta = dist.metadata
    for key in ("License-Expression", "License"):
        value = (meta.get(key) or "").strip()
        if value and value.upper() != "UNKNOWN" and len(value) < 200:
            return f"{key}: {value}"
    files = [str(f) for f in (dist.files or []) if re.search(r"(LICEN[CS]E|COPYING|NOTICE)", str(f), re.I)]
    if files:
        return f"file: {files[0]}"
    classifiers = [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    if classifiers:
        return f"classifier: {classifiers[0]}"
    license_text = (meta.get("License") or "").strip()
    return "License: (full text)" if license_text else None


def top_level(dist: md.Distribution) -> list[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return sorted({line.strip() for line in text.splitlines() if line.strip() and not line.startswith("_")})
    names = set()
    for f in dist.files or []:
        parts = str(f).split("/")
        if parts[0].endswith((".dist-info", ".data")) or parts[0] in ("..", "bin"):
            continue
        if len(parts) > 1 or parts[0].endswith(".py"):
            names.add(parts[0].removesuffix(".py"))
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_"))


def main() -> None:
    dists: dict[str, dict] = {}
    seen: dict[str, list[str]] = {}
    for dist in md.distributions():
        name = canonical(dist.metadata["Name"] or "")
        seen.setdefault(name, []).append(f"{dist.version} at {dist._path}")
        dists[name] = {"version": dist.version, "top_level": top_level(dist), "license": license_evidence(dist)}
    duplicates = {name: where for name, where in seen.items() if len(where) > 1}
    python = ".".join(map(str, sys.version_info[:3]))
    print(json.dumps({"python": python, "distributions": dists, "duplicates": duplicates}))


if __name__ == "__main__":
    main()
