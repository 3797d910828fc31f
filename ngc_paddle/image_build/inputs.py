"""Inputs digests: what each layer and the finished image are built from, hashed, to skip a no-change build.

Why: a rebuild whose inputs are all unchanged can answer from the images' labels in a fraction of a
second instead of asking BuildKit, checking and smoke-testing again. Each layer image carries
`ngc-paddle.inputs-digest` over its own inputs only (its Dockerfile, the context files it mounts or
copies, its build args, the digest of the layer below or the base image id), so an unrelated change
never changes a layer's label, its image id, or the cache of the layers above it. The final image's
label covers the whole: every layer's digest, the whole build context (the .dockerignore allowlist),
the Dockerfiles, docker-bake.hcl, the lock file, the resolved manifest and the tooling code that shapes
the build.
"""

import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ngc_paddle.layers import dockerfile_for

LABEL = "ngc-paddle.inputs-digest"
# Files outside the context that decide what the build does (paths relative to the repository root).
BUILD_FILES = ("Dockerfile", "docker-bake.hcl", ".dockerignore")
# The tooling that turns the manifest into build commands, hashed from the running package.
_PACKAGE = Path(__file__).resolve().parents[1]
TOOLING = ("image_build/*.py", "flavor.py", "manifest/resolve.py", "lock/layer_args.py", "lock/check.py", "layers.py")


@dataclass(frozen=True)
class FlavorInputs:
    layers: dict[str, str]  # layer -> its own inputs digest (the top layer's is `image`)
    image: str  # the whole: what the final image's label carries
    args: dict[str, dict[str, str]]  # layer -> the build args the digests were computed from


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _canon(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


# ---- the build context, as BuildKit sees it ---------------------------------------------------------------
# Docker's .dockerignore rules, written by hand (docker-py, which has a matcher, is not a dependency and
# this needs 30 lines): patterns in order, the last one matching a path or one of its parents wins, `!`
# re-includes, `*` and `?` stay within one path element, `**` spans any number of them.

def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


@cache
def _ignore_rules(text: str) -> tuple[tuple[bool, re.Pattern[str], str], ...]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        cleaned = os.path.normpath(line.removeprefix("!").strip()).strip("/")
        rules.append((include, _pattern_regex(cleaned), cleaned))
    return tuple(rules)


def _excluded(rules: tuple[tuple[bool, re.Pattern[str], str], ...], rel: str) -> bool:
    parts = rel.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    excluded = False
    for include, regex, _ in rules:
        if any(regex.match(p) for p in prefixes):
            excluded = not include
    return excluded


def context_files(root: Path) -> dict[str, Path]:
    """Every file of the build context (relative posix path -> path): what .dockerignore lets through."""
    ignore = root / ".dockerignore"
    rules = _ignore_rules(ignore.read_text() if ignore.exists() else "")
    reincluded = [cleaned for include, _, cleaned in rules if include]
    files: dict[str, Path] = {}
    for folder, dirs, names in os.walk(root):
        rel_dir = Path(folder).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        # Descend only where something may be included: not excluded, or a `!` pattern lies inside.
        dirs[:] = sorted(d for d in dirs if not _excluded(rules, rel_dir + d)
                         or any(p.startswith(rel_dir + d + "/") or p == rel_dir + d for p in reincluded))
        for name in names:
            rel = rel_dir + name
            if not _excluded(rules, rel) and os.path.isfile(os.path.join(folder, name)):
                files[rel] = Path(folder) / name
    return files


# ---- what one Dockerfile takes from the context -------------------------------------------------------------
# Written by hand: only two forms read the context here (bind mounts and COPY/ADD), and dockerfile-parse
# would still leave the flags of both to us. A bind mount without a source takes the whole context.

def _substitute(text: str, variables: Mapping[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables.get(m.group(1) or m.group(2), ""), text)


def dockerfile_sources(text: str, args: Mapping[str, str]) -> list[str]:
    """Context paths a Dockerfile's instructions read (bind-mount sources, COPY/ADD sources); "." is all."""
    joined = re.sub(r"\\\n", " ", text)
    variables: dict[str, str] = {}
    sources: list[str] = []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "ARG":
            name, _, default = rest.strip().partition("=")
            variables[name] = args.get(name, default)
            continue
        if word == "RUN":
            for match in re.finditer(r"--mount=(\S+)", rest):
                opts = dict(o.split("=", 1) if "=" in o else (o, "") for o in match.group(1).split(","))
                if opts.get("type") == "bind" and "from" not in opts:
                    sources.append(_substitute(opts.get("source", opts.get("src", ".")), variables))
        elif word in ("COPY", "ADD"):
            tokens = shlex.split(rest)
            if any(t.startswith("--from") for t in tokens):
                continue
            paths = [t for t in tokens if not t.startswith("--")]
            sources += [_substitute(p, variables) for p in paths[:-1]]
    return [os.path.normpath(s).strip("/") or "." for s in sources]


# ---- the digests -----------------------------------------------------------------------------------------

class _Hasher:
    """File digests of one computation, each file read once."""

    def __init__(self, root: Path, generated: Mapping[str, str]) -> None:
        self.root, self.generated = root, dict(generated)
        # build/ in the context holds what the build writes itself (the resolved manifest of every flavor): only
        # this flavor's counts, as it is about to be written, so a file another flavor's build left changes nothing.
        self.context = {rel: p for rel, p in context_files(root).items() if not rel.startswith("build/")}
        for rel in generated:
            self.context[rel] = root / rel
        self._done: dict[str, str] = {}

    def file(self, rel: str, path: Path | None = None) -> str:
        if rel not in self._done:
            if rel in self.generated:
                self._done[rel] = _sha(self.generated[rel].encode())
            else:
                target = path or self.root / rel
                self._done[rel] = _sha(target.read_bytes()) if target.is_file() else "missing"
        return self._done[rel]

    def under(self, source: str) -> dict[str, str]:
        if source == ".":
            return {rel: self.file(rel, p) for rel, p in self.context.items()}
        return {rel: self.file(rel, p) for rel, p in self.context.items() if rel == source or
                rel.startswith(source + "/")} or {source: "missing"}


def layer_digest(hasher: _Hasher, flavor: str, layer: str, args: Mapping[str, str], below: str,
                 foreign: bool = False) -> str:
    dockerfile = dockerfile_for(layer, foreign).as_posix()
    text = (hasher.root / dockerfile).read_text()
    files: dict[str, str] = {}
    for source in dockerfile_sources(text, args):
        files.update(hasher.under(source))
    own_args = {k: v for k, v in args.items() if k != "BASE_IMAGE"}  # the layer below is `below`
    return _sha(_canon({"flavor": flavor, "layer": layer, "dockerfile": dockerfile, "dockerfile_sha256":
                        hasher.file(dockerfile), "files": files, "args": own_args, "below": below}))


def flavor_inputs(root: Path, flavor: str, layers: list[str], layer_args: Mapping[str, Mapping[str, str]],
                  base_id: str, lock_file: Path, resolved_manifest: object,
                  generated: Mapping[str, str], foreign: bool = False) -> FlavorInputs:
    """The digests of one flavor's layers (in order) and of its finished image (`foreign`: built for another
    platform than the default one, with its own pip-layer Dockerfile).

    layer_args: each layer's build args as the bake file has them; base_id: the base image's id;
    generated: files the build writes into the context before building (path -> text), hashed as written.
    """
    hasher = _Hasher(root, generated)
    digests: dict[str, str] = {}
    below = base_id
    for layer in layers:
        below = digests[layer] = layer_digest(hasher, flavor, layer, layer_args[layer], below, foreign)
    tooling = {p.relative_to(_PACKAGE).as_posix(): _sha(p.read_bytes())
               for pattern in TOOLING for p in sorted(_PACKAGE.glob(pattern))}
    whole = _sha(_canon({
        "layers": digests, "context": hasher.under("."),
        "build_files": {f: hasher.file(f) for f in BUILD_FILES},
        "lock": _sha(lock_file.read_bytes()) if lock_file.is_file() else "missing",
        "manifest": resolved_manifest, "base": base_id, "tooling": tooling,
    }))
    digests[layers[-1]] = whole
    return FlavorInputs(digests, whole, {layer: dict(layer_args[layer]) for layer in layers})


def short(digest: str | None) -> str:
    """sha256:abcdef012345… for people."""
    return f"{digest[:19]}…" if digest else "none"
