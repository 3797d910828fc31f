"""Write a run's output files all at once, only when the run succeeded, never through a symlink.

Why: a scan or bake-file run that fails half-way must leave the previous outputs as they were
(a fresh sbom.cdx.json beside a stale scan.json is worse than either), and a symlink planted in an
output folder must not redirect a write onto another file. Files are staged under temporary names
in their own folder (same filesystem, so `os.replace` is atomic and replaces a link, not its target)
and moved into place on `commit()`; `staged()` discards them when the run raises.
"""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ngc_paddle.host_errors import NgcPaddleError


def ensure_folder(folder: Path, stop: Path | None = None) -> Path:
    """Create `folder`; refuse it, or any folder between `stop` and it, when it is a symlink."""
    folder = check_folder(folder, stop)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NgcPaddleError(f"{folder}: (folder): cannot be made ({exc.strerror}); fix: name a folder you can "
                             "write") from None
    return folder


def check_folder(folder: Path, stop: Path | None = None) -> Path:
    """`folder` when it could be made (nothing made yet): a run that writes it later is refused before it starts,
    not half-way, when it is a file, lies under one or is a symlink."""
    folder = Path(folder)
    chain = [folder, *folder.parents]
    for part in chain:
        if stop is not None and part == stop:
            break
        if part.is_symlink():
            raise NgcPaddleError(f"{part}: (folder): is a symlink; fix: remove the link, outputs are not "
                                 "written through symlinks")
        if stop is None:
            break
    blocker = next((part for part in chain if part.exists() and not part.is_dir()), None)
    if blocker is not None:
        what = "is a file" if blocker == folder else f"lies under {blocker}, which is a file"
        raise NgcPaddleError(f"{folder}: (folder): {what}, not a folder; fix: name a folder for the outputs")
    return folder


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Staged:
    """Output files waiting to be moved into place."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def path(self, final: Path) -> Path:
        """A new temporary file beside `final` to write into; it becomes `final` on commit. An output that is a
        folder, or whose parent is not one, is bad input (one line), found before anything is written."""
        if final.is_dir() and not final.is_symlink():
            raise NgcPaddleError(f"{final}: (file): is a folder, where an output file goes; fix: remove or rename "
                                 "the folder, or write the outputs elsewhere")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
        except OSError as exc:
            raise NgcPaddleError(f"{final}: (file): cannot be written in {final.parent} ({exc.strerror}); fix: "
                                 "name a folder you can write for the outputs") from None
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual mode
        os.close(fd)
        self._pending.append((Path(tmp), final))
        return Path(tmp)

    def write_text(self, final: Path, text: str) -> Path:
        self.path(final).write_text(text)
        return final

    def commit(self) -> None:
        for tmp, final in self._pending:
            os.replace(tmp, final)
        self._pending.clear()

    def discard(self) -> None:
        for tmp, _final in self._pending:
            tmp.unlink(missing_ok=True)
        self._pending.clear()


@contextmanager
def staged() -> Iterator[Staged]:
    """Stage outputs; they are moved into place when the block ends without an exception."""
    stage = Staged()
    try:
        yield stage
    except BaseException:
        stage.discard()
        raise
    stage.commit()
