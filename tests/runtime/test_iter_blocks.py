"""Iteration decodes the plan in blocks and chunks; every boundary keeps the plan's order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streaming.dataset as dataset_module
from streaming import MDSWriter, StreamingDataset
from streaming.plan import worker_plan
from streaming.spanner import Spanner


def _write(out: str, n: int) -> None:
    with MDSWriter(out=str(out), columns={"id": "int", "tokens": "ndarray:int32"},
                   size_limit=1 << 11) as writer:
        for i in range(n):
            writer.write({"id": i, "tokens": np.arange(i % 7 + 1, dtype=np.int32) + i})


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("block,chunk,most", [(3, 7, 3), (3, 7, 11), (256, 1 << 16, 8192),
                                              (5, 5, 5), (4, 64, 13)])
def test_iteration_follows_the_plan(tmp_path, monkeypatch, shuffle, block, chunk, most):
    monkeypatch.setattr(dataset_module, "DECODE_BLOCK", block)
    monkeypatch.setattr(dataset_module, "LOCATE_CHUNK", chunk)
    monkeypatch.setattr(dataset_module, "MOST_BLOCK", most)
    _write(tmp_path / "d", 500)
    ds = StreamingDataset(local=str(tmp_path / "d"), shuffle=shuffle, batch_size=4,
                          shuffle_block_size=64)
    assert ds.num_shards > 5
    got = list(ds)
    spec = ds._plan_spec()
    want = worker_plan(spec, 1, 1, 1, 0, 0, 0, 0, 0)
    want = want[want >= 0].tolist()
    assert [s["id"] for s in got] == want
    for s in got:
        i = s["id"]
        assert s["tokens"].tolist() == (np.arange(i % 7 + 1) + i).tolist()
    if shuffle:
        assert want != sorted(want)


@pytest.mark.parametrize("shuffle", [False, True])
def test_blocks_run_on_along_a_resident_shard(tmp_path, monkeypatch, shuffle):
    # Blocks of one shard that is resident already run on along it (up to MOST_BLOCK
    # positions and about BLOCK_BYTES of rows); any other block stays DECODE_BLOCK long.
    monkeypatch.setattr(dataset_module, "DECODE_BLOCK", 4)
    monkeypatch.setattr(dataset_module, "MOST_BLOCK", 19)
    _write(tmp_path / "d", 500)
    ds = StreamingDataset(local=str(tmp_path / "d"), shuffle=shuffle, batch_size=4,
                          shuffle_block_size=64)
    row_bytes = [s.get_raw_size() // s.samples for s in ds.shards]
    monkeypatch.setattr(dataset_module, "BLOCK_BYTES", 15 * min(row_bytes))
    most = [min(19, 15 * min(row_bytes) // size) for size in row_bytes]  # per shard
    assert min(most) < 19
    blocks = []
    decode = ds._decode_block

    def record(shards, rows, order, slot_of):
        blocks.append((len(rows), order, all(i in ds._ready for i in order)))
        return decode(shards, rows, order, slot_of)

    monkeypatch.setattr(ds, "_decode_block", record)
    got = [s["id"] for s in ds]
    want = worker_plan(ds._plan_spec(), 1, 1, 1, 0, 0, 0, 0, 0)
    assert got == want[want >= 0].tolist()
    assert sum(n for n, _, _ in blocks) == len(want)
    long = [(n, order, ready) for n, order, ready in blocks if n > 4]
    assert long and all(len(order) == 1 and ready and n <= most[order[0]]
                        for n, order, ready in long)
    if not shuffle:  # in order, most blocks run on: within each shard, all but the first
        assert len(blocks) < len(want) / 4 - ds.num_shards


def _twin_first_visits(sizes, ids):
    """Pure-NumPy twin of ``Spanner.first_visits``."""
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    shard_of = np.searchsorted(bounds, ids, "right") - 1
    first = np.full(len(sizes), len(ids), np.int64)
    np.minimum.at(first, shard_of, np.arange(len(ids), dtype=np.int64))
    visited = np.flatnonzero(first < len(ids))
    order = np.argsort(first[visited], kind="stable")
    return visited[order], first[visited[order]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12).filter(any), st.data())
def test_first_visits_kernel_matches_twin(sizes, data):
    spanner = Spanner(np.array(sizes, np.int64))
    n = sum(sizes)
    ids = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=60)), np.int64)
    shards, firsts = spanner.first_visits(ids)
    want_shards, want_first = _twin_first_visits(sizes, ids)
    assert shards.tolist() == want_shards.tolist()
    assert firsts.tolist() == want_first.tolist()
    for bad in (-1, n):
        with pytest.raises(ValueError, match="out of range"):
            spanner.first_visits(np.concatenate([[bad], ids]).astype(np.int64))


def test_dataset_first_visits_over_a_shuffled_plan(tmp_path):
    _write(tmp_path / "d", 300)
    ds = StreamingDataset(local=str(tmp_path / "d"), shuffle=True, batch_size=4,
                          shuffle_block_size=300, num_canonical_nodes=1)
    ids = worker_plan(ds._plan_spec(), 1, 1, 1, 0, 0, 0, 0, 0)
    ids = ids[ids >= 0]
    shards, firsts = ds._first_visits(ids)
    want_shards, want_first = _twin_first_visits(ds.samples_per_shard, ids)
    assert shards.tolist() == want_shards.tolist() and firsts.tolist() == want_first.tolist()
    assert len(shards) == ds.num_shards
