"""Atomic file creation: a file appears under its final name only when complete and on disk."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
from typing import Any, Iterator

__all__ = ["STORAGE_ERRNOS", "atomic_file", "fsync_dir", "naming", "start_writeback"]

# Linux's sync_file_range(2) flag: start writing these dirty pages out, don't wait.
_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range: Any = None  # resolved on first use; False where unavailable


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Start writing ``[offset, offset + length)`` of ``fd`` to disk without waiting for it.

    A file written at network speed and then fsynced waits at the end for all of its dirty
    pages (~20 ms for 64 MB here); handing each written stretch to the disk as it completes
    leaves the final fsync only the last stretch (~2 ms), the way databases bound their
    fsyncs. Linux only (``sync_file_range``); elsewhere, and on any error, a no-op: the final
    fsync still makes the file durable either way.

    Args:
        fd (int): An open, writable file descriptor.
        offset (int): First byte of the stretch.
        length (int): Its length in bytes.
    """
    global _sync_file_range
    if _sync_file_range is None:
        _sync_file_range = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                func = ctypes.CDLL(None, use_errno=True).sync_file_range
                func.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong,
                                 ctypes.c_uint]
                func.restype = ctypes.c_int
                _sync_file_range = func
            except (OSError, AttributeError):
                pass
    if _sync_file_range and length > 0:
        _sync_file_range(fd, offset, length, _SYNC_FILE_RANGE_WRITE)


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
    cleanly. If the block raises, the temp file is removed and ``path`` is untouched; an
    ``OSError`` of the storage (no space, quota, file too big, read-only) that names no file is
    raised again naming ``path``.

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
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        named = naming(exc, path)
        if named is not None:
            raise named from exc
        raise
    fsync_dir(dirname)


# Errors only writing a file raises (not EIO, which a read feeding the file, say from a network
# mount, may raise too): naming() names the file in them, and they are not retried
# (streaming.storage.retry).
STORAGE_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ENOSPC", "EDQUOT", "EFBIG", "EROFS") if hasattr(errno, name))


def naming(exc: BaseException, path: str) -> OSError | None:
    """``exc`` again naming ``path``, if it is an error of the storage that names no file.

    A write or fsync through a descriptor fails without a name (``[Errno 28] No space left on
    device``); raise what this returns ``from exc`` to say which file could not be written.

    Args:
        exc (BaseException): The error.
        path (str): The file being written.

    Returns:
        Optional[OSError]: The same error naming ``path`` (of the same type), or ``None``.
    """
    if isinstance(exc, OSError) and exc.filename is None and exc.errno in STORAGE_ERRNOS:
        return type(exc)(exc.errno, exc.strerror, path)
    return None
