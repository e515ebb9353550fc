"""The chunk loader's queues (``streaming.worker_queues``) and the project's file locks
(``streaming.locks``), between real processes.

A queue writes a small message from the putting thread while the pipe has room and no message
went through the feeder thread before; everything else goes through the feeder, pickled once.
Whichever way a message goes, readers in other processes get every message, in order.
"""

from __future__ import annotations

import fcntl
import gc
import mmap
import multiprocessing
import os
import threading
import time
import weakref
from queue import Full

import pytest
import torch
from filelock import Timeout
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming import StreamingDataLoader, StreamingDataset, locks
from streaming.locks import FileLock
from streaming.worker_queues import DIRECT_BYTES, DirectContext, DirectQueue

CONTEXTS = ["fork", "spawn"]


def _echo(inbox, outbox) -> None:
    """A worker: sends back every message it gets, until ``None``."""
    while True:
        item = inbox.get(timeout=30)
        if item is None:
            return
        outbox.put(item)


def _send_all(queue, items) -> None:
    """A writer process: puts ``items`` in order."""
    for item in items:
        queue.put(item)


class Counted:
    """Counts its picklings (in this process): a chunk's pickling moves bytes into its ring, so
    it must happen once per message, whichever way the message goes."""

    dumps = 0

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def __reduce__(self):
        Counted.dumps += 1
        return Counted, (self.payload,)

    def __eq__(self, other) -> bool:
        return type(other) is Counted and other.payload == self.payload


@pytest.mark.parametrize("method", CONTEXTS)
def test_messages_cross_processes_in_order(method) -> None:
    ctx = DirectContext(multiprocessing.get_context(method))
    inbox, outbox = ctx.Queue(), ctx.Queue()
    worker = ctx.Process(target=_echo, args=(inbox, outbox), daemon=True)
    worker.start()
    try:
        # One at a time: every message is written by the putting thread.
        for i in range(20):
            inbox.put((i, b"y" * i))
            assert outbox.get(timeout=30) == (i, b"y" * i)
        assert inbox._thread is None and outbox._thread is None
        # Many, nobody reading the replies meanwhile: pipes fill, feeders take over, in order.
        sent = [(i, b"x" * (i * 37 % 3000)) for i in range(300)]
        for item in sent:
            inbox.put(item)
        got = [outbox.get(timeout=30) for _ in sent]
        assert got == sent
    finally:
        inbox.put(None)
        worker.join(30)
    assert worker.exitcode == 0


def test_the_default_context_follows_multiprocessing() -> None:
    ctx = DirectContext()
    assert ctx.get_start_method() == multiprocessing.get_start_method()
    assert ctx.get_context() is multiprocessing.get_context()
    assert isinstance(ctx.Queue(), DirectQueue)
    assert type(ctx.Process(target=print)) is multiprocessing.get_context().Process


def test_a_full_pipe_never_blocks_the_writer() -> None:
    # Nobody reads: a plain blocking write would stop at the pipe's 64 KB. Past the room left,
    # messages go to the feeder thread, and from then on all of them (their order kept).
    ctx = multiprocessing.get_context("fork")
    queue = DirectQueue(ctx=ctx)
    items = [bytes([i % 251]) * 1000 for i in range(400)]  # ~400 KB
    started = time.monotonic()
    for item in items:
        queue.put(item)
    assert time.monotonic() - started < 10
    assert queue._thread is not None
    got = [queue.get(timeout=30) for _ in items]
    assert got == items


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 3 * DIRECT_BYTES), min_size=1, max_size=12))
def test_big_and_small_messages_are_pickled_once_and_arrive_in_order(sizes) -> None:
    ctx = multiprocessing.get_context("fork")
    queue = DirectQueue(ctx=ctx)
    items = [Counted(bytes([k % 256]) * size) for k, size in enumerate(sizes)]
    reader = threading.Thread(target=lambda: got.extend(queue.get(timeout=30) for _ in items))
    got: list[Counted] = []
    reader.start()  # (a reader drains the pipe: big messages go through the feeder)
    before = Counted.dumps
    for item in items:
        queue.put(item)
    reader.join(60)
    assert got == items
    assert Counted.dumps - before == len(items)
    # A pipe holds a number of pages, and a write that does not fit in the last one's room
    # starts a page of its own: messages that take at most that many pages, even with none
    # read yet, never find it full (taking 64 KB for the bound failed now and then:
    # [0, 16270, 0, 36750, 257, 3722] can take 17 pages). (200: the pickle's and frame's bytes.)
    pages = fcntl.fcntl(queue._writer.fileno(), fcntl.F_GETPIPE_SZ) // mmap.PAGESIZE
    if sum(-(-(size + 200) // mmap.PAGESIZE) for size in sizes) <= pages:
        assert queue._thread is None
    elif max(sizes) > DIRECT_BYTES:
        assert queue._thread is not None


def test_a_writer_process_whose_reader_is_gone_does_not_raise() -> None:
    # As multiprocessing's own queue: a broken pipe is the feeder thread's to report.
    ctx = DirectContext(multiprocessing.get_context("fork"))
    queue = ctx.Queue()
    queue._reader.close()
    writer = ctx.Process(target=_send_all, args=(queue, [b"a", b"b" * 10]))
    writer.start()
    writer.join(30)
    assert writer.exitcode == 0


def test_bounded_queue_counts_direct_messages() -> None:
    ctx = multiprocessing.get_context("fork")
    queue = DirectQueue(2, ctx=ctx)
    queue.put(1)
    queue.put(2)
    with pytest.raises(Full):
        queue.put(3, timeout=0.05)
    assert queue.get(timeout=5) == 1
    queue.put(3, timeout=5)
    assert [queue.get(timeout=5), queue.get(timeout=5)] == [2, 3]


@pytest.mark.parametrize("method", CONTEXTS)
def test_the_loaders_queues_write_directly(token_dataset, method) -> None:
    ds = StreamingDataset(local=token_dataset, shuffle=False, batch_size=8)
    loader = StreamingDataLoader(ds, batch_size=8, num_workers=2, persistent_workers=True,
                                 multiprocessing_context=method)
    for _ in range(2):
        ids = torch.cat([batch["id"] for batch in loader])
        assert sorted(ids.tolist()) == list(range(ds.size))
    iterator = loader._chunk_loader._iterator
    assert isinstance(iterator._worker_result_queue, DirectQueue)
    assert all(type(q) is DirectQueue and q._thread is None for q in iterator._index_queues)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_queues_and_their_pipes_go_with_their_last_reference() -> None:
    # No reference cycle: a queue (one whose feeder thread wrote, too) is freed, and its pipe
    # closed, when it is dropped, not at the next full collection. Its pipes stayed open
    # before: three queues an epoch with fresh workers, so six descriptors more an epoch
    # (~170 epochs to a 1024-descriptor limit) while the collector left them.
    was = gc.isenabled()
    gc.disable()
    try:
        before = _open_fds()
        for _ in range(3):
            queue = DirectQueue(ctx=multiprocessing.get_context("fork"))
            queue.put(b"x" * (DIRECT_BYTES + 1))  # (through the feeder thread)
            assert queue.get(timeout=5) == b"x" * (DIRECT_BYTES + 1)
            queue.close()
            queue.join_thread()
            gone = weakref.ref(queue)
            del queue
            assert gone() is None
        assert _open_fds() == before
    finally:
        if was:
            gc.enable()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_epochs_with_fresh_workers_leave_no_descriptor_open(token_dataset) -> None:
    ds = StreamingDataset(local=token_dataset, shuffle=True, batch_size=8)
    loader = StreamingDataLoader(ds, batch_size=8, num_workers=2)
    was = gc.isenabled()
    gc.disable()
    try:
        counts = []
        for _ in range(4):
            ids = torch.cat([batch["id"] for batch in loader])
            assert sorted(ids.tolist()) == list(range(ds.size))
            counts.append(_open_fds())
        assert counts == [counts[0]] * 4
    finally:
        if was:
            gc.enable()


def _hold(path: str, seconds: float, held) -> None:
    with FileLock(path, thread_local=False):
        held.set()
        time.sleep(seconds)


def test_a_released_lock_is_taken_within_milliseconds(tmp_path) -> None:
    path = str(tmp_path / "x.lock")
    held = multiprocessing.get_context("fork").Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold, args=(path, 0.005, held))
    holder.start()
    assert held.wait(30)
    started = time.monotonic()
    with FileLock(path, thread_local=False):
        waited = time.monotonic() - started
    holder.join(30)
    # The holder lets go ~5 ms in: retried at 0.5, 1.5, 3.5, 7.5 ms, ... the lock is taken by
    # ~8 ms (plus a loaded box's delays: the bound leaves ~35 ms); filelock alone would retry
    # at 50 ms.
    assert waited < 0.045


def test_lock_timeouts_and_retry_intervals(tmp_path, monkeypatch) -> None:
    path = str(tmp_path / "y.lock")
    held = multiprocessing.get_context("fork").Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold, args=(path, 1.0, held))
    holder.start()
    assert held.wait(30)
    sleeps: list[float] = []
    real_sleep, me = time.sleep, threading.get_ident()

    def sleep(seconds: float) -> None:  # (time.sleep itself: other threads' sleeps pass by)
        if threading.get_ident() == me:
            sleeps.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(locks.time, "sleep", sleep)
    lock = FileLock(path, thread_local=False)
    with pytest.raises(Timeout):
        lock.acquire(timeout=0.3)
    assert sleeps[0] == locks.FIRST_RETRY_SECONDS
    assert all(b == min(2 * a, locks.LAST_RETRY_SECONDS) or b < a
               for a, b in zip(sleeps, sleeps[1:]))
    assert max(sleeps) <= locks.LAST_RETRY_SECONDS
    with pytest.raises(Timeout):
        lock.acquire(timeout=0)
    with pytest.raises(Timeout):
        lock.acquire(blocking=False)
    holder.join(30)
    with lock.acquire(timeout=0):
        assert lock.is_locked
    assert not lock.is_locked


def test_an_unpicklable_batch_stops_the_loader_instead_of_hanging(token_dataset) -> None:
    # The worker pickles its chunk itself now: the error ends it, and torch's loader says so.
    # (Through a feeder thread the chunk was dropped with a printed traceback and the main
    # process waited for it forever; the loader's timeout here turns that into another error.)
    class Local(str):  # (a local class: pickle cannot name it)
        pass

    class Unpicklable(StreamingDataset):
        def get_item(self, idx):
            sample = super().get_item(idx)
            sample["text"] = Local(sample["text"])
            return sample

    ds = Unpicklable(local=token_dataset, shuffle=False, batch_size=8)
    loader = StreamingDataLoader(ds, batch_size=8, num_workers=2, timeout=60)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)
