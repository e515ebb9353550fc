"""StreamingDataLoader with worker processes: chunked batches equal torch's own loader's.

With workers, the default ``collate_fn`` and a StreamingDataset, each worker batches and
collates its own samples and sends them a chunk at a time (``streaming.worker_batches``); the
main process hands them out in torch's round-robin order. These tests hold that to exactly what
torch's multi-process loader yields, and the chunk's pickling to a faithful round trip.
"""

from __future__ import annotations

import fcntl
import gc
import os
import pickle
import time
import warnings
from itertools import islice
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dataloader_batches import _same, batches
from torch.utils.data import default_collate, get_worker_info

from streaming import StreamingDataLoader, StreamingDataset, batch_ring, fork_heap, worker_batches
from streaming.batch_ring import SLOT_BYTES, Ring, ring_of
from streaming.collate import collate_batch, collate_columns, split_columns
from streaming.worker_batches import PIPE_BYTES, Chunk, ChunkedBatches, interleave


def _torch_collate(batch):
    return default_collate(batch)  # not the default collate_fn itself: torch's own loop


def _pair(local, shuffle=False, **kwargs):
    """A loader taking the chunked path and the same loader going through torch's own."""
    def make(**extra):
        ds = StreamingDataset(local=local, shuffle=shuffle, batch_size=8)
        return StreamingDataLoader(ds, batch_size=8, **kwargs, **extra)
    fast, slow = make(), make(collate_fn=_torch_collate)
    assert fast._batches_in_chunks() and not slow._batches_in_chunks()
    return fast, slow


def _same_epochs(fast, slow, epochs=2) -> None:
    for epoch in range(epochs):
        torch.manual_seed(epoch)
        got = list(fast)
        state = torch.get_rng_state()
        torch.manual_seed(epoch)
        want = list(slow)
        assert torch.equal(state, torch.get_rng_state())  # the same base-seed draw as torch
        assert len(got) == len(want) > 0
        _same(got, want)
        assert fast.num_samples_yielded == slow.num_samples_yielded
        assert fast.state_dict() == slow.state_dict()


@pytest.mark.parametrize("num_workers", [2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("rows", ["token_dataset", "text_dataset"])
def test_worker_batches_equal_torch_loader(request, rows, num_workers, shuffle, drop_last) -> None:
    # Token rows are batched one by one; text rows (ints, strings, bytes) a column at a time.
    fast, slow = _pair(request.getfixturevalue(rows), num_workers=num_workers, shuffle=shuffle,
                       drop_last=drop_last)
    _same_epochs(fast, slow)


def _until_error(loader) -> tuple[list, str | None]:
    """The batches a loader yields, and the type of the error that ended it, if any."""
    got = []
    try:
        for batch in loader:
            got.append(batch)
    except Exception as err:  # noqa: BLE001 - compared with torch's own loader's
        return got, type(err).__name__
    return got, None


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("shuffle", [False, True])
def test_token_rows_of_changing_shapes_equal_torch_loader(shaped_token_dataset, num_workers,
                                                         shuffle) -> None:
    # Token rows whose shape changes every 8 rows: a chunk of batches is stacked only while
    # its rows share a shape, else its batches are collated one by one; in order every batch
    # stacks as torch's does, shuffled torch's stack refuses a batch of two shapes and so do
    # we (at most a chunk earlier: rows are read a chunk ahead).
    def make(collate_fn=None):
        ds = StreamingDataset(local=shaped_token_dataset, shuffle=shuffle, batch_size=8)
        kwargs = {} if collate_fn is None else {"collate_fn": collate_fn}
        return StreamingDataLoader(ds, batch_size=8, num_workers=num_workers, **kwargs)

    got, got_error = _until_error(make())
    want, want_error = _until_error(make(_torch_collate))
    assert got_error == want_error
    if want_error is None:
        assert len(got) == len(want) == 25
    else:
        assert "RuntimeError" in want_error and len(got) <= len(want)
        want = want[:len(got)]
    _same(got, want)
    if not shuffle:
        assert want_error is None


def test_chunks_of_light_rows_grow_to_their_own_limit(text_dataset, token_dataset,
                                                      monkeypatch) -> None:
    # Light rows (strings, bytes, ints) go up to MOST_LIGHT_BATCHES a chunk, other rows up to
    # MOST_BATCHES; both 1, 2, 4, ... first.
    monkeypatch.setattr(worker_batches, "MOST_LIGHT_BATCHES", 8)
    monkeypatch.setattr(worker_batches, "MOST_BATCHES", 2)

    class Overridden(StreamingDataset):  # its samples are its own: not read as light rows
        def __getitem__(self, index):
            return super().__getitem__(index)

    def sizes(dataset):
        chunks = list(ChunkedBatches(dataset, 4, False))
        return [len(chunk.batches) if chunk.split is None else
                -(-len(next(iter(chunk.batches[0].values()))) // chunk.split)
                for chunk in chunks]

    light = [1, 2, 4] + [8] * 5 + [4]  # 203 rows: 51 batches
    assert sizes(StreamingDataset(local=text_dataset, batch_size=4)) == light
    assert sizes(StreamingDataset(local=token_dataset, batch_size=4)) == light
    assert sizes(Overridden(local=token_dataset, batch_size=4)) == [1] + [2] * 25


@pytest.mark.parametrize("rows", ["token_dataset", "text_dataset"])
def test_persistent_workers_equal_torch_loader(request, rows) -> None:
    fast, slow = _pair(request.getfixturevalue(rows), num_workers=2, shuffle=True,
                       persistent_workers=True)
    _same_epochs(fast, slow, epochs=3)
    for ring in fast._chunk_loader.dataset.rings:  # the bytes went through the rings
        assert ring.puts > 0 and not ring.used.any()  # and their slots are free again


@pytest.mark.slow
def test_spawned_workers_equal_torch_loader(token_dataset) -> None:
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True, multiprocessing_context="spawn")
    _same_epochs(fast, slow, epochs=1)


def _init_sees_dataset(worker_id: int) -> None:
    info = get_worker_info()
    if not isinstance(info.dataset, StreamingDataset) or info.id != worker_id:
        raise RuntimeError(f"worker {worker_id} sees {type(info.dataset).__name__}")
    torch.manual_seed(1234 + worker_id)  # no effect on the main process's RNG


def test_worker_init_fn_sees_the_users_dataset(token_dataset) -> None:
    fast, slow = _pair(token_dataset, num_workers=2, worker_init_fn=_init_sees_dataset)
    _same_epochs(fast, slow, epochs=1)


def _init_checks_frozen(worker_id: int) -> None:
    # What the worker inherited from the main process is frozen (its collections skip it);
    # what the worker makes afterwards is collected as usual.
    if gc.get_freeze_count() < 1000 or not gc.isenabled():
        raise RuntimeError(f"worker {worker_id}: {gc.get_freeze_count()} objects frozen")
    made = [[]]
    if not any(x is made for x in gc.get_objects(0)):
        raise RuntimeError(f"worker {worker_id}: a new list is not in the young generation")


def test_workers_freeze_what_they_inherit(token_dataset) -> None:
    # A forked worker's first full collection would otherwise walk (and write the headers of)
    # every object it inherited: ~0.1 s with torch imported, and most of those pages copied.
    fast, slow = _pair(token_dataset, num_workers=2)
    fast.worker_init_fn = _init_checks_frozen
    _same_epochs(fast, slow, epochs=1)
    # The main process has nothing of its own frozen after its epoch (CPython 3.12's immortal
    # objects may be back in the frozen generation).
    assert gc.get_freeze_count() <= fork_heap._baseline


class _Failing(StreamingDataset):
    def get_item(self, sample_id: int):
        if sample_id == 150:
            raise ValueError("sample 150 is bad")
        return super().get_item(sample_id)


def test_a_workers_error_reaches_the_main_process(token_dataset) -> None:
    loader = StreamingDataLoader(_Failing(local=token_dataset, batch_size=8), batch_size=8,
                                 num_workers=2)
    assert loader._batches_in_chunks()
    with pytest.raises(ValueError, match="sample 150 is bad"):
        list(loader)


def test_workers_warn_past_reported_length(token_dataset) -> None:
    loader = StreamingDataLoader(StreamingDataset(local=token_dataset, batch_size=8), batch_size=8,
                                 num_workers=2)
    loader._IterableDataset_len_called = 3  # as if len(loader) had said 3
    with pytest.warns(UserWarning, match="For multiprocessing data-loading") as caught:
        got = [batch for batch in loader]
    assert len(got) == 26
    assert len([w for w in caught if "was reported to be 3" in str(w.message)]) == 26 - 3


def test_the_result_pipe_holds_a_chunk(token_dataset) -> None:
    loader = StreamingDataLoader(StreamingDataset(local=token_dataset, batch_size=8), batch_size=8,
                                 num_workers=2, persistent_workers=True)
    next(iter(loader))
    queue = loader._chunk_loader._iterator._worker_result_queue
    size = fcntl.fcntl(queue._reader.fileno(), fcntl.F_GETPIPE_SZ)
    with open("/proc/sys/fs/pipe-max-size") as f:
        assert size == min(PIPE_BYTES, int(f.read()))


# ---- the chunk's pickling ----

def _collated_or_none(batch):
    try:
        return collate_batch(batch)
    except (TypeError, ValueError, RuntimeError):
        return None


@settings(max_examples=150, deadline=None)
@given(st.lists(batches(), max_size=4), st.booleans())
def test_chunk_pickles_to_the_same_batches(samples, last) -> None:
    made = [b for b in (_collated_or_none(s) for s in samples) if b is not None]
    got = pickle.loads(ForkingPickler.dumps(Chunk(1, made, last)))
    assert got.worker == 1 and got.last == last
    assert len(got.batches) == len(made)
    _same(got.batches, made)  # (resizes each received tensor: each owns its storage)


def test_chunk_keeps_what_it_cannot_move() -> None:
    odd = {"grad": torch.ones(3, requires_grad=True), "view": torch.arange(6).reshape(2, 3).t(),
           "bf16": torch.ones(2, dtype=torch.bfloat16), "nested": ({"x": torch.arange(3)},),
           "text": ["a", "b"]}
    got = pickle.loads(ForkingPickler.dumps(Chunk(0, [odd, odd], True))).batches
    for batch in got:
        assert batch["grad"].requires_grad and torch.equal(batch["grad"], odd["grad"])
        assert torch.equal(batch["view"], odd["view"]) and not batch["view"].is_contiguous()
        assert batch["bf16"].dtype == torch.bfloat16
        assert torch.equal(batch["nested"][0]["x"], torch.arange(3))
        assert batch["text"] == ["a", "b"]
    got[0]["nested"][0]["x"][0] = 7  # moved tensors are each their own
    assert got[1]["nested"][0]["x"][0] == 0


def test_flat_dict_batches_build_only_their_slots() -> None:
    # A dict of tensors and leaves is rebuilt by its slot keys alone; anything nested holding
    # tensors takes the full walk. Both give the same batches.
    flat = {"tokens": torch.arange(12, dtype=torch.int32).reshape(3, 4), "id": torch.arange(3),
            "text": ["a", "b", "c"], "score": 1.5, "none": None}
    nested = {"pair": (torch.arange(2), torch.ones(2)), "text": ["x"]}
    listed = {"many": [torch.arange(2), torch.arange(3)]}
    arrays, offset = [], [0]
    packed, keys = worker_batches._pack(flat, None, arrays, offset)
    assert keys == ("tokens", "id")
    assert worker_batches._pack(nested, None, [], [0])[1] is None
    assert worker_batches._pack(listed, None, [], [0])[1] is None
    assert worker_batches._pack([torch.arange(2)], None, [], [0])[1] is None
    for batches_ in ([flat, flat], [nested, listed, flat]):
        got = pickle.loads(ForkingPickler.dumps(Chunk(0, batches_, False))).batches
        _same(got, batches_)


# ---- the order ----

def _torch_order(per_worker: list[list[int]]) -> list[int]:
    """Torch's loader: one batch from each worker in turn, dropping a worker that has ended."""
    out, at = [], [0] * len(per_worker)
    active = list(range(len(per_worker)))
    while active:
        for w in list(active):
            if at[w] < len(per_worker[w]):
                out.append(per_worker[w][at[w]])
                at[w] += 1
            else:
                active.remove(w)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=4), st.data())
def test_interleave_is_torchs_round_robin(counts, data) -> None:
    per_worker = [[(w, k) for k in range(n)] for w, n in enumerate(counts)]
    # Each worker's batches cut into chunks (the last flagged, an empty one if it has none),
    # the chunks arriving one from each worker in turn, as torch's loader passes them on.
    cut = []
    for w, batches_ in enumerate(per_worker):
        pieces, at = [], 0
        while True:
            size = data.draw(st.integers(1, 4))
            piece = batches_[at:at + size]
            at += size
            pieces.append(Chunk(w, piece, at >= len(batches_)))
            if at >= len(batches_):
                break
        cut.append(pieces)
    stream = _torch_order(cut)
    assert list(interleave(iter(stream), len(counts))) == _torch_order(per_worker)


# ---- the ring ----

def test_ring_puts_lends_and_frees_its_slots() -> None:
    ring = Ring(4 * SLOT_BYTES)
    first = np.arange(40, dtype=np.uint8)
    assert ring.put([(0, first[:10]), (64, first[10:])], 94) == 0
    assert ring.put([(0, np.full(SLOT_BYTES + 1, 7, np.uint8))], SLOT_BYTES + 1) == SLOT_BYTES
    assert ring.put([(0, np.ones(2 * SLOT_BYTES, np.uint8))], 2 * SLOT_BYTES) is None  # 1 left
    assert ring.puts == 2 and list(ring.used) == [1, 1, 1, 0]
    a, b = ring.lend(0, 94), ring.lend(SLOT_BYTES, SLOT_BYTES + 1)
    assert np.array_equal(a[:10], first[:10]) and np.array_equal(a[64:], first[10:])
    assert np.array_equal(b, np.full(SLOT_BYTES + 1, 7, np.uint8))
    assert a.ctypes.data % 64 == b.ctypes.data % 64 == 0
    view = torch.from_numpy(a[64:72].view(np.int64))  # a tensor made from lent bytes keeps them
    del a
    assert list(ring.used) == [1, 1, 1, 0]
    del b  # freed before the older one: slots come back in any order
    assert list(ring.used) == [1, 0, 0, 0]
    assert view.item() == int.from_bytes(bytes(range(10, 18)), "little")
    c = np.full(3 * SLOT_BYTES, 3, np.uint8)
    assert ring.put([(0, c[:2 * SLOT_BYTES])], 2 * SLOT_BYTES) == SLOT_BYTES  # (searched round)
    assert ring.put([(0, c[:10])], 10) == 3 * SLOT_BYTES
    assert ring.put([(0, c[:10])], 10) is None  # full
    del view
    assert list(ring.used) == [0, 1, 1, 1]
    assert ring.put([(0, c[:10])], 10) == 0
    lent = ring.lend(0, 10)
    lent[:] = 9  # lent bytes are writable (they are the tensor's own)
    ring.release(SLOT_BYTES, SLOT_BYTES)  # (as a lease of that payload would)
    assert list(ring.used) == [1, 0, 1, 1]
    assert ring.put([(0, c[:2 * SLOT_BYTES])], 2 * SLOT_BYTES) is None  # one free
    del lent
    assert list(ring.used) == [0, 0, 1, 1]
    assert ring.put([(0, c[:2 * SLOT_BYTES])], 2 * SLOT_BYTES) == 0
    ring.release(0, 2 * SLOT_BYTES)
    ring.release(3 * SLOT_BYTES, 10)
    assert list(ring.used) == [0, 0, 1, 0]
    assert ring.put([(0, c)], len(c)) is None  # three free, not in a row
    assert ring.put([(0, np.ones(5 * SLOT_BYTES, np.uint8))], 5 * SLOT_BYTES) is None  # too big
    assert ring_of(ring.token) is ring
    with pytest.raises(TypeError, match="only be passed to a worker"):
        pickle.dumps(ring)
    with pytest.raises(RuntimeError, match="ring nope"):
        ring_of("nope")


def test_a_ring_frees_the_slots_past_what_was_kept() -> None:
    # An array made for a chunk the epoch ended in is sent only in part: the slots past its
    # kept bytes are freed, those of the kept bytes (the main process frees them) are not.
    ring = Ring(4 * SLOT_BYTES)
    assert ring.take(3 * SLOT_BYTES) == 0
    ring.release(0, 3 * SLOT_BYTES, keep=SLOT_BYTES + 1)
    assert list(ring.used) == [1, 1, 0, 0]
    ring.release(0, 3 * SLOT_BYTES, keep=3 * SLOT_BYTES)  # all kept: nothing freed
    assert list(ring.used) == [1, 1, 0, 0]
    ring.release(0, SLOT_BYTES + 1)
    assert not ring.used.any()


def _in_rings(loader, tensor) -> bool:
    return any(ring.address <= tensor.data_ptr() < ring.address + ring.size
               for ring in loader._chunk_loader.dataset.rings)


@pytest.fixture
def small_rings(monkeypatch):
    """Rings of 4 slots of 1 KB, chunks of at most 3 batches (576 bytes each here): without
    reusing slots, a worker's ring could carry 5 of its 13 batches."""
    monkeypatch.setattr(batch_ring, "SLOT_BYTES", 1024)  # forked workers inherit these
    monkeypatch.setattr(worker_batches, "RING_BYTES", 4096)
    monkeypatch.setattr(worker_batches, "CHUNK_BYTES", 1500)


def test_ring_tensors_view_the_ring_until_unused(token_dataset, small_rings) -> None:
    loader = StreamingDataLoader(StreamingDataset(local=token_dataset, batch_size=8), batch_size=8,
                                 num_workers=2)
    it = iter(loader)
    held = next(it)  # kept all epoch long, as a training loop may keep its first batch
    tokens = held["tokens"]
    assert _in_rings(loader, tokens) and tokens.data_ptr() % 64 == 0  # not copied
    want = tokens.clone()
    part = tokens[2:4]  # a view outlives the batch it came from
    del held, tokens
    count = in_ring = 0
    for batch in it:  # each batch dropped once read: its slots are free for the next
        count += len(batch["id"])
        in_ring += _in_rings(loader, batch["tokens"])
    assert count == 203 - 8
    assert torch.equal(part, want[2:4])  # its bytes were not reused meanwhile
    assert in_ring > 10  # slots were reused while one stayed held
    rings = loader._chunk_loader.dataset.rings
    assert rings[0].used.any()  # the first worker's first batch is still viewed (by part)
    del part, batch
    assert not any(ring.used.any() for ring in rings)


def test_small_rings_reuse_slots_and_equal_torch_loader(token_dataset, small_rings) -> None:
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True)
    count = in_ring = 0
    for got, want in zip(fast, slow, strict=True):
        in_ring += _in_rings(fast, got["tokens"])
        _same([got], [want])
        count += 1
    assert count == 26 and in_ring > 10


def test_batches_made_in_the_ring_and_freed_when_an_epoch_is_abandoned(token_dataset,
                                                                        small_rings) -> None:
    # Rows of 8 x 16 int32 fill half a slot: stacked straight into the ring. Whether a worker
    # holds a batch made ahead when the epoch is dropped depends on timing (the deterministic
    # case is test_a_closed_worker_loop_frees_the_batch_it_did_not_send); every slot must be
    # free in the end either way.
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True, persistent_workers=True)
    held = list(islice(fast, 5))
    rings = fast._chunk_loader.dataset.rings
    assert any(ring.used.any() for ring in rings)  # (the batches in hand hold slots)
    del held
    for n, _ in enumerate(slow):
        if n == 4:
            break
    _same_epochs(fast, slow, epochs=2)  # the workers dropped their first epoch part-way
    assert all(ring.puts > 0 and not ring.used.any() for ring in rings)


def test_persistent_workers_free_every_slot_of_each_epoch(token_dataset, monkeypatch) -> None:
    # A worker stacks each chunk's token rows in its ring for the chunk's full size; a chunk
    # the epoch ends in is shorter (here 6 of 8 batches), and the slots it did not fill must
    # be free again with the rest. They leaked: with persistent workers (one ring for the
    # whole run) every epoch kept ~60 more slots of 384 until the ring was full and every
    # chunk travelled in its message, epochs 2-4x slower by the tenth.
    monkeypatch.setattr(batch_ring, "SLOT_BYTES", 256)  # a batch's tokens: 2 slots
    monkeypatch.setattr(worker_batches, "RING_BYTES", 64 << 10)
    fast, slow = _pair(token_dataset, num_workers=2, persistent_workers=True)
    for epoch in range(3):
        _same_epochs(fast, slow, epochs=1)
        rings = fast._chunk_loader.dataset.rings
        gc.collect()
        assert all(ring.puts > 0 for ring in rings)
        assert [int(ring.used.sum()) for ring in rings] == [0, 0], f"epoch {epoch}"


class _OwnItems(StreamingDataset):
    """A dataset deciding its samples itself: its batches are collated one by one."""

    def get_item(self, idx: int):
        return super().get_item(idx)


def test_a_closed_worker_loop_frees_the_batch_it_did_not_send(token_dataset, small_rings,
                                                               monkeypatch) -> None:
    info = type("Info", (), {"id": 0, "num_workers": 1, "seed": 0, "dataset": None})()
    monkeypatch.setattr(worker_batches, "get_worker_info", lambda: info)
    ring = Ring(8 * 1024)
    chunks = ChunkedBatches(_OwnItems(local=token_dataset, batch_size=8), 8, False)
    chunks.rings = [ring]
    loop = iter(chunks)
    first = next(loop)  # one batch, and the next one made ahead: both stacked in the ring
    assert ring.where(first.batches[0]["tokens"].data_ptr(), 512) is not None
    assert int(ring.used.sum()) == 2
    loop.close()  # the epoch is abandoned: the batch made ahead is freed, the sent one is not
    assert int(ring.used.sum()) == 1
    got = pickle.loads(ForkingPickler.dumps(first))  # the main process frees it once unused
    assert int(ring.used.sum()) == 2  # (+ the slot of the ids, put in the ring with the chunk)
    _same(got.batches, first.batches)
    del got
    assert int(ring.used.sum()) == 0


def test_a_worker_stacks_token_columns_in_its_ring(token_dataset, small_rings,
                                                   monkeypatch) -> None:
    # Rows of one array shape: each chunk's tokens are stacked straight into the ring (the
    # main process views them there); nothing is held between chunks, so closing the loop
    # frees nothing, and the main process frees a chunk's slots once its batches are unused.
    info = type("Info", (), {"id": 0, "num_workers": 1, "seed": 0, "dataset": None})()
    monkeypatch.setattr(worker_batches, "get_worker_info", lambda: info)
    ring = Ring(8 * 1024)
    want = default_collate(list(islice(StreamingDataset(local=token_dataset, batch_size=8), 8)))
    chunks = ChunkedBatches(StreamingDataset(local=token_dataset, batch_size=8), 8, False)
    chunks.rings = [ring]
    loop = iter(chunks)
    first = next(loop)
    assert first.split == 8
    tokens = first.batches[0]["tokens"]
    size = tokens.numpy().nbytes
    assert ring.where(tokens.data_ptr(), size) is not None  # made in the ring
    held = int(ring.used.sum())
    assert held == -(-size // 1024)
    loop.close()
    assert int(ring.used.sum()) == held  # (sent: the main process frees it)
    got = pickle.loads(ForkingPickler.dumps(first))
    assert ring.where(got.batches[0]["tokens"].data_ptr(), 1) is not None  # viewed, not copied
    _same(got.batches[0], want)
    del got, first, tokens
    gc.collect()
    assert int(ring.used.sum()) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(batches(), max_size=3), min_size=1, max_size=6),
       st.sampled_from([64, 4096, 1 << 20]))
def test_chunks_through_a_ring_are_the_same_batches(chunks_, size) -> None:
    ring = Ring(size)  # small rings send some chunks in their message instead
    sent = []
    for samples in chunks_:
        made = [b for b in (_collated_or_none(s) for s in samples) if b is not None]
        sent.append((made, ForkingPickler.dumps(Chunk(0, made, False, ring))))
    for made, message in sent[:2]:  # read some while others are in the ring
        _same(pickle.loads(message).batches, made)
    for made, message in sent[2:]:
        _same(pickle.loads(message).batches, made)
    assert not ring.used.any()


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("keep_over", [1 << 20, 100])
def test_text_columns_ride_the_ring_not_the_message(monkeypatch, full, keep_over) -> None:
    # A chunk of columns (text rows): the strings' and bytes' packed bytes go where its tensors'
    # go (the ring; its message past a full ring; pickled by value past IN_MESSAGE_BYTES).
    monkeypatch.setattr(worker_batches, "IN_MESSAGE_BYTES", keep_over)
    rows = [{"id": i, "text": f"row {i} " * (i % 7), "raw": bytes(i % 5), "mixed": "é" * (i % 3)}
            for i in range(40)]
    columns = collate_columns(rows, 8)
    text_bytes = sum(len(row["text"]) for row in rows)
    ring = Ring(4 * SLOT_BYTES)
    taken = ring.take(ring.size) if full else None
    message = ForkingPickler.dumps(Chunk(0, [columns], True, ring, 8))
    if full:
        ring.release(taken, ring.size)
    assert (len(message) < text_bytes) == (not full)
    assert (b"unpack_text" in bytes(message)) == (full and keep_over == 100)  # (by value)
    assert bool(ring.used.any()) == (not full)
    got = pickle.loads(message).batches
    _same(got, split_columns(columns, 8))
    assert got[0]["text"][1] == "row 1 " and got[3]["mixed"][2] == "éé"
    del got
    gc.collect()
    assert not ring.used.any()  # (the strings are copies: only the id tensors held the slots)


@pytest.mark.parametrize("in_message", [1 << 20, 100])
def test_a_full_ring_falls_back_to_messages(token_dataset, monkeypatch, in_message) -> None:
    monkeypatch.setattr(batch_ring, "SLOT_BYTES", 1024)  # forked workers inherit these
    monkeypatch.setattr(worker_batches, "RING_BYTES", 1024)
    monkeypatch.setattr(worker_batches, "IN_MESSAGE_BYTES", in_message)
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True)
    _same_epochs(fast, slow, epochs=1)
    # Bigger chunks than IN_MESSAGE_BYTES go as torch sends tensors (in shared memory).
    shared = [batch["tokens"].is_shared() for batch in fast]
    assert any(shared) == (in_message == 100) and not all(shared)


def test_abandoned_epoch_with_persistent_workers(token_dataset) -> None:
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True, persistent_workers=True)
    for loader in (fast, slow):
        for n, _ in enumerate(loader):
            if n == 4:
                break
    _same_epochs(fast, slow, epochs=2)


def test_nothing_left_in_dev_shm(token_dataset) -> None:
    before = set(os.listdir("/dev/shm"))
    loader = StreamingDataLoader(StreamingDataset(local=token_dataset, batch_size=8), batch_size=8,
                                 num_workers=2)
    assert sum(len(batch["id"]) for batch in loader) == 203
    del loader
    assert set(os.listdir("/dev/shm")) - before == set()


def test_no_rings_when_memfd_is_refused(token_dataset, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise PermissionError("memfd_create: operation not permitted")

    monkeypatch.setattr(os, "memfd_create", refuse)
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True)
    _same_epochs(fast, slow, epochs=1)
    assert fast._chunk_loader.dataset.rings is None


def _exited(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie or gone), without reaping it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _wait_exited(pids: list[int], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while not all(map(_exited, pids)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_an_epochs_workers_exit_unwaited_and_are_reaped_next_epoch(token_dataset) -> None:
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True)
    _same_epochs(fast, slow, epochs=1)
    retired = fast._retired  # the epoch ended without joining its workers...
    pids = [worker.pid for worker in retired._workers]
    assert not retired._shutdown and retired._workers_done_event.is_set()
    assert _wait_exited(pids)  # ...which were told to exit, and did on their own
    torch.manual_seed(1)
    it = iter(fast)
    got = next(it)  # the next epoch's workers start; the last epoch's are reaped
    assert retired._shutdown and "_retired" not in fast.__dict__
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)
    del got, it
    torch.manual_seed(1)
    next(iter(slow))  # (the same epoch abandoned by torch's own loader)
    _same_epochs(fast, slow, epochs=2)
    last = fast._retired
    del fast
    gc.collect()
    assert last._shutdown  # reaped with the loader


def test_a_finished_epochs_rings_serve_the_next_and_keep_held_batches(token_dataset,
                                                                      small_rings) -> None:
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True)  # (each epoch's bytes differ)
    torch.manual_seed(0)
    first = list(fast)
    held = first[0]["tokens"][1:]  # kept across epochs, as a training loop may keep a batch
    want = held.clone()
    torch.manual_seed(0)
    _same(first, list(slow))
    del first
    assert _in_rings(fast, held)
    rings = fast._chunk_loader.dataset.rings
    tokens = [ring.token for ring in rings]
    puts = [ring.puts for ring in rings]
    _same_epochs(fast, slow, epochs=2)  # their workers write in the same rings...
    assert [ring.token for ring in fast._chunk_loader.dataset.rings] == tokens
    assert all(ring.puts > before for ring, before in zip(rings, puts))
    assert torch.equal(held, want)  # ...around the slots still held
    del held
    gc.collect()
    assert not any(ring.used.any() for ring in rings)


def test_an_abandoned_epochs_workers_are_joined_and_its_rings_dropped(token_dataset) -> None:
    fast, slow = _pair(token_dataset, num_workers=2, shuffle=True)
    tokens = None
    for n, _ in enumerate(fast):
        tokens = [ring.token for ring in fast._chunk_loader.dataset.rings]
        if n == 4:
            break
    assert not hasattr(fast, "_retired")  # dropped mid-epoch: torch shut its workers down
    for n, _ in enumerate(slow):
        if n == 4:
            break
    _same_epochs(fast, slow, epochs=1)
    assert tokens is not None
    assert not {ring.token for ring in fast._chunk_loader.dataset.rings} & set(tokens)


def test_an_epoch_with_pinning_is_shut_down_as_torchs(token_dataset) -> None:
    # Torch stops its pinning thread before the workers; such an epoch is not retired early.
    loader = StreamingDataLoader(StreamingDataset(local=token_dataset, batch_size=8),
                                 batch_size=8, num_workers=2, pin_memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (no accelerator here: torch warns and does not pin)
        assert sum(len(batch["id"]) for batch in loader) == 203
    assert "_retired" not in loader.__dict__
