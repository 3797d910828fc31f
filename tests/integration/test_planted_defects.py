"""Defects that once got through the scan gate, each planted in a tiny image on the small Debian base, and blocked.

One image per defect on `ngc-paddle-base:bookworm` (the debootstrapped Debian that `make image` imports;
dpkg and its md5sums included), built in seconds and scanned fast; one combined image on the release
image proves the same in the real thing. Assertions name the specific finding in scan.json; a clean
base must raise none of our own (layer, config) findings.
"""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import REPO, Built, docker, run_cli

BASE = "ngc-paddle-base:bookworm"
CA = "/etc/ssl/certs/ca-certificates.crt"
KEY = ("-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\\n"
       "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\\n-----END RSA PRIVATE KEY-----\\n")
KEY_BYTES = KEY.replace("\\n", "\n").encode()
TOKEN = "Zk8vQ2mX9pL4rT7wY1nB6cF3hJ5sD0aG8eU2iO4"  # random-looking, no known prefix
GITHUB = "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"

# defect -> (Dockerfile lines after FROM, findings (kind, id, package) that must block)
DEFECTS: dict[str, tuple[str, set[tuple[str, str, str]]]] = {
    "setuid-bash-as-su": ("RUN cp /bin/bash /usr/bin/su && chmod 4755 /usr/bin/su",
                          {("setuid", "setuid-file-modified", "/usr/bin/su")}),
    "key-under-doc": (f"RUN mkdir -p /usr/share/doc/demo && printf -- '{KEY}' > /usr/share/doc/demo/server.key",
                      {("private-key", "private-key", "/usr/share/doc/demo/server.key")}),
    "world-writable-dir": ("RUN mkdir -p /opt/shared && chmod 0777 /opt/shared",
                           {("world-writable", "world-writable-dir", "/opt/shared")}),
    "git-config-password": ("RUN mkdir -p /src/app/.git && printf '[remote \"origin\"]\\n\\turl = "
                            "https://deploy:s3cr3tPassw0rd@git.example.com/app.git\\n' > /src/app/.git/config",
                            {("credential", "url-credentials", "/src/app/.git/config")}),
    "aws-secret-upper-case": ("RUN printf 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\\n' "
                              "> /etc/app.env",
                              {("credential", "aws-secret-access-key", "/etc/app.env")}),
    "aws-example-key": ("RUN printf '[default]\\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\\n' > /root/.aws-credentials",
                        {("credential", "aws-access-key-id", "/root/.aws-credentials")}),
    "token-in-innocent-env": (f"ENV APP_CONFIG={TOKEN} RETRY_POLICY={GITHUB}",
                              {("secret", "token-in-env", "APP_CONFIG"),
                               ("credential", "github-token", "RETRY_POLICY")}),
    "large-file": ("RUN head -c 600000 /dev/zero | tr '\\0' 'x' > /var/log/big.log "
                   f"&& printf -- '\\n{KEY}' >> /var/log/big.log",
                   {("private-key", "private-key", "/var/log/big.log")}),
    "build-arg-secret": ("ARG API_TOKEN=tok-1234567890\nRUN echo building > /dev/null",
                         {("secret", "secret-in-build-args", "API_TOKEN")}),
}
# Not defects: a BuildKit secret mount named in a build argument and NAME=value text in the command.
CLEAN = ("ARG CA_SECRET_FILE=/run/secrets/ca\n"
         "RUN --mount=type=secret,id=ca,target=/run/secrets/ca test -s \"$CA_SECRET_FILE\" "
         "&& DB_PASSWORD_FILE=/etc/none SECRET_STORE=off true")


def build(tag: str, dockerfile: str) -> None:
    proc = subprocess.run(["docker", "buildx", "build", "--network", "none", "--secret", f"id=ca,src={CA}",
                           "--load", "-q", "-t", tag, "-"], input=dockerfile, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def scan(image: str, out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = run_cli("scan", image, "--output", str(out), *args)
    assert (out / "scan.json").exists(), proc.stdout[-2000:] + proc.stderr
    return proc, json.loads((out / "scan.json").read_text())


def ours(findings: list[dict]) -> set[tuple[str, str, str]]:
    """Our own findings (layers, config), less the same credential seen again in the RUN line that planted it."""
    return {(f["kind"], f["id"], f["package"]) for f in findings
            if f["source"] in ("layers", "config") and not f["package"].startswith("layer ")}


def in_history(findings: list[dict]) -> set[str]:
    return {f["id"] for f in findings if f["source"] == "config" and f["package"].startswith("layer ")}


@pytest.fixture(scope="module")
def planted() -> dict[str, str]:
    if docker("image", "inspect", BASE, check=False).returncode != 0:
        pytest.fail(f"{BASE} is missing; fix: run `make image` (it bootstraps and imports the base)")
    images = {}
    for name, (lines, _) in {**DEFECTS, "clean": (CLEAN, set())}.items():
        images[name] = f"ngc-paddle-planted-defect:{name}"
        build(images[name], f"FROM {BASE}\n{lines}\n")
    yield images
    for tag in images.values():
        docker("image", "rm", "-f", tag, check=False)


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_planted_defect_blocks(planted: dict, tmp_path: Path, defect: str) -> None:
    proc, report = scan(planted[defect], tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    expected = DEFECTS[defect][1]
    assert expected <= ours(report["blocking"]), report["blocking"]
    assert not ours(report["blocking"]) - expected, report["blocking"]  # nothing else of ours fires
    planted_by_run = {i for k, i, _ in expected if k == "credential"} if DEFECTS[defect][0].startswith("RUN") else set()
    assert in_history(report["blocking"]) == planted_by_run  # the RUN line that wrote it holds the secret too


def test_setuid_finding_names_the_layer_by_its_own_step(planted: dict, tmp_path: Path) -> None:
    _, report = scan(planted["setuid-bash-as-su"], tmp_path)
    hit = next(f for f in report["blocking"] if f["id"] == "setuid-file-modified")
    assert hit["location"] == "layer 1 (RUN cp /bin/bash /usr/bin/su && chmod 4755 /usr/bin/su)", hit
    assert "differs from the file its package installed" in hit["title"]


def test_trivy_config_secret_is_named_like_ours(planted: dict, tmp_path: Path) -> None:
    """trivy's pass over the image config reports a temp path and no layer; the gate names the ENV variable."""
    _, report = scan(planted["token-in-innocent-env"], tmp_path)
    trivy = [f for f in report["blocking"] if f["source"] == "trivy"]
    assert trivy, "expected trivy to flag the GitHub token in the image config"
    for f in trivy:
        assert "ngc-scan-" not in f["package"] and "layer ?" not in f["location"], f
    assert ("RETRY_POLICY", "image config: Env RETRY_POLICY") in {(f["package"], f["location"]) for f in trivy}


def test_known_key_fixture_is_allowed_by_content_hash(planted: dict, tmp_path: Path) -> None:
    def policy_allowing(digest: str) -> Path:
        policy = tmp_path / f"policy-{digest[:8]}.yaml"
        policy.write_text((REPO / "security" / "policy.yaml").read_text().replace(
            "key_fixtures:\n", f"key_fixtures:\n  - {{sha256: [{digest}], path: /usr/share/doc/demo/server.key, "
                                "reason: demo TLS key of the package's test suite}\n", 1))
        return policy

    digest = hashlib.sha256(KEY_BYTES.strip()).hexdigest()  # the key block: python -m ngc_paddle.scan.patterns
    _, report = scan(planted["key-under-doc"], tmp_path / "fixture", "--policy", str(policy_allowing(digest)))
    assert not ours(report["blocking"]), report["blocking"]
    fixture = [f for f in report["informational"] if f["kind"] == "key-fixture"]
    assert "/usr/share/doc/demo/server.key" in [f["package"] for f in fixture]
    assert any("demo TLS key" in f["title"] for f in fixture)
    # another key at the same path still blocks: the allowlist is by the key's content, not its path
    _, other = scan(planted["key-under-doc"], tmp_path / "other", "--policy", str(policy_allowing("a" * 64)))
    assert ("private-key", "private-key", "/usr/share/doc/demo/server.key") in ours(other["blocking"])


def test_clean_base_and_secret_mount_raise_none_of_our_findings(planted: dict, tmp_path: Path) -> None:
    for name, image in (("base", BASE), ("clean", planted["clean"])):
        _, report = scan(image, tmp_path / name)
        assert not ours(report["blocking"]), (name, report["blocking"])


def test_combined_defects_in_the_release_image(built: Built, tmp_path: Path) -> None:
    """All defects at once on the real image, scanned once: each is found, named by its own step."""
    image = "ngc-paddle-planted-defect:combined"
    lines = "\n".join(lines for lines, _ in DEFECTS.values())
    build(image, f"FROM {built.image}\nUSER root\n{lines}\nUSER 1000:1000\n")
    try:
        proc, report = scan(image, tmp_path)
    finally:
        docker("image", "rm", "-f", image, check=False)
    assert proc.returncode == 1, proc.stdout[-2000:]
    expected = set().union(*(found for _, found in DEFECTS.values()))
    assert expected <= ours(report["blocking"]), sorted(expected - ours(report["blocking"]))
    assert not ours(report["blocking"]) - expected, sorted(ours(report["blocking"]) - expected)
    for f in report["blocking"]:
        if f["source"] == "layers":
            assert "(suite)" not in f["location"] and "(unknown)" not in f["location"], f
