"""dpkg_status: the one reader of dpkg's status file, which the lock, the inventory and the integrity check share."""

from ngc_paddle.dpkg_status import Installed, installed
from ngc_paddle.scan.checks.package_records import status_entries

MD5_A, MD5_B = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
STATUS = f"""Package: libssl3
Status: install ok installed
Architecture: amd64
Source: openssl (3.0.22-1~deb12u2)
Version: 3.0.22-1~deb12u2
Description: Secure Sockets Layer toolkit
 Package: not-a-field (a continuation line)

Package: login
Status: install  ok installed
Version: 1:4.13+dfsg1-1
Conffiles:
 /etc/login.defs {MD5_A}
 /etc/pam.d/login {MD5_B} obsolete
 /etc/short 1234
 relative {MD5_A}

Package: gone
Status: deinstall ok config-files
Version: 1.0

Status: install ok installed
Version: 2.0
""".encode()


def test_only_installed_packages_with_their_fields() -> None:
    assert installed(STATUS) == (
        Installed("libssl3", "3.0.22-1~deb12u2", "amd64", "openssl", {}),
        Installed("login", "1:4.13+dfsg1-1", "", "login", {"/etc/login.defs": MD5_A, "/etc/pam.d/login": MD5_B}),
    )


def test_the_integrity_check_reads_the_same_records() -> None:
    assert status_entries(STATUS) == {"libssl3": ("3.0.22-1~deb12u2", {}),
                                      "login": ("1:4.13+dfsg1-1", {"/etc/login.defs": MD5_A,
                                                                   "/etc/pam.d/login": MD5_B})}
    assert status_entries(None) == {}


def test_bad_bytes_and_an_empty_file_are_no_error() -> None:
    assert installed(b"") == ()
    assert installed(b"Package: x\xff\nStatus: install ok installed\n\n\xfe\xfd") == (
        Installed("x\ufffd", "", "", "x\ufffd", {}),)


def test_a_file_list_with_a_name_that_is_not_utf8_is_read_whole() -> None:
    """dpkg keeps file names as bytes: a package may list a Latin-1 name. Every absolute path of the list is read
    (normalised), the odd name with a replacement character, instead of the scan stopping on it."""
    from ngc_paddle.scan.checks.package_records import _listed

    listed = _listed(b"/.\n/usr/bin/tool\n/usr/share/doc/caf\xe9.txt\n/usr/./lib//x.so\nrelative/path\n")
    assert listed == {"/", "/usr/bin/tool", "/usr/share/doc/caf\ufffd.txt", "/usr/lib/x.so"}
    assert _listed(None) == set()
