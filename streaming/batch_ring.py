"""A ring of anonymous shared memory that carries one DataLoader worker's batch bytes.

The worker copies each chunk's tensor bytes into the ring and sends only where they are; the
main process copies them out into new tensors and marks them read. Nothing is named, so nothing
is left behind: the memory (a ``memfd``) goes away with the last process that maps it. A chunk
that does not fit (the ring is full of bytes not yet read, or the chunk is too big) travels in
its message instead, so a worker never waits on the main process here.
"""

from __future__ import annotations

import mmap
import os
import secrets
import weakref
from multiprocessing import context, reduction
from typing import Any

import numpy as np

__all__ = ["Ring", "ring_of"]

# Rings made by this process, by token: where unpickled chunks find their bytes.
_MINE: weakref.WeakValueDictionary[str, Ring] = weakref.WeakValueDictionary()
_HEADER = 64  # int64 [0]: bytes read (absolute, the main process's); [1]: bytes written


class Ring:
    """Shared memory for one worker's chunk bytes (made by the main process).

    Positions are absolute byte counts since the ring was made; position ``p`` is at
    ``p % size`` in the ring, and a payload never wraps (the tail is skipped instead).

    Args:
        size (int): Bytes the ring holds.

    Raises:
        OSError: If the platform has no ``memfd_create`` (Linux's) or refuses it.
    """

    def __init__(self, size: int) -> None:
        if not hasattr(os, "memfd_create"):
            raise OSError("shared-memory rings need memfd_create (Linux)")
        self.size = size
        self.token = secrets.token_hex(8)
        self.fd = os.memfd_create("shardstream-batches", os.MFD_CLOEXEC)
        self._open()
        os.ftruncate(self.fd, _HEADER + size)
        self._map()
        _MINE[self.token] = self

    def _open(self) -> None:
        # The descriptor is closed when the ring is collected (its maps go with it).
        weakref.finalize(self, os.close, self.fd)

    def _map(self) -> None:
        self.map = mmap.mmap(self.fd, _HEADER + self.size)
        self.head = np.frombuffer(self.map, np.int64, 2)
        self.data = np.frombuffer(self.map, np.uint8, self.size, _HEADER)
        self.written = int(self.head[1])

    def __reduce__(self) -> tuple[Any, ...]:
        # Only to start a spawned worker: the descriptor goes along with the process.
        if context.get_spawning_popen() is None:
            raise TypeError("a Ring can only be passed to a worker process being started")
        return _attach, (reduction.DupFd(self.fd), self.size, self.token)

    def start_writing(self) -> None:
        """Continue from the last byte written to the ring (by any worker before this one)."""
        self.written = max(int(self.head[0]), int(self.head[1]))

    def put(self, arrays: list[np.ndarray], nbytes: int) -> int | None:
        """Copy byte arrays into the ring, one after another (worker side).

        Args:
            arrays (List[NDArray[np.uint8]]): The bytes.
            nbytes (int): Their total length.

        Returns:
            Optional[int]: The position of the first byte, or ``None`` if they do not fit.
        """
        start = self.written
        at = start % self.size
        if at + nbytes > self.size:  # skip the tail: a payload is never split
            start += self.size - at
            at = 0
        if nbytes > self.size or start + nbytes - int(self.head[0]) > self.size:
            return None
        for array in arrays:
            self.data[at:at + array.nbytes] = array
            at += array.nbytes
        self.written = start + nbytes
        self.head[1] = self.written
        return start

    def view(self, start: int, nbytes: int) -> np.ndarray:
        """The bytes at a position (main side).

        Args:
            start (int): Position from :meth:`put`.
            nbytes (int): Their length.

        Returns:
            NDArray[np.uint8]: A view of them in the ring.
        """
        at = start % self.size
        return self.data[at:at + nbytes]

    def done(self, stop: int) -> None:
        """Mark everything before position ``stop`` read (main side).

        Args:
            stop (int): The position after the last byte read.
        """
        if stop > int(self.head[0]):
            self.head[0] = stop


def _attach(fd: Any, size: int, token: str) -> Ring:
    """Map a ring passed to a spawned worker."""
    ring = Ring.__new__(Ring)
    ring.size, ring.token, ring.fd = size, token, fd.detach()
    ring._open()
    ring._map()
    return ring


def ring_of(token: str) -> Ring:
    """The ring this process made with ``token``.

    Args:
        token (str): The ring's token.

    Returns:
        Ring: The ring.

    Raises:
        RuntimeError: If this process has no such ring (any more).
    """
    ring = _MINE.get(token)
    if ring is None:
        raise RuntimeError(f"a DataLoader worker's batches refer to ring {token}, which this "
                           "process does not have: batches must be read by the loader that "
                           "started the worker")
    return ring
