"""What counts as a private key, a credential or a token: the one set of patterns of the hygiene checks and the gate.

Used by the scan gate (ngc_paddle/scan/checks/layer_checks.py, over every layer of `docker save`) and by the
in-image validation probe (validation/probes/fs_scan.py, which runs with the image's Python: inside the
image there is no ngc_paddle package, but ngc_common is installed). Standard library only, for that reason.
The setuid allowlist and the known key fixtures are data in security/policy.yaml, read by both too.
No library offers these as an importable set (trivy's and gitleaks' rules live in Go), hence by hand.
"""

import binascii
import hashlib
import importlib.util
import marshal
import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from ngc_common import credential_files, token_rules

# A PEM / OpenSSH / PGP private key: the armour line followed by key material. An armour line alone
# (libcrypto's PEM strings, "-----BEGIN RSA PRIVATE KEY-----\n...\n" in documentation) is not a key.
# As trivy's built-in rule `private-key` (checked against trivy 0.76's own findings, tests/unit/test_scan_classes.py):
# in any case ("-----begin rsa private key-----"), with spaces inside the dashes, and with the line breaks as
# written in JSON, .env files and string literals (a literal backslash-n), or none at all; unlike trivy's, no END
# line is needed (a truncated key is still a key).
_BREAK = rb"(?:\s|\\[rn])"  # a real line break or blank, or an escaped one (\n, \r\n) as in JSON and .env files
PRIVATE_KEY = re.compile(
    rb"(?i)-----\s{0,4}BEGIN[ A-Z0-9_-]{0,40}?PRIVATE KEY(?: BLOCK)?\s{0,4}-----" + _BREAK + rb"{0,8}"
    rb"(?:[A-Za-z-]{1,40}: [^\r\n\\]{0,200}(?:\r?\n|\\r\\n|\\n))*" + _BREAK + rb"{0,8}[A-Za-z0-9+/=]{20,}")

# (rule, pattern) over file content, ENV values, labels and the image history; rule ids are the findings' ids.
AWS_KEY_ID = re.compile(rb"A(?<!\wA)(?:3T[A-Z0-9]|KIA|GPA|IDA|ROA|IPA|NPA|NVA|SIA)[A-Z0-9]{16}\b")
CREDENTIALS: list[tuple[str, re.Pattern[bytes]]] = [
    ("aws-access-key-id", AWS_KEY_ID),
    ("aws-secret-access-key", re.compile(rb"(?i)aws_?(?:sec(?:ret)?)?_?(?:access)?_?key[\"']?\s*(?::|=>|=)?\s*"
                                         rb"[\"']{0,2}[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])")),
    ("gcp-service-account", re.compile(rb'"type":\s*"service_account"')),
    # ghp_ gho_ ghu_ ghs_ are 36 characters after the prefix, ghr_ (refresh) up to 76, github_pat_ 82.
    ("github-token", re.compile(rb"g(?<!\wg)(?:h[pous]_[A-Za-z0-9]{36}|hr_[A-Za-z0-9]{36,76}"
                                rb"|ithub_pat_[A-Za-z0-9_]{60,})\b")),
    ("gitlab-token", re.compile(rb"g(?<!\wg)lpat-[A-Za-z0-9_-]{20}\b")),
    ("slack-token", re.compile(rb"x(?<!\wx)ox[abposr]-[A-Za-z0-9-]{10,}\b")),
    # The rules that were trivy's alone (its builtin rules pypi-upload-token, stripe-secret-token, jwt-token,
    # npm-access-token): a PyPI upload token is a macaroon whose first bytes always encode "pypi.org".
    ("pypi-upload-token", re.compile(rb"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    ("stripe-secret-key", re.compile(rb"(?i)[sr](?<![A-Za-z0-9][sr])k_(?:live|test)_[A-Za-z0-9]{10,99}\b")),
    ("npm-token", re.compile(rb"n(?<!\wn)pm_[A-Za-z0-9]{36}\b")),
    # header.payload.[signature]: an unsigned token ("alg": "none") is still a credential
    ("jwt", re.compile(rb"e(?<![A-Za-z0-9_-]e)y[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/\\_-]{17,}\.")),
    *((rule.id, rule.pattern) for rule in token_rules.RULES),
]
# user:password@ in a URL: a credential in configuration (.git/config, pip.conf, .netrc, ENV, RUN lines);
# placeholders (${VAR}, <password>, ***) are not. Not applied to source code and documentation, where
# "http://user:pass@host" is an example.
URL_CREDENTIALS = re.compile(rb"\b[a-z][a-z0-9+.-]{1,15}://([^\s/:@'\"<>${}*]+):([^\s/@'\"<>${}*]{3,})@[\w.-]+")
PLACEHOLDER_PASSWORDS = {b"password", b"pass", b"passwd", b"secret", b"token", b"xxx", b"xxxx", b"changeme"}
CONFIG_FILE = re.compile(r"(/\.git/config|/\.gitconfig|/\.git-credentials|/\.netrc|/\.pypirc|/pip\.conf|/pip\.ini"
                         r"|/\.npmrc|/\.docker/config\.json|/apt/auth\.conf(\.d/[^/]+)?|/sources\.list(\.d/[^/]+)?"
                         r"|/\.env|/environment)$")
# Anchors per rule: one must be in the buffer (in any case) before the rule's pattern runs. All anchors of all
# rules are found in one pass over the lower-cased buffer where the caller gave a multi-pattern matcher
# (use_matcher: the gate's Aho-Corasick); the image's hygiene probe, standard library only, tests them in turn.
ANCHORS: dict[str, tuple[bytes, ...]] = {
    "aws-access-key-id": (b"A3T", b"AKIA", b"AGPA", b"AIDA", b"AROA", b"AIPA", b"ANPA", b"ANVA", b"ASIA"),
    "aws-secret-access-key": (b"aws",),
    "gcp-service-account": (b"service_account",),
    "github-token": (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    "gitlab-token": (b"glpat-",),
    "slack-token": (b"xox",),
    "pypi-upload-token": (b"pypi-AgE",),
    "stripe-secret-key": (b"k_live_", b"k_test_"),
    "npm-token": (b"npm_",),
    "jwt": (b".ey",),
    **{rule.id: rule.anchors for rule in token_rules.RULES},
}
_KEYED = {rule.id for rule in token_rules.RULES if rule.keyed}
_GATED = [(rule, pattern, tuple(a.lower() for a in ANCHORS[rule]), rule in _KEYED) for rule, pattern in CREDENTIALS]
_ALL_ANCHORS = sorted({a for _r, _p, anchors, _k in _GATED for a in anchors})
_MATCHER = None


def use_matcher(build: Callable[[list[bytes]], Any]) -> None:
    """Find every anchor in one pass with `build(anchors)`, an automaton with ahocorasick_rs's
    find_matches_as_indexes (the gate: ahocorasick_rs.BytesAhoCorasick); the same hits, about 30 times faster."""
    global _MATCHER
    _MATCHER = build(_ALL_ANCHORS)


def _anchors_in(lowered: bytes) -> dict[bytes, list[int] | None]:
    """Each anchor in the (lower-cased) buffer, with where it starts (None: somewhere, not said where)."""
    if _MATCHER is None:
        return {a: None for a in _ALL_ANCHORS if a in lowered}
    found: dict[bytes, list[int] | None] = {}
    for index, start, _end in _MATCHER.find_matches_as_indexes(lowered, overlapping=True):
        found.setdefault(_ALL_ANCHORS[index], []).append(start)
    return found
# Names whose values must never be baked into ENV or build arguments, whatever the value's length or shape
# (DB_PASS, NEXUS_AUTH, GPG_KEY): a value that points to a secret (SECRET_REFERENCE) is not one.
SECRET_NAME = re.compile(r"(?i)(pass|auth|token|secret|key|credential)")
# Labels are documentation (org.opencontainers.image.authors is not a secret): the narrower rule.
LABEL_SECRET_NAME = re.compile(r"(?i)(password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
                               r"|credential)")
# A value that points to a secret instead of holding it: a BuildKit secret mount, a file the runtime mounts.
SECRET_REFERENCE = re.compile(r"^(/run/secrets/|/var/run/secrets/|\$\{?[A-Za-z_])")
# A whole key block, to know a key by its content: sha256 of the bytes from "-----BEGIN" to the END line's "-----".
KEY_BLOCK = re.compile(rb"(?i)-----BEGIN ([A-Z0-9_ -]{0,30})PRIVATE KEY(?: BLOCK)?-----"
                       rb"[A-Za-z0-9+/=\s:,.()\\-]{20,8192}?-----END \1PRIVATE KEY(?: BLOCK)?-----")
CHUNK = 1 << 20
OVERLAP = 4096  # a match may straddle two chunks; every pattern's match is shorter than this


def has_private_key(data: bytes) -> bool:
    """A private key in `data` (PRIVATE_KEY), after a memchr-speed look for its dashes."""
    return b"-----" in data and PRIVATE_KEY.search(data) is not None


def url_credentials(data: bytes) -> bool:
    return any(m.group(2).lower() not in PLACEHOLDER_PASSWORDS for m in URL_CREDENTIALS.finditer(data))


def content_hits(data: bytes, path: str = "") -> set[str]:
    """Rule ids found in one buffer: "private-key", a CREDENTIALS rule, "url-credentials" (config files only),
    and the rules of a known credential file (.netrc, .docker/config.json, kubeconfig, ...) holding a secret."""
    hits = {"url-credentials"} if CONFIG_FILE.search(path) and url_credentials(data) else set()
    hits |= credential_files.hits(path, data)
    if has_private_key(data):
        hits.add("private-key")
    return hits | token_hits(data)


def token_hits(data: bytes) -> set[str]:
    """The CREDENTIALS rules whose anchor is in `data` and whose pattern then matches (a vendor-keyed rule is tried
    only where its vendor's name is)."""
    present = _anchors_in(data.lower())
    if not present:
        return set()
    hits = set()
    for rule, pattern, anchors, keyed in _GATED:
        where = [present[a] for a in anchors if a in present]
        if not where:
            continue
        if keyed and None not in where:
            if any(pattern.match(data, start) for starts in where for start in starts):
                hits.add(rule)
        elif pattern.search(data):
            hits.add(rule)
    return hits


def key_digests(data: bytes) -> set[str]:
    """sha256 of each whole private-key block in a buffer: how the policy's key_fixtures name a known test key
    (Debian's libgnutls30 compiles its self-test keys in); independent of the file that carries it."""
    if b"-----" not in data:
        return set()
    return {hashlib.sha256(m.group(0)).hexdigest() for m in KEY_BLOCK.finditer(data)}


def is_fixture(digests: set[str], fixtures: dict[str, str]) -> str | None:
    """The reason when every key found is a known fixture (None when one is not, or no block was read whole)."""
    if not digests or not digests <= set(fixtures):
        return None
    return "; ".join(sorted({fixtures[d] for d in digests}))


def binary_hits(data: bytes, path: str = "") -> set[str]:
    """The rules that matter inside a binary (a key or an access key id pasted into it), at memchr speed:
    like trivy and gitleaks, the text rules (URLs, passwords) are not run over compiled code. Compiled Python
    (.pyc) gets every token rule over its string constants (pyc_text), as trivy does."""
    hits = {"private-key"} if has_private_key(data) else set()
    text = pyc_text(data) if path.endswith(".pyc") else None
    if text is not None:
        hits |= token_hits(text) | ({"private-key"} if has_private_key(text) else set())
    elif (b"AKIA" in data or b"ASIA" in data) and AWS_KEY_ID.search(data):  # the long-term and temporary ids
        hits.add("aws-access-key-id")
    return hits


PYC_HEADER = 16  # magic, flags, and the source's mtime and size (or hash): PEP 552
PYC_LIMIT = 64 * 1024 * 1024  # a larger .pyc is searched as raw bytes
_SHORT_STRINGS = re.compile(rb"[\x7a\xfa\x5a\xda]")  # marshal's short ascii ('z', 'Z'; | 0x80: FLAG_REF)
_LONG_STRINGS = re.compile(rb"[\x61\xe1\x41\xc1\x75\xf5\x74\xf4\x73\xf3]")  # 'a' 'A' 'u' 't' 's' (| FLAG_REF)
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1f]")


def pyc_text(data: bytes) -> bytes | None:
    """The string and bytes constants of a compiled module, one per line, so that the text rules see each token
    whole (word-boundary anchors never match inside marshalled bytes, where a length byte precedes the string).
    A module of this Python is read with marshal (its code objects, walked; nothing is executed); one of another
    Python version, whose marshal this interpreter cannot load, by marshal's string records (a type byte, the
    length, the bytes), which have kept their layout since Python 3.4. None when `data` is no compiled module."""
    if len(data) <= PYC_HEADER or len(data) > PYC_LIMIT or data[2:4] != b"\r\n":
        return None
    body = memoryview(data)[PYC_HEADER:]
    if data[:4] == importlib.util.MAGIC_NUMBER:
        try:
            return b"\n".join(_constants(marshal.loads(body)))
        except (ValueError, EOFError, TypeError, RecursionError, MemoryError):
            pass  # damaged: its string records still tell what it holds
    return b"\n".join(_marshal_records(bytes(body)))


def _constants(code: object) -> list[bytes]:
    found, stack, seen = [], [code], 0
    while stack and seen < 1_000_000:
        value = stack.pop()
        seen += 1
        if isinstance(value, str):
            found.append(value.encode("utf-8", "surrogatepass"))
        elif isinstance(value, bytes):
            found.append(value)
        elif isinstance(value, tuple | frozenset | list):
            stack.extend(value)
        elif hasattr(value, "co_consts"):
            stack.extend(value.co_consts)
    return found


def _marshal_records(body: bytes) -> list[bytes]:
    found = []
    for pattern, width in ((_SHORT_STRINGS, 1), (_LONG_STRINGS, 4)):
        for match in pattern.finditer(body):
            start = match.end() + width
            size = int.from_bytes(body[match.end():start], "little")
            if 8 <= size <= len(body) - start:
                value = body[start:start + size]
                if not _CONTROL.search(value):
                    found.append(value)
    return found


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB: compiled code or data, not text (git's and grep's rule)."""
    return b"\0" in data[:8192]


def buffer_hits(data: bytes, path: str = "") -> set[str]:
    """The rules for one whole file: binary_hits for a binary, content_hits for text (as StreamScan does)."""
    return binary_hits(data, path) if is_binary(data) else content_hits(data, path)


class StreamScan:
    """The same rules over a file read in chunks (bounded memory for files of any size), with its hashes.

    A binary file (a NUL byte in its first 8 KiB) gets binary_hits only; a text file every rule. `keys` holds
    the digests of the private-key blocks found; the file is hashed only as asked (md5 of setuid files).
    """

    def __init__(self, path: str, digests: Iterable[str] = ()) -> None:
        self.path, self._hits, self._tail, self.binary = path, set(), b"", None
        self.keys: set[str] = set()
        self.hashes = {name: hashlib.new(name) for name in digests}
        self._pyc: bytearray | None = bytearray() if path.endswith(".pyc") else None  # read whole, then pyc_text

    def feed(self, chunk: bytes) -> None:
        if self.binary is None:
            self.binary = is_binary(chunk)
        for h in self.hashes.values():
            h.update(chunk)
        if self._pyc is not None and len(self._pyc) + len(chunk) <= PYC_LIMIT:
            self._pyc += chunk
            return
        if self._pyc is not None:  # too large for a module: its bytes so far, then the rest, as a binary
            chunk, self._pyc = bytes(self._pyc) + chunk, None
        data = self._tail + chunk if self._tail else chunk
        hits = binary_hits(data, self.path) if self.binary else content_hits(data, self.path)
        if "private-key" in hits:
            self.keys |= key_digests(data)
        self._hits |= hits
        self._tail = chunk[-OVERLAP:]

    @property
    def hits(self) -> set[str]:
        if self._pyc:
            data, self._pyc = bytes(self._pyc), bytearray()
            hits = buffer_hits(data, self.path)
            if "private-key" in hits:
                self.keys |= key_digests(data)
            self._hits |= hits
        return self._hits

    def digest(self, name: str) -> str | None:
        return self.hashes[name].hexdigest() if name in self.hashes else None


def value_hits(value: str) -> set[str]:
    """Credential rules matched by a configuration value (ENV, label, build argument, RUN line)."""
    data = value.encode("utf-8", "replace")
    hits = {rule for rule, pattern in CREDENTIALS if pattern.search(data)}
    if url_credentials(data):
        hits.add("url-credentials")
    if basic_auth(value):
        hits.add("basic-auth")
    return hits


BASE64_VALUE = re.compile(r"^[A-Za-z0-9+/]{8,}={0,2}$")


def basic_auth(value: str) -> bool:
    """A base64 `user:password` (an HTTP Basic credential, as in NEXUS_AUTH=dXNlcjpwYXNz): decodes to printable
    ASCII with one colon between two non-empty parts."""
    v = value.strip().strip("'\"").removeprefix("Basic ").strip()
    if not BASE64_VALUE.match(v) or len(v) % 4:
        return False
    try:
        text = binascii.a2b_base64(v).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, sep, password = text.partition(":")
    return bool(sep and user and password and text.isprintable() and " " not in user and len(password) >= 3)


def shannon_entropy(text: str) -> float:
    counts = {c: text.count(c) for c in set(text)}
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


TOKEN_SHAPE = re.compile(r"^[A-Za-z0-9+/=_.-]{24,}$")


def looks_like_token(value: str) -> bool:
    """A long random-looking value (mixed case and digits, high entropy): a token under an innocent ENV name."""
    v = value.strip("'\"")
    return bool(TOKEN_SHAPE.match(v)) and not v.startswith("/") and any(c.isupper() for c in v) \
        and any(c.islower() for c in v) and any(c.isdigit() for c in v) and shannon_entropy(v) >= 4.0


def dpkg_names(path: str) -> list[str]:
    """How dpkg may have recorded an image path: as it is, or before /usr was merged (/usr/bin/su is bin/su)."""
    rel = path.lstrip("/")
    names = [rel]
    for top in ("bin/", "sbin/", "lib/", "lib64/"):
        if rel.startswith("usr/" + top):
            names.append(rel.removeprefix("usr/"))
    return names


def parse_md5sums(data: bytes) -> dict[str, str]:
    """dpkg's /var/lib/dpkg/info/<package>.md5sums: "<md5>  <path without the leading slash>" per line."""
    recorded = {}
    for line in data.decode("utf-8", "replace").splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 32 and name:
            recorded[name] = digest
    return recorded


if __name__ == "__main__":  # python -m ngc_common.secret_patterns FILE...: the digests key_fixtures takes
    import sys

    for name in sys.argv[1:]:
        with open(name, "rb") as fh:
            for digest in sorted(key_digests(fh.read())):
                print(f"{digest}  {name}")
