"""The ledger's connections: what a fork does to them (see streaming.storage.ledger_db)."""

from __future__ import annotations

import gc
import sqlite3

import pytest

from streaming.storage import ledger_db


def test_connection_collected_during_a_fork_is_closed_by_the_next_call(tmp_path):
    path = str(tmp_path / "ledger.sqlite3")
    kept = ledger_db.LedgerConnection(path, timeout=5)
    dropped = ledger_db.LedgerConnection(path, timeout=5)
    raw = dropped._db
    ledger_db._before_fork()  # (what os.fork runs first: this thread now holds the guard)
    try:
        del dropped
        gc.collect()
        still_open = raw.execute("SELECT 1").fetchone()
    finally:
        ledger_db._after_fork_in_parent()
    assert still_open == (1,)  # not closed under the fork
    assert kept.execute("SELECT 2").fetchone() == (2,)
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        raw.execute("SELECT 1")


def test_connection_collected_outside_a_fork_is_closed_at_once(tmp_path):
    dropped = ledger_db.LedgerConnection(str(tmp_path / "ledger.sqlite3"), timeout=5)
    raw = dropped._db
    del dropped
    gc.collect()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        raw.execute("SELECT 1")


def test_rows_are_read_in_full_inside_the_call(tmp_path):
    db = ledger_db.LedgerConnection(str(tmp_path / "ledger.sqlite3"), timeout=5)
    db.execute("CREATE TABLE t (x INTEGER)")
    assert db.execute("INSERT INTO t VALUES (1), (2), (3)").rowcount == 3
    rows = db.execute("SELECT x FROM t ORDER BY x")
    assert rows.fetchall() == [(1,), (2,), (3,)]
    assert rows.fetchone() == (1,)
    assert db.execute("SELECT x FROM t WHERE x > 5").fetchone() is None
    assert db.total_changes == 3


def _child_writes(path: str) -> tuple[int, float]:
    """Fork; the child writes a row through a new connection (busy timeout 5 s, killed after
    20 s). The child's exit status, and how long the fork itself took."""
    import os
    import signal
    import time

    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (child)
        code = 1
        try:
            signal.alarm(20)
            db = ledger_db.LedgerConnection(path, timeout=5)
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t VALUES (2)")
            db.execute("COMMIT")
            code = 0
        finally:
            os._exit(code)
    forked = time.monotonic() - t0
    _, status = os.waitpid(pid, 0)
    return status, forked


def test_fork_waits_for_another_threads_transaction(tmp_path):
    # SQLite keeps its locks' state per process: a child forked while another thread's
    # connection held the write lock could not write for its whole busy timeout, even after
    # the parent committed (the cache's 600 s; CI once saw a worker-like child stuck so).
    import threading
    import time

    path = str(tmp_path / "ledger.sqlite3")
    setup = ledger_db.LedgerConnection(path, timeout=5)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (x)")
    opened, committed = threading.Event(), []

    def writer():
        db = ledger_db.LedgerConnection(path, timeout=5)
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t VALUES (1)")
        opened.set()
        time.sleep(0.3)
        committed.append(time.monotonic())
        db.execute("COMMIT")

    thread = threading.Thread(target=writer)
    thread.start()
    opened.wait()
    status, forked = _child_writes(path)
    thread.join()
    assert status == 0  # the child wrote (within its 5 s busy timeout)
    assert forked >= 0.2  # the fork waited for the transaction
    assert sorted(setup.execute("SELECT x FROM t").fetchall()) == [(1,), (2,)]


def test_fork_wait_for_transactions_is_bounded(tmp_path, monkeypatch):
    import threading
    import time

    monkeypatch.setattr(ledger_db, "FORK_WAIT_SECONDS", 0.2)
    path = str(tmp_path / "ledger.sqlite3")
    db = ledger_db.LedgerConnection(path, timeout=5)
    db.execute("CREATE TABLE t (x)")
    stuck = threading.Event()

    def holder():  # a transaction left open far longer than any the cache makes
        other = ledger_db.LedgerConnection(path, timeout=5)
        other.execute("BEGIN IMMEDIATE")
        stuck.set()
        time.sleep(1.5)
        other.execute("ROLLBACK")

    thread = threading.Thread(target=holder)
    thread.start()
    stuck.wait()
    t0 = time.monotonic()
    ledger_db._before_fork()
    ledger_db._after_fork_in_parent()
    waited = time.monotonic() - t0
    thread.join()
    assert 0.15 <= waited < 1.0  # waited its bound, not for the transaction


def test_forking_thread_own_transaction_does_not_hold_up_its_fork(tmp_path):
    import time

    db = ledger_db.LedgerConnection(str(tmp_path / "ledger.sqlite3"), timeout=5)
    db.execute("CREATE TABLE t (x)")
    db.execute("BEGIN IMMEDIATE")
    t0 = time.monotonic()
    ledger_db._before_fork()
    ledger_db._after_fork_in_parent()
    assert time.monotonic() - t0 < 1.0
    db.execute("COMMIT")
