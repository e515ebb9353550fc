"""Prefetching ends with the epoch: once a plan has been read to its end, no prefetch task of it
is still running, so the local directory may be removed at once; a loop left early cancels
what is still queued."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.dataset import PREFETCH_THREADS


class _SlowPrefetch(StreamingDataset):
    """Each prefetch thread's ``prepare_shard`` takes a while; the iterating thread's does not."""

    started: list[int]
    ended: list[int]

    def prepare_shard(self, shard_id, blocking=True):
        if not threading.current_thread().name.startswith("streaming-prefetch"):
            return super().prepare_shard(shard_id, blocking)
        self.started.append(shard_id)
        time.sleep(0.5)
        try:
            return super().prepare_shard(shard_id, blocking)
        finally:
            self.ended.append(shard_id)


class _SlowPrefetchOverridden(_SlowPrefetch):
    """The same through a subclass's own ``get_item`` (one sample at a time)."""

    def get_item(self, sample_id, retry=7):
        return super().get_item(sample_id, retry)


def _slow_dataset(cls: type[_SlowPrefetch], local: str, rows: int,
                  shuffle: bool) -> _SlowPrefetch:
    """``rows`` small rows in shards of ~30 rows at ``local``, read through ``cls``."""
    with MDSWriter(out=local, columns={"id": "int", "pad": "bytes"}, size_limit=1 << 12) as w:
        for i in range(rows):
            w.write({"id": i, "pad": bytes(100)})
    ds = cls(local=local, shuffle=shuffle, batch_size=4)
    ds.started, ds.ended = [], []
    return ds


@pytest.mark.parametrize("cls", [_SlowPrefetch, _SlowPrefetchOverridden])
@pytest.mark.parametrize("shuffle", [False, True])
def test_no_prefetch_runs_after_the_epoch(tmp_path, cls, shuffle):
    local = str(tmp_path / "d")
    ds = _slow_dataset(cls, local, 400, shuffle)
    assert ds.num_shards >= 8
    got = sorted(s["id"] for s in ds)
    assert got == list(range(400))
    assert ds.started, "the epoch prefetched nothing"
    assert sorted(ds.ended) == sorted(ds.started), "a prefetch still runs after the epoch"
    # The ones still queued were cancelled, not run: only the threads' first tasks started.
    assert len(ds.started) <= PREFETCH_THREADS < ds.num_shards
    shutil.rmtree(local)
    time.sleep(0.3)
    assert not os.path.exists(local)


@pytest.mark.parametrize("cls", [_SlowPrefetch, _SlowPrefetchOverridden])
def test_a_loop_left_early_cancels_queued_prefetches(tmp_path, cls):
    ds = _slow_dataset(cls, str(tmp_path / "d"), 2000, False)
    for position, sample in enumerate(ds):
        assert sample["id"] == position
        if position == 300:  # past the first block, when shards beyond the window are queued
            break
    # Each prefetch takes 0.5 s: long enough for queued ones to start, had they not been
    # cancelled; the ones running at the break end on their own.
    time.sleep(1.6)
    assert ds.started, "nothing was prefetched"
    assert len(ds.started) <= PREFETCH_THREADS, ds.started
    assert sorted(ds.ended) == sorted(ds.started)
    # A new epoch after the break reads every sample.
    assert sorted(s["id"] for s in ds) == list(range(2000))
