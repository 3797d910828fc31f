"""Hygiene: nothing in the image that should not be there (caches, secrets, keys, setuid, licences).

What is allowed (setuid paths, key fixtures) and what counts as a key or credential come from the scan
gate's own policy and patterns (/opt/ngc-paddle/security/policy.yaml, ngc_common/secret_patterns.py): one list, two
checkers. Run as a non-root uid, the walk cannot read root's folders: hygiene.full-view says so.
"""

import pytest

from ngc_common.pep503 import canonical


@pytest.fixture(scope="session")
def scan(run_probe) -> dict:
    return run_probe("fs_scan")


def _none(found: list[str], what: str) -> None:
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    assert not found, f"expected no {what}, found {found[0]}{more}" if found else ""


@pytest.mark.check("hygiene.package-caches", component="suite")
def test_no_package_caches(scan) -> None:
    _none(scan["package_caches"], "package caches")


@pytest.mark.check("hygiene.apt-lists", component="os")
def test_no_apt_lists(scan) -> None:
    _none(scan["apt_lists"], "apt lists")


@pytest.mark.check("hygiene.orphan-bytecode", component="python")
def test_no_orphaned_bytecode(scan) -> None:
    _none(scan["orphan_bytecode"], "bytecode without its source")


@pytest.mark.check("hygiene.build-secrets", component="suite")
def test_no_build_secrets(scan) -> None:
    _none(scan["build_secrets"], "files under /run/secrets")


@pytest.mark.check("hygiene.private-keys", component="suite")
def test_no_private_keys(scan) -> None:
    _none(scan["private_keys"], "private keys (other than the policy's key_fixtures)")


@pytest.mark.check("hygiene.credentials", component="suite")
def test_no_credentials(scan) -> None:
    _none(scan["credentials"], "credentials or tokens in files")


@pytest.mark.check("hygiene.full-view", component="suite")
def test_walk_saw_every_file(scan) -> None:
    if scan["unreadable"] and scan["uid"] != 0:
        pytest.skip(f"uid {scan['uid']} cannot read {len(scan['unreadable'])} path(s) (e.g. {scan['unreadable'][0]}): "
                    "the hygiene checks saw the rest; run `docker run --user root IMAGE validate` or "
                    "`ngc-paddle validate IMAGE` for all of it")
    _none(scan["unreadable"], "paths the hygiene walk could not read")


@pytest.mark.check("hygiene.git-dirs", component="suite")
def test_no_git_folders(scan) -> None:
    _none(scan["git_dirs"], ".git folders")


@pytest.mark.check("hygiene.core-files", component="suite")
def test_no_core_files(scan) -> None:
    _none(scan["core_files"], "core files")


@pytest.mark.check("hygiene.setuid", component="os")
def test_setuid_setgid_only_allowlisted(scan) -> None:
    allowed = set(scan["setuid_allowed"])
    _none(sorted(set(scan["setuid"]) - allowed), "setuid files beyond the policy's setuid_allowed")
    _none(sorted(set(scan["setgid"]) - allowed), "setgid files beyond the policy's setuid_allowed")
    _none(scan["setuid_modified"], "setuid/setgid files other than the ones Debian installed")


@pytest.mark.check("hygiene.world-writable", component="os")
def test_no_world_writable_dirs_without_sticky_bit(scan) -> None:
    _none(scan["world_writable_dirs"], "world-writable directories without the sticky bit")
    _none(scan["world_writable_files"], "world-writable files")


@pytest.fixture(scope="session")
def dists(run_probe) -> dict:
    return run_probe("distributions")


@pytest.mark.check("hygiene.license.{any_component}")
def test_license_present(any_component, components, dists, host) -> None:
    comp = components[any_component]
    if comp["kind"] == "pip":
        name = canonical(comp["package"])
        evidence = dists["distributions"].get(name, {}).get("license")
        assert evidence, f"expected licence text or metadata for {comp['package']}, found none"
    elif comp["kind"] == "apt":
        path = f"/usr/share/doc/{comp['package']}/copyright"
        assert host.file(path).exists, f"expected {path}, found it missing"
    else:
        assert host.file("/usr/share/common-licenses").is_directory, "expected /usr/share/common-licenses for the OS"
