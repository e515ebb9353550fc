"""Atomic file creation: a file appears under its final name only when complete and on disk."""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Iterator

__all__ = ["atomic_file", "fsync_dir"]


def fsync_dir(dirname: str) -> None:
    """Flush a directory entry (a rename) to disk; a no-op where directories can't be opened.

    Args:
        dirname (str): The directory.
    """
    try:
        fd = os.open(dirname or ".", os.O_RDONLY)
    except OSError:  # e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: str) -> Iterator[tuple[int, str]]:
    """Create ``path`` atomically: yield an open descriptor to a temp file beside it.

    The temp file lives in the same directory (so the final rename is atomic), is named
    ``.BASENAME.XXXX.part`` and is fsynced and renamed over ``path`` when the block exits
    cleanly. If the block raises, the temp file is removed and ``path`` is untouched.

    Args:
        path (str): Final file path. Its directory is created if missing.

    Yields:
        Tuple[int, str]: ``(fd, temp_path)``; the caller writes through ``fd`` (e.g.
        ``os.pwrite``) or by path; the descriptor is closed here.
    """
    dirname = os.path.dirname(os.path.abspath(path))
    os.makedirs(dirname, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dirname, prefix=f".{os.path.basename(path)}.", suffix=".part")
    try:
        try:
            # mkstemp makes 0600 files; shards and indexes are meant to be readable by others.
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o644)
            yield fd, tmp
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(dirname)
