"""Which layers of a scanned image are the project's own: the bottom of its layer chain that is, diff id for diff
id, the chain our build recorded for the release and flavor the image names.

The long form: docs/design-notes.md, section `ngc_paddle/scan/source/own_layers.py`.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ngc_common import bounded_read
from ngc_common.errors import InputError, OneLineError
from ngc_paddle import engine
from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.layers import LAYER_ORDER
from ngc_paddle.scan.source.image_release import FLAVOR_LABEL, RELEASE_LABEL, ImageRelease
from ngc_paddle.scan.source.saved_image import BASE, Layer, step_text

# ngc_paddle/image_build/build_flavor.py writes it in the flavor's reports folder (ResolvedFlavor.reports_dir, named by
# its name on its platform: cpu, cpu-arm64)
REPORT = "build.json"
Inspect = Callable[[list[str]], dict[str, dict]]  # engine.inspect_images: ref -> `docker image inspect` object


class _ReportLayer(BaseModel):
    model_config = ConfigDict(extra="ignore")  # the build report's own schema checks it; this reads a part
    layer: str
    image_id: str | None = None
    config: dict | None = None  # the config of the image it tagged (builds before that record none)


class _Report(BaseModel):
    """The part of the build report (image_build/build_report.BuildReport) that names the images each layer made."""

    model_config = ConfigDict(extra="ignore")  # as above
    base_image: str
    layers: list[_ReportLayer]


@dataclass(frozen=True)
class Chain:
    layers: tuple[tuple[str, str], ...]  # (diff id, our layer that added it), bottom first
    source: str  # what recorded it, for the report
    configs: tuple[tuple[int, dict], ...] = ()  # (how many diff ids, the config of the image with just those)


@dataclass
class Attribution:
    """How many layers from the bottom are ours, and what that rests on."""

    ours: int
    total: int
    claims: str | None  # "RELEASE FLAVOR" the image names, None when it names none
    source: str  # the recorded chain it matched, or why there is none
    missing: bool = False  # the image names a release of ours but this host has no record of that build
    config: dict | None = None  # the config our build recorded for the image of its topmost layer of ours

    def as_dict(self) -> dict:
        return {"ours": self.ours, "layers": self.total, "claims": self.claims, "source": self.source,
                "missing": self.missing}

    @property
    def line(self) -> str:
        if self.claims is None:
            return "none (the image names no release of ours)"
        return f"{self.ours} of {self.total} layers are the build's of {self.claims} ({self.source})"


def chain_of(base: list[str], layer_images: list[tuple[str, list[str] | None, dict | None]], source: str
             ) -> Chain | None:
    """The chain of a base's diff ids and each layer image's (name, diff ids, config; bottom first): a layer
    image's own layers are its diff ids beyond the previous one's; it stops at a missing image or one that does
    not extend the last."""
    found = [(d, BASE) for d in base]
    configs = []
    previous = base
    for name, ids, config in layer_images:
        if ids is None or ids[: len(previous)] != previous:
            break
        found += [(d, name) for d in ids[len(previous):]]
        configs += [(len(ids), config)] if config is not None else []
        previous = ids
    return Chain(tuple(found), source, tuple(configs)) if len(found) > len(base) else None


def _config(info: dict | None) -> dict | None:
    return info.get("Config") if info else None


def _report(root: Path, flavor: ResolvedFlavor) -> tuple[_Report | None, str]:
    path = root / flavor.reports_dir.relative_to(flavor.root) / REPORT  # that folder under the scan's root
    if not path.is_file():
        return None, f"no {path.relative_to(root)}"
    try:
        return _Report.model_validate(bounded_read.load_json(path, InputError, 4 * 1024 * 1024)), str(path)
    except (OneLineError, ValidationError) as exc:
        return None, f"{path.relative_to(root)} unreadable ({str(exc).splitlines()[0][:120]})"


def recorded_chains(flavor: ResolvedFlavor, root: Path, inspect: Inspect | None = None
                    ) -> tuple[list[Chain], list[str]]:
    """The chains this host recorded for `flavor`: from its build report's image ids and from its layer image
    tags (one `docker image inspect` for all); with what was looked for and not found."""
    report, report_where = _report(root, flavor)
    base = flavor.lock.base if flavor.lock else None
    tags = [flavor.layer_tags[layer] for layer in flavor.spec.layers]
    refs = [r for r in [base.image if base else None, report.base_image if report else None, *tags,
                        *((entry.image_id for entry in report.layers if entry.image_id) if report else ())] if r]
    inspect = inspect or engine.inspect_images  # looked up per call: the engine a test or a trip installs
    infos = inspect(sorted(set(refs))) if refs else {}
    base_ids = (engine.diff_ids(infos.get(report.base_image)) if report else None) or \
        (engine.diff_ids(infos.get(base.image)) if base else None) or \
        ([f"sha256:{base.rootfs_sha256}"] if base and base.rootfs_sha256 else None)
    if base_ids is None:
        return [], [f"the base image of {flavor.release} {flavor.name} is not on this engine"]
    chains, missing = [], []
    if report is not None:
        images = [(entry.layer, engine.diff_ids(infos.get(entry.image_id or "")),
                   entry.config if entry.config is not None else _config(infos.get(entry.image_id or "")))
                  for entry in report.layers]
        chain = chain_of(base_ids, images, f"its build report {report_where}")
        chains += [chain] if chain else []
        missing += [] if chain else [f"the images {report_where} names"]
    else:
        missing.append(report_where)
    chain = chain_of(base_ids, [(layer, engine.diff_ids(infos.get(tag)), _config(infos.get(tag))) for layer, tag in zip(
        flavor.spec.layers, tags, strict=True)], f"its layer images {tags[0].rsplit(':', 1)[0]}:...")
    chains += [chain] if chain else []
    missing += [] if chain else [f"its layer images ({tags[0]}, ...)"]
    return chains, missing


def _flavor(labels: Mapping[str, str], release: ImageRelease) -> tuple[ResolvedFlavor | None, str | None, str]:
    """(the flavor whose recorded chains are compared, what the image claims to be, why there is none)."""
    if release.flavor is not None:
        return release.flavor, f"{release.flavor.release} {release.flavor.build_name}", ""  # cpu, cpu-arm64
    if not labels.get(RELEASE_LABEL):
        return None, None, "the image names no release of ours"
    claims = f"{labels.get(RELEASE_LABEL)} {labels.get(FLAVOR_LABEL, '?')}"
    return None, claims, f"not a release of this checkout ({release.unknown[:160]})"


def attribute(layers: list[Layer], labels: Mapping[str, str], root: Path, release: ImageRelease,
              inspect: Inspect | None = None) -> Attribution:
    """Name the image's layers by what they are: the bottom ones that match a recorded chain by the layer of
    ours that added each; any other that its history text named as one of ours by its own step (a derived
    image's `RUN ... /opt/ngc-paddle ...` is that step, never `suite`). `release`: the image's release as the scan
    resolved it once (image_release.of_image), from its labels or the release run."""
    flavor, claims, why = _flavor(labels, release)
    chains, missing = recorded_chains(flavor, root, inspect) if flavor is not None else ([], [])
    ours, best = 0, None
    for chain in chains:
        matched = 0
        for layer, (diff_id, _name) in zip(layers, chain.layers, strict=False):
            if layer.diff_id != diff_id:
                break
            matched += 1
        if matched > ours:
            ours, best = matched, chain
    if best is not None:
        source = best.source
    elif chains:
        source = "its layers differ from every recorded chain (" + "; ".join(c.source for c in chains) + ")"
    else:
        source = why or ("no record of its build on this host: " + "; ".join(missing))
    for layer in layers:
        if best is not None and layer.index < ours:
            layer.name = best.layers[layer.index][1]
        elif layer.name in LAYER_ORDER or (layer.name == BASE and layer.index > 0):
            layer.name = step_text(layer.created_by) or "unknown"
    config = dict(best.configs).get(ours) if best is not None else None
    return Attribution(ours, len(layers), claims, source, missing=flavor is not None and not chains, config=config)
