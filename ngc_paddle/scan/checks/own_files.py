"""Our own files against our build's record of them (ngc_common/suite_record.py, written by the suite layer):
a file of ours that a later layer changed, removed or added beside them blocks, naming the file and the layer.

Why: the validation suite and the benchmarks' gates run in the image, so a later layer that edits them would
pass its own gates. Trust: the record is read only from a layer whose diff id our build recorded
(own_layers.py); the files' sha256 are the per-layer facts' (layer_facts.py hashes every file under /opt),
so only the layers above ours are looked at, and none is read again. Long form: docs/scanning.md.
"""

from dataclasses import dataclass, field

from ngc_common import suite_record
from ngc_common.image_paths import SUITE_RECORD
from ngc_paddle.layers import TOP_LAYER
from ngc_paddle.scan.checks.integrity import LayerFacts
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import record_hash
from ngc_paddle.scan.source.saved_image import Layer, whiteout_hides


@dataclass
class OwnFiles:
    status: str  # checked | NOT RUN (our suite layer holds no readable record) | none (no suite layer of ours)
    detail: str
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"status": self.status, "detail": self.detail}


def _expected(files: dict[str, str]) -> dict[str, str]:
    """The record's digests as the layer facts write them (RECORD-style sha256), links as `link:TARGET`."""
    return {p: d if d.startswith("link:") else record_hash(bytes.fromhex(d)) for p, d in files.items()}


def trusted_record(layers: list[Layer], facts: list[LayerFacts], ours: int
                   ) -> tuple[dict[str, str], list[str], str] | str:
    """(path -> digest, roots, where) from the topmost of our layers that holds the record; else why not."""
    for index in reversed(range(min(ours, len(facts)))):
        content = facts[index].content(SUITE_RECORD)
        if content is not None:
            try:
                record = suite_record.parse(content)
                return _expected(record["files"]), record["roots"], f"{SUITE_RECORD} of {layers[index].where}"
            except ValueError as exc:
                return f"{SUITE_RECORD} of {layers[index].where} is unreadable ({exc})"
    return f"no {SUITE_RECORD} in our layers (a build from before the record: rebuild it)"


def _later(layers: list[Layer], facts: list[LayerFacts], ours: int, paths: set[str], roots: list[str]
           ) -> tuple[dict[str, tuple[list, Layer]], dict[str, Layer]]:
    """What the layers above ours did under the roots: path -> (its last integrity entry, layer), and
    path -> the layer that removed it (whiteouts: a name and all under it; opaque: all under a folder)."""
    written: dict[str, tuple[list, Layer]] = {}
    removed: dict[str, Layer] = {}
    for layer, f in zip(layers[ours:], facts[ours:], strict=True):
        for kind, path in f.removed:
            for gone in [p for p in paths | set(written) if whiteout_hides(kind, path, p)]:
                removed[gone] = layer
                written.pop(gone, None)
        for path, entry in f.integrity.items():
            if suite_record.under(path, roots) and not suite_record.skipped(path):
                written[path] = (entry, layer)
                removed.pop(path, None)
    return written, removed


def _what(want: str, entry: list, written: dict[str, tuple[list, Layer]], expected: dict[str, str]) -> str | None:
    """How a rewritten file differs from the record, or None when it is the same."""
    kind, digest, link = entry[:3]
    if kind == "hardlink":  # the bytes of its target, as the image has them
        target = "/" + link.lstrip("/")
        kind, digest = "file", written[target][0][1] if target in written else expected.get(target, "")
    if want.startswith("link:"):
        return None if kind == "symlink" and link == want[5:] else f"not the symlink to {want[5:]} our build made"
    if kind == "symlink":
        return f"a symlink to {link} where our build installed a file"
    return None if digest == want else f"differs from our build's (sha256 {digest[:12]}, recorded {want[:12]})"


def _finding(path: str, rule: str, what: str, layer: Layer, where: str) -> Finding:
    return Finding("integrity", rule, "CRITICAL", f"{what} (recorded in {where}); decides trust: the project's "
                   "own suite and gates", package=path, installed="ngc-paddle suite", location=layer.where,
                   source="integrity")


def check(layers: list[Layer], facts: list[LayerFacts], ours: int) -> OwnFiles:
    """Our files in the final image against the record of the topmost of our `ours` bottom layers."""
    if not any(layer.name == TOP_LAYER for layer in layers[:ours]):
        return OwnFiles("none", "the image holds no suite layer of ours")
    found = trusted_record(layers, facts, ours)
    if isinstance(found, str):
        return OwnFiles("NOT RUN", found)
    expected, roots, where = found
    written, removed = _later(layers, facts, ours, set(expected), roots)
    result = OwnFiles("checked", f"{len(expected)} files against {where}")
    for path, want in sorted(expected.items()):
        if path in written:
            entry, layer = written[path]
            if (what := _what(want, entry, written, expected)) is not None:
                result.findings.append(_finding(path, "own-file-changed", what, layer, where))
        elif path in removed:
            result.findings.append(_finding(path, "own-file-removed", "removed from the image", removed[path], where))
    for path, (_entry, layer) in sorted(written.items()):
        if path not in expected:
            result.findings.append(_finding(path, "own-file-added", "a file our build did not install among ours",
                                            layer, where))
    for layer, f in zip(layers[ours:], facts[ours:], strict=True):  # the in-image check reads the top copy
        if SUITE_RECORD in f.integrity:
            result.findings.append(_finding(SUITE_RECORD, "own-file-changed", "the record of our files, rewritten "
                                            "(the suite and the benchmarks would read this copy)", layer, where))
    return result
