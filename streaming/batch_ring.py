"""Anonymous shared memory that carries one DataLoader worker's batch bytes to the main process.

The worker copies each chunk's tensor bytes into free slots of its ring and sends only where
they are; the main process hands out tensors that view those bytes (no copy), and the slots are
free again once no tensor uses them (:meth:`Ring.lend`), in whatever order that happens: a batch
a training loop keeps (the first one, say) holds only its own slots. Nothing is named, so nothing
is left behind: the memory (a ``memfd``) goes away with the last process that maps it. A chunk
that does not fit (too few free slots, or too big) travels in its message instead, so a worker
never waits on the main process here.
"""

from __future__ import annotations

import math
import mmap
import os
import secrets
import threading
import weakref
from multiprocessing import context, reduction
from typing import Any

import numpy as np

__all__ = ["ALIGN", "SLOT_BYTES", "Ring", "ring_of"]

# Rings made by this process, by token: where unpickled chunks find their bytes.
_MINE: weakref.WeakValueDictionary[str, Ring] = weakref.WeakValueDictionary()
ALIGN = 64  # arrays in a payload start at multiples of this (any dtype, SIMD loads)
SLOT_BYTES = 1 << 16  # a payload takes whole slots: one chunk of small rows fits in one
_COUNTERS = 64  # header: int64 [0] runs of slots taken (statistics, for tests), then a byte a slot


class Ring:
    """Shared memory for one worker's chunk bytes, in slots (made by the main process).

    Each slot's byte in the header says whether it is in use: the worker sets it when it puts a
    payload there, the main process clears it when nothing views the payload any more. Each side
    only ever flips the other's way, so no lock is shared.

    Args:
        size (int): Bytes the ring holds (rounded up to whole slots).

    Raises:
        OSError: If the platform has no ``memfd_create`` (Linux's) or refuses it.
    """

    def __init__(self, size: int) -> None:
        if not hasattr(os, "memfd_create"):
            raise OSError("shared-memory rings need memfd_create (Linux)")
        self.slots = max(1, -(-size // SLOT_BYTES))
        self.token = secrets.token_hex(8)
        self.fd = os.memfd_create("shardstream-batches", os.MFD_CLOEXEC)
        self._open()
        os.ftruncate(self.fd, self._header_bytes() + self.slots * SLOT_BYTES)
        self._map()
        _MINE[self.token] = self

    @property
    def size(self) -> int:
        """Bytes the ring holds."""
        return self.slots * SLOT_BYTES

    def _header_bytes(self) -> int:
        return -(-(_COUNTERS + self.slots) // mmap.PAGESIZE) * mmap.PAGESIZE

    def _open(self) -> None:
        # The descriptor is closed when the ring is collected (its maps go with it).
        weakref.finalize(self, os.close, self.fd)

    def _map(self) -> None:
        header = self._header_bytes()
        self.map = mmap.mmap(self.fd, header + self.size)
        self.counters = np.frombuffer(self.map, np.int64, 1)
        self.used = np.frombuffer(self.map, np.uint8, self.slots, _COUNTERS)
        self.data = np.frombuffer(self.map, np.uint8, self.size, header)
        self.address = self.data.ctypes.data
        self._lock = threading.Lock()  # (worker side: the feeder thread puts, the loop takes)

    def __reduce__(self) -> tuple[Any, ...]:
        # Only to start a spawned worker: the descriptor goes along with the process.
        if context.get_spawning_popen() is None:
            raise TypeError("a Ring can only be passed to a worker process being started")
        return _attach, (reduction.DupFd(self.fd), self.slots, self.token)

    @property
    def puts(self) -> int:
        """Runs of slots taken so far: payloads put and arrays made (by any worker using it)."""
        return int(self.counters[0])

    def take(self, nbytes: int) -> int | None:
        """Take free slots for ``nbytes`` (worker side; its threads may share the ring).

        Args:
            nbytes (int): Bytes needed (at least 1).

        Returns:
            Optional[int]: Where they start in the ring (a slot's start), or ``None`` if there
                are not enough free slots in a row.
        """
        need = -(-nbytes // SLOT_BYTES)
        if need > self.slots:
            return None
        with self._lock:
            # The first run of free slots: the low slots are reused, so small payloads keep
            # touching the same few pages.
            first = self.used.tobytes().find(b"\0" * need)
            if first < 0:
                return None
            self.used[first:first + need] = 1
            self.counters[0] += 1
        return first * SLOT_BYTES

    def put(self, arrays: list[tuple[int, np.ndarray]], nbytes: int) -> int | None:
        """Copy byte arrays into free slots, each at its offset in one payload (worker side).

        Args:
            arrays (List[Tuple[int, NDArray[np.uint8]]]): Each array's offset in the payload
                (a multiple of :data:`ALIGN`, for arrays to be viewed as any dtype) and bytes.
            nbytes (int): The payload's length (at least 1).

        Returns:
            Optional[int]: Where the payload starts in the ring (a slot's start), or ``None``
                if there are not enough free slots in a row for it.
        """
        start = self.take(nbytes)
        if start is None:
            return None
        for offset, array in arrays:
            self.data[start + offset:start + offset + array.nbytes] = array
        return start

    def array(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
        """A new array in free slots, for a batch to be made in place (worker side): sent in a
        chunk, its bytes are not copied again (see :meth:`where`).

        Args:
            shape (Tuple[int, ...]): Its shape.
            dtype (np.dtype): Its dtype.

        Returns:
            Optional[NDArray]: The array, or ``None`` if it would waste most of a slot or there
                is no room for it.
        """
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < SLOT_BYTES // 2:
            return None
        start = self.take(nbytes)
        if start is None:
            return None
        return self.data[start:start + nbytes].view(dtype).reshape(shape)

    def where(self, address: int, nbytes: int) -> int | None:
        """Where an array made by :meth:`array` is, from its address (``None`` if it is not
        one: outside the ring, or not at a slot's start)."""
        start = address - self.address
        if 0 <= start and start + nbytes <= self.size and start % SLOT_BYTES == 0 and nbytes:
            return start
        return None

    def lend(self, start: int, nbytes: int) -> np.ndarray:
        """A payload's bytes, to be viewed by tensors (main side).

        Its slots are free again once the returned array and everything made from it (views,
        tensors from ``torch.from_numpy``) are gone.

        Args:
            start (int): Where :meth:`put` put it.
            nbytes (int): Its length.

        Returns:
            NDArray[np.uint8]: A writable array of its bytes in the ring.
        """
        return np.asarray(_Lease(self, start, nbytes))

    def release(self, start: int, nbytes: int, keep: int = 0) -> None:
        """Free a payload's slots (main side, or the worker's for an array never sent, or
        sent only in part).

        Args:
            start (int): Where :meth:`put` put it (or :meth:`array` made it).
            nbytes (int): Its length.
            keep (int): Its first bytes still in use (sent): their slots stay taken.
                Defaults to ``0``.
        """
        first = start // SLOT_BYTES
        self.used[first - (-keep // SLOT_BYTES):first - (-nbytes // SLOT_BYTES)] = 0


class _Lease:
    """A payload's bytes as NumPy sees them (``__array_interface__``): the base of every array
    and tensor made from them, so that its slots are freed exactly when the last of those goes."""

    __slots__ = ("ring", "start", "nbytes", "__array_interface__")

    def __init__(self, ring: Ring, start: int, nbytes: int) -> None:
        self.ring = ring  # (the ring's map stays valid while its bytes are in use)
        self.start = start
        self.nbytes = nbytes
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                    "data": (ring.address + start, False), "version": 3}

    def __del__(self) -> None:
        self.ring.release(self.start, self.nbytes)


def _attach(fd: Any, slots: int, token: str) -> Ring:
    """Map a ring passed to a spawned worker."""
    ring = Ring.__new__(Ring)
    ring.slots, ring.token, ring.fd = slots, token, fd.detach()
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
