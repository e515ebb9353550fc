"""The shard cache: prepare once, LRU eviction under a byte limit, crash recovery, a state machine."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from streaming.locks import FileLock
from streaming.storage.cache import PREPARING, CacheEntry, ShardCache

SIZES = [100, 250, 180, 90, 300, 120]


def _content(i: int, size: int) -> bytes:
    return bytes((i * 31 + j) % 251 for j in range(size))


def _make(root: str, sizes=SIZES, evictable=None, limit=None):
    """A cache over shards whose 'remote' copy is a byte pattern; returns (cache, materialize)."""
    data = os.path.join(root, "data")
    os.makedirs(data, exist_ok=True)
    evictable = evictable or [True] * len(sizes)
    entries = [CacheEntry(key=os.path.join(data, f"shard.{i:05}.mds"),
                          raw_files=(os.path.join(data, f"shard.{i:05}.mds"),), zip_files=(),
                          raw_size=size, zip_size=0, keep_zip=False, evictable=ev)
               for i, (size, ev) in enumerate(zip(sizes, evictable))]
    cache = ShardCache(os.path.join(root, "rt"), entries, limit)
    calls = []

    def materialize(i):
        def go():
            calls.append(i)
            path = entries[i].raw_files[0]
            with open(path + ".tmp", "wb") as f:
                f.write(_content(i, sizes[i]))
            os.replace(path + ".tmp", path)
        return go

    return cache, materialize, calls


def test_prepare_once_and_usage(tmp_path):
    cache, mat, calls = _make(str(tmp_path))
    assert cache.prepare(0, mat(0))
    assert cache.prepare(0, mat(0))
    assert calls == [0]
    assert cache.usage == SIZES[0]
    with open(cache.entries[0].raw_files[0], "rb") as f:
        assert f.read() == _content(0, SIZES[0])


def test_threads_prepare_each_shard_once(tmp_path):
    cache, mat, calls = _make(str(tmp_path))
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        for i in range(len(SIZES)):
            cache.prepare(i, mat(i))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(calls) == list(range(len(SIZES)))
    assert cache.usage == sum(SIZES)


def _ledger_row(cache: ShardCache, shard_id: int):
    db = sqlite3.connect(os.path.join(cache.root, "ledger.sqlite3"))
    try:
        return db.execute("SELECT atime, state FROM shards WHERE key=?",
                          (cache.entries[shard_id].key,)).fetchone()
    finally:
        db.close()


def test_shard_recorded_moments_ago_is_ready_without_its_lock_or_a_write(tmp_path):
    # (Another process's view of the same cache: its own connection and locks.)
    cache, mat, calls = _make(str(tmp_path))
    assert cache.prepare(0, mat(0))
    other = ShardCache(cache.root, cache.entries, None)
    busy = FileLock(cache.lock_path(cache.entries[0].key), thread_local=False)
    with busy:  # e.g. a third process checking it right now
        assert other.prepare(0, mat(0), blocking=False)
    assert other._db().total_changes == 0
    assert calls == [0]
    # Not yet recorded: the lock decides (busy, not blocking: not ready here).
    with FileLock(cache.lock_path(cache.entries[1].key), thread_local=False):
        assert not other.prepare(1, mat(1), blocking=False)
    assert calls == [0]


def test_stale_access_time_is_refreshed_by_prepare(tmp_path):
    cache, mat, calls = _make(str(tmp_path))
    cache.prepare(0, mat(0))
    db = sqlite3.connect(os.path.join(cache.root, "ledger.sqlite3"))
    db.execute("UPDATE shards SET atime=? WHERE key=?", (time.time() - 60, cache.entries[0].key))
    db.commit()
    db.close()
    other = ShardCache(cache.root, cache.entries, None)
    before = time.time()
    assert other.prepare(0, mat(0))
    atime, _ = _ledger_row(cache, 0)
    assert atime >= before - 0.01
    assert calls == [0]


def test_recorded_shard_whose_file_vanished_is_prepared_again(tmp_path):
    cache, mat, calls = _make(str(tmp_path))
    cache.prepare(0, mat(0))
    os.remove(cache.entries[0].raw_files[0])  # deleted behind the ledger's back, just now
    other = ShardCache(cache.root, cache.entries, None)
    assert other.prepare(0, mat(0))
    assert calls == [0, 0]
    with open(cache.entries[0].raw_files[0], "rb") as f:
        assert f.read() == _content(0, SIZES[0])


def test_lru_eviction_respects_limit(tmp_path):
    cache, mat, _ = _make(str(tmp_path), sizes=[100] * 6, limit=350)
    for i in range(3):
        cache.prepare(i, mat(i))
        time.sleep(0.002)
    cache.touch(0)  # shard 1 is now the coldest... after a while: touch is rate limited
    cache._last_touch.clear()
    cache.touch(0)
    cache.prepare(3, mat(3))  # must evict shard 1 (coldest), keep 0
    resident = cache.resident()
    assert set(resident) == {cache.entries[i].key for i in (0, 2, 3)}
    assert not os.path.exists(cache.entries[1].raw_files[0])
    assert cache.usage <= 350


def test_never_evicts_local_only(tmp_path):
    cache, mat, _ = _make(str(tmp_path), sizes=[100] * 4, evictable=[False, True, True, True],
                          limit=250)
    mat(0)()  # local-only data is simply there
    cache.prepare(0, mat(0))
    cache.prepare(1, mat(1))
    cache.prepare(2, mat(2))  # over: evicts 1, never 0
    assert os.path.exists(cache.entries[0].raw_files[0])
    assert not os.path.exists(cache.entries[1].raw_files[0])
    with pytest.raises(ValueError, match="no remote copy"):
        cache.evict(0)


def test_missing_local_only_shard_is_a_clear_error(tmp_path):
    cache, _, _ = _make(str(tmp_path), evictable=[False] * len(SIZES))
    with pytest.raises(FileNotFoundError, match="no remote"):
        cache.prepare(0, lambda: None)


def test_failed_materialize_leaves_nothing(tmp_path):
    cache, _, _ = _make(str(tmp_path))

    def broken():
        with open(cache.entries[0].raw_files[0], "wb") as f:
            f.write(b"partial")
        raise OSError("network down")

    with pytest.raises(OSError, match="network down"):
        cache.prepare(0, broken)
    assert not os.path.exists(cache.entries[0].raw_files[0])
    assert cache.resident() == {}


def test_stale_preparing_row_from_dead_process_is_dropped(tmp_path):
    cache, mat, _ = _make(str(tmp_path), sizes=[100] * 4, limit=300)
    cache.prepare(0, mat(0))
    # A process died while preparing shard 1: its row and a partial file remain, lock is free.
    with open(cache.entries[1].raw_files[0], "wb") as f:
        f.write(b"half")
    db = sqlite3.connect(os.path.join(cache.root, "ledger.sqlite3"))
    db.execute("INSERT INTO shards VALUES (?, ?, ?, ?, ?, ?)",
               (cache.entries[1].key, json.dumps(cache.entries[1].files), 100, 0.0, PREPARING, 1))
    db.commit()
    db.close()
    cache.prepare(2, mat(2))
    cache.prepare(3, mat(3))  # needs room: the stale reservation is reclaimed first
    assert cache.entries[1].key not in cache.resident()
    assert not os.path.exists(cache.entries[1].raw_files[0])
    assert cache.usage <= 300


def test_reconcile_records_disk_and_forgets_missing(tmp_path):
    cache, mat, _ = _make(str(tmp_path))
    cache.prepare(0, mat(0))
    cache.prepare(1, mat(1))
    os.remove(cache.entries[0].raw_files[0])  # deleted behind our back
    with open(cache.entries[2].raw_files[0], "wb") as f:  # appeared behind our back
        f.write(_content(2, SIZES[2]))
    cache.reconcile()
    assert set(cache.resident()) == {cache.entries[1].key, cache.entries[2].key}
    assert cache.usage == SIZES[1] + SIZES[2]


def test_cache_pickles(tmp_path):
    import pickle

    cache, mat, _ = _make(str(tmp_path))
    cache.prepare(0, mat(0))
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.usage == cache.usage


class CacheMachine(RuleBasedStateMachine):
    """Random prepares, touches, evictions, crashes and reconciles keep the ledger truthful."""

    def __init__(self):
        super().__init__()
        self.root = tempfile.mkdtemp()
        self.sizes = [60, 100, 140, 80, 120, 90, 70]
        self.evictable = [True, True, True, True, True, True, False]
        self.limit = 450
        self.cache, self.mat, _ = _make(self.root, self.sizes, self.evictable, self.limit)
        # The local-only shard is on disk from the start.
        self.mat(6)()
        self.cache.reconcile()

    def teardown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(i=st.integers(0, 5))
    def prepare(self, i):
        assert self.cache.prepare(i, self.mat(i))
        with open(self.cache.entries[i].raw_files[0], "rb") as f:
            assert f.read() == _content(i, self.sizes[i])

    @rule(i=st.integers(0, 6))
    def touch(self, i):
        self.cache._last_touch.clear()
        self.cache.touch(i)

    @rule(i=st.integers(0, 5))
    def evict(self, i):
        self.cache.evict(i)
        assert not os.path.exists(self.cache.entries[i].raw_files[0])

    @precondition(lambda self: any(os.path.exists(e.raw_files[0])
                                   for e in self.cache.entries[:6]))
    @rule()
    def evict_coldest(self):
        key = self.cache.evict_coldest()
        assert not os.path.exists(key)

    @rule(i=st.integers(0, 5))
    def crash_while_preparing(self, i):
        """A process died mid-download: a PREPARING row and a partial file, lock released."""
        entry = self.cache.entries[i]
        if os.path.exists(entry.raw_files[0]):
            return
        with self.cache._transaction() as db:
            if self.cache._make_room(db, entry.max_size, force=False):
                db.execute("INSERT OR REPLACE INTO shards VALUES (?, ?, ?, ?, ?, ?)",
                           (entry.key, json.dumps(entry.files), entry.max_size, time.time(),
                            PREPARING, 1))
        with open(entry.raw_files[0] + ".tmp", "wb") as f:
            f.write(b"partial")

    @rule()
    def reconcile(self):
        self.cache.reconcile()

    @invariant()
    def ledger_matches_disk_and_limit(self):
        rows = self.cache.resident()
        on_disk = 0
        for entry in self.cache.entries:
            exists = os.path.exists(entry.raw_files[0])
            if exists:
                on_disk += entry.raw_size
                assert entry.key in rows, "a resident shard is missing from the ledger"
            elif entry.key in rows:
                assert rows[entry.key][1] == PREPARING, "ledger lists a shard not on disk"
        assert on_disk <= self.limit
        assert self.cache.usage <= self.limit
        assert os.path.exists(self.cache.entries[6].raw_files[0]), "local-only shard evicted"


TestCacheMachine = CacheMachine.TestCase
TestCacheMachine.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)


def _open_ledger(root: str, go, errors) -> None:
    go.wait(30)
    try:
        ShardCache(root, [], None)
    except Exception as e:  # noqa: BLE001 (reported to the test)
        errors.put(repr(e))


def test_processes_opening_a_new_ledger_together(tmp_path):
    # SQLite refuses the switch to WAL ("database is locked", without waiting) while another
    # connection reads the new file: every process must still open the ledger.
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    errors = ctx.Queue()
    for round_ in range(12):
        root = str(tmp_path / f"r{round_}")
        go = ctx.Event()
        procs = [ctx.Process(target=_open_ledger, args=(root, go, errors)) for _ in range(6)]
        for p in procs:
            p.start()
        go.set()
        for p in procs:
            p.join(60)
        assert all(p.exitcode == 0 for p in procs)
    found = []
    while not errors.empty():
        found.append(errors.get(timeout=5))
    assert found == []
    db = sqlite3.connect(os.path.join(str(tmp_path / "r0"), "ledger.sqlite3"))
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _fork_and_use_ledger(cache: ShardCache, mat) -> int:
    """Fork; the child prepares a shard (a ledger call) within 10 s or is killed. Its status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover (child)
        import signal

        signal.alarm(10)
        try:
            cache.prepare(1, mat(1))
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return status


def test_forks_while_threads_use_the_ledger_never_leave_a_child_stuck(tmp_path):
    # A child forked while another thread was inside SQLite inherited SQLite's mutex held and
    # waited forever in its first ledger call (5-30% of such forks here, before the guard).
    cache, mat, _ = _make(str(tmp_path))
    for i in range(len(SIZES)):
        cache.prepare(i, mat(i))
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            cache.prepare(0, mat(0))
            assert cache.usage == sum(SIZES)

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        statuses = [_fork_and_use_ledger(cache, mat) for _ in range(120)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert statuses == [0] * 120


def test_fork_waits_for_a_transaction_another_call_waits_on(tmp_path):
    # Thread A waits (SQLite's busy timeout) for thread B's transaction; a fork then waits for
    # A, and must let B finish its transaction meanwhile instead of waiting forever.
    cache, mat, _ = _make(str(tmp_path))
    cache.prepare(0, mat(0))
    in_txn, a_waiting, done = threading.Event(), threading.Event(), []

    def b():
        with cache._transaction() as db:
            in_txn.set()
            a_waiting.wait(10)
            time.sleep(0.3)  # (the fork is pending by now)
            db.execute("UPDATE shards SET atime=? WHERE key=?", (time.time(), cache.entries[0].key))
        done.append("b")

    def a():
        in_txn.wait(10)
        a_waiting.set()
        with cache._transaction():  # waits for B's commit
            pass
        done.append("a")

    statuses = []
    threads = [threading.Thread(target=f, daemon=True) for f in (b, a)]
    for t in threads:
        t.start()
    a_waiting.wait(10)
    time.sleep(0.1)
    # (Forked from a thread of its own: were it stuck, the test fails instead of hanging.)
    fork = threading.Thread(target=lambda: statuses.append(_fork_and_use_ledger(cache, mat)),
                            daemon=True)
    fork.start()
    fork.join(20)
    assert statuses == [0], "the fork never happened: the guard kept B's commit out"
    for t in threads:
        t.join(10)
    assert done == ["b", "a"]
