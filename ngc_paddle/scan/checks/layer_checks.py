"""Our own checks over every layer and the image config: keys, credentials, tokens, setuid, permissions.

Written here because they must see each layer separately (a key deleted in a later layer is still
in the image) and the build metadata (ENV, labels, the arguments recorded in the history), which
file scanners do not read as a whole. What counts as a key or a credential is ngc_common/secret_patterns.py,
shared with the in-image hygiene checks; what is allowed (setuid paths, key fixtures) is the policy.
"""

import stat
from dataclasses import dataclass

from ngc_common import credential_files, token_rules
from ngc_common import secret_patterns as patterns
from ngc_paddle.scan.checks import capabilities
from ngc_paddle.scan.checks.layer_facts import LayerFacts
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.policy import Policy
from ngc_paddle.scan.source.saved_image import ImageConfig, Layer, split_build_args

MD5SUMS_DIR = "/var/lib/dpkg/info/"
TITLES = {"private-key": "private key in a layer", "url-credentials": "user:password@ URL in a configuration file",
          "basic-auth": "a base64 user:password (HTTP Basic credential)"}
FILE_RULES = {rule for _pattern, rule, _holds in credential_files.RULES}


def wants_content(path: str, size: int) -> bool:
    """Every regular file is read: small ones whole, larger ones streamed in chunks (see layer_facts)."""
    return True


@dataclass
class _Allowed:
    path: str
    what: str  # setuid | setgid | capability
    md5: str
    where: str
    layer: int


def rule_severity(rule: str) -> str:
    """A token kind trivy also knows has trivy's severity (a publishable key is LOW); every other credential blocks."""
    return token_rules.SEVERITY.get(rule, "CRITICAL")


def _rule_findings(path: str, rule: str, keys: list[str], where: str, rules: Policy) -> Finding:
    if rule == "private-key":
        fixture = patterns.is_fixture(set(keys), rules.key_fixtures)
        if fixture:
            return Finding("key-fixture", "private-key-fixture", "LOW",
                           f"known test key shipped by a package: {fixture}", package=path, location=where,
                           source="layers")
        return Finding("private-key", rule, "CRITICAL", TITLES["private-key"], package=path, location=where,
                       source="layers")
    title = TITLES.get(rule) or (f"{rule}: a credential file holding a secret" if rule in FILE_RULES
                                 else f"{rule} in a layer")
    return Finding("credential", rule, rule_severity(rule), title, package=path, location=where, source="layers")


def judge(layers: list[Layer], facts: list[LayerFacts], rules: Policy) -> list[Finding]:
    """The findings of every layer's facts under the policy: keys and credentials (in archives too), setuid and
    capability files (outside the allowlist, or not the file dpkg installed), world-writable entries, archive
    bombs. A layer's own findings stand even when a later layer deletes the file: it is still in the image."""
    findings: list[Finding] = []
    md5sums: dict[int, dict[str, bytes]] = {}
    allowed: list[_Allowed] = []
    for layer, f in zip(layers, facts, strict=True):
        where = layer.where
        md5sums[layer.index] = {p: c for p in f.files if p.startswith(MD5SUMS_DIR) and p.endswith(".md5sums")
                                if (c := f.content(p)) is not None}
        findings += [_rule_findings(path, rule, keys, where, rules) for path, rule, keys in f.hits]
        for s in f.special:
            findings += _special(s, where, layer.index, rules, allowed)
        for a in f.archives:
            if a["bomb"]:
                findings.append(Finding("archive", "archive-bomb", "HIGH",
                                        f"archive past the gate's bounds: {a['bomb']}", package=a["path"],
                                        location=where, source="layers"))
            if a["unreadable"]:
                findings.append(Finding("archive-unread", "archive-unreadable", "LOW",
                                        "could not be searched: " + "; ".join(a["unreadable"][:3]),
                                        package=a["path"], location=where, source="layers"))
    return findings + _modified(allowed, md5sums)


def _special(s: dict, where: str, index: int, rules: Policy, allowed: list[_Allowed]) -> list[Finding]:
    path, mode = s["path"], s["mode"]
    if s["type"] == "dir":
        # CIS Docker/Linux benchmarks: every world-writable folder carries the sticky bit (/tmp, /workspace).
        return [Finding("world-writable", "world-writable-dir", "HIGH", "world-writable folder without the sticky bit",
                        package=path, location=where, source="layers")]
    found = []
    if mode & (stat.S_ISUID | stat.S_ISGID):
        bit = "setuid" if mode & stat.S_ISUID else "setgid"
        if path not in rules.setuid_allowed:
            found.append(Finding("setuid", f"{bit}-file", "HIGH", f"{bit} file not in the allowlist", package=path,
                                 location=where, source="layers"))
        else:
            allowed.append(_Allowed(path, bit, s["md5"], where, index))
    if s["caps"]:
        names, effective = capabilities.decode(bytes.fromhex(s["caps"]))
        shown = ",".join(names) + ("=ep" if effective else "=p")
        permitted = rules.capabilities_allowed.get(path)
        if permitted is None or not set(names) <= permitted:
            why = "not in the allowlist" if permitted is None else f"beyond the allowed {','.join(sorted(permitted))}"
            found.append(Finding("capability", "file-capability", "CRITICAL", f"file capabilities {shown} {why}",
                                 package=path, installed=shown, location=where, source="layers"))
        else:
            allowed.append(_Allowed(path, "capability", s["md5"], where, index))
    if mode & stat.S_IWOTH:
        found.append(Finding("world-writable", "world-writable-file", "HIGH", "world-writable file", package=path,
                             location=where, source="layers"))
    return found


def _modified(allowed: list[_Allowed], md5sums: dict[int, dict[str, bytes]]) -> list[Finding]:
    """An allowed setuid or capability path must hold the file its Debian package installed, unmodified (dpkg's
    md5sums): a setuid copy of /bin/bash over /usr/bin/su is not su. Each file is compared with the sums dpkg
    had recorded as of its own layer (the newest md5sums file at or below it): a package upgraded in a later
    layer records the new file's sums while the lower layer keeps the old file."""
    findings = []
    for s in allowed:
        files: dict[str, bytes] = {}
        for index in sorted(i for i in md5sums if i <= s.layer):
            files.update(md5sums[index])
        recorded: dict[str, str] = {}
        for content in files.values():
            recorded.update(patterns.parse_md5sums(content))
        expected = next((recorded[n] for n in patterns.dpkg_names(s.path) if n in recorded), None)
        if expected == s.md5:
            continue
        why = ("no Debian package installed this file (no dpkg md5sums entry)" if expected is None else
               f"differs from the file its package installed (md5 {s.md5[:12]}, dpkg recorded {expected[:12]})")
        kind, rule = ("capability", "file-capability-modified") if s.what == "capability" else \
            ("setuid", f"{s.what}-file-modified")
        findings.append(Finding(kind, rule, "CRITICAL", f"{s.what} file at an allowlisted path {why}",
                                package=s.path, location=s.where, source="layers"))
    return findings


def _secret_value(value: str) -> bool:
    return bool(value) and not patterns.SECRET_REFERENCE.match(value)


def scan_config(image: ImageConfig, layers: list[Layer]) -> list[Finding]:
    """Secrets in the image config: ENV and build arguments with a secret-like name and a value (whatever its
    length), credentials and token-shaped values in ENV, labels, build arguments and RUN lines."""
    findings = []
    for name, value in image.env.items():
        findings += _named_value("Env", name, value, f"image config: Env {name}", "CRITICAL")
    for name, value in image.labels.items():
        where = f"image config: Labels {name}"
        if patterns.LABEL_SECRET_NAME.search(name) and _secret_value(value):
            findings.append(Finding("secret", "secret-in-label", "CRITICAL", f"label {name} carries a value",
                                    package=name, location=where, source="config"))
        for rule in sorted(patterns.value_hits(value)):
            findings.append(Finding("credential", rule, rule_severity(rule), f"{rule} in label {name}", package=name,
                                    location=where, source="config"))
    for layer in layers:
        args, _command = split_build_args(layer.created_by)
        where = f"history of {layer.where}"
        for name, value in args:
            if name != "LAYER_SPEC":
                findings += _named_value("build argument", name, value, where, "HIGH")
        for rule in sorted(patterns.value_hits(layer.created_by) - {"basic-auth"}):
            findings.append(Finding("credential", rule, rule_severity(rule), f"{rule} in the image history",
                                    package=f"layer {layer.index}", location=where, source="config"))
    return findings


def _named_value(what: str, name: str, value: str, where: str, severity: str) -> list[Finding]:
    """One ENV or build argument: a secret-like name with a value blocks whatever the value; any name with a
    credential or a token-shaped value too."""
    rule_id = "secret-in-env" if what == "Env" else "secret-in-build-args"
    if patterns.SECRET_NAME.search(name) and _secret_value(value):
        return [Finding("secret", rule_id, severity, f"{'ENV' if what == 'Env' else what} {name} carries a value"
                        + (" recorded in the image history" if what != "Env" else ""),
                        package=name, location=where, source="config")]
    found = [Finding("credential", rule, rule_severity(rule), f"{rule} in {what} {name}", package=name, location=where,
                     source="config") for rule in sorted(patterns.value_hits(value))]
    if not found and patterns.looks_like_token(value):
        token_id = "token-in-env" if what == "Env" else "token-in-build-args"
        found.append(Finding("secret", token_id, "CRITICAL", f"{what} {name} holds a long random value (a token?)",
                             package=name, location=where, source="config"))
    return found
