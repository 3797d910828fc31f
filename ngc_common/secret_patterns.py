"""What counts as a private key, a credential or a token: the one set of patterns of the hygiene checks and the gate.

Used by the scan gate (ngc_paddle/scan/checks/layer_checks.py, over every layer of `docker save`) and by the
in-image validation probe (validation/probes/fs_scan.py, which runs with the image's Python: inside the
image there is no ngc_paddle package, but ngc_common is installed). Standard library only, for that reason.
The setuid allowlist and the known key fixtures are data in security/policy.yaml, read by both too.
No library offers these as an importable set (trivy's and gitleaks' rules live in Go), hence by hand.
"""

import binascii
import hashlib
import math
import re
from collections.abc import Iterable

from ngc_common import credential_files

# A PEM / OpenSSH / PGP private key: the armour line followed by key material. An armour line alone
# (libcrypto's PEM strings, "-----BEGIN RSA PRIVATE KEY-----\n...\n" in documentation) is not a key.
PRIVATE_KEY = re.compile(
    rb"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP |ANY )?PRIVATE KEY(?: BLOCK)?-----\r?\n"
    rb"(?:[A-Za-z-]+: [^\r\n]*\r?\n)*(?:\r?\n)?[A-Za-z0-9+/=]{20,}")

# (rule, pattern) over file content, ENV values, labels and the image history; rule ids are the findings' ids.
CREDENTIALS: list[tuple[str, re.Pattern[bytes]]] = [
    ("aws-access-key-id", re.compile(rb"A(?<!\wA)(?:KIA|SIA)[0-9A-Z]{16}\b")),
    ("aws-secret-access-key", re.compile(rb"(?i)aws_?secret_?access_?key[\"']?\s*[=:]\s*[\"']?[A-Za-z0-9/+=]{40}")),
    ("gcp-service-account", re.compile(rb'"type":\s*"service_account"')),
    ("github-token", re.compile(rb"g(?<!\wg)(?:h[pousr]_[A-Za-z0-9]{36}|ithub_pat_[A-Za-z0-9_]{60,})\b")),
    ("gitlab-token", re.compile(rb"g(?<!\wg)lpat-[A-Za-z0-9_-]{20}\b")),
    ("slack-token", re.compile(rb"x(?<!\wx)ox[abposr]-[A-Za-z0-9-]{10,}\b")),
    # The rules that were trivy's alone (its builtin rules pypi-upload-token, stripe-secret-token, jwt-token,
    # npm-access-token): a PyPI upload token is a macaroon whose first bytes always encode "pypi.org".
    ("pypi-upload-token", re.compile(rb"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    ("stripe-secret-key", re.compile(rb"[sr](?<![A-Za-z0-9][sr])k_(?:live|test)_[A-Za-z0-9]{10,99}\b")),
    ("npm-token", re.compile(rb"n(?<!\wn)pm_[A-Za-z0-9]{36}\b")),
    ("jwt", re.compile(rb"e(?<![A-Za-z0-9_-]e)yJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
]
# Rules with a fixed prefix that no compiler mangles: also run over compiled Python (.pyc keeps string
# constants as they were written), where the text rules would see binary noise.
PREFIXED = {"github-token", "gitlab-token", "slack-token", "pypi-upload-token", "stripe-secret-key", "npm-token",
            "jwt", "aws-access-key-id"}
# user:password@ in a URL: a credential in configuration (.git/config, pip.conf, .netrc, ENV, RUN lines);
# placeholders (${VAR}, <password>, ***) are not. Not applied to source code and documentation, where
# "http://user:pass@host" is an example.
URL_CREDENTIALS = re.compile(rb"\b[a-z][a-z0-9+.-]{1,15}://([^\s/:@'\"<>${}*]+):([^\s/@'\"<>${}*]{3,})@[\w.-]+")
PLACEHOLDER_PASSWORDS = {b"password", b"pass", b"passwd", b"secret", b"token", b"xxx", b"xxxx", b"changeme"}
CONFIG_FILE = re.compile(r"(/\.git/config|/\.gitconfig|/\.git-credentials|/\.netrc|/\.pypirc|/pip\.conf|/pip\.ini"
                         r"|/\.npmrc|/\.docker/config\.json|/apt/auth\.conf(\.d/[^/]+)?|/sources\.list(\.d/[^/]+)?"
                         r"|/\.env|/environment)$")
# Cheap anchors, tested on a lower-cased chunk before the patterns run (most chunks of a binary match none).
EXACT_ANCHORS = (b"-----BEGIN", b"AKIA", b"ASIA", b"service_account", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_",
                 b"github_pat_", b"glpat-", b"xox", b"pypi-AgE", b"k_live_", b"k_test_", b"npm_", b"eyJ")
LOWER_ANCHORS = (b"ccess_key", b"ccesskey")
# Names whose values must never be baked into ENV or build arguments, whatever the value's length or shape
# (DB_PASS, NEXUS_AUTH, GPG_KEY): a value that points to a secret (SECRET_REFERENCE) is not one.
SECRET_NAME = re.compile(r"(?i)(pass|auth|token|secret|key|credential)")
# Labels are documentation (org.opencontainers.image.authors is not a secret): the narrower rule.
LABEL_SECRET_NAME = re.compile(r"(?i)(password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
                               r"|credential)")
# A value that points to a secret instead of holding it: a BuildKit secret mount, a file the runtime mounts.
SECRET_REFERENCE = re.compile(r"^(/run/secrets/|/var/run/secrets/|\$\{?[A-Za-z_])")
# A whole key block, to know a key by its content: sha256 of the bytes from "-----BEGIN" to the END line's "-----".
KEY_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]{0,20})PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s:,.()-]{20,8192}?"
                       rb"-----END \1PRIVATE KEY(?: BLOCK)?-----")
CHUNK = 1 << 20
OVERLAP = 4096  # a match may straddle two chunks; every pattern's match is shorter than this


def url_credentials(data: bytes) -> bool:
    return any(m.group(2).lower() not in PLACEHOLDER_PASSWORDS for m in URL_CREDENTIALS.finditer(data))


def content_hits(data: bytes, path: str = "") -> set[str]:
    """Rule ids found in one buffer: "private-key", a CREDENTIALS rule, "url-credentials" (config files only),
    and the rules of a known credential file (.netrc, .docker/config.json, kubeconfig, ...) holding a secret."""
    hits = {"url-credentials"} if CONFIG_FILE.search(path) and url_credentials(data) else set()
    hits |= credential_files.hits(path, data)
    if not any(anchor in data for anchor in EXACT_ANCHORS):
        lowered = data.lower()
        if not any(anchor in lowered for anchor in LOWER_ANCHORS):
            return hits
    if b"-----BEGIN" in data and PRIVATE_KEY.search(data):
        hits.add("private-key")
    return hits | {rule for rule, pattern in CREDENTIALS if pattern.search(data)}


def key_digests(data: bytes) -> set[str]:
    """sha256 of each whole private-key block in a buffer: how the policy's key_fixtures name a known test key
    (Debian's libgnutls30 compiles its self-test keys in); independent of the file that carries it."""
    if b"-----BEGIN" not in data:
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
    (.pyc) also gets the rules of tokens with a fixed prefix, which its string constants keep as written."""
    hits = {"private-key"} if b"-----BEGIN" in data and PRIVATE_KEY.search(data) else set()
    if path.endswith(".pyc"):
        if any(anchor in data for anchor in EXACT_ANCHORS):
            hits |= {rule for rule, pattern in CREDENTIALS if rule in PREFIXED and pattern.search(data)}
    elif (b"AKIA" in data or b"ASIA" in data) and CREDENTIALS[0][1].search(data):
        hits.add(CREDENTIALS[0][0])
    return hits


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
        self.path, self.hits, self._tail, self.binary = path, set(), b"", None
        self.keys: set[str] = set()
        self.hashes = {name: hashlib.new(name) for name in digests}

    def feed(self, chunk: bytes) -> None:
        if self.binary is None:
            self.binary = is_binary(chunk)
        for h in self.hashes.values():
            h.update(chunk)
        data = self._tail + chunk if self._tail else chunk
        hits = binary_hits(data, self.path) if self.binary else content_hits(data, self.path)
        if "private-key" in hits:
            self.keys |= key_digests(data)
        self.hits |= hits
        self._tail = chunk[-OVERLAP:]

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
