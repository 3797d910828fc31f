"""A distribution's RECORD read into the image's absolute paths (ngc_paddle.scan.checks.drift): the entries the drift,
hook and integrity checks all judge, so a path read wrong is a file judged as nobody's or a change unseen."""

from ngc_paddle.scan.checks import drift

SITE = "/opt/venv/lib/python3.11/site-packages"


def test_a_record_entry_is_its_absolute_path_normalised_only_where_it_needs_to_be() -> None:
    assert drift.installed_path(SITE, "pkg/mod.py") == f"{SITE}/pkg/mod.py"
    assert drift.installed_path(SITE, '"pkg/a,b.py"') == f"{SITE}/pkg/a,b.py"  # csv quoting
    assert drift.installed_path(SITE, "../../../bin/tool") == "/opt/venv/bin/tool"  # a script
    assert drift.installed_path(SITE, "./pkg/x.py") == f"{SITE}/pkg/x.py"
    assert drift.installed_path(SITE, "pkg/./x.py") == f"{SITE}/pkg/x.py"
    assert drift.installed_path(SITE, "pkg//x.py") == f"{SITE}/pkg/x.py"
    assert drift.installed_path(SITE, "pkg/../other/x.py") == f"{SITE}/other/x.py"
    # an absolute entry is taken under site-packages too: a RECORD (a file in the image like any other) cannot claim
    # a file outside its prefix, such as /etc/ld.so.preload, as its package's
    assert drift.installed_path(SITE, "/etc/ld.so.preload") == f"{SITE}/etc/ld.so.preload"
    # only such names are normalised: a name ending in a dot-free component stays byte for byte
    assert drift.installed_path(SITE, "pkg/a..b/x") == f"{SITE}/pkg/a..b/x"
    assert drift.installed_path("/x/", "pkg/y") == "/x//pkg/y"  # the site as given, not normalised for a plain name


def record(text: bytes) -> list[tuple[str, str]]:
    return drift.DistInfo(path=f"{SITE}/pkg-1.0.dist-info", files={"RECORD": text}, where="layer 4").record_lines()


def test_each_record_line_gives_the_path_and_its_sha256_only() -> None:
    lines = record(b"pkg/__init__.py,sha256=AbC-_,10\n"
                   b"pkg/a,b.py,sha256=QQ,5\n"  # a comma in the name: split from the right
                   b"pkg-1.0.dist-info/RECORD,,\n"
                   b"pkg/odd.py,md5=xyz,3\n"  # another algorithm: no digest to check
                   b",sha256=x,1\n"  # no name
                   b"too,few\n"
                   b"pkg/\xff.py,sha256=ZZ,1\n")  # not UTF-8: replaced, still read
    assert lines == [(f"{SITE}/pkg/__init__.py", "AbC-_"), (f"{SITE}/pkg/a,b.py", "QQ"),
                     (f"{SITE}/pkg-1.0.dist-info/RECORD", ""), (f"{SITE}/pkg/odd.py", ""),
                     (f"{SITE}/pkg/\ufffd.py", "ZZ")]
    assert record(b"") == []
    assert drift.DistInfo(path=f"{SITE}/x.dist-info", files={}, where="layer 4").record_lines() == []  # no RECORD
