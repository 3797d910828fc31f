"""The freshness check on real images: the release image has no pending Debian update; an older one blocks."""

import json
import subprocess
from pathlib import Path

import pytest
from debian import deb822
from debian.debian_support import Version

from ngc_paddle.scan.source.image_release import of_image
from ngc_paddle.scan.source.inventory import DPKG_STATUS, Package
from ngc_paddle.scan.vulnerabilities import freshness
from ngc_paddle.scan.vulnerabilities.freshness import debian_archive
from tests.integration.conftest import REPO, Built, docker, run_cli

CA = "/etc/ssl/certs/ca-certificates.crt"
CACHE = REPO / "build" / "cache" / "debian-indexes"
# Libraries of the image that bookworm's -security has updated since the point release, most telling first.
PREFERRED = ("libssl3", "zlib1g", "liblzma5", "libzstd1", "libpam0g")


def image_packages(image: str) -> tuple[list[Package], dict]:
    status = docker("run", "--rm", "--network", "none", "--user", "0", "--entrypoint", "cat", image, DPKG_STATUS).stdout
    packages = [Package("deb", p["Package"], p["Version"], "image", arch=p.get("Architecture", ""))
                for p in deb822.Deb822.iter_paragraphs(status) if p.get("Status") == "install ok installed"]
    return packages, json.loads(docker("image", "inspect", "-f", "{{json .}}", image).stdout)


def test_the_release_image_has_no_pending_update(built: Built) -> None:
    packages, config = image_packages(built.image)
    result = freshness.check(packages, config, of_image(config, None, REPO, {}), REPO, cache_dir=CACHE,
                             say=lambda _: None)
    assert "deb" not in result.not_run, result.not_run
    assert result.debian_compared > 50
    assert result.pending == [], result.pending
    assert result.yanked == []


@pytest.fixture(scope="module")
def older(built: Built) -> tuple[str, str, str, str]:
    """The release image with one library put back to the suite's point-release version: (image, pkg, old, fix)."""
    packages, config = image_packages(built.image)
    debian = built.manifest.sources[built.manifest.flavors[built.flavor].components["python"].source]
    arch = config["Architecture"]
    main, _, security = debian_archive.debian_suites(debian, arch, CACHE, debian_archive.KEYRING)
    versions = {p.name: p for p in packages}
    name = next(n for n in PREFERRED if n in versions and arch in main.versions.get(n, {})
                and Version(main.versions[n][arch]) < Version(security.versions.get(n, {}).get(arch, "0")))
    old, fix = main.versions[name][arch], security.versions[name][arch]
    user = config["Config"].get("User") or "root"
    apt = "apt-get -o Acquire::https::CaInfo=/run/secrets/ca"
    tag = f"{built.image.split(':')[0]}-planted:older-{name}"
    dockerfile = (f"FROM {built.image}\nUSER root\n"
                  f"RUN --mount=type=secret,id=ca,target=/run/secrets/ca {apt} update -qq && "
                  f"DEBIAN_FRONTEND=noninteractive {apt} install -y -qq --no-install-recommends --allow-downgrades "
                  f"{name}={old} && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb\n"
                  f"USER {user}\n")
    proc = subprocess.run(["docker", "buildx", "build", "--network", "host", "--secret", f"id=ca,src={CA}", "--load",
                           "-q", "-t", tag, "-"], input=dockerfile, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    yield tag, name, old, fix
    docker("image", "rm", "-f", tag, check=False)


def test_an_image_with_an_older_package_than_security_offers_is_blocked(older: tuple, tmp_path: Path) -> None:
    image, name, old, fix = older
    proc = run_cli("scan", image, "--output", str(tmp_path))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    report = json.loads((tmp_path / "scan.json").read_text())
    hits = [f for f in report["blocking"] if f["kind"] == "security-update" and f["package"] == name]
    assert len(hits) == 1 and (hits[0]["installed"], hits[0]["fixed"]) == (old, fix)
    assert f"{name} {old}" in proc.stdout and f"fix: {fix}" in proc.stdout
    pending = {p["package"]: p for p in report["freshness"]["pending_updates"]}
    assert pending[name]["suite"].endswith("-security") and pending[name]["candidate"] == fix
    assert f"| {name} | " in (tmp_path / "scan.md").read_text()
