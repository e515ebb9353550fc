"""Connections to the cache's ledger (SQLite) that a fork never catches inside a call.

SQLite keeps process-wide mutexes (its allocator's, its open-files list's). A process forked
while another of its threads is inside a SQLite call inherits that mutex held by a thread the
child does not have, and the child's first SQLite call then waits forever: a DataLoader worker
forked while the main process's prefetch thread touches the ledger hung in ``sqlite3.connect``.
Every call here counts itself in and out, and a fork (``os.register_at_fork``) waits until no
thread is inside one and keeps new ones out until it is done. Calls are not serialized: a
thread waiting on SQLite's busy timeout never holds up another thread's call (one that would
end the transaction it waits for, say); only forks wait for it.

A fork also waits for other threads' open transactions to end (they are short): SQLite keeps
its locks' state per process, so a child forked while a parent's connection held the write
lock inherits that state, takes the lock to be held by a connection of its own, and its
first write waited out the whole busy timeout (600 s in the cache), even after the parent
committed. The wait is bounded (:data:`FORK_WAIT_SECONDS`): a fork is never held up for good.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from typing import Any, Iterator, Sequence

__all__ = ["FORK_WAIT_SECONDS", "LedgerConnection", "Rows"]

# Longest a fork waits for other threads' open transactions to end.
FORK_WAIT_SECONDS = 10.0


class _ForkGuard:
    """How many threads are inside a SQLite call; a fork waits for none to be.

    While a fork waits, new calls wait for it, except those of a thread inside a transaction:
    another thread's call may be waiting (on SQLite's busy timeout) for that transaction to end.
    """

    def __init__(self) -> None:
        # (Reentrant: the forking thread may collect a connection while it holds the guard.)
        self._cond = threading.Condition(threading.RLock())
        self._inside = 0
        self._forking = False
        self._unclosed: list[sqlite3.Connection] = []
        self._open: dict[int, int] = {}  # connections (by id) in a transaction: their thread

    def enter(self, in_transaction: bool = False, wait: bool = True) -> bool:
        """Count this thread in (see the class's docstring); if not ``wait``, only if that needs
        no wait. Whether it did."""
        if not self._cond.acquire(blocking=wait):
            return False
        try:
            while self._forking and not in_transaction:
                if not wait:
                    return False
                self._cond.wait()
            self._inside += 1
            unclosed, self._unclosed = self._unclosed, []
        finally:
            self._cond.release()
        for db in unclosed:  # (collected while a fork was under way)
            with contextlib.suppress(sqlite3.Error):  # (never leave the count raised)
                db.close()
        return True

    def leave(self, connection: int | None = None, in_transaction: bool = False) -> None:
        """Count this thread out; with ``connection`` (an id), note whether it is now in a
        transaction."""
        with self._cond:
            self._inside -= 1
            if connection is not None:
                if in_transaction:
                    self._open[connection] = threading.get_ident()
                else:
                    self._open.pop(connection, None)
            if not self._inside:  # (a fork waits for this, then looks at the transactions)
                self._cond.notify_all()

    def close_later(self, db: sqlite3.Connection, connection: int) -> None:
        """Close ``db`` (a collected connection, by id ``connection``) at the next call to
        :meth:`enter`; whatever transaction it had is over for the forks."""
        with self._cond:
            self._unclosed.append(db)
            self._open.pop(connection, None)
            self._cond.notify_all()

    def hold(self) -> None:
        """Wait until no thread is inside a call, nor (for up to :data:`FORK_WAIT_SECONDS`)
        in a transaction but this one; return holding the guard, so that none enters until
        :meth:`let_go`."""
        self._cond.acquire()
        self._forking = True
        me = threading.get_ident()
        deadline = time.monotonic() + FORK_WAIT_SECONDS
        while True:
            if self._inside:
                self._cond.wait()
                continue
            left = deadline - time.monotonic()
            if left <= 0 or all(thread == me for thread in self._open.values()):
                return
            self._cond.wait(left)

    def let_go(self) -> None:
        self._forking = False
        self._cond.notify_all()
        self._cond.release()


_guard = _ForkGuard()


def _before_fork() -> None:
    _guard.hold()


def _after_fork_in_parent() -> None:
    _guard.let_go()


def _after_fork_in_child() -> None:
    global _guard
    _guard = _ForkGuard()  # (the child's only thread is the forking one: none is inside)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)


@contextlib.contextmanager
def _inside(connection: LedgerConnection | None = None) -> Iterator[None]:
    """One SQLite call (of ``connection``, if it is open already), counted in the guard, which
    then notes whether the connection is left in a transaction."""
    guard = _guard
    db = None if connection is None else connection._db
    guard.enter(db is not None and db.in_transaction)
    try:
        yield
    finally:
        if db is None:
            guard.leave()
        else:
            guard.leave(id(connection), db.in_transaction)


class Rows:
    """What a statement returned, read in full while inside the call."""

    __slots__ = ("rows", "rowcount")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        """The first row, or ``None``."""
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        """Every row."""
        return self.rows


class LedgerConnection:
    """A SQLite connection in autocommit mode (transactions are explicit), whose calls a fork
    waits for (see the module's docstring).

    Args:
        path (str): The database file.
        timeout (float): Seconds SQLite waits for another connection's write lock.
    """

    def __init__(self, path: str, timeout: float) -> None:
        self._pid = os.getpid()
        with _inside():
            self._db = sqlite3.connect(path, timeout=timeout, isolation_level=None,
                                       check_same_thread=False)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """Run one statement and read all it returns.

        Args:
            sql (str): The statement.
            params (Sequence[Any]): Its parameters. Defaults to ``()``.

        Returns:
            Rows: Its rows and ``rowcount``.
        """
        with _inside(self):
            cursor = self._db.execute(sql, params)
            return Rows(cursor.fetchall(), cursor.rowcount)

    @property
    def total_changes(self) -> int:
        """Rows this connection has inserted, updated or deleted."""
        return self._db.total_changes

    def __del__(self, _getpid: Any = os.getpid) -> None:
        db = getattr(self, "_db", None)
        guard = _guard  # (None while the interpreter tears the module down)
        if db is None or guard is None or _getpid() != self._pid:
            return  # (a forked child drops its parent's connections: no thread of its is inside)
        if guard.enter(wait=False):
            try:
                db.close()
            finally:
                guard.leave(id(self), False)
        else:  # a fork is under way (or the guard is busy): closed by the next call to enter
            guard.close_later(db, id(self))
