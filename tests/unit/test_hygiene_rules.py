"""The shared key/credential patterns, the layer checks and the history parsing, without an engine."""

import hashlib
import io
import stat
import struct

import pytest

from ngc_common import secret_patterns as patterns
from ngc_paddle.scan.checks import capabilities, layer_checks
from ngc_paddle.scan.policy import Policy, PolicyError, load
from ngc_paddle.scan.source.saved_image import Entry, Layer, layer_names, split_build_args, step_text
from ngc_paddle.scan.vulnerabilities.report_models import TrivySecret
from ngc_paddle.scan.vulnerabilities.scanners import config_place
from tests.unit.layer_tars import Member, facts

KEY = (b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
       b"-----END RSA PRIVATE KEY-----\n")
LAYER = Layer(3, "RUN demo", "RUN /bin/sh -c demo")


def entry(path: str, content: bytes, mode: int = 0o644, big: bool = False) -> Entry:
    return Entry(LAYER, path, stat.S_IFREG | mode, len(content), "file", None if big else content,
                 io.BytesIO(content) if big else None)


@pytest.mark.parametrize("text, rules", [
    (KEY, {"private-key"}),
    (b"docs: -----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----", set()),  # an armour line only
    (b"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", {"aws-secret-access-key"}),
    (b"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", {"aws-secret-access-key"}),
    (b"id AKIAIOSFODNN7EXAMPLE", {"aws-access-key-id"}),
    (b"GITLAB=glpat-abcdefghij0123456789", {"gitlab-token"}),
    (b"token: ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5", {"github-token"}),
    (b"nothing here but text", set()),
])
def test_content_rules(text: bytes, rules: set[str]) -> None:
    assert patterns.content_hits(text, "/etc/x") == rules


def test_url_credentials_only_in_configuration_and_not_placeholders() -> None:
    url = b'[remote "origin"]\n\turl = https://deploy:s3cr3t@git.example.com/app.git\n'
    assert patterns.content_hits(url, "/src/app/.git/config") == {"url-credentials"}
    assert patterns.content_hits(url, "/opt/venv/lib/python3.11/site-packages/requests/api.py") == set()
    assert patterns.content_hits(b"url = https://user:${TOKEN}@host/x", "/root/.git/config") == set()
    assert patterns.content_hits(b"url = https://user:password@host/x", "/root/.git/config") == set()
    assert patterns.value_hits("pip install --index-url https://ci:hunter2x@pypi.example/simple x") == {
        "url-credentials"}


def test_a_key_straddling_two_chunks_of_a_large_file_is_found() -> None:
    data = b"x" * (patterns.CHUNK - 30) + KEY + b"y" * patterns.CHUNK
    scan = patterns.StreamScan("/var/log/big.log")
    for i in range(0, len(data), patterns.CHUNK):
        scan.feed(data[i:i + patterns.CHUNK])
    assert scan.hits == {"private-key"} and scan.keys == {hashlib.sha256(KEY.strip()).hexdigest()}
    binary = patterns.StreamScan("/usr/lib/libx.so", ("md5",))
    binary.feed(b"\0ELF" + b"\0" * 100 + KEY)
    assert binary.binary and binary.hits == {"private-key"} and binary.digest("sha256") is None
    assert binary.digest("md5") == hashlib.md5(b"\0ELF" + b"\0" * 100 + KEY).hexdigest()


@pytest.mark.parametrize("value, token", [
    ("Zk8vQ2mX9pL4rT7wY1nB6cF3hJ5sD0aG8eU2iO4", True),
    ("/opt/ngc-paddle/bin:/opt/venv/bin:/usr/local/sbin:/usr/bin", False),
    ("C.UTF-8", False),
    ("cuda>=12.6 brand=tesla,driver>=470,driver<471", False),
    ("0123456789abcdef0123456789abcdef01234567", False),  # a commit id: hex, one case
    ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaA1", False),  # long but not random
])
def test_token_shape(value: str, token: bool) -> None:
    assert patterns.looks_like_token(value) is token


def test_build_args_are_only_the_recorded_ones() -> None:
    args, command = split_build_args("RUN |2 CA_SECRET_FILE=/run/secrets/ca MODE=a b /bin/sh -c "
                                     "DB_PASSWORD=x API_TOKEN=y true")
    assert args == [("CA_SECRET_FILE", "/run/secrets/ca"), ("MODE", "a b")]
    assert command == "/bin/sh -c DB_PASSWORD=x API_TOKEN=y true"
    assert split_build_args("RUN /bin/sh -c TOKEN=x true") == ([], "RUN /bin/sh -c TOKEN=x true")


def test_layer_names_follow_the_image_history() -> None:
    history = ["Imported from -", 'RUN |1 LAYER_SPEC={"layer": "os"} /bin/bash -c install',
               "COPY image/ /opt/ngc-paddle/ # buildkit", "RUN /bin/bash -o pipefail -c rm -rf /tmp/ngc /wheelhouse",
               "RUN |1 API_TOKEN=s3cr3t /bin/sh -c cp /bin/bash /usr/bin/su # buildkit",
               "COPY key.pem /usr/share/doc/x/ # buildkit"]
    names = layer_names(history)
    assert names[:4] == ["base", "os", "suite", "suite"]
    assert names[4] == "RUN cp /bin/bash /usr/bin/su"  # the build argument (a secret) is not repeated
    assert names[5] == "COPY key.pem /usr/share/doc/x/"
    assert layer_names(["Imported from -", "RUN /bin/sh -c true # buildkit"]) == ["base", "RUN true"]
    copied = ["Imported from -", "COPY layers/os/etc/hosts layers/os/etc/resolv.conf /etc/ # buildkit",
              "ADD layers/os/etc.tar / # buildkit",
              "RUN |1 APT_PACKAGES=python3 /bin/bash -o pipefail -c bash /tmp/ngc/layer/install.sh # buildkit"]
    assert layer_names(copied) == ["base", "os", "os", "os"]
    assert len(step_text("RUN /bin/sh -c " + "x" * 200)) == 60
    # Our mmdebstrap base (layers/os/base.Dockerfile) and a Docker official image start with their rootfs; an image
    # FROM scratch that adds anything else does not have a "base" layer.
    assert layer_names(["ADD rootfs.tar / # buildkit", copied[2]])[0] == "base"
    assert layer_names(["ADD file:8b1e79f91081eb527b455431af2f8a4d9f7a5fd0f4a8a6a5b3 in / "])[0] == "base"
    assert layer_names(["ADD evil.tar / # buildkit"])[0] == "ADD evil.tar /"


def _judge(*layers: tuple[int, list[Member]], setuid: set[str] = frozenset(), fixtures: dict | None = None,
           caps: dict | None = None) -> list:
    pairs = [facts(index, members) for index, members in layers]
    rules = Policy(setuid_allowed=set(setuid), key_fixtures=fixtures or {}, capabilities_allowed=caps or {})
    return layer_checks.judge([p[0] for p in pairs], [p[1] for p in pairs], rules)


def test_setuid_at_an_allowed_path_must_be_the_packaged_file() -> None:
    su = b"\x7fELF the real su"
    sums = Member("/var/lib/dpkg/info/util-linux.md5sums", f"{hashlib.md5(su).hexdigest()}  bin/su\n".encode())
    allowed = {"/usr/bin/su", "/usr/bin/passwd"}
    assert _judge((0, [sums, Member("/usr/bin/su", su, 0o4755)]), setuid=allowed) == []
    bash = Member("/usr/bin/su", b"\x7fELF bash" * 50_000, 0o4755)  # a copy of bash, large: streamed
    found = _judge((0, [sums, bash, Member("/usr/bin/passwd", b"\x7fELF unknown", 0o4755)]), setuid=allowed)
    assert {(f.id, f.package, "differs" in f.title) for f in found} == {
        ("setuid-file-modified", "/usr/bin/su", True), ("setuid-file-modified", "/usr/bin/passwd", False)}
    outside = _judge((0, [Member("/usr/local/bin/helper", b"x", 0o4755)]), setuid={"/usr/bin/su"})
    assert [(f.kind, f.package) for f in outside] == [("setuid", "/usr/local/bin/helper")]


def test_setuid_file_is_judged_by_the_sums_of_its_own_layer() -> None:
    """A package upgraded in a later layer (the os layer applies -security over the base) records new sums; the
    base layer's older copy is still the file dpkg installed there, while a later copy that no sums match is not."""
    old, new = b"\x7fELF unix_chkpwd 1", b"\x7fELF unix_chkpwd 2"
    sums = "/var/lib/dpkg/info/libpam-modules-bin.md5sums"
    layers = [(0, [Member("/usr/sbin/unix_chkpwd", old, 0o2755),
                   Member(sums, f"{hashlib.md5(old).hexdigest()}  usr/sbin/unix_chkpwd\n".encode())]),
              (1, [Member(sums, f"{hashlib.md5(new).hexdigest()}  usr/sbin/unix_chkpwd\n".encode()),
                   Member("/usr/sbin/unix_chkpwd", new, 0o2755)])]
    assert _judge(*layers, setuid={"/usr/sbin/unix_chkpwd"}) == []
    later = (2, [Member("/usr/sbin/unix_chkpwd", old, 0o2755)])  # the old file put back: not what dpkg has now
    assert [(f.id, f.location) for f in _judge(*layers, later, setuid={"/usr/sbin/unix_chkpwd"})] == [
        ("setgid-file-modified", "layer 2 (x)")]


def test_keys_block_anywhere_unless_a_known_fixture() -> None:
    digest = hashlib.sha256(KEY.strip()).hexdigest()  # the key block, "-----BEGIN" to the END line's "-----"
    assert patterns.key_digests(b"junk\0" + KEY + b"\0more") == {digest}
    key = Member("/usr/share/doc/demo/server.key", KEY)
    blocked = _judge((3, [key]))
    assert [(f.kind, f.id, f.location) for f in blocked] == [("private-key", "private-key", "layer 3 (x)")]
    fixture = _judge((3, [key]), fixtures={digest: "demo key"})
    assert [(f.kind, f.title) for f in fixture] == [("key-fixture", "known test key shipped by a package: demo key")]
    large = _judge((3, [Member("/var/log/big.log", b"x" * 400_000 + KEY)]))
    assert [f.kind for f in large] == ["private-key"]


def test_world_writable_folder_without_sticky_bit_and_world_writable_file() -> None:
    found = _judge((0, [Member("/opt/shared", None, 0o777), Member("/tmp", None, 0o1777),
                        Member("/etc/app.conf", b"a=1", 0o666)]))
    assert sorted((f.id, f.package) for f in found) == [("world-writable-dir", "/opt/shared"),
                                                       ("world-writable-file", "/etc/app.conf")]


def test_file_capabilities_outside_the_allowlist_or_not_the_packaged_file_block() -> None:
    ping = b"\x7fELF ping"
    sums = Member("/var/lib/dpkg/info/iputils-ping.md5sums", f"{hashlib.md5(ping).hexdigest()}  bin/ping\n".encode())
    allowed = {"/usr/bin/ping": {"cap_net_raw"}}
    raw = capabilities.encode(["cap_net_raw"])
    assert _judge((0, [sums, Member("/usr/bin/ping", ping, 0o755, raw)]), caps=allowed) == []
    python = _judge((0, [Member("/opt/venv/bin/python3.11", b"\x7fELF py", 0o755,
                                capabilities.encode(["cap_setuid"]))]), caps=allowed)
    assert [(f.kind, f.id, f.installed) for f in python] == [("capability", "file-capability", "cap_setuid=ep")]
    more = _judge((0, [sums, Member("/usr/bin/ping", ping, 0o755, capabilities.encode(["cap_net_raw",
                                                                                        "cap_sys_admin"]))]),
                  caps=allowed)
    assert [f.id for f in more] == ["file-capability"] and "beyond the allowed cap_net_raw" in more[0].title
    swapped = _judge((0, [sums, Member("/usr/bin/ping", b"\x7fELF bash", 0o755, raw)]), caps=allowed)
    assert [(f.kind, f.id) for f in swapped] == [("capability", "file-capability-modified")]


def test_capability_values_decode_as_getcap_shows_them() -> None:
    assert capabilities.shown(capabilities.encode(["cap_setuid"])) == "cap_setuid=ep"
    assert capabilities.shown(capabilities.encode(["cap_net_raw", "cap_bpf"], effective=False)) == \
        "cap_net_raw,cap_bpf=p"
    assert capabilities.decode(b"\x00\x00\x00\x09junk") == (["unreadable"], False)


def test_capability_values_cut_short_or_naming_high_bits_are_reported_as_they_are() -> None:
    """Less than the magic word, or a revision-2 value cut before its second set, is unreadable (the effective flag
    read where the magic word has it); bit 31 (setfcap) and a bit newer than the names list keep their meaning."""
    assert capabilities.decode(b"\x02") == (["unreadable"], False)
    whole = capabilities.encode(["cap_setuid"])
    assert capabilities.decode(whole[:4]) == (["unreadable"], True)
    assert capabilities.decode(whole[:12]) == (["unreadable"], True)
    assert capabilities.decode(capabilities.encode(["cap_setfcap", "cap_bpf"])) == (["cap_setfcap", "cap_bpf"], True)
    newer = struct.pack("<IIIII", 0x02000000, 0, 0, 1 << (45 - 32), 0)
    assert capabilities.decode(newer) == (["cap_45"], False)


class _Image:
    def __init__(self, env: dict, layers: list[Layer], user: str = "1000:1000") -> None:
        self.env, self.labels, self.layers, self.user = env, {}, layers, user


def test_config_secrets_by_name_by_shape_and_not_secret_references() -> None:
    image = _Image({"APP_CONFIG": "Zk8vQ2mX9pL4rT7wY1nB6cF3hJ5sD0aG8eU2iO4", "PIP_CERT_SECRET": "/run/secrets/ca",
                    "RETRY": "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5", "PATH": "/usr/bin:/bin"},
                   [Layer(1, "x", "RUN |1 CA_SECRET_FILE=/run/secrets/ca /bin/sh -c DB_PASSWORD_FILE=/x true"),
                    Layer(2, "y", "RUN |1 API_TOKEN=abc123 /bin/sh -c true")])
    found = {(f.id, f.package, f.location) for f in layer_checks.scan_config(image, image.layers)}
    assert found == {("token-in-env", "APP_CONFIG", "image config: Env APP_CONFIG"),
                     ("github-token", "RETRY", "image config: Env RETRY"),
                     ("secret-in-build-args", "API_TOKEN", "history of layer 2 (y)")}


def test_a_label_with_a_secret_name_or_a_credential_value_is_a_finding_in_the_config() -> None:
    """Labels travel with every pull and show in `docker inspect`: a secret-like name with a value blocks, a
    credential-shaped value is a finding of its rule; an empty value under a secret-like name is none."""
    image = _Image({}, [])
    image.labels = {"deploy.password": "hunter2", "build.note": "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5",
                    "vault.token": "", "org.opencontainers.image.title": "ngc-paddle"}
    found = [(f.kind, f.id, f.severity, f.title, f.package, f.location, f.source)
             for f in layer_checks.scan_config(image, image.layers)]
    assert found == [
        ("secret", "secret-in-label", "CRITICAL", "label deploy.password carries a value", "deploy.password",
         "image config: Labels deploy.password", "config"),
        ("credential", "github-token", "CRITICAL", "github-token in label build.note", "build.note",
         "image config: Labels build.note", "config"),
    ]


def test_a_credential_in_the_image_history_is_a_finding_of_its_layer_and_the_layer_spec_is_ours() -> None:
    """A RUN line keeps what it was given in the history: a token or a user:password URL there is a finding of that
    layer. A history entry that merely reads as base64 is not taken for an HTTP Basic credential (that rule needs a
    variable's whole value); LAYER_SPEC (the layer's locked spec: hashes, no secret) is not judged as an argument."""
    token = "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
    image = _Image({}, [Layer(2, "y", f"RUN /bin/sh -c curl -H 'Authorization: token {token}' https://x"),
                        Layer(3, "z", "RUN /bin/sh -c pip install --index-url https://ci:hunter2@m.example/simple x"),
                        Layer(4, "w", "RUN |1 LAYER_SPEC=Zk8vQ2mX9pL4rT7wY1nB6cF3hJ5sD0aG8eU2iO4 /bin/sh -c true"),
                        Layer(5, "v", "dXNlcjpwYXNzd29yZA==")])
    found = [(f.kind, f.id, f.severity, f.title, f.package, f.location, f.source)
             for f in layer_checks.scan_config(image, image.layers)]
    assert found == [("credential", "github-token", "CRITICAL", "github-token in the image history", "layer 2",
                      "history of layer 2 (y)", "config"),
                     ("credential", "url-credentials", "CRITICAL", "url-credentials in the image history", "layer 3",
                      "history of layer 3 (z)", "config")]


def test_trivy_config_secret_is_located_in_the_config() -> None:
    def secret(line: str) -> TrivySecret:
        return TrivySecret.model_validate({"RuleID": "github-pat", "Code": {"Lines": [
            {"Content": "  \"Env\": [", "IsCause": False}, {"Content": line, "IsCause": True}]}})
    assert config_place(secret('  "APP_CONFIG=****",')) == ("APP_CONFIG", "image config: Env APP_CONFIG")
    assert config_place(secret('  "created_by": "ENV APP_CONFIG=****",')) == (
        "history", "image config: history: ENV APP_CONFIG=****")


def test_policy_key_fixtures(tmp_path) -> None:
    good = tmp_path / "p.yaml"
    good.write_text(f"key_fixtures:\n  - {{sha256: [{'a' * 64}, {'b' * 64}], path: /usr/share/x.key, reason: t}}\n")
    assert load(good).key_fixtures == {"a" * 64: "t (/usr/share/x.key)", "b" * 64: "t (/usr/share/x.key)"}
    assert "world-writable" in load(good).block_on
    bad = tmp_path / "b.yaml"
    bad.write_text("key_fixtures:\n  - {sha256: [nothex], path: /x, reason: r}\n")
    with pytest.raises(PolicyError, match=r"key_fixtures\.0\.sha256\.0"):
        load(bad)


def test_in_image_probe_uses_the_gates_policy_and_patterns() -> None:
    """One list, two checkers: the probe shipped in the image reads the same setuid list and key fixtures as the
    gate and uses its patterns module, and the Dockerfile installs that module (ngc_common) and ships the policy."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("fs_scan", root / "validation" / "probes" / "fs_scan.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    assert Path(probe.patterns.__file__).resolve() == Path(patterns.__file__).resolve()
    in_image = probe.load_policy(str(root / "security" / "policy.yaml"))
    gate = load(root / "security" / "policy.yaml")
    assert set(in_image["setuid_allowed"]) == gate.setuid_allowed and "/usr/bin/su" in gate.setuid_allowed
    assert set(in_image["key_fixtures"]) == set(gate.key_fixtures) and gate.key_fixtures
    dockerfile = (root / "Dockerfile").read_text()
    assert 'cp -R "$c/ngc_common" "$site/ngc_common"' in dockerfile
    assert 'cp "$c/security/policy.yaml" /opt/ngc-paddle/security/policy.yaml' in dockerfile
    ignore = (root / ".dockerignore").read_text().splitlines()
    assert "!ngc_common/" in ignore and "!security/policy.yaml" in ignore


def test_config_and_folder_findings_carry_kind_severity_title_place_and_source() -> None:
    """What the report and the gate read of each finding: an ENV secret blocks (CRITICAL), a build argument's is
    HIGH and says it stays in the history, a token-shaped value is CRITICAL; a world-writable folder is HIGH. The
    config's findings come from `config`, the layers' from `layers`."""
    image = _Image({"DB_PASSWORD": "hunter2", "APP_CONFIG": "Zk8vQ2mX9pL4rT7wY1nB6cF3hJ5sD0aG8eU2iO4",
                    "RETRY": "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5", "SHOP": "shpat_" + "a1" * 16},
                   [Layer(2, "y", "RUN |1 API_TOKEN=abc123 /bin/sh -c true"),
                    Layer(3, "z", "RUN |1 BUILD_REF=Zk8vQ2mX9pL4rT7wY1nB6cF3hJ5sD0aG8eU2iO4 /bin/sh -c true")])
    found = {(f.kind, f.id, f.severity, f.title, f.package, f.location, f.source)
             for f in layer_checks.scan_config(image, image.layers)}
    assert found == {
        ("secret", "secret-in-env", "CRITICAL", "ENV DB_PASSWORD carries a value", "DB_PASSWORD",
         "image config: Env DB_PASSWORD", "config"),
        ("secret", "token-in-env", "CRITICAL", "Env APP_CONFIG holds a long random value (a token?)", "APP_CONFIG",
         "image config: Env APP_CONFIG", "config"),
        ("secret", "secret-in-build-args", "HIGH", "build argument API_TOKEN carries a value recorded in the image "
         "history", "API_TOKEN", "history of layer 2 (y)", "config"),
        ("credential", "github-token", "CRITICAL", "github-token in Env RETRY", "RETRY",
         "image config: Env RETRY", "config"),
        ("credential", "shopify-token", "HIGH", "shopify-token in Env SHOP", "SHOP",  # trivy's grade of the kind
         "image config: Env SHOP", "config"),
        ("secret", "token-in-build-args", "CRITICAL", "build argument BUILD_REF holds a long random value (a token?)",
         "BUILD_REF", "history of layer 3 (z)", "config")}
    folder = _judge((0, [Member("/opt/shared", None, 0o777)]))
    assert [(f.kind, f.id, f.severity, f.title, f.package, f.location, f.source) for f in folder] == [
        ("world-writable", "world-writable-dir", "HIGH", "world-writable folder without the sticky bit", "/opt/shared",
         "layer 0 (x)", "layers")]


@pytest.mark.parametrize(("user", "expected"), [
    ("", (0, None, "root (no USER)")),  # no USER: root, looked up like any name
    ("root", (0, None, "root")),
    ("app", (1000, None, "app")),
    ("app:staff", (1000, 50, "app:staff")),  # a group by name, from /etc/group's third field
    ("1000:1000", (1000, 1000, "1000:1000")),
    ("ghost", (None, None, "ghost")),  # a name the image does not have
    ("app:nogroup", (1000, None, "app:nogroup")),
    ("short", (None, None, "short")),  # a passwd line cut before its uid
    (":staff", (0, 50, ":staff")),  # a group alone: the user is root
])
def test_the_images_user_is_read_as_the_runtime_reads_it(user: str, expected: tuple) -> None:
    from ngc_paddle.scan.checks import accounts

    files = {"/etc/passwd": accounts.File("/etc/passwd", 0o644, b"root:x:0:0:root:/root:/bin/bash\n"
                                          b"app:x:1000:1000::/home/app:/bin/bash\nshort:x\n", "layer 0 (base)"),
             "/etc/group": accounts.File("/etc/group", 0o644, b"root:x:0:\nstaff:x:50:app\n", "layer 0 (base)")}
    assert accounts.runtime_user(user, files) == expected
    assert accounts.runtime_user(user, {})[2] == expected[2]  # no /etc/passwd: shown as given
