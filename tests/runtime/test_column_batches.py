"""Batches of small rows collated a column at a time equal torch's, batch for batch.

Loaders collate batches of strings, bytes and ints several batches at a time, a column at a time
(``streaming.collate.column_chunks``), from rows a StreamingDataset decodes a column at a time
where its shards allow (``streaming.blocks.BlockReader``). These tests hold the pieces to the
samples they stand for and to torch's ``default_collate``; ``test_dataloader_batches`` and
``test_worker_batches`` hold whole loaders over such rows to torch's own loaders.
"""

from __future__ import annotations

import gc
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_dataloader_batches import _same, batches
from torch.utils.data import default_collate
from torch.utils.data._utils import collate as torch_collate

from streaming import MDSWriter, Stream, StreamingDataLoader, StreamingDataset, fork_heap
from streaming._kernels import _mds
from streaming.blocks import BlockReader, PackedText, as_samples, head, listed
from streaming.collate import (
    _tensor_batches,
    collate_batch,
    collate_columns,
    collated_batches,
    column_chunks,
    light_reader,
    split_columns,
)
from streaming.worker_batches import Chunk, _packed


def _equal(a, b) -> None:
    """``_same``, also for NumPy arrays left in a list (a batch whose first value is a string
    keeps the others as they are)."""
    if isinstance(a, np.ndarray):
        assert type(b) is np.ndarray and a.dtype == b.dtype and np.array_equal(a, b)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _equal(x, y)
    elif isinstance(a, dict):
        assert type(b) is dict and list(a) == list(b)
        for key in a:
            _equal(a[key], b[key])
    else:
        _same(a, b)


def _outcome(func, *args):
    try:
        return "ok", func(*args)
    except (TypeError, ValueError, RuntimeError, KeyError) as err:
        return type(err).__name__, None


@st.composite
def sample_runs(draw):
    """Samples as a dataset may yield them: runs of one shape of dict (from ``batches``),
    sometimes with keys in another order or another type of value."""
    samples = []
    for run in draw(st.lists(batches(), min_size=1, max_size=4)):
        samples += run * draw(st.integers(1, 3))
    if draw(st.booleans()):
        at = draw(st.integers(0, len(samples) - 1))
        samples[at] = dict(reversed(list(samples[at].items())))
    return samples


@settings(max_examples=300, deadline=None)
@given(sample_runs(), st.integers(1, 4))
def test_columns_split_into_the_batches_default_collate_makes(samples, batch_size) -> None:
    columns = collate_columns(samples, batch_size)
    want = [_outcome(collate_batch, samples[at:at + batch_size])
            for at in range(0, len(samples), batch_size)]
    if columns is None:
        return  # (the caller collates each batch as usual)
    assert all(kind == "ok" for kind, _ in want)  # only when every batch collates so
    _same(split_columns(columns, batch_size), [batch for _, batch in want])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 20), st.lists(st.integers(0, 3), max_size=2), st.integers(1, 6),
       st.sampled_from(["int64", "float32", "uint8", "bool"]), st.booleans())
def test_tensor_columns_split_as_torch_splits(count, shape, batch_size, dtype, strided) -> None:
    column = torch.arange(count * 2 * int(np.prod(shape)), dtype=torch.int64)
    column = column.reshape(count, 2, *shape).to(getattr(torch, dtype))
    column = column[:, 0] if strided else column.reshape(count * 2, *shape)[:count]
    got = _tensor_batches(column, batch_size)
    want = column.split(batch_size)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype and a.stride() == b.stride()
        assert torch.equal(a, b) and a.data_ptr() == b.data_ptr()  # views of the column


def _texts(n: int, first: int = 0) -> list[dict]:
    return [{"id": first + i, "text": f"t{first + i}" * (i % 3), "raw": bytes(i % 4)}
            for i in range(n)]


def test_columns_decline_what_torch_collates_otherwise() -> None:
    rows = _texts(6)
    assert collate_columns(rows, 2) is not None
    assert collate_columns(rows[:2] + [{"text": "x", "id": 1, "raw": b""}] + rows[3:], 2) \
        is None  # a batch's first sample with its keys in another order
    assert collate_columns(rows[:3] + [{**rows[3], "id": 1.5}] + rows[4:], 2) is None  # mixed
    assert collate_columns(rows[:3] + [{**rows[3], "id": 2**63}] + rows[4:], 2) is None
    assert collate_columns(rows[:3] + [{"id": 3}] + rows[4:], 2) is None  # a key missing


# ---- the block reader ----

def _rows_block(samples: list[dict]) -> _mds.Rows:
    """An MDS block decoding ``samples`` (ids, texts and bytes), as a dataset's blocks do."""
    names = ("id", "text", "raw")
    cols = _mds.Columns(names, np.array([3, 1, 0], np.int64), (int, str, bytes),
                        np.array([8, -1, -1], np.int64))
    rows = []
    for sample in samples:
        text, raw = sample["text"].encode(), sample["raw"]
        rows.append(np.array([len(text), len(raw)], "<u4").tobytes()
                    + np.array([sample["id"]], "<i8").tobytes() + text + raw)
    head = 4 + 4 * (len(rows) + 1)
    offsets = np.cumsum([head] + [len(r) for r in rows]).astype("<u4")
    buf = np.array([len(rows)], "<u4").tobytes() + offsets.tobytes() + b"".join(rows)
    return _mds.Rows(((buf, len(rows), cols, "t.mds"),), None,
                     np.arange(len(rows), dtype=np.int64))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["rows", "samples", "other"]), st.integers(0, 7)),
                max_size=6), st.lists(st.integers(1, 9), min_size=1, max_size=12),
       st.booleans())
def test_block_reader_takes_the_samples_over_any_blocks(kinds, takes, packed) -> None:
    blocks, want = [], []
    for kind, n in kinds:
        samples = _texts(n, len(want))
        if kind == "other":  # other keys: never columns together with the rest
            samples = [{"x": s["id"]} for s in samples]
        want += samples
        blocks.append(_rows_block(samples) if kind == "rows" else iter(samples))
    reader = BlockReader(iter(blocks), packed)
    got = []
    for n in takes:
        more = reader.more()
        schema, data = reader.take(n)
        part = data if schema is None else as_samples(schema[0], data)
        assert more == bool(part)
        assert len(part) == min(n, len(want) - len(got))
        if schema is not None:  # columns only over blocks decoded so, typed by their kinds
            assert schema == (("id", "text", "raw"), (3, 1, 0))
            # (ints as one int64 array; strings packed or listed, over several blocks too)
            assert type(data[0]) is np.ndarray and data[0].dtype == np.int64
            if packed:
                assert type(data[1]) is PackedText and data[1].text
                assert type(data[2]) is PackedText and not data[2].text
            else:
                assert all(type(v) is str for v in data[1])
                assert all(type(v) is bytes for v in data[2])
            assert all(len(column) == len(part) for column in data)
        got += part
    assert got + list(reader.samples()) == want
    assert not reader.more()


def test_light_reader_tells_rows_by_their_columns(request) -> None:
    text = StreamingDataset(local=request.getfixturevalue("text_dataset"), batch_size=8)
    tokens = StreamingDataset(local=request.getfixturevalue("token_dataset"), batch_size=8)
    reader, light = light_reader(text)
    assert light and reader.light()  # told by the first block's columns, no sample taken
    schema, data = reader.take(10)
    assert schema == (("blob", "id", "text"), (0, 3, 1))  # (MDS keeps columns by name)
    assert as_samples(schema[0], data) + list(reader.samples()) == list(text)
    reader, light = light_reader(tokens)
    assert light and reader.light()  # (ndarray tokens too: stacked while they share a shape)
    want = list(tokens)
    schema, data = reader.take(10)
    assert schema == (("id", "text", "tokens"), (3, 1, 4))
    got = as_samples(schema[0], data) + list(reader.samples())
    assert [s["id"] for s in got] == [s["id"] for s in want]
    assert all(np.array_equal(a["tokens"], b["tokens"]) for a, b in zip(got, want))
    reader, light = light_reader([{"a": 1}, {"a": 2}])  # not a StreamingDataset: one block
    assert light and list(reader.samples()) == [{"a": 1}, {"a": 2}]


# ---- column chunks ----

@settings(max_examples=200, deadline=None)
@given(sample_runs(), st.integers(1, 4), st.booleans(), st.integers(1, 4))
def test_column_chunks_are_the_batches_torch_makes(samples, batch_size, drop_last, most) -> None:
    want = _outcome(lambda: list(collated_batches(samples, batch_size, drop_last)))
    got = _outcome(lambda: [
        batch for columns, made, _ in column_chunks(BlockReader(iter([iter(samples)])),
                                                    batch_size, drop_last, most, 1 << 20)
        for batch in (made if columns is None else split_columns(columns, batch_size))])
    assert got[0] == want[0]
    if got[0] == "ok":
        _equal(got[1], want[1])


def test_column_chunks_grow_and_flag_the_last() -> None:
    reader = BlockReader(iter([_rows_block(_texts(50)), iter(_texts(30, 50))]))
    chunks = list(column_chunks(reader, 4, False, 4, 1 << 20))
    sizes = [len(split_columns(c, 4)) if c is not None else len(b) for c, b, _ in chunks]
    assert sizes == [1, 2, 4, 4, 4, 4, 1]  # 1, 2, 4 batches, then 4 at most; 80 = 19 x 4 + 4
    assert [last for _, _, last in chunks] == [False] * 6 + [True]
    assert all(c is not None for c, _, _ in chunks)
    # A chunk's strings past most_bytes (estimated by its first batch) stop its growth.
    long = [{"id": i, "text": "x" * 1000} for i in range(40)]
    sizes = [len(split_columns(c, 4)) for c, _, _ in
             column_chunks(BlockReader(iter([iter(long)])), 4, False, 8, 5000)]
    assert sizes == [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["rows", "samples"]), st.integers(0, 9)),
                min_size=1, max_size=5), st.integers(1, 4), st.booleans(), st.integers(1, 4))
def test_packed_chunks_arrive_as_the_batches_torch_makes(kinds, batch_size, drop_last,
                                                         most) -> None:
    # A worker's packed columns, pickled in chunks as a worker sends them: unpickled, the
    # batches are exactly torch's of the samples.
    blocks, samples = [], []
    for kind, n in kinds:
        part = _texts(n, len(samples))
        samples += part
        blocks.append(_rows_block(part) if kind == "rows" else iter(part))
    want = list(collated_batches(samples, batch_size, drop_last))
    got = []
    for columns, made, last in column_chunks(BlockReader(iter(blocks), True), batch_size,
                                             drop_last, most, 1 << 20):
        chunk = Chunk(0, made, last) if columns is None else \
            Chunk(0, [columns], last, None, batch_size)
        got += pickle.loads(ForkingPickler.dumps(chunk)).batches
    _equal(got, want)


def test_packed_text_heads_joins_and_lists() -> None:
    reader = BlockReader(iter([_rows_block(_texts(5)), _rows_block(_texts(4, 5))]), True)
    schema, (ids, texts, raws) = reader.take(9)  # over both blocks: joined
    want = _texts(5) + _texts(4, 5)
    assert listed(ids) == [s["id"] for s in want] and listed(texts) == [s["text"] for s in want]
    assert listed(raws) == [s["raw"] for s in want]
    assert listed(head(texts, 3)) == [s["text"] for s in want[:3]]
    assert texts.nbytes(3) == sum(len(s["text"]) for s in want[:3]) and texts.nbytes(0) == 0
    assert head(ids, 2).tolist() == [0, 1] and listed(["a"]) == ["a"]
    assert pickle.loads(pickle.dumps(texts)) == [s["text"] for s in want]


def test_empty_and_dropped_chunks() -> None:
    assert list(column_chunks(BlockReader(iter([])), 4, False, 4, 1 << 20)) == [(None, [], True)]
    chunks = list(column_chunks(BlockReader(iter([iter(_texts(3))])), 4, True, 4, 1 << 20))
    assert chunks == [(None, [], True)]  # the only batch is short: dropped


# ---- packed strings in a chunk ----

def test_chunks_of_columns_pickle_their_strings_packed() -> None:
    columns = collate_columns(_texts(9), 4)
    mixed = {"id": columns["id"], "text": ["a", b"b", "c", "d", "e", "f", "g", "h", "i"],
             "lone": ["\ud800"] * 9}  # not packed: value by value, as pickle does
    for cols in (columns, mixed):
        got = pickle.loads(ForkingPickler.dumps(Chunk(0, [cols], True, None, 4)))
        _same(got.batches, split_columns(cols, 4))
    assert _packed(["a", "b"]).__reduce__()[0].__name__ == "unpack_text"
    mixed_values = ["a", b"b"]
    assert _packed(mixed_values) is mixed_values  # (pickled value by value, as a list)


# ---- the main process's heap while forked workers run ----

@pytest.mark.parametrize("context", [None, "spawn"])
def test_heap_frozen_only_while_forked_workers_run(request, context) -> None:
    loader = StreamingDataLoader(
        StreamingDataset(local=request.getfixturevalue("text_dataset"), batch_size=8),
        batch_size=8, num_workers=2, multiprocessing_context=context)
    start = gc.get_freeze_count()  # CPython 3.12 starts with some of its own objects frozen
    it = iter(loader)
    next(it)
    assert (gc.get_freeze_count() > start) == (context is None)
    nested = iter(StreamingDataLoader(loader.dataset, batch_size=8, num_workers=2,
                                      multiprocessing_context=context))
    next(nested)
    nested.close()  # another loader's epoch ending early leaves this one's freeze alone
    assert (gc.get_freeze_count() > start) == (context is None)
    assert sum(len(batch["id"]) for batch in it) == 203 - 8
    # Ours unfrozen (on CPython 3.12 its immortal objects too, until a full collection).
    assert gc.get_freeze_count() <= fork_heap._baseline


def test_heap_frozen_again_after_an_unfreeze(request) -> None:
    """Epoch after epoch, full collections between them: CPython 3.12's collections put its
    immortal objects back into the frozen generation, which is no one's freeze."""
    dataset = StreamingDataset(local=request.getfixturevalue("text_dataset"), batch_size=8)
    loader = StreamingDataLoader(dataset, batch_size=8, num_workers=2,
                                 multiprocessing_context="fork")
    for _ in range(3):
        gc.collect()
        it = iter(loader)
        next(it)
        assert gc.get_freeze_count() > fork_heap._baseline + 1000
        assert sum(len(batch["id"]) for batch in it) == 203 - 8
        assert gc.get_freeze_count() <= fork_heap._baseline


def test_a_users_own_freeze_is_left_alone(request) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        loader = StreamingDataLoader(
            StreamingDataset(local=request.getfixturevalue("text_dataset"), batch_size=8),
            batch_size=8, num_workers=2)
        it = iter(loader)
        count = len(next(it)["id"])
        # Neither more frozen (what was made since would be) nor unfrozen (none would be);
        # frozen objects freed meanwhile leave the count.
        assert 0 < gc.get_freeze_count() <= frozen
        assert count + sum(len(batch["id"]) for batch in it) == 203
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
    freeze = fork_heap.HeapFreeze(0, None)  # no workers: nothing
    assert not freeze.held and gc.get_freeze_count() <= fork_heap._baseline
    freeze.release()


@pytest.mark.parametrize("num_workers", [0, 2])
def test_streams_of_other_columns_equal_torch_loader(tmp_path, num_workers) -> None:
    # Two streams whose "text" is str in one and bytes in the other: blocks of either stream
    # decode as columns, blocks over both as samples, and chunks mix them.
    for name, kind in (("a", "str"), ("b", "bytes")):
        with MDSWriter(out=str(tmp_path / name), columns={"id": "int", "text": kind},
                       size_limit=1 << 10) as writer:
            for i in range(150):
                text = f"{name}{i}" * (i % 4)
                writer.write({"id": i, "text": text if kind == "str" else text.encode()})

    def make(collate_fn=None):
        ds = StreamingDataset(streams=[Stream(local=str(tmp_path / "a")),
                                       Stream(local=str(tmp_path / "b"))],
                              shuffle=True, batch_size=8, shuffle_block_size=40)
        extra = {} if collate_fn is None else {"collate_fn": collate_fn}
        return StreamingDataLoader(ds, batch_size=8, num_workers=num_workers, **extra)

    fast, slow = make(), make(lambda batch: default_collate(batch))
    got, want = list(fast), list(slow)
    assert len(got) == len(want) and sum(len(batch["id"]) for batch in got) == 300
    _same(got, want)
    kinds = {type(v) for batch in got for v in batch["text"]}
    assert kinds == {str, bytes}


def test_a_customised_registry_is_honoured(request, monkeypatch) -> None:
    def shout(batch, *, collate_fn_map=None):
        return [text.upper() for text in batch]

    monkeypatch.setitem(torch_collate.default_collate_fn_map, str, shout)
    text = StreamingDataset(local=request.getfixturevalue("text_dataset"), batch_size=8)
    assert not light_reader(text)[1]  # (MDS blocks of light columns too)
    batches = list(StreamingDataLoader(text, batch_size=8))
    assert batches[0]["text"] == [s["text"].upper() for s in list(text)[:8]]


def test_samples_that_are_none_are_samples_too() -> None:
    # (a get_item override may return anything: None is a sample, not the end)
    reader = BlockReader(iter([iter([None, None]), iter([{"a": 1}])]))
    assert reader.more() and reader.peek() is None
    assert reader.take(5) == (None, [None, None, {"a": 1}])
    assert not reader.more()
