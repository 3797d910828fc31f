"""Issue 30 on real images: one planted image FROM the built cpu image, each change in a layer of its own.

Integrity: fifteen changes under the paths that decide trust (most named nowhere in the gate's rules; two in
steps whose text once named them `suite` and `os`), each blocked as `integrity` naming the file; a package's
file and a pip module swapped for symlinks, a path appended to a package's file list, a compiled module that
Python would run instead of its source, and a home's pip.conf, each blocked with what changed; one change
elsewhere only listed; the clean release images (cpu, gpu-cu118) have no integrity finding at all. Our own files
and the config against our build's record: gates.yaml, a validation check and ngc_common in the venv changed, a
benchmark file removed, and an Entrypoint to an added script, OnBuild, PIP_INDEX_URL and LD_PRELOAD set, each
blocked naming the file or field; the planted image's validate and bench-rn50 refuse a verdict (exit 3). Secrets
without trivy: tokens of kinds only trivy used to find (a Hugging Face token, each GitHub prefix, vendor tokens,
a GitHub token in compiled bytecode, private keys in lower case and escaped in JSON) give the same blocking
findings with trivy removed as with it. One image, two scans of it plus one of each release image (the cpu
one's layers cached): about one cold scan of a small layer stack, and a cold scan of gpu-cu118.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ngc_common.token_rules import TRIVY_IDS
from tests.integration.conftest import REPO, Built, docker, run_cli

SITE = "/opt/venv/lib/python3.11/site-packages"
# (Dockerfile step, the file it changes): every one must block as integrity, naming the file.
TRUST_CHANGES = [
    ("RUN echo /opt/hook/lib > /etc/ld.so.conf.d/zz-hook.conf", "/etc/ld.so.conf.d/zz-hook.conf"),
    ("RUN echo /opt/hook/libhook.so > /etc/ld.so.preload", "/etc/ld.so.preload"),
    ("RUN sed -i '1i auth sufficient pam_permit.so' /etc/pam.d/su", "/etc/pam.d/su"),
    ("RUN mkdir -p /etc/sudoers.d && echo 'nobody ALL=(ALL) ALL' > /etc/sudoers.d/ops && chmod 440 /etc/sudoers.d/ops",
     "/etc/sudoers.d/ops"),
    # mentions /opt/ngc-paddle, which once named the step `suite`, whose declarations cover /etc/passwd
    ("RUN test -d /opt/ngc-paddle && sed -i "
     "'s#^daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin#daemon:x:1:1:daemon:/usr/sbin:/bin/bash#' "
     "/etc/passwd && grep -q '^daemon:.*/bin/bash$' /etc/passwd", "/etc/passwd"),
    # copies from layers/os/, which once named the step `os`, whose declarations cover the apt sources
    ("COPY layers/os/sources.list /etc/apt/sources.list", "/etc/apt/sources.list"),
    ("RUN echo 'deb [trusted=yes] http://apt.example.invalid/ stable main' > /etc/apt/sources.list.d/extra.list",
     "/etc/apt/sources.list.d/extra.list"),
    ("RUN printf -- '-----BEGIN PGP PUBLIC KEY BLOCK-----\\nmQINBF\\n-----END PGP PUBLIC KEY BLOCK-----\\n' "
     "> /etc/apt/trusted.gpg.d/extra.asc", "/etc/apt/trusted.gpg.d/extra.asc"),
    ("RUN printf -- '-----BEGIN CERTIFICATE-----\\nMIIBszCCAVmgAwIBAgIU\\n-----END CERTIFICATE-----\\n' "
     ">> /etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/ca-certificates.crt"),
    ("RUN echo 'export PYTHONPATH=/tmp/hook' > /etc/profile.d/zz-hook.sh", "/etc/profile.d/zz-hook.sh"),
    ("RUN echo '*/5 * * * * root /tmp/cleanup.sh' > /etc/cron.d/cleanup", "/etc/cron.d/cleanup"),
    ("RUN printf '[Service]\\nExecStart=/tmp/agent\\n' > /etc/systemd/system/agent.service",
     "/etc/systemd/system/agent.service"),
    ("RUN printf '[global]\\nextra-index-url = http://pypi.example.invalid/simple\\n"
     "trusted-host = pypi.example.invalid\\n' > /etc/pip.conf", "/etc/pip.conf"),
    ("RUN cp /usr/bin/true /usr/bin/false", "/usr/bin/false"),
    (f"RUN echo '# changed' >> {SITE}/yaml/__init__.py", f"{SITE}/yaml/__init__.py"),
]
# (Dockerfile step, the file, the finding's id, what its title says): links, records, compiled code, a home's config.
SWAPS = [
    ("RUN ln -sf /tmp/evil /usr/bin/su", "/usr/bin/su", "package-file-changed", "a symlink to /tmp/evil"),
    ("RUN ln -sf /tmp/pam-other /etc/pam.d/other", "/etc/pam.d/other", "package-file-changed", "a symlink to"),
    (f"RUN ln -sf /tmp/evil.py {SITE}/yaml/composer.py", f"{SITE}/yaml/composer.py", "package-file-changed",
     "where its RECORD lists a regular file"),
    ("RUN echo /etc/ld.so.preload >> /var/lib/dpkg/info/login.list", "/var/lib/dpkg/info/login.list",
     "package-record-changed", "gained 1 path(s) without a reinstall: /etc/ld.so.preload"),
    # a compiled module whose header carries its source's mtime and size: Python runs it instead of nodes.py
    ("RUN python3 -c \"import importlib.util as u, marshal, os, struct; s = '" + SITE + "/yaml/nodes.py'; "
     "st = os.stat(s); open('" + SITE + "/yaml/__pycache__/nodes.cpython-311.pyc', 'wb').write(u.MAGIC_NUMBER + "
     "struct.pack('<III', 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF) + "
     "marshal.dumps(compile('import os', s, 'exec')))\"",
     f"{SITE}/yaml/__pycache__/nodes.cpython-311.pyc", "bytecode-unaccounted", "instead of"),
    ("RUN mkdir -p /root/.config/pip && printf '[global]\\nindex-url = http://pypi.example.invalid/simple\\n' "
     "> /root/.config/pip/pip.conf", "/root/.config/pip/pip.conf", "unowned-file", "package sources and keys"),
]
# Our own files (own_files.py: against the suite layer's record) and the config (config_record.py: against the one
# our build recorded): (Dockerfile step, the file or field named, the finding's id).
OWN_FILE_CHANGES = [
    ("RUN echo 'rn50: {}' >> /opt/ngc-paddle/benchmarks/gates.yaml", "/opt/ngc-paddle/benchmarks/gates.yaml",
     "own-file-changed"),
    ("RUN echo '# changed' >> /opt/ngc-paddle/validation/checks/test_contract.py",
     "/opt/ngc-paddle/validation/checks/test_contract.py", "own-file-changed"),
    (f"RUN echo '# changed' >> {SITE}/ngc_common/exit_codes.py", f"{SITE}/ngc_common/exit_codes.py",
     "own-file-changed"),
    ("RUN rm /opt/ngc-paddle/benchmarks/harness/roofline.py", "/opt/ngc-paddle/benchmarks/harness/roofline.py",
     "own-file-removed"),
]
CONFIG_CHANGES = [  # last: ENV LD_PRELOAD would reach every later step
    ("RUN printf '#!/bin/sh\\nexec \"$@\"\\n' > /srv/start.sh && chmod 755 /srv/start.sh", None),
    ('ENTRYPOINT ["/srv/start.sh"]', "Entrypoint"),
    ("ONBUILD RUN echo planted", "OnBuild"),
    ("ENV PIP_INDEX_URL=http://pypi.example.invalid/simple PYTHONPATH=/srv/hook", "Env PIP_INDEX_URL"),
    ("ENV LD_PRELOAD=/opt/hook/libhook.so", "Env LD_PRELOAD"),
]
LISTED_CHANGE = ("RUN echo notes > /usr/share/doc/planted-notes.txt", "/usr/share/doc/planted-notes.txt")
# Token files, copied from the build context (no token in a RUN line), and one compiled in the image.
GH = "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5"
KEY_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
TOKENS = {
    "srv/app/settings.py": (f"HF_HOME_TOKEN = 'hf_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM'\n"
                            f"GITHUB = 'gho_{'Zx9' * 12}'\n"
                            "SHOPIFY = 'shpat_0123456789abcdef0123456789abcdef'\n"
                            "HOOK = 'https://hooks.slack.com/services/T00000000/B00000000/" + "X" * 24 + "'\n"),
    "srv/app/deploy.env": "SENDGRID=SG." + "a1B2c3D4e5" * 6 + "x_y-z.\nPULUMI=pul-" + "0123456789" * 4 + "\n",
    "srv/app/compiled_src.py": f"TOKEN = '{GH}'\n",
    # private keys as trivy's rule finds them beyond openssl's PEM: lower case, and escaped in a JSON value
    "srv/app/lower.pem": f"-----begin rsa private key-----\n{KEY_BODY}\n-----end rsa private key-----\n",
    "srv/app/service.json": ('{"private_key": "-----BEGIN PRIVATE KEY-----\\n' + KEY_BODY
                             + '\\n-----END PRIVATE KEY-----"}\n'),
}
OURS = ("layers", "config")
CONTEXT_FILES = {"layers/os/sources.list": "deb [trusted=yes] http://apt.example.invalid/ stable main\n"}


def dockerfile(base: str) -> str:
    steps = [step for step, _ in TRUST_CHANGES] + [step for step, *_ in SWAPS] + [LISTED_CHANGE[0]]
    steps += ["COPY srv /srv",
              "RUN python3 -m py_compile /srv/app/compiled_src.py && rm /srv/app/compiled_src.py"]
    steps += [step for step, *_ in OWN_FILE_CHANGES] + [step for step, _ in CONFIG_CHANGES] + ["USER 1000:1000"]
    return f"FROM {base}\nUSER root\n" + "\n".join(steps) + "\n"


@pytest.fixture(scope="module")
def planted(built: Built, tmp_path_factory: pytest.TempPathFactory) -> str:
    context = tmp_path_factory.mktemp("planted")
    for name, text in {**TOKENS, **CONTEXT_FILES}.items():
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        (context / name).write_text(text)
    (context / "Dockerfile").write_text(dockerfile(built.image))
    tag = "ngc-paddle-planted-integrity:test"
    proc = subprocess.run(["docker", "buildx", "build", "--network", "none", "--load", "-q", "-t", tag,
                           str(context)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    yield tag
    docker("image", "rm", "-f", tag, check=False)


def scan(image: str, out: Path, without_trivy: bool = False) -> tuple[subprocess.CompletedProcess, dict]:
    if without_trivy:  # trivy removed: the gate finds no trivy binary (as on a host without it)
        code = ("import sys; from ngc_paddle.scan.vulnerabilities import scanners; found = scanners.tool_binary; "
                "scanners.tool_binary = lambda name: None if name == 'trivy' else found(name); "
                "from ngc_paddle import cli; sys.exit(cli.main(sys.argv[1:]))")
        proc = subprocess.run([sys.executable, "-c", code, "--root", str(REPO), "scan", image, "--output", str(out)],
                              capture_output=True, text=True, timeout=1800, cwd=REPO)
    else:
        proc = run_cli("scan", image, "--output", str(out))
    assert (out / "scan.json").exists(), proc.stdout[-2000:] + proc.stderr
    return proc, json.loads((out / "scan.json").read_text())


@pytest.fixture(scope="module")
def with_trivy(planted: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict]:
    return scan(planted, tmp_path_factory.mktemp("with-trivy"))


def integrity_findings(report: dict) -> list[dict]:
    return [f for f in report["blocking"] + report["informational"] if f["kind"].startswith("integrity")]


def test_the_clean_release_image_has_no_integrity_finding(built: Built, tmp_path: Path) -> None:
    _proc, report = scan(built.image, tmp_path)
    own = report["own_layers"]
    assert own["ours"] == own["layers"] and not own["missing"], own  # every layer by the build's diff ids
    assert integrity_findings(report) == []
    assert_as_our_build_made_it(report)


def assert_as_our_build_made_it(report: dict) -> None:
    """Our own files checked against the suite layer's record and the config compared with the build's: no finding."""
    assert report["own_files"]["status"] == "checked" and report["config_record"]["status"] == "compared", report
    assert [f for f in report["blocking"] + report["informational"] if f["kind"].startswith("config")] == []


def test_the_clean_gpu_cu118_image_has_no_integrity_finding(built_cu118: str, tmp_path: Path) -> None:
    """The GPU flavor built from PyPI alone: its CUDA, DALI and TensorRT layers' files are their wheels' and
    packages' own or declared (layers/declared-files.yaml). Read through docker save, so that its 8 GB stay
    out of the local registry the gate pushes to by default."""
    proc = subprocess.run([sys.executable, "-m", "ngc_paddle.cli", "--root", str(REPO), "scan", built_cu118,
                           "--output", str(tmp_path)], capture_output=True, text=True, timeout=1800, cwd=REPO,
                          env={**os.environ, "NGC_PADDLE_SCAN_REGISTRY": "save"})
    assert (tmp_path / "scan.json").exists(), proc.stdout[-2000:] + proc.stderr
    report = json.loads((tmp_path / "scan.json").read_text())
    own = report["own_layers"]
    assert own["ours"] == own["layers"] and not own["missing"], own
    assert integrity_findings(report) == []
    assert_as_our_build_made_it(report)


def test_each_trust_change_blocks_naming_the_file(with_trivy) -> None:
    proc, report = with_trivy
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    blocked = {f["package"]: f for f in report["blocking"] if f["kind"] == "integrity"}
    missing = [path for _step, path in TRUST_CHANGES if path not in blocked]
    assert not missing, (missing, sorted(blocked))
    for step, path in TRUST_CHANGES:
        f = blocked[path]
        assert f["location"].startswith("layer ") and step[:30] in f["location"], f  # the layer that made it
        assert f["installed"] and ("differs from" in f["title"] or "no package installed" in f["title"]), f
    changed = blocked["/usr/bin/false"]
    assert changed["installed"] == "coreutils" and "dpkg recorded" in changed["title"], changed
    assert blocked["/etc/ld.so.preload"]["installed"] == "no package"
    assert "pyyaml" in blocked[f"{SITE}/yaml/__init__.py"]["installed"].lower()
    for step, path, rule, what in SWAPS:
        found = [f for f in report["blocking"] if f["package"] == path and f["id"] == rule]
        assert found and found[0]["kind"] == "integrity" and what in found[0]["title"], (path, found)
        assert step[:30] in found[0]["location"], found[0]
    listed = [f for f in report["informational"] if f["package"] == LISTED_CHANGE[1]]
    assert [f["kind"] for f in listed] == ["integrity-other"], listed  # outside the trust paths: listed only


def test_each_change_to_our_files_or_a_trust_deciding_config_field_blocks_naming_it(with_trivy) -> None:
    _proc, report = with_trivy
    assert report["own_files"]["status"] == "checked" and report["config_record"]["status"] == "compared", report
    for step, path, rule in OWN_FILE_CHANGES:
        found = [f for f in report["blocking"] if f["package"] == path and f["id"] == rule]
        assert found and found[0]["kind"] == "integrity" and step[:30] in found[0]["location"], (path, found)
    config = {f["package"]: f for f in report["blocking"] if f["kind"] == "config"}
    for _step, field in CONFIG_CHANGES:
        assert field is None or field in config, (field, sorted(config))
    assert config["Entrypoint"]["installed"] == '["/srv/start.sh"]' and "tini" in config["Entrypoint"]["title"]
    assert "Env PYTHONPATH" in config and "User" not in config  # USER set back to ours: no change


def test_the_planted_images_suite_and_benchmark_refuse_a_verdict_naming_the_changed_file(planted: str) -> None:
    for command in ("validate", "bench-rn50"):
        proc = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint",
                               f"/opt/ngc-paddle/bin/{command}", planted, "--smoke"], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 3, (command, proc.stdout[-1000:], proc.stderr[-1000:])
        assert "NOT PROVEN: /opt/ngc-paddle/benchmarks/gates.yaml: changed" in proc.stderr, proc.stderr[-1000:]


def test_planted_tokens_give_the_same_blocking_findings_without_trivy(with_trivy, planted: str,
                                                                      tmp_path: Path) -> None:
    _proc, report = with_trivy
    assert report["secret_scan"]["status"] == "scanned", report["secret_scan"]
    by_trivy = {(TRIVY_IDS.get(f["id"], f["id"]), "/" + f["package"].lstrip("/")) for f in report["blocking"]
                if f["source"] == "trivy" and f["kind"] == "secret"}
    ours_with = {(f["kind"], f["id"], f["package"]) for f in report["blocking"] if f["source"] in OURS}
    pyc = next(p for _r, p in by_trivy if p.endswith(".pyc"))
    assert {("hugging-face-access-token", "/srv/app/settings.py"), ("github-token", pyc),
            ("private-key", "/srv/app/lower.pem"), ("private-key", "/srv/app/service.json")} <= by_trivy, by_trivy
    proc, alone = scan(planted, tmp_path, without_trivy=True)
    assert alone["secret_scan"]["status"] == "NOT RUN" and proc.returncode == 1
    assert not [f for f in alone["blocking"] if f["source"] == "trivy"]
    ours_alone = {(f["kind"], f["id"], f["package"]) for f in alone["blocking"] if f["source"] in OURS}
    assert ours_alone == ours_with  # our own rules do not depend on trivy
    missed = by_trivy - {(i, p) for _k, i, p in ours_alone}
    assert not missed, (missed, sorted(ours_alone))
