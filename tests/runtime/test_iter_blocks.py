"""Iteration decodes the plan in blocks and chunks; every boundary keeps the plan's order."""

from __future__ import annotations

import numpy as np
import pytest

import streaming.dataset as dataset_module
from streaming import MDSWriter, StreamingDataset
from streaming.plan import worker_plan


def _write(out: str, n: int) -> None:
    with MDSWriter(out=str(out), columns={"id": "int", "tokens": "ndarray:int32"},
                   size_limit=1 << 11) as writer:
        for i in range(n):
            writer.write({"id": i, "tokens": np.arange(i % 7 + 1, dtype=np.int32) + i})


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("block,chunk", [(3, 7), (256, 1 << 16), (5, 5)])
def test_iteration_follows_the_plan(tmp_path, monkeypatch, shuffle, block, chunk):
    monkeypatch.setattr(dataset_module, "DECODE_BLOCK", block)
    monkeypatch.setattr(dataset_module, "LOCATE_CHUNK", chunk)
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


def test_first_visits_stops_early_and_is_exact(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset_module, "LOCATE_CHUNK", 16)
    _write(tmp_path / "d", 300)
    ds = StreamingDataset(local=str(tmp_path / "d"), shuffle=True, batch_size=4,
                          shuffle_block_size=300, num_canonical_nodes=1)
    ids = worker_plan(ds._plan_spec(), 1, 1, 1, 0, 0, 0, 0, 0)
    ids = ids[ids >= 0]
    shards, firsts = ds._first_visits(ids)
    shard_of, _ = ds.spanner.locate(ids)
    want_shards, want_first = [], []
    for pos, shard in enumerate(shard_of.tolist()):
        if shard not in want_shards:
            want_shards.append(shard)
            want_first.append(pos)
    assert shards.tolist() == want_shards and firsts.tolist() == want_first
    calls = []
    real = ds.spanner.locate
    monkeypatch.setattr(ds.spanner, "locate", lambda x: calls.append(len(x)) or real(x))
    ds._first_visits(ids)
    assert sum(calls) < len(ids)  # stopped once every shard was seen
