"""The Python side of freshness: each pinned release looked up on the index it came from (PEP 691 JSON), and
a release its authors yanked reported."""

from concurrent.futures import ThreadPoolExecutor

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion
from packaging.version import Version as PyVersion
from pydantic import BaseModel, ConfigDict, ValidationError

from ngc_paddle.flavor import ResolvedFlavor
from ngc_paddle.scan.findings import Finding
from ngc_paddle.scan.source.inventory import Package
from ngc_paddle.scan.vulnerabilities.freshness.bounded_fetch import Unavailable, fetch

MAX_SIMPLE_BYTES = 32 * 1024 * 1024  # a PEP 691 project page (numpy's is a few MB)
PEP691 = "application/vnd.pypi.simple.v1+json"


class _SimpleFile(BaseModel):
    model_config = ConfigDict(extra="ignore")  # an index's page (PEP 691) holds more than the check reads
    filename: str
    yanked: bool | str = False


class _SimpleProject(BaseModel):
    """A PEP 691 project page: only what the yanked check reads."""

    model_config = ConfigDict(extra="ignore")  # as above
    name: str
    files: list[_SimpleFile]


def _file_version(filename: str) -> PyVersion | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def yank_state(index_url: str, name: str, version: str) -> tuple[str, str]:
    """('ok' | 'yanked' | 'absent', reason) for one release on a PEP 691 index; Unavailable if it cannot say."""
    url = f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"
    body, ctype = fetch(url, MAX_SIMPLE_BYTES, accept=PEP691)
    if PEP691 not in ctype:
        raise Unavailable(f"{url}: answers {ctype.split(';')[0] or 'no content type'}, not PEP 691 JSON ({PEP691})")
    try:
        project = _SimpleProject.model_validate_json(body)
    except ValidationError as exc:
        raise Unavailable(f"{url}: not a PEP 691 project page ({exc.error_count()} errors)") from None
    wanted = PyVersion(version)
    files = [f for f in project.files if _file_version(f.filename) == wanted]
    if not files:
        return "absent", f"{index_url} has no file of {name} {version}"
    if all(f.yanked is not False for f in files):
        reasons = sorted({f.yanked for f in files if isinstance(f.yanked, str) and f.yanked})
        return "yanked", "; ".join(reasons) or "no reason given"
    return "ok", ""


def check_python(flavor: ResolvedFlavor, installed: list[Package]) -> tuple[int, list[dict], list[str],
                                                                          dict[str, str]]:
    """(releases checked, yanked list, releases absent from their index, NOT RUN reasons by source)."""
    manifest = flavor.manifest
    in_image = {canonicalize_name(p.name): p.version for p in installed if p.ecosystem == "pypi"}
    by_source: dict[str, list[tuple[str, str]]] = {}
    # A left-out layer's pins are not in the image. A vendor archive (kind `archive`) is no index release that can be
    # yanked: nothing to ask (not applicable, unlike a wheel folder's pins), its file is pinned by the lock's sha256.
    for comp in flavor.installed_components().values():
        if comp.kind == "pip":
            version = in_image.get(canonicalize_name(str(comp.package)), comp.version)
            by_source.setdefault(comp.source, []).append((str(comp.package), version))
    checked, yanked, absent, not_run = 0, [], [], {}
    for source_name, pins in sorted(by_source.items()):
        source = manifest.sources[source_name]
        if source.kind != "pip-index":
            not_run[f"pypi:{source_name}"] = f"{source.kind} {source.path}: a folder of wheels has no yank record"
            continue
        index_url = str(source.url)
        try:  # the first answer tells whether the index can be asked at all
            states = [yank_state(index_url, *pins[0])]
            with ThreadPoolExecutor(max_workers=8) as pool:
                states += list(pool.map(yank_state, [index_url] * (len(pins) - 1), *zip(*pins[1:], strict=True)))
        except Unavailable as exc:
            not_run[f"pypi:{source_name}"] = (f"{exc}; fix: point sources.{source_name} at a reachable PEP 691 "
                                              f"mirror in the manifest or pass --source {source_name}=URL")
            continue
        for (name, version), (state, reason) in zip(pins, states, strict=True):
            checked += 1
            if state == "yanked":
                yanked.append({"package": name, "version": version, "index": index_url, "reason": reason})
            elif state == "absent":
                absent.append(f"{name}=={version} ({index_url})")
    return checked, yanked, absent, not_run


def python_findings(yanked: list[dict]) -> list[Finding]:
    return [Finding("yanked", "pypi-yanked", "HIGH", f"{y['package']} {y['version']} is yanked on {y['index']}: "
                    f"{y['reason']}", package=y["package"], installed=y["version"], location=y["index"],
                    source="pip-index") for y in yanked]


