"""Measure build reproducibility: build one release twice with no cache reuse and compare the images.

Prints the two images' manifest and config digests (equal: anyone can check a pushed digest by building the
lock again), whether the installed package sets (pip and dpkg) are identical, and per layer of `docker save`
(paired by index in the manifest's order) whether the digests are equal; for a layer that differs,
every file that was added, removed, changed in content (sha256) or only in metadata (mtime, uid,
mode, ...), with a guess at why (".pyc", "timestamp", "apt/dpkg log", "ldconfig cache", ...).

The long form: docs/design-notes.md, section `perf/image_build/bench_repro.py`.
"""

import argparse
import hashlib
import json
import os
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ngc_common.exit_codes import ExitCode
from ngc_paddle import engine, outputs
from ngc_paddle.platforms import DEFAULT_PLATFORM, platform_named
from perf.measurements import REPO, record

METADATA_FIELDS = ("mtime", "uid", "gid", "uname", "gname", "mode", "type", "linkname")
# Path hints for why a file differs between two builds, first match wins (checked on the path
# inside the layer, without a leading "/").
REASONS: tuple[tuple[str, str], ...] = (
    (".pyc", ".pyc (bytecode written at install time)"),
    ("__pycache__/", ".pyc (bytecode written at install time)"),
    ("var/log/", "apt/dpkg log"),
    ("var/cache/ldconfig/", "ldconfig cache"),
    ("etc/ld.so.cache", "ldconfig cache"),
    ("var/cache/debconf/", "debconf cache"),
    ("var/lib/dpkg/", "dpkg database"),
    ("var/lib/apt/", "apt state"),
    ("var/cache/apt/", "apt cache"),
    (".dist-info/RECORD", "pip RECORD"),
    ("etc/shadow", "account ages (shadow, days since the epoch)"),
    ("etc/gshadow", "account ages (shadow, days since the epoch)"),
    ("root/.cache/", "cache"),
    ("tmp/", "temporary file"),
)


# A whiteout (a file of a lower layer removed) has the time of the removal: dockerd 20.10's BuildKit writes it
# when the step ends and no step can reach it to clamp it. The layers avoid removals for that reason.
WHITEOUT = " of a whiteout (a removal: the engine stamps it with the build time; no step can clamp it)"


# The image config's creation times (the image's and each history step's): the engine writes the build's
# time; dockerd 20.10's BuildKit takes no SOURCE_DATE_EPOCH for them, so the image id differs even when every
# layer is identical.
CONFIG_TIME = "build time (the engine writes it; dockerd 20.10's BuildKit ignores SOURCE_DATE_EPOCH)"


@dataclass
class Entry:
    """One member of a layer tar: its metadata and the sha256 of its content (regular files)."""
    type: str
    mode: int
    uid: int
    gid: int
    uname: str
    gname: str
    mtime: float
    size: int
    linkname: str
    sha256: str


@dataclass
class FileDiff:
    path: str
    change: str  # added | removed | content | metadata
    reason: str
    fields: list[str] = field(default_factory=list)


@dataclass
class LayerDiff:
    index: int
    digest_a: str
    digest_b: str
    identical: bool
    files: list[FileDiff] = field(default_factory=list)


# ---- comparison (pure: tar files in, differences out) ------------------------------------------------

def read_layer(tar_path: Path) -> dict[str, Entry]:
    """Every member of one layer tar by path, with its content's sha256 (regular files)."""
    entries: dict[str, Entry] = {}
    with tarfile.open(tar_path, "r:") as tar:
        for member in tar:
            digest = ""
            if member.isfile():
                handle = tar.extractfile(member)
                assert handle is not None
                digest = hashlib.file_digest(handle, "sha256").hexdigest()
            kind = ("file" if member.isfile() else "dir" if member.isdir() else "symlink" if member.issym()
                    else "hardlink" if member.islnk() else "other")
            entries[member.name.removeprefix("./").rstrip("/")] = Entry(
                kind, member.mode, member.uid, member.gid, member.uname, member.gname, member.mtime,
                member.size, member.linkname, digest)
    return entries


def reason_for(path: str, change: str, fields: list[str]) -> str:
    """A guess at why one file differs between the two builds: a known kind of file by its path, and
    "timestamp" when only its mtime differs (a whiteout's mtime is the time of the removal)."""
    hint = next((reason for pattern, reason in REASONS if _matches(path, pattern)), "")
    if change == "metadata" and fields == ["mtime"]:
        whiteout = WHITEOUT if path.rsplit("/", 1)[-1].startswith(".wh.") else ""
        return f"timestamp{whiteout}" + (f" ({hint})" if hint else "")
    if change == "metadata":
        return "metadata: " + ", ".join(fields) + (f" ({hint})" if hint else "")
    return hint or "unknown"


def _matches(path: str, pattern: str) -> bool:
    if pattern.endswith("/"):
        return path.startswith(pattern) or f"/{pattern}" in path
    return path.endswith(pattern) or path == pattern


def compare_entries(a: dict[str, Entry], b: dict[str, Entry]) -> list[FileDiff]:
    """Files added, removed, changed in content or only in metadata, from layer A to layer B."""
    diffs: list[FileDiff] = []
    for path in sorted(set(a) | set(b)):
        if path not in b:
            diffs.append(FileDiff(path, "removed", reason_for(path, "removed", [])))
        elif path not in a:
            diffs.append(FileDiff(path, "added", reason_for(path, "added", [])))
        elif a[path].sha256 != b[path].sha256 or a[path].size != b[path].size:
            fields = [f for f in METADATA_FIELDS if getattr(a[path], f) != getattr(b[path], f)]
            diffs.append(FileDiff(path, "content", reason_for(path, "content", fields), fields))
        else:
            fields = [f for f in METADATA_FIELDS if getattr(a[path], f) != getattr(b[path], f)]
            if fields:
                diffs.append(FileDiff(path, "metadata", reason_for(path, "metadata", fields), fields))
    return diffs


def saved_digests(folder: Path) -> dict[str, str]:
    """The image's manifest digest (what a registry serves and a pull by digest names) and config digest (the
    image id of the classic store), from an extracted `docker save` (OCI layout: index.json)."""
    index = json.loads((folder / "index.json").read_text())
    manifest = json.loads((folder / "manifest.json").read_text())[0]
    return {"manifest": index["manifests"][0]["digest"], "config": "sha256:" + Path(manifest["Config"]).name}


def saved_layers(folder: Path) -> tuple[list[Path], list[str]]:
    """The layer tars of an extracted `docker save` in the manifest's order, and their diff ids."""
    manifest = json.loads((folder / "manifest.json").read_text())[0]
    config = json.loads((folder / manifest["Config"]).read_text())
    return [folder / layer for layer in manifest["Layers"]], list(config["rootfs"]["diff_ids"])


def compare_saved(folder_a: Path, folder_b: Path) -> list[LayerDiff]:
    """Pair the layers of two extracted `docker save` folders by index and compare each pair."""
    layers_a, ids_a = saved_layers(folder_a)
    layers_b, ids_b = saved_layers(folder_b)
    result: list[LayerDiff] = []
    for index in range(max(len(ids_a), len(ids_b))):
        digest_a = ids_a[index] if index < len(ids_a) else ""
        digest_b = ids_b[index] if index < len(ids_b) else ""
        layer = LayerDiff(index, digest_a, digest_b, bool(digest_a) and digest_a == digest_b)
        if not layer.identical:
            entries_a = read_layer(layers_a[index]) if digest_a else {}
            entries_b = read_layer(layers_b[index]) if digest_b else {}
            layer.files = compare_entries(entries_a, entries_b)
        result.append(layer)
    return result


def config_diff(folder_a: Path, folder_b: Path) -> list[dict[str, str]]:
    """Fields of the two image configs that differ (the image id is their digest), each with why."""
    def flat(value, prefix: str = "") -> dict[str, str]:
        if isinstance(value, dict):
            return {k: v for key, item in value.items()
                    for k, v in flat(item, f"{prefix}.{key}" if prefix else key).items()}
        if isinstance(value, list):
            return {k: v for i, item in enumerate(value) for k, v in flat(item, f"{prefix}[{i}]").items()}
        return {prefix: json.dumps(value)}

    configs = []
    for folder in (folder_a, folder_b):
        manifest = json.loads((folder / "manifest.json").read_text())[0]
        configs.append(flat(json.loads((folder / manifest["Config"]).read_text())))
    a, b = configs
    result = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            timed = key == "created" or (key.startswith("history[") and key.endswith(".created"))
            why = (CONFIG_TIME if timed else "a label the build sets (revision, creation time, inputs digest)"
                   if key.startswith("config.Labels.") else "unknown")
            result.append({"field": key, "a": a.get(key, ""), "b": b.get(key, ""), "reason": why})
    return result


def package_diff(a: list[str], b: list[str]) -> dict[str, list[str]]:
    """Packages (name=version lines) only in A and only in B."""
    return {"only_a": sorted(set(a) - set(b)), "only_b": sorted(set(b) - set(a))}


# ---- the engine: builds, packages, docker save ---------------------------------------------------------

def installed_packages(image: str, platform: str | None = None) -> dict[str, list[str]]:
    """pip (the venv) and dpkg packages of an image (of another platform: under qemu), as sorted name=version
    lines."""
    def run(entrypoint: str, *args: str) -> str:
        flags = ("--network", "none", "--user", "root", "--entrypoint", entrypoint,
                 *(("--platform", platform) if platform else ()))
        return engine.run(image, *args, flags=flags, check=True).stdout

    pip = json.loads(run("/opt/venv/bin/python", "-m", "pip", "list", "--format", "json"))
    dpkg = run("dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package}=${Version}\n").splitlines()
    return {"pip": sorted(f"{p['name'].lower()}={p['version']}" for p in pip),
            "dpkg": sorted(line.split()[-1] for line in dpkg if line.startswith("ii"))}


def save_image(image: str, folder: Path) -> Path:
    folder.mkdir(parents=True)
    archive = folder / "image.tar"
    saved = engine.save(image, archive)
    if saved.returncode != 0:
        raise SystemExit(f"error: docker save {image}: {saved.stderr.strip()[-300:]}; fix: check the engine")
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="tar")
    archive.unlink()
    return folder


def cold_build(root: Path, release: str | None, flavor: str | None, up_to: str | None,
               sources: dict[str, str], logs: Path, say=print) -> tuple[str, str, list[str]]:
    """Build a flavor's layers (up to `up_to`) with `--no-cache`, logs in `logs`; return release, flavor, tags."""
    from ngc_paddle.flavor import resolve
    from ngc_paddle.image_build.bakefile import bake_command, bake_env, resolved_group, write_build_inputs
    from ngc_paddle.layers import bake_target
    from ngc_paddle.lock.base_image import ensure_base_image

    resolved = resolve(root, release, flavor, sources)
    manifest, flavor_name, flavor_spec = resolved.manifest, resolved.name, resolved.spec
    release = resolved.release
    layers = list(flavor_spec.layers)
    if up_to is not None:
        layers = layers[:layers.index(up_to) + 1]
    resolved.build_lock()  # a flavor without a lock stops here, in one line
    engine.ensure_engine()
    lock = resolved.build_lock()
    base = ensure_base_image(flavor_spec.components["os"], manifest.sources[flavor_spec.components["python"].source],
                             say, lock.base.snapshot if lock.base.kind == "debootstrap" else None)
    bake_file = write_build_inputs(resolved.release_run, {flavor_name: base})
    env = bake_env(manifest)
    printed = resolved_group(bake_file, resolved, env)
    tags = []
    logs.mkdir(parents=True, exist_ok=True)
    for layer in layers:
        target = bake_target(layer, flavor_name)
        args = bake_command(bake_file.relative_to(root), target, "--no-cache", "--progress", "plain")
        started = time.monotonic()
        with (logs / f"{layer}.log").open("w") as log:
            code = engine.docker(*args, cwd=root, env=env, stdout=log, check=False).returncode
        if code != 0:
            raise SystemExit(f"error: {root}: layer {layer}: docker buildx bake exited {code} (log: "
                             f"{logs / f'{layer}.log'}); fix: read the log")
        say(f"    {layer}: built in {time.monotonic() - started:.0f}s")
        tags.append(printed["target"][target]["tags"][0])
    return manifest.release, flavor_name, tags


def cold_build_platform(root: Path, release: str | None, flavor: str | None, platform: str,
                        sources: dict[str, str], say=print) -> tuple[str, str, list[str]]:
    """Build a flavor for another platform than the default (every layer, BuildKit's no-cache, as `make image
    PLATFORMS=...` builds it: os and suite layers under qemu, pip layers installed natively for the target);
    return release, flavor, tags (the layers', then the image's)."""
    from ngc_paddle.flavor import ResolvedRelease
    from ngc_paddle.image_build import build_flavor
    from ngc_paddle.manifest.loader import latest_release

    release = release or latest_release(root / "releases")
    resolved = ResolvedRelease.load(root, release, sources).flavor(flavor, platform)
    report = build_flavor.build(resolved, no_cache=True, say=lambda line: say(line) if line.startswith("-->") else None)
    return release, resolved.name, [*(layer.tag for layer in report.layers[:-1]), report.image]


# ---- report -----------------------------------------------------------------------------------------------

def render_markdown(result: dict) -> str:
    lines = [f"# Reproducibility of {result['release']}-{result['flavor']}"
             + (f" (up to {result['up_to']})" if result.get("up_to") else ""), "",
             f"Images: `{result['image_a']}` vs `{result['image_b']}`"
             + (f" (B on a second engine instance, {result['second_engine']})" if result.get("second_engine") else ""),
             ""]
    if "digests" in result:
        a, b = result["digests"]["a"], result["digests"]["b"]
        lines += ["| digest | A | B | equal |", "| --- | --- | --- | --- |"]
        lines += [f"| {kind} | `{a[kind]}` | `{b[kind]}` | {'yes' if a[kind] == b[kind] else 'NO'} |"
                  for kind in ("manifest", "config")]
        lines.append("")
    lines += [f"**{result['identical_layers']} of {result['layers_total']} layers identical**; package sets "
              + ("identical" if result["packages_identical"] else "DIFFER"), ""]
    for kind, diff in result["packages"].items():
        if diff["only_a"] or diff["only_b"]:
            lines += [f"- {kind} only in A: {', '.join(diff['only_a']) or '-'}",
                      f"- {kind} only in B: {', '.join(diff['only_b']) or '-'}"]
    config = result.get("config", [])
    lines += ["Image config (its digest is the image id): " + ("identical" if not config else
              f"{len(config)} fields differ"), ""]
    lines += [f"- `{c['field']}`: {c['a']} / {c['b']} ({c['reason']})" for c in config]
    lines += ["", "| layer | digest A | digest B | identical | files differing | reasons |",
              "| ---: | --- | --- | --- | ---: | --- |"]
    for layer in result["layers"]:
        reasons = summarize_reasons(layer["files"])
        lines.append(f"| {layer['index']} | {layer['digest_a'][7:19]} | {layer['digest_b'][7:19]} | "
                     f"{'yes' if layer['identical'] else 'no'} | {len(layer['files'])} | "
                     f"{', '.join(f'{r} ({n})' for r, n in reasons.items())} |")
    for layer in result["layers"]:
        if layer["files"]:
            lines += ["", f"## Layer {layer['index']}", "", "| path | change | fields | reason |",
                      "| --- | --- | --- | --- |"]
            lines += [f"| `{f['path']}` | {f['change']} | {', '.join(f['fields'])} | {f['reason']} |"
                      for f in layer["files"]]
    return "\n".join(lines) + "\n"


def summarize_reasons(files: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in files:
        counts[item["reason"]] = counts.get(item["reason"], 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def compare_images(image_a: str, image_b: str, tmp: Path, host_b: str | None = None,
                   platform: str | None = None) -> dict:
    """Compare image A (this engine) with image B (this engine, or the engine at `host_b`), both of `platform`
    (default: this host's)."""
    packages_a, folder_a = installed_packages(image_a, platform), save_image(image_a, tmp / "a")
    with engine.using(host_b):
        packages_b, folder_b = installed_packages(image_b, platform), save_image(image_b, tmp / "b")
    packages = {kind: package_diff(packages_a[kind], packages_b[kind]) for kind in ("pip", "dpkg")}
    layers = compare_saved(folder_a, folder_b)
    config = config_diff(folder_a, folder_b)
    digests = {"a": saved_digests(folder_a), "b": saved_digests(folder_b)}
    return {
        "digests": digests, "digests_identical": digests["a"] == digests["b"],
        "config_identical": not config, "config": config,
        "image_a": image_a, "image_b": image_b,
        "packages_identical": not any(d["only_a"] or d["only_b"] for d in packages.values()),
        "package_counts": {kind: len(packages_a[kind]) for kind in ("pip", "dpkg")},
        "packages": packages,
        "identical_layers": sum(layer.identical for layer in layers), "layers_total": len(layers),
        "layers": [asdict(layer) for layer in layers],
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from ngc_paddle.layers import LAYER_ORDER

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", default=None)
    parser.add_argument("--flavor", default=None)
    parser.add_argument("--up-to", default=None, choices=LAYER_ORDER, metavar="LAYER",
                        help=f"build only the layers up to this one ({', '.join(LAYER_ORDER)})")
    parser.add_argument("--source", action="append", default=[], metavar="NAME=URL|PATH",
                        help="point a manifest source at a mirror or wheel folder, as in ngc-paddle build")
    parser.add_argument("--compare", nargs=2, metavar=("IMAGE_A", "IMAGE_B"),
                        help="compare two images already built; no build")
    parser.add_argument("--name", default="ngc-paddle-repro",
                        help="image name of the builds (layers in NAME-layers; results NAME-repro:a and :b)")
    parser.add_argument("--keep-images", action="store_true", help="keep the two builds' images afterwards")
    parser.add_argument("--second-engine", nargs="?", const="repro2", default=None, metavar="NAME",
                        help="build B on a second engine instance (own data root and cache; removed afterwards)")
    parser.add_argument("--platform", default=None, metavar="OS/ARCH",
                        help="build and compare the flavor's image for this platform (another one than this host's: "
                             "under qemu, as make image builds it); default: this host's")
    args = parser.parse_args(argv)
    try:
        foreign = args.platform is not None and platform_named(args.platform).name != DEFAULT_PLATFORM
    except ValueError as exc:
        parser.exit(ExitCode.BAD_INPUT, f"error: --platform: {exc}; fix: name one of them\n")
    if foreign and (args.up_to or args.second_engine):
        parser.exit(ExitCode.BAD_INPUT, f"error: --platform {args.platform}: builds every layer on this engine; fix: "
                                        "leave out --up-to and --second-engine\n")
    for item in args.source:
        if "=" not in item or not item.split("=", 1)[0] or not item.split("=", 1)[1]:
            parser.exit(ExitCode.BAD_INPUT, f"error: --source: {item!r} is not NAME=URL|PATH; fix: e.g. --source pypi=https://m/simple\n")
    args.platform = platform_named(args.platform).name if foreign else None  # None: this host's platform
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    foreign = args.platform is not None  # parse_args keeps another platform's name only
    sources = dict(item.split("=", 1) for item in args.source)
    from ngc_paddle.host_errors import NgcPaddleError
    from ngc_paddle.image_build.scratch import scratch_copy

    with tempfile.TemporaryDirectory(prefix="ngc-repro-", dir=os.environ.get("NGC_REPRO_TMP")) as tmp_name:
        tmp = Path(tmp_name)
        release, flavor = args.release, args.flavor
        built: list[str] = []
        try:
            if args.compare:
                image_a, image_b = args.compare
            else:
                images = []
                for name in ("a", "b"):
                    # One image name for both builds (it ends up in the suite's manifest.json); the top image
                    # of each is kept under its own tag, the layer tags are taken over by the next build.
                    host = engine.instance_host(args.second_engine) if name == "b" and args.second_engine else None
                    where = f" on engine instance {args.second_engine}" if host else ""
                    root = scratch_copy(REPO, tmp / f"repo-{name}", args.name)
                    print(f"cold build {name.upper()}{where} (--no-cache; logs: build/logs/repro-{name}/) ...",
                          flush=True)
                    started = time.monotonic()
                    with engine.using(host):
                        if foreign:
                            release, flavor, tags = cold_build_platform(
                                root, args.release, args.flavor, args.platform, sources,
                                say=lambda line: print(f"    {line}", flush=True))
                        else:
                            release, flavor, tags = cold_build(root, args.release, args.flavor, args.up_to, sources,
                                                               REPO / "build" / "logs" / f"repro-{name}",
                                                               say=lambda line: print(f"    {line}", flush=True))
                        kept = f"{args.name}-repro:{name}"
                        engine.tag(tags[-1], kept)
                    print(f"    build {name.upper()}: {time.monotonic() - started:.0f}s", flush=True)
                    if not host:
                        built = sorted({*built, *tags, kept})
                    images.append(kept)
                image_a, image_b = images
            print(f"comparing {image_a} with {image_b} ...", flush=True)
            second = engine.instance_host(args.second_engine) if args.second_engine and not args.compare else None
            result = {"release": release, "flavor": flavor, "up_to": args.up_to, "second_engine": args.second_engine,
                      "platform": args.platform or DEFAULT_PLATFORM,
                      **compare_images(image_a, image_b, tmp, second, args.platform)}
        except NgcPaddleError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        finally:
            if built and not args.keep_images:
                engine.remove_images(*built)
            if args.second_engine and not args.compare and not args.keep_images:
                engine.remove_instance(args.second_engine)

    name = f"{release or 'images'}-{flavor or 'compare'}" + (f"-up-to-{args.up_to}" if args.up_to else "") \
        + (f"-{platform_named(args.platform).qualifier}" if foreign else "")
    out = REPO / "build" / "repro" / name
    with outputs.staged() as stage:
        outputs.ensure_folder(out, stop=REPO)
        stage.write_text(out / "repro.json", json.dumps(result, indent=2) + "\n")
        stage.write_text(out / "repro.md", render_markdown(result))
    for kind, diff in result["packages"].items():
        same = not (diff["only_a"] or diff["only_b"])
        print(f"{kind}: {result['package_counts'][kind]} packages, "
              + ("identical" if same else f"DIFFER: only in A {diff['only_a']}, only in B {diff['only_b']}"))
    for layer in result["layers"]:
        state = "identical" if layer["identical"] else f"{len(layer['files'])} files differ"
        reasons = summarize_reasons(layer["files"])
        print(f"layer {layer['index']}: {layer['digest_a'][:19]} {state}"
              + (f" ({', '.join(f'{r}: {n}' for r, n in reasons.items())})" if reasons else ""))
    config = result["config"]
    reasons = sorted({c["reason"] for c in config})
    print("image config: identical" if not config else
          f"image config: {len(config)} fields differ ({', '.join(c['field'] for c in config[:4])}"
          f"{', ...' if len(config) > 4 else ''}): {'; '.join(reasons)}")
    for kind in ("manifest", "config"):
        a, b = result["digests"]["a"][kind], result["digests"]["b"][kind]
        print(f"{kind} digest: A {a}, B {b}: " + ("equal" if a == b else "DIFFERENT"))
    print(f"{result['identical_layers']} of {result['layers_total']} layers identical; "
          f"package sets {'identical' if result['packages_identical'] else 'DIFFER'}; image digests "
          f"{'equal' if result['digests_identical'] else 'DIFFER'}")
    print(f"results: {(out / 'repro.md').relative_to(REPO)}")
    if not args.compare and not args.up_to:
        where = f"on a second engine instance ({args.second_engine})" if args.second_engine else "on the same engine"
        key = "perf-repro" + ("-second-engine" if args.second_engine else "") \
            + (f"-{platform_named(args.platform).qualifier}" if foreign else "")
        command = "make perf-repro" + (" SECOND_ENGINE=1" if args.second_engine else "") \
            + (f" PLATFORMS={args.platform}" if foreign else "")
        record(key, f"Reproducibility: two cold builds, B {where}" + (f", {args.platform}" if foreign else ""),
               render_markdown(result).split("\n", 2)[2].split("\n| layer |")[0], command=command)
    return ExitCode.PASS if result["packages_identical"] else ExitCode.FAIL


if __name__ == "__main__":
    sys.exit(main())
