"""Lock a flavor's vendor archives (components of kind `archive`): the file by sha256, and the wheel inside it.

Why: some components come only as a vendor's archive. TensorRT for CUDA 11.8 with Python 3.11 bindings is one:
TensorRT 8.5's wheels stop at Python 3.10 (NVIDIA/TensorRT#2744), 8.6's wheels on NVIDIA's index are CUDA 12
builds (tensorrt_libs depends on nvidia-*-cu12: NVIDIA/TensorRT#2773, #2933), and the CUDA 11.8 build of 8.6 with
its cp311 bindings is NVIDIA's tar (TensorRT-8.6.1.6.Linux.x86_64-gnu.cuda-11.8.tar.gz: lib/*.so.8, python/
tensorrt-8.6.1-cp311-none-linux_x86_64.whl). The lock downloads the archive once, records its sha256 (the build
refuses any other file), the folder of shared libraries the build extracts, and the one wheel of the component's
distribution for the image's Python and platform, by its own sha256 (the build installs it with
`pip install --require-hashes`, like every other wheel).

An archive's layout is NVIDIA's: one top folder holding lib/ (the shared objects) and python/ (the wheels).
"""

import hashlib
import shutil
import ssl
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from ngc_paddle.host_errors import ManifestError
from ngc_paddle.lock.lock_file import ArchiveEntry, ArchiveWheel
from ngc_paddle.lock.pip_lock import CA_BUNDLE, archive_url, platform_tags, target_platform
from ngc_paddle.lock.subject import LockSubject
from ngc_paddle.manifest.schema import Component, Source

Fetch = Callable[[str, Path], None]  # url -> download it to this file
CHUNK = 1 << 20


def download(url: str, target: Path, timeout: float = 60) -> None:
    """Stream `url` into `target` (an archive may be gigabytes)."""
    context = ssl.create_default_context(cafile=str(CA_BUNDLE) if CA_BUNDLE.is_file() else None)
    request = urllib.request.Request(url, headers={"User-Agent": "ngc-paddle-lock"})
    with urllib.request.urlopen(request, timeout=timeout, context=context) as resp, target.open("wb") as out:
        shutil.copyfileobj(resp, out, CHUNK)


def supported_tags(python: str, platform: str) -> set[Tag]:
    """The wheel tags the image's Python accepts (CPython `python`, glibc up to `platform`)."""
    version = tuple(int(p) for p in python.split("."))
    platforms = platform_tags(platform)
    return {*cpython_tags(version, abis=[f"cp{python.replace('.', '')}", "abi3", "none"], platforms=platforms),
            *compatible_tags(version, f"cp{python.replace('.', '')}", platforms)}


def sha256_of(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def read_archive(path: Path, where: str, package: str, tags: set[Tag]) -> tuple[str, ArchiveWheel]:
    """(the folder of shared libraries, the wheel of `package` for these tags) inside the archive at `path`."""
    libraries, wheels = set(), []
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                parts = PurePosixPath(member.name).parts
                if len(parts) == 3 and parts[1] == "lib" and parts[2].startswith("lib") and ".so" in parts[2]:
                    libraries.add(f"{parts[0]}/lib")
                elif len(parts) == 3 and parts[1] == "python" and parts[2].endswith(".whl") and member.isfile():
                    try:
                        name, version, _build, wheel_tags = parse_wheel_filename(parts[2])
                    except InvalidWheelFilename:
                        continue
                    if name == canonicalize_name(package) and wheel_tags & tags:
                        data = tar.extractfile(member).read()  # type: ignore[union-attr]
                        wheels.append(ArchiveWheel(name=name, version=str(version), member=member.name,
                                                   sha256=hashlib.sha256(data).hexdigest()))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ManifestError(f"{where}: not a readable tar archive ({type(exc).__name__}: {exc}); fix: check the "
                            "file the source serves") from None
    if len(libraries) != 1:
        raise ManifestError(f"{where}: expected one TOP/lib/ folder of shared libraries, found "
                            f"{sorted(libraries) or 'none'}; fix: pin an archive laid out as NVIDIA's TensorRT tars")
    if len(wheels) != 1:
        raise ManifestError(f"{where}: expected one {package} wheel for the image's Python in TOP/python/, found "
                            f"{[w.member for w in wheels] or 'none'}; fix: pin an archive built for that Python")
    return libraries.pop(), wheels[0]


def lock_archive(subject: LockSubject, name: str, comp: Component, root: Path,
                 fetch: Fetch = download) -> ArchiveEntry:
    """One archive component, downloaded (or read from its folder) and locked."""
    manifest, flavor = subject.manifest, subject.spec
    python = flavor.components["python"].version
    platform = target_platform(str(manifest.sources[flavor.components["python"].source].suite))
    source: Source = manifest.sources[comp.source]
    file = str(comp.file)
    where = f"sources.{comp.source} ({comp.file})"
    with tempfile.TemporaryDirectory(prefix="ngc-paddle-archive-") as tmp:
        if source.path:
            path, url = root / str(source.path) / file, (root / str(source.path) / file).resolve().as_uri()
        else:
            path, url = Path(tmp) / file, archive_url(source, file)
            try:
                fetch(url, path)
            except Exception as exc:
                raise ManifestError(f"{where}: {url} could not be downloaded ({type(exc).__name__}); fix: lock "
                                    f"through a mirror: --source {comp.source}=URL") from None
        libraries, wheel = read_archive(path, where, str(comp.package), supported_tags(python, platform))
        sha = sha256_of(path)
    if not comp.version.startswith(wheel.version):
        raise ManifestError(f"{where}: its {wheel.name} wheel is version {wheel.version}, not the component's "
                            f"{comp.version}; fix: pin the version the archive holds")
    return ArchiveEntry(component=name, version=comp.version, layer=comp.layer, source=comp.source, file=file,
                        sha256=sha, url=url, libraries=libraries, wheel=wheel)


def lock_archives(subject: LockSubject, root: Path = Path("."), fetch: Fetch = download) -> list[ArchiveEntry]:
    """Every archive component of a flavor, locked (in manifest order)."""
    return [lock_archive(subject, name, comp, root, fetch)
            for name, comp in subject.spec.components.items() if comp.kind == "archive"]
