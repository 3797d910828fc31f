"""Hygiene: nothing in the image that should not be there (caches, secrets, keys, setuid, licences)."""

import pytest

# Debian's own setuid/setgid programs (login, passwd, mount); nothing else may carry these bits.
SETUID_ALLOWED = {"/usr/bin/chfn", "/usr/bin/chsh", "/usr/bin/gpasswd", "/usr/bin/mount", "/usr/bin/newgrp",
                  "/usr/bin/passwd", "/usr/bin/su", "/usr/bin/umount"}
SETGID_ALLOWED = {"/usr/bin/chage", "/usr/bin/expiry", "/usr/sbin/unix_chkpwd"}


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
    _none(scan["private_keys"], "private keys")


@pytest.mark.check("hygiene.git-dirs", component="suite")
def test_no_git_folders(scan) -> None:
    _none(scan["git_dirs"], ".git folders")


@pytest.mark.check("hygiene.core-files", component="suite")
def test_no_core_files(scan) -> None:
    _none(scan["core_files"], "core files")


@pytest.mark.check("hygiene.setuid", component="os")
def test_setuid_setgid_only_allowlisted(scan) -> None:
    _none(sorted(set(scan["setuid"]) - SETUID_ALLOWED), "setuid files beyond Debian's own")
    _none(sorted(set(scan["setgid"]) - SETGID_ALLOWED), "setgid files beyond Debian's own")


@pytest.mark.check("hygiene.world-writable", component="os")
def test_no_world_writable_dirs_without_sticky_bit(scan) -> None:
    _none(scan["world_writable_dirs"], "world-writable directories without the sticky bit")


@pytest.fixture(scope="session")
def dists(run_probe) -> dict:
    return run_probe("distributions")


@pytest.mark.check("hygiene.license.{any_component}")
def test_license_present(any_component, components, dists, host) -> None:
    comp = components[any_component]
    if comp["kind"] == "pip":
        name = comp["package"].replace("_", "-").lower()
        evidence = dists["distributions"].get(name, {}).get("license")
        assert evidence, f"expected licence text or metadata for {comp['package']}, found none"
    elif comp["kind"] == "apt":
        path = f"/usr/share/doc/{comp['package']}/copyright"
        assert host.file(path).exists, f"expected {path}, found it missing"
    else:
        assert host.file("/usr/share/common-licenses").is_directory, "expected /usr/share/common-licenses for the OS"
