"""Resolve a flavor's whole Python set without building, and say which layer and source each wheel is for.

Why: the manifest pins ~13 components per flavor; the image holds ~60 distributions. pip resolves
them (`pip install --dry-run --report`, for the image's Python and glibc, wheels only) in ONE run per
flavor so that versions agree across layers; the report gives every distribution's wheel and
sha256. Each distribution is then assigned to the lowest layer whose components need it (the
dependency closure of the report's `requires_dist`, markers evaluated for the image), so a layer
never depends on something installed above it, and `pip check` holds at every layer.

The long form: docs/design-notes.md, section `ngc_paddle/lock/pip_lock.py`.
"""

import hashlib
import json
import os
import ssl
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ngc_paddle.host_errors import ManifestError, NgcPaddleError
from ngc_paddle.layers import BASE_LAYER, LAYER_ORDER
from ngc_paddle.lock.lock_file import PipEntry
from ngc_paddle.lock.subject import LockSubject
from ngc_paddle.manifest.schema import Flavor, Source
from ngc_paddle.platforms import DEFAULT_PLATFORM, PLATFORMS

# The glibc of each Debian/Ubuntu suite: the newest manylinux tag its Python accepts. pip expands a
# manylinux_2_N tag to every older one (and the manylinux1/2010/2014 aliases).
GLIBC_OF_SUITE = {"bullseye": "2_31", "bookworm": "2_36", "trixie": "2_41", "focal": "2_31", "jammy": "2_35",
                  "noble": "2_39"}
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")

Runner = Callable[[list[str]], dict[str, Any]]
# Installed in the venv though no component needs them: locked like everything else, newest at lock time.
VENV_TOOLS = ("pip", "setuptools", "wheel")


class SourceUnreachable(NgcPaddleError):
    """A source the flavor needs cannot be reached from this host."""


DEFAULT_MACHINE = PLATFORMS[DEFAULT_PLATFORM].machine


def target_platform(suite: str, platform: str = DEFAULT_PLATFORM) -> str:
    """The newest manylinux tag the image's glibc accepts on the platform (manylinux_2_36_aarch64)."""
    glibc = GLIBC_OF_SUITE.get(suite.split("/")[0].removesuffix("-updates"))
    if glibc is None:
        raise ManifestError(f"sources.*.suite: no glibc known for Debian/Ubuntu suite {suite!r}; fix: add it to "
                            f"GLIBC_OF_SUITE in ngc_paddle/lock/pip_lock.py")
    return f"manylinux_{glibc}_{PLATFORMS[platform].machine}"


def pip_env() -> dict[str, str]:
    """No pip configuration of the host (find-links, constraints, extra indexes) may steer a lock."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def run_pip_report(cmd: list[str]) -> dict[str, Any]:
    """Run one `pip install --dry-run --report` and return the report (a failure is one line)."""
    with tempfile.TemporaryDirectory(prefix="ngc-paddle-lock-") as tmp:
        report = Path(tmp) / "report.json"
        full = [*cmd, "--report", str(report), "--target", str(Path(tmp) / "target")]
        proc = subprocess.run(full, capture_output=True, text=True, env=pip_env(), check=False, timeout=1800)
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.startswith("ERROR:")]
            last = (lines or [f"pip exited {proc.returncode}"])[-1]
            raise ManifestError(f"pip could not resolve the flavor: {last}; fix: check the pins and sources in the "
                                f"manifest")
        return json.loads(report.read_text())


def platform_tags(platform: str) -> list[str]:
    """Every platform tag the image's pip accepts: manylinux_2_N down to 2_5, the legacy aliases, linux.

    Written out because pip's `--platform` expands only the legacy aliases (manylinux2014 -> 2010 -> 1),
    not manylinux_2_N to the older glibc versions the image also runs.
    """
    _, _, glibc, machine = platform.split("_", 3)
    tags = [f"manylinux_2_{n}_{machine}" for n in range(int(glibc), 4, -1)]
    legacy = ["manylinux2014"] if machine != "x86_64" else ["manylinux2014", "manylinux2010", "manylinux1"]
    return [*tags, *(f"{tag}_{machine}" for tag in legacy), f"linux_{machine}"]


def pip_base_command(python: str, platform: str) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--no-input",
           "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
           "--abi", f"cp{python.replace('.', '')}", "--abi", "abi3", "--abi", "none"]
    for tag in [*platform_tags(platform), "any"]:
        cmd += ["--platform", tag]
    if CA_BUNDLE.is_file():
        cmd += ["--cert", str(CA_BUNDLE)]
    return cmd


def source_options(source: Source, only: bool, root: Path = Path(".")) -> list[str]:
    """pip's index options for one source; `only`: nothing else (no PyPI fallback)."""
    if source.kind == "wheel-dir":
        folder = str((root / str(source.path)).resolve())
        return ["--no-index", "--find-links", folder] if only else ["--find-links", folder]
    return ["--index-url", str(source.url)] if only else ["--extra-index-url", str(source.url)]


def archive_url(source: Source, file: str) -> str:
    """Where an archive source serves one file: URL/FILE."""
    return str(source.url).rstrip("/") + "/" + file


def probe(source_name: str, source: Source, package: str, timeout: float = 15) -> str | None:
    """Why a source cannot be reached, or None when it answers for `package` (a pip-index source: its project
    page; an archive source: the archive file `package` names, asked with HEAD)."""
    archive = source.kind == "archive"
    url = archive_url(source, package) if archive else str(source.url).rstrip("/") + f"/{canonicalize_name(package)}/"
    context = ssl.create_default_context(cafile=str(CA_BUNDLE) if CA_BUNDLE.is_file() else None)
    request = urllib.request.Request(url, headers={"User-Agent": "ngc-paddle-lock"},
                                     method="HEAD" if archive else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
            resp.read(1)
        return None
    except Exception as exc:  # any network failure means the same: this host cannot use the source
        return f"{source.url} cannot be reached from this host ({type(exc).__name__})"


def _what_to_ask(name: str, comp) -> str:
    """What a source is asked for to see whether it answers: a pip component's package, an archive's file."""
    return str(comp.file) if comp.kind == "archive" else str(comp.package or name)


def _unreachable(source_name: str, source: Source, what: str, root: Path, prober) -> str | None:
    """Why one source cannot serve `what` to this host (a folder source: the folder or the file is missing)."""
    if source.kind == "wheel-dir":
        return None if (root / str(source.path)).is_dir() else f"wheel folder {source.path} does not exist"
    if source.kind == "archive" and source.path:
        return None if (root / str(source.path) / what).is_file() else f"archive {what} is not in folder {source.path}"
    return prober(source_name, source, what)


FETCHED_KINDS = ("pip", "archive")  # component kinds `ngc-paddle lock` fetches from their sources


def check_reachable(subject: LockSubject, releases_dir: Path, prober=probe, root: Path = Path(".")) -> None:
    """Stop before resolving when a source the flavor needs does not answer (one line: the source, the fix)."""
    manifest, flavor, flavor_name = subject.manifest, subject.spec, subject.name
    needs: dict[str, list[str]] = {manifest.dependency_source: []}
    for name, comp in flavor.components.items():
        if comp.kind in FETCHED_KINDS:
            needs.setdefault(comp.source, []).append(name)
    down = []
    for source_name, comps in needs.items():
        what = next((_what_to_ask(c, flavor.components[c]) for c in comps), "pip")
        why = _unreachable(source_name, manifest.sources[source_name], what, root, prober)
        if why:
            used = ", ".join(comps) or "dependencies"
            down.append((source_name, f"sources.{source_name}: {why} (flavor {flavor_name}: {used})"))
    if down:
        mirrors = " ".join(f"--source {name}=URL" for name, _ in down)
        raise SourceUnreachable(
            f"{releases_dir / (manifest.release + '.yaml')}: {'; '.join(why for _, why in down)}; fix: lock on a host "
            f"that reaches {'them' if len(down) > 1 else 'it'}, or through mirrors: ngc-paddle lock "
            f"{manifest.release} --flavor {flavor_name} {mirrors}")


def unreachable_optional_layers(subject: LockSubject, root: Path = Path("."), prober=probe) -> dict[str, str]:
    """The flavor's optional layers whose sources this host cannot reach (layer -> why, with the mirror fix):
    the lock leaves them pending instead of failing, and the build makes them empty layers."""
    manifest, flavor, flavor_name = subject.manifest, subject.spec, subject.name
    pending = {}
    for layer, purpose in flavor.optional_layers.items():
        comps = [(name, c) for name, c in flavor.components.items() if c.layer == layer and c.kind in FETCHED_KINDS]
        for source_name in sorted({c.source for _, c in comps}):
            what = next(_what_to_ask(name, c) for name, c in comps if c.source == source_name)
            why = _unreachable(source_name, manifest.sources[source_name], what, root, prober)
            if why:
                folder = " or a folder under wheelhouse/ holding the file" if manifest.sources[
                    source_name].kind == "archive" else ""
                pending[layer] = (f"{purpose}: sources.{source_name}: {why}; fix: lock through a mirror{folder}: "
                                  f"make lock FLAVOR={flavor_name} SOURCES=\"{source_name}=URL\"")
                break
    return pending


def _marker_env(python: str, machine: str) -> dict[str, str]:
    env = default_environment()
    env.update(python_version=python, python_full_version=f"{python}.0", implementation_name="cpython",
               platform_python_implementation="CPython", sys_platform="linux", platform_system="Linux",
               platform_machine=machine, os_name="posix")
    return env


def requirements_of(item: dict[str, Any], extras: Iterable[str], python: str,
                    machine: str = DEFAULT_MACHINE) -> list[Requirement]:
    """The requirements of a report item that apply on the image (its Python, its machine) for the requested
    extras."""
    env = _marker_env(python, machine)
    wanted = {"", *extras}
    found = []
    for text in item.get("metadata", {}).get("requires_dist", []) or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in wanted):
            found.append(req)
    return found


def closure(roots: Iterable[str], items: dict[str, dict[str, Any]], python: str,
            machine: str = DEFAULT_MACHINE) -> set[str]:
    """Every distribution reachable from `roots` (canonical names) through requires_dist, with extras."""
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    stack = [(root, frozenset[str]()) for root in roots]
    while stack:
        name, extras = stack.pop()
        if (name, extras) in seen or name not in items:
            continue
        seen.add((name, extras))
        names.add(name)
        for req in requirements_of(items[name], extras, python, machine):
            stack.append((canonicalize_name(req.name), frozenset(req.extras)))
    return names


def assign_layers(flavor: Flavor, items: dict[str, dict[str, Any]], python: str,
                  machine: str = DEFAULT_MACHINE) -> dict[str, str]:
    """Each distribution's layer: the lowest whose components (with those of the layers below) need it."""
    pip_layers = [layer for layer in LAYER_ORDER if layer in flavor.layers and layer != BASE_LAYER]
    # The venv's own tools and what they need (wheel needs packaging) go in the first pip layer, so pip check
    # holds there whatever that layer is (dali for cpu, cuda for the GPU flavors).
    tools = [name for name in VENV_TOOLS if name in items]
    assigned: dict[str, str] = {name: pip_layers[0] for name in sorted(closure(tools, items, python, machine))}
    for index, layer in enumerate(pip_layers):
        roots = [canonicalize_name(str(c.package)) for c in flavor.components.values()
                 if c.kind == "pip" and c.layer in pip_layers[: index + 1]]
        for name in sorted(closure(roots, items, python, machine)):
            assigned.setdefault(name, layer)
    for name in items:  # pip installed it but no requirement leads to it: keep it, at the top
        assigned.setdefault(name, pip_layers[-1])
    return assigned


def _file_facts(item: dict[str, Any]) -> tuple[str, str, str]:
    """(url, file name, sha256) of the wheel a report item chose."""
    info = item.get("download_info") or {}
    url = str(info.get("url", ""))
    file = unquote(urlparse(url).path.rsplit("/", 1)[-1])
    sha = ((info.get("archive_info") or {}).get("hashes") or {}).get("sha256")
    if not sha and url.startswith("file://"):
        sha = hashlib.sha256(Path(unquote(urlparse(url).path)).read_bytes()).hexdigest()
    if not sha:
        name = item.get("metadata", {}).get("name")
        raise ManifestError(f"{url}: the source gives no sha256 for {name}'s file; fix: use an index that publishes "
                            f"hashes (PEP 503 #sha256= or PEP 691), or a wheel-dir source")
    return url, file, sha


def lock_pip(subject: LockSubject, run: Runner = run_pip_report, root: Path = Path(".")) -> list[PipEntry]:
    """Every Python distribution of a flavor, resolved together, with its layer, source, file and sha256."""
    manifest, flavor = subject.manifest, subject.spec
    python = flavor.components["python"].version
    platform = target_platform(str(manifest.sources[flavor.components["python"].source].suite), subject.platform)
    pinned = {canonicalize_name(str(c.package)): (name, c) for name, c in flavor.components.items() if c.kind == "pip"}
    sources = sorted({c.source for _, c in pinned.values()} | {manifest.dependency_source})
    base = pip_base_command(python, platform)

    cmd = [*base, *source_options(manifest.sources[manifest.dependency_source], only=True, root=root)]
    for name in sources:
        if name != manifest.dependency_source:
            cmd += source_options(manifest.sources[name], only=False, root=root)
    tools = [name for name in VENV_TOOLS if name not in pinned]
    report = run([*cmd, *(c.requirement for _, c in pinned.values()), *tools])
    items = {canonicalize_name(i["metadata"]["name"]): i for i in report.get("install", [])}
    layers = assign_layers(flavor, items, python, PLATFORMS[subject.platform].machine)
    source_of = {name: pinned[name][1].source if name in pinned else manifest.dependency_source for name in items}

    if len(sources) > 1:  # look every file up again on its own source alone
        for source_name in sources:
            names = sorted(n for n, s in source_of.items() if s == source_name)
            if not names:
                continue
            reqs = [f"{n}=={items[n]['metadata']['version']}" for n in names]
            own = run([*base, "--no-deps", *source_options(manifest.sources[source_name], only=True, root=root), *reqs])
            found = {canonicalize_name(item["metadata"]["name"]): item for item in own.get("install", [])}
            absent = sorted(set(names) - set(found))
            if absent:  # served by another index in the joint resolution: never take it from there
                raise ManifestError(
                    f"releases/{manifest.release}.yaml: sources.{source_name}: {', '.join(absent)} resolved only "
                    f"through another index, not from {source_name} itself; fix: pin it to the source that has it "
                    f"or mirror it on {source_name}")
            items.update(found)

    entries = []
    for name in sorted(items, key=lambda n: (LAYER_ORDER.index(layers[n]), n)):
        item = items[name]
        url, file, sha = _file_facts(item)
        entries.append(PipEntry(name=name, version=str(item["metadata"]["version"]), layer=layers[name],
                                source=source_of[name], component=pinned[name][0] if name in pinned else None,
                                file=file, sha256=sha, url=url))
    missing = sorted((set(pinned) | set(VENV_TOOLS)) - set(items))
    if missing:
        raise ManifestError(f"pip's resolution lacks pinned component(s) {missing}; fix: check the manifest's pins")
    return entries
