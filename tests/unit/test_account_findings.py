"""The account checks and the image's USER, finding by finding: every field a report and the gate read.

The scan's own tests (test_scan_classes) check which rules fire; these compare each finding whole (every field of
Finding: kind, rule, severity, title, file, account, layer, source), so a wrong severity or a lost location fails.
"""

import pytest

from ngc_paddle.manifest.schema import RuntimeUser
from ngc_paddle.scan.checks import accounts, image_checks
from ngc_paddle.scan.findings import Finding

LAYER = "layer 2 (base)"
PASSWORD = "$6$rounds=1000$aa$OF9htZ4tevPjxS2gWYvCRQ21tUk94Ly1XSwg/XcbF8HFWK1Bui0cwQUiZdQhtGEIWO4CJJsCXrz1T0ZvN4CxR1"
LETMEIN = "$6$rounds=1000$bb$TNvCfQBWiyPRszwA3w7l7ygdN5BK9C2/Ko7xV6O8GqF3euxNiB57QRPqDgdxh/0TJqhVBor95WrE6lseHrxsa."
PADDLE = "$6$rounds=1000$cc$W91Q7qq/z.Y5lRljWbIE1QYhM941DqFf3hAjP6c8aDtwIsCTL.Wpje8EzaUwtejTP99yfc/zJxJyaDkjRs3Wm0"
KEY = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host\n"
LONG_RULE = "ci ALL=(ALL) NOPASSWD: /usr/bin/apt-get, /usr/bin/dpkg, /usr/bin/systemctl, /usr/sbin/service"


def _file(path: str, content: bytes | None, mode: int = 0o100644) -> accounts.File:
    return accounts.File(path, mode, content, LAYER)


def _privilege(rule: str, severity: str, title: str, path: str, account: str = "") -> Finding:
    return Finding("privilege", rule, severity, title, package=path, installed=account, location=LAYER,
                   source="accounts")


def test_every_account_finding_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accounts, "MAX_HASHED_ACCOUNTS", 2)
    passwd = (b"root:x:0:0::/root:/bin/bash\n"
              b"short:x:5\n"  # too short: skipped, the lines after it still read
              b"toor:x:0:100::/root:/bin/sh\n"  # uid 0, gid 100: the uid is the third field
              b"nopw::1001:1001:NOPASSWD fan:/home/nopw:/bin/sh\n"
              b"four:x:0:0\n")  # four fields are enough
    shadow = (b"s\n"
              b"two:\n"
              b"daemon:*:19000::::::\n"  # locked: no hash to try, not counted against the limit
              b"a:" + PASSWORD.encode() + b":19000::::::\n"
              b"b:" + LETMEIN.encode() + b":19000::::::\n"
              b"c:" + PADDLE.encode() + b":19000::::::\n")  # past the limit of hashes tried: not reported
    group = b"root:x:0:\nsudo:x:27:paddle,root, ,ops\ndocker:x:999:ci\nusers:x:100:paddle\n"
    files = {f.path: f for f in [
        _file("/etc/passwd", passwd), _file("/etc/shadow", shadow, 0o100604), _file("/etc/group", group),
        _file("/etc/gshadow", b"root:*::\n", 0o100646),
        _file("/etc/sudoers", b"root ALL=(ALL) ALL\nDefaults !authenticate\n", 0o100440),
        _file("/etc/sudoers.d/ci", LONG_RULE.encode() + b"\n", 0o100440),
        _file("/home/ci/.ssh/authorized_keys", b"# no keys\n", 0o100600),
        _file("/root/.ssh/authorized_keys", KEY, 0o100600)]}
    assert accounts.check(files) == [
        _privilege("uid0-account", "CRITICAL", "account toor has uid 0 (a second root)", "/etc/passwd", "toor"),
        _privilege("empty-password", "CRITICAL", "account nopw needs no password (empty password field in "
                   "/etc/passwd)", "/etc/passwd", "nopw"),
        _privilege("uid0-account", "CRITICAL", "account four has uid 0 (a second root)", "/etc/passwd", "four"),
        _privilege("empty-password-hash", "CRITICAL", "account two has an empty password hash: it logs in without "
                   "a password", "/etc/shadow", "two"),
        _privilege("default-password", "CRITICAL", "account a has a known default password (pa...)",
                   "/etc/shadow", "a"),
        _privilege("default-password", "CRITICAL", "account b has a known default password (le...)",
                   "/etc/shadow", "b"),
        _privilege("privileged-group", "HIGH", "account ci is a member of group docker", "/etc/group", "ci"),
        _privilege("privileged-group", "HIGH", "account paddle is a member of group sudo", "/etc/group", "paddle"),
        _privilege("privileged-group", "HIGH", "account ops is a member of group sudo", "/etc/group", "ops"),
        _privilege("sensitive-file-mode", "CRITICAL", "/etc/gshadow is world-writable (mode 0646)", "/etc/gshadow"),
        _privilege("sensitive-file-mode", "CRITICAL", "/etc/shadow is world-readable (mode 0604)", "/etc/shadow"),
        _privilege("sudo-nopasswd", "CRITICAL", "sudo without a password: Defaults !authenticate", "/etc/sudoers"),
        _privilege("sudo-nopasswd", "CRITICAL", f"sudo without a password: {LONG_RULE[:80]}", "/etc/sudoers.d/ci"),
        _privilege("authorized-keys", "HIGH", "an authorized_keys file lets a key holder log in",
                   "/root/.ssh/authorized_keys"),
    ]


def test_an_account_file_whose_content_was_not_kept_is_not_judged_by_its_mode() -> None:
    """A file over the capture limit keeps its mode but not its bytes: nothing to read, so no finding."""
    gone = {p: _file(p, None, 0o100666) for p in ("/etc/shadow", "/etc/sudoers", "/root/.ssh/authorized_keys")}
    assert accounts.check(gone) == []


PASSWD = b"root:x:0:0::/root:/bin/bash\npaddle:x:1000:1000::/home/paddle:/bin/bash\n"
GROUP = b"root:x:0:\nvideo:x:44:paddle\npaddle:x:1000:\n"
PADDLE_USER = RuntimeUser(name="paddle", uid=1000, gid=1000)
ROOT_USER = RuntimeUser(name="root", uid=0, gid=0, root_reason="loads kernel modules")


def _config(severity: str, rule: str, kind: str, title: str, shown: str, installed: str = "",
            fixed: str = "") -> Finding:
    return Finding(kind, rule, severity, title, package=shown, installed=installed, fixed=fixed,
                   location="image config: User", source="config")


NO_DECLARED = "the release declares no user, so it must run as a non-root uid"


@pytest.mark.parametrize("config_user, declared, ours, expected", [
    # an image no release of ours describes: root is worth a note, nothing more
    ("root", None, False, _config("LOW", "runs-as-root", "user",
                                  "the image's USER is root (no release declares its user)", "root")),
    ("", None, False, _config("LOW", "runs-as-root", "user",
                              "the image's USER is root (no release declares its user)", "root (no USER)")),
    ("1000", None, False, None),
    # ours, declaring no user: any non-root uid, never root or a name passwd lacks
    ("0", None, True, _config("CRITICAL", "user-mismatch", "privilege", f"USER 0 is root (or unknown); {NO_DECLARED}",
                              "0")),
    ("ghost", None, True, _config("CRITICAL", "user-mismatch", "privilege",
                                  f"USER ghost is root (or unknown); {NO_DECLARED}", "ghost")),
    ("1000", None, True, None),
    # ours, declaring paddle (1000:1000)
    ("paddle", PADDLE_USER, True, None),
    ("1000:paddle", PADDLE_USER, True, None),
    ("1000:nogroup", PADDLE_USER, True, None),  # a group passwd's tables lack is not judged
    ("root", PADDLE_USER, True, _config("CRITICAL", "user-mismatch", "privilege", "USER root (uid 0) is not the "
                                        "release's declared user paddle (1000:1000)", "root", "0", "1000")),
    ("ghost", PADDLE_USER, True, _config("CRITICAL", "user-mismatch", "privilege", "USER ghost (uid unknown) is "
                                         "not the release's declared user paddle (1000:1000)", "ghost", "None",
                                         "1000")),
    ("1000:video", PADDLE_USER, True, _config("CRITICAL", "user-mismatch", "privilege", "USER 1000:video (uid "
                                              "1000) is not the release's declared user paddle (1000:1000)",
                                              "1000:video", "1000", "1000")),
    # ours, declaring root with its reason
    ("0", ROOT_USER, True, _config("LOW", "runs-as-root", "user", "runs as root as the release declares: loads "
                                   "kernel modules", "0")),
])
def test_user_finding_whole(config_user: str, declared: RuntimeUser | None, ours: bool,
                            expected: Finding | None) -> None:
    files = {"/etc/passwd": _file("/etc/passwd", PASSWD), "/etc/group": _file("/etc/group", GROUP)}
    found = image_checks.user_findings(config_user, files, declared, ours)
    assert found == ([expected] if expected else [])
