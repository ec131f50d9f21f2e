"""Read a zip archive split into ordered parts (``x.zip.001``, ``x.zip.002``, ...) in place.

:class:`ConcatReader` presents the parts as one seekable file, so :mod:`zipfile` can list and
extract single members (e.g. only the tokenizer) without first writing the whole archive.
"""

from __future__ import annotations

import bisect
import io
import shutil
import zipfile
from collections.abc import Sequence
from pathlib import Path


class ConcatReader(io.RawIOBase):
    """A read-only, seekable view of several files concatenated in order."""

    def __init__(self, parts: Sequence[Path]) -> None:
        super().__init__()
        self._parts = [Path(p) for p in parts]
        sizes = [p.stat().st_size for p in self._parts]
        self._starts = [0]
        for size in sizes:
            self._starts.append(self._starts[-1] + size)
        self._size = self._starts[-1]
        self._pos = 0
        self._handles = [open(p, "rb") for p in self._parts]  # noqa: SIM115 (closed in close())

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            index = bisect.bisect_right(self._starts, self._pos) - 1
            handle = self._handles[index]
            handle.seek(self._pos - self._starts[index])
            want = min(len(view) - done, self._starts[index + 1] - self._pos)
            n = handle.readinto(view[done : done + want])
            if not n:
                break
            done += n
            self._pos += n
        return done

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        super().close()


def extract(parts: Sequence[Path], out_dir: Path, *, members: Sequence[str] | None = None, strip_prefix: str = "") -> list[Path]:
    """Extract ``members`` (all files when ``None``) of the split archive into ``out_dir``.

    Parameters
    ----------
    parts
        The part files, in order.
    out_dir
        Destination folder.
    members
        Archive names to extract (after ``strip_prefix`` is removed); ``None`` for all files.
    strip_prefix
        Leading folder inside the archive to drop from every name.

    Returns
    -------
    list of Path
        The files written.
    """
    written = []
    with ConcatReader(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
        for info in archive.infolist():
            if info.is_dir() or not info.filename.startswith(strip_prefix):
                continue
            rel = info.filename[len(strip_prefix) :]
            if not rel or ".." in Path(rel).parts or rel.endswith("desktop.ini"):
                continue
            if members is not None and rel not in members:
                continue
            target = out_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            written.append(target)
    return written
