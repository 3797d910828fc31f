"""Our own checks over every layer and the image config: keys, credentials, tokens, setuid, permissions.

Written here because they must see each layer separately (a key deleted in a later layer is still
in the image) and the build metadata (ENV, labels, the arguments recorded in the history), which
file scanners do not read as a whole. What counts as a key or a credential is ngc_common/secret_patterns.py,
shared with the in-image hygiene checks; what is allowed (setuid paths, key fixtures) is the policy.
"""

import hashlib
import stat
from dataclasses import dataclass, field

from ngc_common import secret_patterns as patterns
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.saved_image import Entry, SavedImage, split_build_args

MD5SUMS_DIR = "/var/lib/dpkg/info/"
TITLES = {"private-key": "private key in a layer", "url-credentials": "user:password@ URL in a configuration file"}


def wants_content(path: str, size: int) -> bool:
    """Every regular file is read: small ones whole, larger ones streamed in chunks (see scan_entry)."""
    return True


@dataclass
class _Setuid:
    path: str
    bit: str
    md5: str
    where: str
    layer: int


@dataclass
class LayerScan:
    """The checks over the stream of layer entries; `finish()` adds what needs the whole image (dpkg's md5sums)."""

    setuid_allowed: set[str]
    key_fixtures: dict[str, str] = field(default_factory=dict)  # sha256 of a key block -> why it may ship
    # Each dpkg md5sums file as each layer left it (layer index -> path -> content): a setuid file is judged by
    # what dpkg recorded as of its own layer, since a package upgraded in a later layer (the os layer applies
    # -security on top of the base) records the new file's sums while the lower layer keeps the old file.
    md5sums: dict[int, dict[str, bytes]] = field(default_factory=dict)
    allowed_setuid: list[_Setuid] = field(default_factory=list)

    def entry(self, e: Entry) -> list[Finding]:
        findings: list[Finding] = []
        where = f"layer {e.layer.index} ({e.layer.name})"
        if e.type == "file":
            special = e.mode & (stat.S_ISUID | stat.S_ISGID)
            hits, keys, md5 = self._content(e, want_md5=bool(special))
            if special:
                bit = "setuid" if e.mode & stat.S_ISUID else "setgid"
                if e.path not in self.setuid_allowed:
                    findings.append(Finding("setuid", f"{bit}-file", "HIGH", f"{bit} file not in the allowlist",
                                            package=e.path, location=where, source="layers"))
                else:
                    self.allowed_setuid.append(_Setuid(e.path, bit, md5 or "", where, e.layer.index))
            if e.path.startswith(MD5SUMS_DIR) and e.path.endswith(".md5sums") and e.content is not None:
                self.md5sums.setdefault(e.layer.index, {})[e.path] = e.content
            for rule in sorted(hits):
                fixture = patterns.is_fixture(keys, self.key_fixtures) if rule == "private-key" else None
                if fixture:
                    findings.append(Finding("key-fixture", "private-key-fixture", "LOW",
                                            f"known test key shipped by a package: {fixture}",
                                            package=e.path, location=where, source="layers"))
                    continue
                kind = "private-key" if rule == "private-key" else "credential"
                findings.append(Finding(kind, rule, "CRITICAL", TITLES.get(rule, f"{rule} in a layer"),
                                        package=e.path, location=where, source="layers"))
            if e.mode & stat.S_IWOTH:
                findings.append(Finding("world-writable", "world-writable-file", "HIGH", "world-writable file",
                                        package=e.path, location=where, source="layers"))
        elif e.type == "dir" and e.mode & stat.S_IWOTH and not e.mode & stat.S_ISVTX:
            # CIS Docker/Linux benchmarks: every world-writable folder carries the sticky bit (/tmp, /workspace).
            findings.append(Finding("world-writable", "world-writable-dir", "HIGH",
                                    "world-writable folder without the sticky bit", package=e.path,
                                    location=where, source="layers"))
        return findings

    @staticmethod
    def _content(e: Entry, want_md5: bool) -> tuple[set[str], set[str], str | None]:
        """Rule hits, the digests of the private-key blocks found (for key_fixtures) and the md5 (setuid files,
        for dpkg); small files are in memory, larger ones are read in chunks."""
        if e.content is not None:
            hits = patterns.content_hits(e.content, e.path)
            keys = patterns.key_digests(e.content) if "private-key" in hits else set()
            return hits, keys, hashlib.md5(e.content).hexdigest() if want_md5 else None
        if e.stream is None:
            return set(), set(), None
        scan = patterns.StreamScan(e.path, ("md5",) if want_md5 else ())
        while chunk := e.stream.read(patterns.CHUNK):
            scan.feed(chunk)
        return scan.hits, scan.keys, scan.digest("md5") if want_md5 else None

    def finish(self) -> list[Finding]:
        """An allowed setuid path must hold the file its Debian package installed, unmodified (dpkg's md5sums):
        a setuid copy of /bin/bash over /usr/bin/su is not su. Each file is compared with the sums dpkg had
        recorded as of its own layer (the newest md5sums file at or below it)."""
        findings = []
        for s in self.allowed_setuid:
            files: dict[str, bytes] = {}
            for index in sorted(i for i in self.md5sums if i <= s.layer):
                files.update(self.md5sums[index])
            recorded: dict[str, str] = {}
            for content in files.values():
                recorded.update(patterns.parse_md5sums(content))
            expected = next((recorded[n] for n in patterns.dpkg_names(s.path) if n in recorded), None)
            if expected == s.md5:
                continue
            why = ("no Debian package installed this file (no dpkg md5sums entry)" if expected is None else
                   f"differs from the file its package installed (md5 {s.md5[:12]}, dpkg recorded {expected[:12]})")
            findings.append(Finding("setuid", f"{s.bit}-file-modified", "CRITICAL",
                                    f"{s.bit} file at an allowlisted path {why}", package=s.path, location=s.where,
                                    source="layers"))
        return findings


def scan_entry(e: Entry, setuid_allowed: set[str]) -> list[Finding]:
    """Findings of one entry alone (no dpkg comparison); LayerScan is what the gate uses."""
    return LayerScan(setuid_allowed).entry(e)


def _secret_value(value: str) -> bool:
    return bool(value) and not patterns.SECRET_REFERENCE.match(value)


def scan_config(image: SavedImage) -> list[Finding]:
    findings = []
    for name, value in image.env.items():
        where = f"image config: Env {name}"
        if patterns.SECRET_NAME.search(name) and _secret_value(value):
            findings.append(Finding("secret", "secret-in-env", "CRITICAL", f"ENV {name} carries a value",
                                    package=name, location=where, source="config"))
            continue
        rules = patterns.value_hits(value)
        for rule in sorted(rules):
            findings.append(Finding("credential", rule, "CRITICAL", f"{rule} in ENV {name}", package=name,
                                    location=where, source="config"))
        if not rules and patterns.looks_like_token(value):
            findings.append(Finding("secret", "token-in-env", "CRITICAL",
                                    f"ENV {name} holds a long random value (a token?)", package=name,
                                    location=where, source="config"))
    for name, value in image.labels.items():
        if patterns.SECRET_NAME.search(name) and _secret_value(value):
            findings.append(Finding("secret", "secret-in-label", "CRITICAL", f"label {name} carries a value",
                                    package=name, location=f"image config: Labels {name}", source="config"))
        for rule in sorted(patterns.value_hits(value)):
            findings.append(Finding("credential", rule, "CRITICAL", f"{rule} in label {name}", package=name,
                                    location=f"image config: Labels {name}", source="config"))
    for layer in image.layers:
        args, _command = split_build_args(layer.created_by)
        where = f"history of layer {layer.index} ({layer.name})"
        for name, value in args:
            if patterns.SECRET_NAME.search(name) and name != "LAYER_SPEC" and _secret_value(value):
                findings.append(Finding("secret", "secret-in-build-args", "HIGH",
                                        f"build argument {name} is recorded in the image history",
                                        package=name, location=where, source="config"))
        for rule in sorted(patterns.value_hits(layer.created_by)):
            findings.append(Finding("credential", rule, "CRITICAL", f"{rule} in the image history",
                                    package=f"layer {layer.index}", location=where, source="config"))
    if image.user.split(":")[0] in ("", "root", "0"):
        findings.append(Finding("user", "runs-as-root", "LOW", "the image's USER is root", package=image.user,
                                location="image config: User", source="config"))
    return findings
