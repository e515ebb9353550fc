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
