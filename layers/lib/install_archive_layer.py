"""Install one layer's locked vendor archives inside the image being built: the shared libraries and the wheel.

The long form: docs/design-notes.md, section `layers/lib/install_archive_layer.py`.
"""

import hashlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path, PurePosixPath

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import install_pip_layer as pip_layer

ARCHIVE_CACHE = "/tmp/ngc/archive-cache"  # a cache mount of the layer's Dockerfile
CHUNK = 1 << 20


def fail(spec: dict, archive: dict, reason: str, fix: str | None = None) -> None:
    source = archive["source"]
    default_fix = (f"point source {source} at a reachable mirror (make image SOURCES={source}=URL, or a folder under "
                   "wheelhouse/ holding the file)")
    line = (f"layer {spec['layer']}: archive {archive['file']} (component {archive['component']}, locked in "
            f"{spec['lock']}) from source {source} ({archive['location']}): {reason}; fix: {fix or default_fix}")
    print(f"NGC-PADDLE-ERROR {' '.join(line.split())}", flush=True)
    sys.exit(1)


def sha256_of(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def ssl_context() -> ssl.SSLContext:
    ca = pip_layer.CA_SECRET
    usable = os.path.isfile(ca) and os.path.getsize(ca) > 0
    return ssl.create_default_context(cafile=ca if usable else None)


def fetch(spec: dict, archive: dict) -> Path:
    """The archive file: from the wheelhouse folder, or downloaded (once per sha256, into the cache mount)."""
    location = str(archive["location"])
    if "://" not in location:
        path = Path(pip_layer.WHEELHOUSE) / os.path.relpath(location, "wheelhouse") / archive["file"]
        if not path.is_file():
            fail(spec, archive, f"the folder has no {archive['file']}")
        return path
    cache = Path(ARCHIVE_CACHE) if os.path.isdir(ARCHIVE_CACHE) else Path(tempfile.mkdtemp(prefix="ngc-archive-"))
    target = cache / f"{archive['sha256']}-{archive['file']}"
    if target.is_file() and sha256_of(target) == archive["sha256"]:
        print(f"[{spec['layer']}] archive {archive['file']} from the build cache", flush=True)
        return target
    url = location.rstrip("/") + "/" + archive["file"]
    print(f"[{spec['layer']}] downloading {url}", flush=True)
    partial = target.with_suffix(".partial")
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "ngc-paddle-build"})
        with urllib.request.urlopen(request, timeout=60, context=ssl_context()) as resp, partial.open("wb") as out:
            shutil.copyfileobj(resp, out, CHUNK)
    except Exception as exc:  # any network failure: the source cannot be reached from here
        partial.unlink(missing_ok=True)
        fail(spec, archive, f"the source could not be reached ({type(exc).__name__})")
    partial.replace(target)
    return target


def is_library(member: tarfile.TarInfo, folder: str) -> bool:
    """A shared object directly in `folder` (a file, or a link to a name beside it): lib*.so*."""
    path = PurePosixPath(member.name)
    if str(path.parent) != folder or not (path.name.startswith("lib") and ".so" in path.name):
        return False
    return member.isfile() or (member.issym() and "/" not in member.linkname and member.linkname not in ("", ".."))


def extract(tar: tarfile.TarFile, archive: dict, into: Path, wheel_dir: Path) -> tuple[int, Path | None]:
    """One pass over the archive (a gzip stream of gigabytes is read once): the libraries of its library folder into
    `into`, its locked wheel into `wheel_dir`. Returns (libraries extracted, the wheel's path or None)."""
    into.mkdir(parents=True, exist_ok=True)
    count, wheel = 0, None
    for member in tar:
        if member.name == archive["wheel"]["member"] and member.isfile():
            wheel = wheel_dir / PurePosixPath(member.name).name
            with tar.extractfile(member) as src, wheel.open("wb") as out:  # type: ignore[union-attr]
                shutil.copyfileobj(src, out, CHUNK)
        if not is_library(member, archive["libraries"]):
            continue
        dest = into / PurePosixPath(member.name).name
        count += 1
        if member.issym():
            dest.unlink(missing_ok=True)
            os.symlink(member.linkname, dest)
            continue
        with tar.extractfile(member) as src, dest.open("wb") as out:  # type: ignore[union-attr]
            shutil.copyfileobj(src, out, CHUNK)
        os.chmod(dest, 0o755 if member.mode & 0o111 else 0o644)  # no setuid/setgid or group/other write
    return count, wheel


def install_wheel(spec: dict, archive: dict, wheel: Path) -> None:
    """The archive's wheel, by its locked sha256, with the venv's pip from nowhere else."""
    locked = archive["wheel"]
    requirements = wheel.parent / "requirements.txt"
    requirements.write_text(f"{locked['name']}=={locked['version']} --hash=sha256:{locked['sha256']}\n")
    cmd = [*pip_layer.pip_launcher(spec), "install", "--progress-bar", "off", "--no-input", "--no-deps",
           "--require-hashes", "--only-binary=:all:", "--no-index", "--find-links", str(wheel.parent), "-r",
           str(requirements)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        mismatch = pip_layer.HASH_MISMATCH.search(proc.stdout)
        reason = (f"its wheel {locked['member']} differs from the lock (sha256 {mismatch.group(4)})" if mismatch
                  else f"pip could not install its wheel {locked['member']} (exit {proc.returncode}); see the log "
                       "above")
        fail(spec, archive, reason)


def install(spec: dict, archive: dict) -> None:
    started = time.monotonic()
    path = fetch(spec, archive)
    found = sha256_of(path)
    if found != archive["sha256"]:
        fail(spec, archive, f"the file's sha256 differs from the lock: expected {archive['sha256']}, got {found}",
             f"the source serves another file than when the lock was made (replaced, tampered, or another mirror); "
             f"check it, and only if the change is wanted run ngc-paddle lock {spec['release']} --flavor "
             f"{spec['flavor']} and commit the new lock")
    into, record_file = Path(archive["into"]), Path(archive["record"])
    with tempfile.TemporaryDirectory(prefix="ngc-archive-wheel-") as tmp:
        try:
            with tarfile.open(path, "r:*") as tar:
                count, wheel = extract(tar, archive, into, Path(tmp))
        except (tarfile.TarError, OSError, EOFError) as exc:
            fail(spec, archive, f"it could not be read ({type(exc).__name__}: {exc})")
        if count == 0:
            fail(spec, archive, f"it holds no shared library in {archive['libraries']}/")
        if wheel is None:
            fail(spec, archive, f"it holds no {archive['wheel']['member']}")
        install_wheel(spec, archive, wheel)
    record = {key: archive[key] for key in ("component", "version", "file", "sha256", "source")}
    record["wheel"] = {"name": archive["wheel"]["name"], "version": archive["wheel"]["version"]}
    record_file.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"[{spec['layer']}] archive {archive['file']}: {count} libraries into {into}, wheel "
          f"{archive['wheel']['name']} {archive['wheel']['version']} ({time.monotonic() - started:.1f}s)", flush=True)


def main() -> None:
    spec = json.loads(os.environ["LAYER_SPEC"])
    if sys.argv[1:] == ["--libraries"]:  # the folders to register with the loader (register-libs.sh)
        print(" ".join(archive["into"] for archive in spec.get("archives", [])))
        return
    if spec.get("left_out") or spec.get("pending"):
        return  # install_pip_layer.py said why (and stops a pending flavor)
    for archive in spec.get("archives", []):
        install(spec, archive)


if __name__ == "__main__":
    main()
