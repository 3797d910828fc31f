"""dpkg's records across layers: what each package owns and the checksums of its install, and every record a
later layer rewrote without installing the package, told with the layer that rewrote it."""

from dataclasses import dataclass, field

from ngc_paddle.dpkg_status import DPKG_STATUS
from ngc_paddle.scan.checks.file_scope import DPKG_INFO
from ngc_paddle.scan.checks.package_records import Problem, dpkg
from ngc_paddle.scan.source.saved_image import Layer

A, B, C = "a" * 16 + "1" * 16, "b" * 16 + "2" * 16, "c" * 16 + "3" * 16
M1, M2 = "d" * 32, "e" * 32
LAYERS = [Layer(i, name, f"RUN {name}") for i, name in enumerate(("base", "tools", "patch", "late-patch"))]


@dataclass
class _Facts:
    copies: dict[str, bytes] = field(default_factory=dict)
    removed: list[list] = field(default_factory=list)

    @property
    def files(self) -> dict[str, dict]:
        return {path: {} for path in self.copies}

    def content(self, path: str) -> bytes | None:
        return self.copies.get(path)


def _status(*packages: tuple[str, str, dict[str, str]]) -> bytes:
    paragraphs = []
    for name, version, conffiles in packages:
        text = f"Package: {name}\nStatus: install ok installed\nVersion: {version}\n"
        if conffiles:
            text += "Conffiles:\n" + "".join(f" {path} {md5}\n" for path, md5 in conffiles.items())
        paragraphs.append(text)
    return "\n".join(paragraphs).encode()


def test_records_as_installed_and_every_later_rewrite() -> None:
    libfoo_list = b"/.\n/usr\n/usr/lib/libfoo.so.1\n"
    grown = libfoo_list + b"/usr/bin/evil\n/usr/bin/evil2\n/usr/bin/evil3\n/usr/bin/evil4\n"
    sums = f"{M1}  usr/lib/libfoo.so.1\n{M2}  usr/share/doc/libfoo/extra\n".encode()
    info = DPKG_INFO
    facts = [
        _Facts({DPKG_STATUS: _status(("libfoo", "1.0", {"/etc/foo.conf": A})),
                f"{info}libfoo:amd64.list": libfoo_list, f"{info}libfoo:amd64.md5sums": sums,
                "/etc/apt/sources.list": b"/usr/bin/not-a-record\n"}),
        _Facts({DPKG_STATUS: _status(("libfoo", "1.0", {"/etc/foo.conf": A}), ("tool", "2.0", {}),
                                     ("late", "1.0", {})),
                f"{info}tool.list": b"/usr/bin/tool\n"}),  # tool: no md5sums at all
        _Facts({f"{info}libfoo:amd64.list": grown, f"{info}libfoo:amd64.md5sums": sums + b"0" * 32 + b"  x\n",
                f"{info}late.list": b"/usr/bin/late\n"}),  # late's list only after its install
        _Facts({DPKG_STATUS: _status(("libfoo", "1.0", {"/etc/foo.conf": B, "/etc/foo.d/new": C}),
                                     ("tool", "2.0", {}), ("late", "1.0", {})),
                f"{info}libfoo:amd64.list": grown, f"{info}libfoo:amd64.md5sums": sums + b"1" * 32 + b"  y\n"}),
    ]
    records = dpkg(LAYERS, facts)
    assert records.installed_in == {"libfoo": 0, "tool": 1, "late": 1}
    assert records.owner == {"/": "libfoo", "/usr": "libfoo", "/usr/lib/libfoo.so.1": "libfoo",
                             "/usr/share/doc/libfoo/extra": "libfoo", "/usr/bin/tool": "tool"}
    assert records.md5 == {"/usr/lib/libfoo.so.1": M1, "/usr/share/doc/libfoo/extra": M2, "/etc/foo.conf": A,
                           "/etc/foo.d/new": C}
    assert records.problems == [
        Problem(f"{info}libfoo:amd64.md5sums", "libfoo", "its checksums were rewritten in a later layer than its "
                "install (layer 0): the checksums of that install are used", LAYERS[3]),
        Problem(f"{info}libfoo:amd64.list", "libfoo", "its file list gained 4 path(s) without a reinstall: "
                "/usr/bin/evil, /usr/bin/evil2, /usr/bin/evil3 (not the package's)", LAYERS[3]),
        Problem(f"{info}late.list", "late", "its file list gained 1 path(s) without a reinstall: /usr/bin/late "
                "(not the package's)", LAYERS[2]),
        Problem(DPKG_STATUS, "libfoo", f"the checksum of its conffile /etc/foo.conf changed in the status after its "
                f"install (layer 0): {A[:12]} then, {B[:12]} now", LAYERS[3]),
        Problem(DPKG_STATUS, "libfoo", f"the checksum of its conffile /etc/foo.d/new changed in the status after its "
                f"install (layer 0): none then, {C[:12]} now", LAYERS[3]),
    ]
