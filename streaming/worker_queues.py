"""Queues for the chunk loader's processes that write a small message at once.

``multiprocessing``'s ``Queue`` hands every message to a feeder thread, which pickles and writes
it. For the chunk loader's messages (a task to a worker; a chunk, which is only where its bytes
are in the worker's ring, to the main process) that costs more than the message: the feeder
thread must take the GIL from the thread that put the message, so the message leaves only once
that thread lets go of it, and the two threads trade the GIL back and forth for every message.
Measured with 2 workers and token rows, the main process spent ~0.3 ms a chunk so (half of it in
torch's ``record_function`` exit, where it gave the GIL away). Here :meth:`DirectQueue.put`
pickles the message and writes it itself when it is small, the pipe takes it right away (a
non-blocking write: a process whose reader stopped reading still shuts down promptly), and the
feeder thread has nothing left to write (so messages keep their order); any other message goes
the usual way, pickled only once.
"""

from __future__ import annotations

import multiprocessing
import os
import struct
import threading
from multiprocessing import context, queues
from multiprocessing.reduction import ForkingPickler
from queue import Full
from typing import Any

__all__ = ["DIRECT_BYTES", "DirectContext", "DirectQueue"]

# Largest message written by the putting thread (bigger ones, rare here, go to the feeder).
DIRECT_BYTES = 256 << 10


class DirectQueue(queues.Queue):
    """A ``multiprocessing`` queue whose ``put`` writes small messages without the feeder thread
    when that cannot block or reorder them (see the module's docstring); otherwise the same
    queue.

    Args:
        maxsize (int): As ``multiprocessing.Queue``'s. Defaults to ``0`` (no bound).
        ctx (multiprocessing.context.BaseContext): The context its locks belong to.
    """

    def __init__(self, maxsize: int = 0, *, ctx: Any) -> None:
        super().__init__(maxsize, ctx=ctx)

    def _reset(self, *args: Any, **kwargs: Any) -> None:
        # (after construction, a fork or unpickling): the feeder writes through a function
        # that counts what it has still to write. It refers to the connection and the count,
        # not to the queue: a method of the queue kept in its own attributes was a reference
        # cycle, and the queue's pipes stayed open until a full collection (three queues an
        # epoch with fresh workers, six descriptors).
        super()._reset(*args, **kwargs)
        write = self._send_bytes
        self._pending = pending = _Pending()

        def fed(data: bytes) -> None:  # (the feeder thread's write; it holds the write lock)
            try:
                write(data)
            finally:
                pending.add(-1)

        self._send_bytes = fed

    def put(self, obj: Any, block: bool = True, timeout: float | None = None) -> None:
        """Put ``obj`` into the queue (as ``multiprocessing.Queue.put``).

        Args:
            obj (Any): The message.
            block (bool): Wait for room if the queue is bounded and full. Defaults to ``True``.
            timeout (float, optional): At most this long. Defaults to ``None``.

        Raises:
            ValueError: If the queue is closed.
            queue.Full: If it stayed full.
        """
        if self._closed or self._wlock is None:
            super().put(obj, block, timeout)
            return
        data = ForkingPickler.dumps(obj)  # once: a chunk's pickling moves bytes into its ring
        # Not while the feeder has messages to write (this one would overtake them), nor while
        # another writer holds the pipe (every writer, in any process, holds the write lock; a
        # feeder may hold it blocked on a full pipe).
        if len(data) <= DIRECT_BYTES and not self._pending.count:
            if not self._sem.acquire(block, timeout):
                raise Full
            sent = False
            if self._wlock.acquire(False):
                try:
                    sent = not self._pending.count and \
                        self._write_now(struct.pack("!i", len(data)) + data)
                finally:
                    self._wlock.release()
            if sent:
                return
            self._sem.release()
        self._pending.add(1)
        try:
            super().put(_Pickled(bytes(data)), block, timeout)
        except BaseException:
            self._pending.add(-1)
            raise

    def _write_now(self, message: bytes) -> bool:
        """Write ``message`` (header and bytes, as ``Connection.send_bytes`` frames them) if the
        pipe takes some of it right away (the rest then follows as a blocking write would);
        ``False`` (nothing written) if it is full or its reader is gone."""
        fd = self._writer.fileno()
        try:
            os.set_blocking(fd, False)  # (only writers, all holding the write lock, see it)
            try:
                done = os.write(fd, message)
            finally:
                os.set_blocking(fd, True)
        except OSError:  # full (BlockingIOError), or a broken pipe the feeder will report
            return False
        view = memoryview(message)
        while done < len(message):
            done += os.write(fd, view[done:])
        return True


class _Pending:
    """Messages a queue's feeder thread has still to write."""

    __slots__ = ("count", "_lock")

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self, delta: int) -> None:
        """Count ``delta`` more (or, negative, fewer)."""
        with self._lock:
            self.count += delta


class _Pickled:
    """A message pickled already, for the feeder thread: unpickled, it is the message."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        return ForkingPickler.loads, (self.data,)


class DirectContext(context.BaseContext):
    """A multiprocessing context whose queues are :class:`DirectQueue`; everything else
    (processes, events, locks) is ``base``'s.

    Args:
        base (multiprocessing.context.BaseContext, optional): The context to follow; ``None``
            for the default one at the time of each use (as torch's loader uses it when given
            no context).
    """

    def __init__(self, base: context.BaseContext | None = None) -> None:
        self._fixed = base

    @property
    def _base(self) -> context.BaseContext:
        return self._fixed if self._fixed is not None else multiprocessing.get_context()

    @property
    def _name(self) -> str:  # (BaseContext.get_start_method reads it)
        return self._base.get_start_method()

    def get_context(self, method: str | None = None) -> context.BaseContext:
        """The context of ``method``, or ``base`` (whose objects this context makes)."""
        return self._base if method is None else self._base.get_context(method)

    def Process(self, *args: Any, **kwargs: Any) -> Any:  # noqa: N802 (multiprocessing's name)
        """A process of ``base``."""
        return self._base.Process(*args, **kwargs)

    def Queue(self, maxsize: int = 0) -> DirectQueue:  # noqa: N802 (multiprocessing's name)
        """A :class:`DirectQueue` of ``base``."""
        return DirectQueue(maxsize, ctx=self._base)
