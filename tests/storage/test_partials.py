"""Temp files of downloads killed mid-way (``.NAME.XXXX.part``) are swept, but only under the
shard's lock: a download running in another process is never disturbed."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

from streaming.storage.atomic import atomic_file
from streaming.storage.cache import CacheEntry, ShardCache


def _entries(data: str, n: int, evictable: bool = True) -> list[CacheEntry]:
    return [CacheEntry(key=os.path.join(data, f"shard.{i:05}.mds"),
                       raw_files=(os.path.join(data, f"shard.{i:05}.mds"),),
                       zip_files=(os.path.join(data, f"shard.{i:05}.mds.zstd"),),
                       raw_size=10, zip_size=5, keep_zip=False, evictable=evictable)
            for i in range(n)]


def _write_forever(path: str, ready) -> None:  # pragma: no cover - runs in a child process
    with atomic_file(path) as (fd, _):
        os.write(fd, b"partial bytes")
        ready.set()
        time.sleep(600)  # killed here, mid-download


def _hold_lock(root: str, data: str, shard_id: int, ready, done) -> None:  # pragma: no cover
    cache = ShardCache(root, _entries(data, 3), None)
    with cache._hold(shard_id) as held:
        assert held
        ready.set()
        done.wait(60)


def _parts(data: str) -> list[str]:
    return sorted(n for n in os.listdir(data) if n.endswith(".part"))


def test_killed_download_leaves_part_that_reconcile_sweeps(tmp_path) -> None:
    data = str(tmp_path / "data")
    os.makedirs(data)
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_write_forever, args=(os.path.join(data, "shard.00001.mds"), ready))
    proc.start()
    assert ready.wait(60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(30)
    parts = _parts(data)
    assert len(parts) == 1 and parts[0].startswith(".shard.00001.mds.")
    # Unrelated dotfiles and other shards' files are left alone.
    keep = [".notes.part", ".shard.00009.mds.abc.part", "shard.00000.mds"]
    for name in keep:
        with open(os.path.join(data, name), "wb") as f:
            f.write(b"x")
    cache = ShardCache(str(tmp_path / "rt"), _entries(data, 3), None)
    cache.reconcile()
    assert _parts(data) == sorted(n for n in keep if n.endswith(".part"))
    assert os.path.isfile(os.path.join(data, "shard.00000.mds"))


def test_sweep_skips_shards_locked_by_another_process(tmp_path) -> None:
    data = str(tmp_path / "data")
    os.makedirs(data)
    root = str(tmp_path / "rt")
    names = [".shard.00000.mds.aaaa.part", ".shard.00001.mds.zstd.bbbb.part",
             ".shard.00002.mds.cccc.part"]
    for name in names:
        with open(os.path.join(data, name), "wb") as f:
            f.write(b"x")
    cache = ShardCache(root, _entries(data, 3), None)
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(root, data, 2, ready, done))
    holder.start()
    try:
        assert ready.wait(60)
        assert cache.sweep_partials() == 2  # shard 2 is being prepared elsewhere: untouched
        assert _parts(data) == [".shard.00002.mds.cccc.part"]
    finally:
        done.set()
        holder.join(30)
    assert holder.exitcode == 0
    assert cache.sweep_partials() == 1
    assert _parts(data) == []


def test_local_only_shards_are_never_swept(tmp_path) -> None:
    data = str(tmp_path / "data")
    os.makedirs(data)
    with open(os.path.join(data, ".shard.00000.mds.dddd.part"), "wb") as f:
        f.write(b"x")
    cache = ShardCache(str(tmp_path / "rt"), _entries(data, 1, evictable=False), None)
    assert cache.sweep_partials() == 0
    assert _parts(data) == [".shard.00000.mds.dddd.part"]
