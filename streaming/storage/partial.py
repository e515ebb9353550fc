"""The head of a file whose download is still being written, for readers that can't wait.

A shard is used under its final name only once it is complete and on disk (``atomic.py``). The
first rows of an epoch need not wait that long: a download that writes a file front to back
publishes, while it runs, its temp file and how many leading bytes are already written;
:func:`read_head` hands those bytes to a reader in the same process as soon as enough are
there. The bytes are the object's own bytes from a response still being received; a reader
decoding them must bounds-check everything (a failed attempt's bytes are rewritten by the
retry, with the same content). Measured on a loopback S3 endpoint: the first rows of a 64 MB
shard are readable ~0.1 s before the whole shard lands, with no extra request.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Callable, Iterator

__all__ = ["publishing", "read_head"]

# Seconds between checks while waiting for a download to start or to make progress.
_POLL = 0.005

_changed = threading.Condition()
_active: dict[str, _Progress] = {}  # final path -> the download writing it


class _Progress:
    __slots__ = ("ended", "tmp", "written")

    def __init__(self, tmp: str) -> None:
        self.tmp = tmp
        self.written = 0
        self.ended = False


@contextlib.contextmanager
def publishing(path: str, tmp: str) -> Iterator[Callable[[int], None]]:
    """Publish the download of ``path`` into ``tmp`` while the block runs.

    Args:
        path (str): The file's final name.
        tmp (str): The temp file being written (renamed to ``path`` when complete).

    Yields:
        Callable[[int], None]: ``advance(n)``: the first ``n`` bytes of ``tmp`` are written
        (call it again with a smaller ``n`` when a retry starts over).
    """
    key = os.path.abspath(path)
    progress = _Progress(tmp)

    def advance(written: int) -> None:
        with _changed:
            progress.written = written
            _changed.notify_all()

    with _changed:
        _active[key] = progress
        _changed.notify_all()
    try:
        yield advance
    finally:
        with _changed:
            progress.ended = True
            if _active.get(key) is progress:
                del _active[key]
            _changed.notify_all()


def read_head(path: str, size: int, *, start_within: float, timeout: float) -> bytes | None:
    """The first ``size`` bytes of ``path``, from a download of it still in progress here.

    Args:
        path (str): The file's final name.
        size (int): How many leading bytes are wanted.
        start_within (float): Seconds to wait for a download of ``path`` to begin in this
            process (e.g. one just submitted to a thread pool).
        timeout (float): Seconds to wait at most in all.

    Returns:
        bytes | None: Exactly ``size`` bytes, or ``None``: no download of ``path`` is running
        here (none began in time, the file is complete already, or the download ended or failed
        before ``size`` bytes were written) or time ran out. The caller then reads the file
        the usual way.
    """
    key = os.path.abspath(path)
    now = time.monotonic()
    start_by, give_up = now + start_within, now + timeout
    progress = None
    with _changed:
        while True:
            progress = progress or _active.get(key)
            if progress is not None:
                if progress.written >= size:
                    tmp = progress.tmp
                    break
                if progress.ended:
                    return None  # failed, or complete with fewer bytes than wanted
            elif os.path.exists(path) or time.monotonic() > start_by:
                return None  # complete already, or never began here
            left = give_up - time.monotonic()
            if left <= 0:
                return None
            _changed.wait(min(_POLL, left))
    # The temp file may have been renamed to its final name meanwhile: same inode, same bytes.
    for name in (tmp, path):
        try:
            with open(name, "rb") as f:
                data = os.pread(f.fileno(), size, 0)
        except FileNotFoundError:
            continue
        return data if len(data) == size else None
    return None
