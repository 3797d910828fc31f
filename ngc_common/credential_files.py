"""Known credential files (.netrc, .docker/config.json, .pypirc, .npmrc, .git-credentials, kubeconfigs, cloud
credentials): which of them hold a secret, wherever they sit.

Why: each tool keeps its login in a file of its own format, and a secret there has no shape a token rule
could see (a `password = hunter2` in .pypirc, a base64 `auth` in a docker config). Each format is read for
the fields that hold a secret; a field that is empty or a placeholder (`${NPM_TOKEN}`, `<password>`, `***`)
is a template, not a secret, and does not count. Used through secret_patterns.content_hits by the scan gate
(every layer, inside archives too) and by the in-image hygiene check. Standard library only (the image side
imports it), bounded: files larger than MAX_BYTES are not parsed.
"""

import configparser
import json
import re

MAX_BYTES = 4 * 1024 * 1024
PLACEHOLDERS = {"", "password", "pass", "passwd", "secret", "token", "xxx", "xxxx", "changeme", "null", "none",
                "your-password", "your_password", "yourpassword", "example", "redacted", "<redacted>", "''", '""'}
REFERENCE = re.compile(r"^(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|x+|\.\.\.|%\([^)]*\)s|\{\{.*\}\})$", re.I)

NETRC = re.compile(r"/[._]netrc$")
DOCKER_CONFIG = re.compile(r"/\.docker/config\.json$|/\.dockercfg$")
PYPIRC = re.compile(r"/\.pypirc$")
NPMRC = re.compile(r"/\.npmrc$|/npmrc$")
GIT_CREDENTIALS = re.compile(r"/\.git-credentials$|/git/credentials$")
KUBECONFIG = re.compile(r"/\.kube/config$|kubeconfig[^/]*$", re.I)
AWS_CREDENTIALS = re.compile(r"/\.aws/(credentials|config)$")
GCLOUD = re.compile(r"/\.config/gcloud/(application_default_credentials\.json|legacy_credentials/[^/]+/adc\.json"
                    r"|credentials\.db|access_tokens\.db)$")
AZURE = re.compile(r"/\.azure/(accessTokens\.json|msal_token_cache\.(json|bin)|service_principal_entries\.json)$")
ANY = re.compile("|".join(p.pattern for p in (NETRC, DOCKER_CONFIG, PYPIRC, NPMRC, GIT_CREDENTIALS, KUBECONFIG,
                                              AWS_CREDENTIALS, GCLOUD, AZURE)), re.I)


def is_secret(value: object) -> bool:
    """A filled-in value: not empty, not a placeholder, not a reference to a variable or a mount."""
    if not isinstance(value, str):
        return bool(value) and not isinstance(value, bool | int | float)
    text = value.strip().strip("'\"").strip()
    return text.lower() not in PLACEHOLDERS and not REFERENCE.match(text) and not text.startswith("/run/secrets/")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _netrc(data: bytes) -> bool:
    tokens = _text(data).split()
    return any(word in ("password", "account") and i + 1 < len(tokens) and is_secret(tokens[i + 1])
               for i, word in enumerate(tokens))


def _json(data: bytes) -> object:
    try:
        return json.loads(_text(data))
    except ValueError:
        return None


def _docker_config(data: bytes) -> bool:
    config = _json(data)
    if not isinstance(config, dict):
        return bool(re.search(r'"(auth|identitytoken|registrytoken|password)"\s*:\s*"[^"]+"', _text(data)))
    entries = config.get("auths") if isinstance(config.get("auths"), dict) else config  # .dockercfg: no "auths"
    for entry in entries.values() if isinstance(entries, dict) else []:
        if isinstance(entry, dict) and any(is_secret(entry.get(k)) for k in ("auth", "identitytoken",
                                                                              "registrytoken", "password")):
            return True
    return False


def _pypirc(data: bytes) -> bool:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(_text(data))
    except configparser.Error:
        return bool(re.search(r"(?im)^\s*password\s*[=:]\s*\S", _text(data)))
    return any(is_secret(parser.get(section, "password", fallback="")) for section in parser.sections())


NPM_SECRET = re.compile(r"(?m)^\s*(?://[^\s=]*:)?(_authToken|_auth|_password)\s*=\s*(.*?)\s*$")


def _npmrc(data: bytes) -> bool:
    return any(is_secret(m.group(2)) for m in NPM_SECRET.finditer(_text(data)))


GIT_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s/@]+)@")


def _git_credentials(data: bytes) -> bool:
    return any(is_secret(m.group(1)) for m in GIT_URL.finditer(_text(data)))


KUBE_SECRET = re.compile(r"(?m)^[\s-]*(token|client-key-data|password|id-token|refresh-token|client-secret)"
                         r"\s*:\s*(.*?)\s*$")


def _kubeconfig(data: bytes) -> bool:
    return any(is_secret(m.group(2)) for m in KUBE_SECRET.finditer(_text(data)))


AWS_SECRET = re.compile(r"(?im)^\s*(aws_secret_access_key|aws_session_token)\s*=\s*(.*?)\s*$")


def _aws(data: bytes) -> bool:
    return any(is_secret(m.group(2)) for m in AWS_SECRET.finditer(_text(data)))


def _json_has(data: bytes, keys: tuple[str, ...]) -> bool:
    """A JSON document with a filled-in value under any of `keys`, at any depth (bounded walk)."""
    stack, seen = [_json(data)], 0
    while stack and seen < 100_000:
        value = stack.pop()
        seen += 1
        if isinstance(value, dict):
            if any(k in value and is_secret(value[k]) for k in keys):
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _gcloud(data: bytes) -> bool:
    if data[:16].startswith(b"SQLite format 3"):
        return len(data) > 8192  # a token database beyond its empty tables
    return _json_has(data, ("refresh_token", "private_key", "access_token", "client_secret"))


def _azure(data: bytes) -> bool:
    return _json_has(data, ("accessToken", "refreshToken", "secret", "client_secret")) or bool(
        re.search(rb'"(AccessToken|RefreshToken)"\s*:\s*\{\s*"', data))


RULES = ((NETRC, "netrc-password", _netrc), (DOCKER_CONFIG, "docker-config-auth", _docker_config),
         (PYPIRC, "pypirc-password", _pypirc), (NPMRC, "npmrc-token", _npmrc),
         (GIT_CREDENTIALS, "git-credentials", _git_credentials), (KUBECONFIG, "kubeconfig-secret", _kubeconfig),
         (AWS_CREDENTIALS, "aws-credentials-file", _aws), (GCLOUD, "gcloud-credentials", _gcloud),
         (AZURE, "azure-credentials", _azure))
KUBE_CONTENT = re.compile(rb"(?m)^kind:\s*Config\s*$")


def wants(path: str) -> bool:
    """Whether `path` is a credential file by its name (read it whole, up to MAX_BYTES)."""
    return bool(ANY.search(path))


def hits(path: str, data: bytes) -> set[str]:
    """The rule ids of a credential file holding a secret (by its name, or a kubeconfig by its content)."""
    if len(data) > MAX_BYTES:
        return set()
    found = {rule for pattern, rule, holds in RULES if pattern.search(path) and holds(data)} \
        if ANY.search(path) else set()
    if not found and b"clusters:" in data and (b"client-key-data" in data or b"token:" in data) \
            and KUBE_CONTENT.search(data) and _kubeconfig(data):
        found.add("kubeconfig-secret")
    return found
