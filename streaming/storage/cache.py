"""The local shard cache: per-shard locks, an on-disk ledger of what is resident, LRU eviction.

Every process of a node that uses the same cache directory shares one ledger (SQLite in WAL mode)
holding, per resident shard, its files, its size in bytes and its last access time. Preparing a
shard (download, verify, decompress) happens under that shard's ``filelock``, so concurrent
processes prepare each shard once; room for it is reserved in the ledger first, evicting the least
recently used shards until ``cache_limit`` holds. Shards without a remote copy are never evicted.

Nothing here can go stale after a crash: ``flock`` locks die with their process, and a ledger row
left ``PREPARING`` by a dead process is noticed (its shard lock is free) and dropped, with any
partial files.

Layout under the runtime directory (see :func:`runtime_dir`)::

    ledger.sqlite3        the ledger (+ -wal / -shm files of SQLite)
    locks/<key>.lock      per-shard locks
    plans/                epoch plans (see ``streaming.plan_file``)
    runs/                 per-run epoch counters and resume state
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from filelock import Timeout

from streaming.locks import FileLock
from streaming.storage.ledger_db import LedgerConnection

__all__ = ["CacheEntry", "ShardCache", "runtime_dir"]

logger = logging.getLogger(__name__)

RUNTIME_DIRNAME = ".shardstream"
PREPARING = 1
LOCAL = 2
# Attempts at switching a new ledger to WAL while other processes read it (~5 s in all).
WAL_SWITCH_TRIES = 100
# Seconds between two ledger writes that only refresh one shard's access time in one process.
TOUCH_INTERVAL = 1.0
# Seconds to poll while all the space is held by shards other processes are preparing.
TICK = 0.007


def runtime_dir(locals_: Sequence[str]) -> str:
    """The directory holding the ledger, locks, plans and run state of a set of cache dirs.

    It is ``<first local>/.shardstream`` when that is writable (so every process that shares the
    cache shares it), else a directory under the system temp dir keyed by the cache dirs (a
    read-only local dataset still gets plans and locks).

    Args:
        locals_ (Sequence[str]): The local directory of each stream.

    Returns:
        str: The directory (created).
    """
    first = os.path.abspath(locals_[0])
    path = os.path.join(first, RUNTIME_DIRNAME)
    try:
        os.makedirs(path, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    key = hashlib.sha1("\0".join(os.path.abspath(p) for p in locals_).encode()).hexdigest()[:16]
    path = os.path.join(tempfile.gettempdir(), f"shardstream-{key}")
    os.makedirs(path, exist_ok=True)
    return path


@dataclass(frozen=True)
class CacheEntry:
    """What the cache needs to know about one shard.

    Args:
        key (str): Absolute path of the shard's first raw file: the ledger key.
        raw_files (tuple[str, ...]): Absolute paths of its decompressed files.
        zip_files (tuple[str, ...]): Absolute paths of its compressed files (empty if none).
        raw_size (int): Bytes of the decompressed files.
        zip_size (int): Bytes of the compressed files (0 if none).
        keep_zip (bool): Whether the compressed form stays once decompressed.
        evictable (bool): Whether a remote copy exists, so the files may be deleted.
        dirname (str, optional): The cache directory the files belong to (the stream's
            ``local/split``). Every file must lie inside it.

    Raises:
        ValueError: A file is not an absolute path, climbs with ``..``, or lies outside
            ``dirname``: the cache deletes and overwrites these files, so it refuses to manage
            anything else (the index's basenames are validated before, this is a second line).
    """

    key: str
    raw_files: tuple[str, ...]
    zip_files: tuple[str, ...]
    raw_size: int
    zip_size: int
    keep_zip: bool
    evictable: bool
    dirname: str | None = None

    def __post_init__(self) -> None:
        for path in (self.key, *self.files):
            _check_inside(path, self.dirname)

    @property
    def files(self) -> tuple[str, ...]:
        return self.raw_files + self.zip_files

    @property
    def max_size(self) -> int:
        """Bytes while being prepared: raw and zip both resident."""
        return self.raw_size + self.zip_size

    def has_raw(self) -> bool:
        return all(os.path.isfile(f) for f in self.raw_files)

    def has_zip(self) -> bool:
        return bool(self.zip_files) and all(os.path.isfile(f) for f in self.zip_files)

    def resident_size(self) -> int:
        """Bytes of this shard on disk now."""
        return self.raw_size * self.has_raw() + self.zip_size * self.has_zip()


def _check_inside(path: str, dirname: str | None = None) -> None:
    """Refuse a shard path that could reach outside its cache directory.

    Lexical on purpose: what matters is where the index's basenames point, and a cache
    directory may legitimately hold symlinks its user made.

    Args:
        path (str): A shard file's path.
        dirname (str, optional): The cache directory it must lie in.

    Raises:
        ValueError: ``path`` is relative, is not normalized (``..``, ``.``, ``//``), or lies
            outside ``dirname``.
    """
    if not os.path.isabs(path) or os.path.normpath(path) != path:
        raise ValueError(f"{path}: refusing to manage a shard file that is not a normalized "
                         f"absolute path (it could point outside the cache directory)")
    if dirname is not None:
        root = os.path.normpath(os.path.abspath(dirname))
        if os.path.commonpath([root, path]) != root or path == root:
            raise ValueError(f"{path}: refusing to manage a shard file outside the cache "
                             f"directory {root}")


def _remove_files(files: Sequence[str]) -> None:
    # Paths also come back from the ledger: check them all again before deleting any.
    for path in files:
        _check_inside(path)
    for path in files:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


class ShardCache:
    """A node-wide LRU cache of shards, safe across threads and processes.

    Picklable: connections and locks are opened lazily in each process.

    Args:
        root (str): Runtime directory (from :func:`runtime_dir`).
        entries (Sequence[CacheEntry]): Every shard of the dataset, by shard id.
        cache_limit (int, optional): Maximum bytes resident, or ``None`` for no eviction.
        base_usage (int): Bytes always resident and outside the ledger (the index files).
        wait_timeout (float): Seconds to wait for space held by shards that other processes are
            preparing before going over the limit with a warning.
    """

    def __init__(self, root: str, entries: Sequence[CacheEntry], cache_limit: int | None,
                 base_usage: int = 0, wait_timeout: float = 60.0) -> None:
        self.root = root
        self.entries = list(entries)
        self.cache_limit = cache_limit
        self.base_usage = base_usage
        self.wait_timeout = wait_timeout
        os.makedirs(os.path.join(root, "locks"), exist_ok=True)
        self._ledger_path = os.path.join(root, "ledger.sqlite3")
        self._init_process_state()
        with self._transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS shards (key TEXT PRIMARY KEY, files TEXT NOT "
                       "NULL, bytes INTEGER NOT NULL, atime REAL NOT NULL, state INTEGER NOT "
                       "NULL, evictable INTEGER NOT NULL)")

    # -- process-local state (not pickled) -------------------------------------------------------

    def _init_process_state(self) -> None:
        self._pid = os.getpid()
        self._local = threading.local()
        self._locks: dict[int, tuple[threading.Lock, FileLock]] = {}
        self._locks_guard = threading.Lock()
        self._last_touch: dict[int, float] = {}

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in ("_local", "_locks", "_locks_guard", "_last_touch", "_pid"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_process_state()

    def _db(self) -> LedgerConnection:
        if self._pid != os.getpid():  # forked: never reuse the parent's connections or locks
            self._init_process_state()
        db = getattr(self._local, "db", None)
        if db is None:
            db = LedgerConnection(self._ledger_path, timeout=600)
            self._use_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def _use_wal(self, db: LedgerConnection) -> None:
        """Put the ledger in WAL mode (kept in its file: done once per ledger). SQLite refuses
        the switch at once ("database is locked", without waiting on its busy timeout) while
        another connection reads the file, so processes opening a new ledger together switch
        it one at a time, and retry while a reader is in the way."""
        if db.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
            return
        with FileLock(self._ledger_path + ".lock", thread_local=False):
            for attempt in range(WAL_SWITCH_TRIES):
                try:
                    db.execute("PRAGMA journal_mode=WAL")
                    return
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or attempt == WAL_SWITCH_TRIES - 1:
                        raise
                    time.sleep(0.001 * (attempt + 1))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[LedgerConnection]:
        """A write transaction: the ledger is ours until it commits."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def lock_path(self, key: str) -> str:
        """The lock file of the shard whose ledger key is ``key``."""
        name = hashlib.sha1(key.encode()).hexdigest()[:24]
        return os.path.join(self.root, "locks", name + ".lock")

    def _lock(self, shard_id: int) -> tuple[threading.Lock, FileLock]:
        """The shard's locks: a thread lock (a FileLock object is reentrant across threads) and
        the file lock that excludes other processes."""
        if self._pid != os.getpid():
            self._init_process_state()
        locks = self._locks.get(shard_id)
        if locks is None:
            with self._locks_guard:
                locks = self._locks.get(shard_id)
                if locks is None:
                    path = self.lock_path(self.entries[shard_id].key)
                    locks = threading.Lock(), FileLock(path, thread_local=False)
                    self._locks[shard_id] = locks
        return locks

    @contextlib.contextmanager
    def _hold(self, shard_id: int, blocking: bool = True) -> Iterator[bool]:
        """Hold the shard's locks; yields False (holding nothing) if not blocking and busy."""
        thread_lock, file_lock = self._lock(shard_id)
        if not thread_lock.acquire(blocking):
            yield False
            return
        try:
            try:
                file_lock.acquire(timeout=-1 if blocking else 0)
            except Timeout:
                yield False
                return
            try:
                yield True
            finally:
                file_lock.release()
        finally:
            thread_lock.release()

    # -- queries ---------------------------------------------------------------------------------

    @property
    def usage(self) -> int:
        """Bytes resident: the ledger's total plus ``base_usage``."""
        (total,) = self._db().execute("SELECT COALESCE(SUM(bytes), 0) FROM shards").fetchone()
        return int(total) + self.base_usage

    def resident(self) -> dict[str, tuple[int, int]]:
        """Ledger rows: key -> (bytes, state)."""
        rows = self._db().execute("SELECT key, bytes, state FROM shards").fetchall()
        return {key: (int(size), int(state)) for key, size, state in rows}

    # -- bringing the ledger in line with the disk -----------------------------------------------

    def reconcile(self) -> None:
        """Record shards already on disk and forget ledger rows whose files are gone.

        Partial shards (some files of a multi-file shard missing) are deleted, as is a redundant
        compressed copy when it is not kept. Files of shards without a remote copy are never
        deleted.
        """
        self.sweep_partials()
        now = time.time()
        found = []
        for entry in self.entries:
            if entry.evictable:
                raws = [os.path.isfile(f) for f in entry.raw_files]
                zips = [os.path.isfile(f) for f in entry.zip_files]
                if any(raws) and not all(raws):
                    _remove_files(entry.raw_files)
                if any(zips) and not all(zips):
                    _remove_files(entry.zip_files)
                if all(raws) and zips and all(zips) and not entry.keep_zip:
                    # The reference deletes the raw copy here by mistake; the zip is redundant.
                    _remove_files(entry.zip_files)
            found.append((entry, entry.resident_size()))
        with self._transaction() as db:
            rows = dict(db.execute("SELECT key, state FROM shards").fetchall())
            for entry, size in found:
                state = rows.get(entry.key)
                if state == PREPARING:
                    continue  # being prepared right now, or left by a dead process (_make_room)
                if size:
                    db.execute("INSERT INTO shards VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO "
                               "UPDATE SET bytes=excluded.bytes",
                               (entry.key, json.dumps(entry.files), size, now, LOCAL,
                                int(entry.evictable)))
                elif state is not None:
                    db.execute("DELETE FROM shards WHERE key=?", (entry.key,))

    def sweep_partials(self) -> int:
        """Delete temp files (``.NAME.XXXX.part``, see ``atomic_file``) left by killed downloads.

        Each shard's temp files are deleted only while holding that shard's lock, so a download
        in progress elsewhere (which holds it) is never disturbed; busy shards are skipped.
        Every directory is listed once.

        Returns:
            int: How many files were deleted.
        """
        owner: dict[str, dict[str, int]] = {}  # dir -> ".BASENAME." -> shard id
        for shard_id, entry in enumerate(self.entries):
            if entry.evictable:
                for path in entry.files:
                    dirname, base = os.path.split(path)
                    owner.setdefault(dirname, {})[f".{base}."] = shard_id
        stale: dict[int, list[str]] = {}
        for dirname, prefixes in owner.items():
            try:
                names = os.listdir(dirname)
            except OSError:
                continue
            for name in names:
                if name.startswith(".") and name.endswith(".part"):
                    prefix = name[:name.rfind(".", 0, len(name) - len(".part")) + 1]
                    shard_id = prefixes.get(prefix)
                    if shard_id is not None:
                        stale.setdefault(shard_id, []).append(os.path.join(dirname, name))
        removed = 0
        for shard_id, paths in stale.items():
            with self._hold(shard_id, blocking=False) as held:
                if held:
                    _remove_files(paths)
                    removed += len(paths)
        if removed:
            logger.info(f"Removed {removed} partial download(s) left by an interrupted process")
        return removed

    # -- the main operation ----------------------------------------------------------------------

    def prepare(self, shard_id: int, materialize: Callable[[], object],
                blocking: bool = True) -> bool:
        """Make sure a shard is resident and decompressed, preparing it at most once per node.

        Args:
            shard_id (int): Which shard.
            materialize (Callable[[], object]): Downloads/verifies/decompresses the shard's files
                (called under the shard's lock, after room was reserved for it).
            blocking (bool): Wait if another process or thread is preparing it; if ``False``,
                return ``False`` at once instead.

        Returns:
            bool: Whether the shard is resident now.
        """
        entry = self.entries[shard_id]
        if self._recorded_fresh(shard_id):
            return True
        with self._hold(shard_id, blocking) as held:
            if not held:
                return False
            if entry.has_raw():
                self._touch_or_record(shard_id)
                return True
            if not entry.evictable and not entry.zip_files:
                raise FileNotFoundError(
                    f"{entry.raw_files[0]}: shard file is missing and there is no remote to "
                    "download it from")
            self._reserve(shard_id)
            try:
                materialize()
            except BaseException:
                if entry.evictable:  # whatever was fetched is incomplete or failed verification
                    _remove_files(entry.files)
                with self._transaction() as db:
                    db.execute("DELETE FROM shards WHERE key=?", (entry.key,))
                raise
            size = entry.resident_size()
            with self._transaction() as db:
                db.execute("UPDATE shards SET bytes=?, atime=?, state=? WHERE key=?",
                           (size, time.time(), LOCAL, entry.key))
            self._last_touch[shard_id] = time.monotonic()
            return True

    def touch(self, shard_id: int) -> None:
        """Note an access to a resident shard (rate-limited per process)."""
        now = time.monotonic()
        if now - self._last_touch.get(shard_id, -TOUCH_INTERVAL) < TOUCH_INTERVAL:
            return
        self._last_touch[shard_id] = now
        self._db().execute("UPDATE shards SET atime=? WHERE key=?",
                           (time.time(), self.entries[shard_id].key))

    def _recorded_fresh(self, shard_id: int) -> bool:
        """Whether the ledger has the shard resident, touched within :data:`TOUCH_INTERVAL` by
        any process, and its files are there: then preparing it is a read, neither its lock nor
        a write (DataLoader workers starting an epoch each prepare the same shards at once, and
        their write transactions and lock waits were most of a worker's first shard)."""
        entry = self.entries[shard_id]
        row = self._db().execute("SELECT atime FROM shards WHERE key=? AND state=?",
                                 (entry.key, LOCAL)).fetchone()
        if row is None or not 0 <= time.time() - row[0] < TOUCH_INTERVAL or not entry.has_raw():
            return False
        self._last_touch[shard_id] = time.monotonic()
        return True

    def _touch_or_record(self, shard_id: int) -> None:
        """The shard is on disk: refresh its access time, recording it if the ledger missed it
        (unless another process just did, while this one waited for the shard's lock)."""
        if self._recorded_fresh(shard_id):
            return
        entry = self.entries[shard_id]
        now = time.time()
        with self._transaction() as db:
            cur = db.execute("UPDATE shards SET atime=? WHERE key=? AND state=?",
                             (now, entry.key, LOCAL))
            if not cur.rowcount:
                db.execute("INSERT OR REPLACE INTO shards VALUES (?, ?, ?, ?, ?, ?)",
                           (entry.key, json.dumps(entry.files), entry.resident_size(),
                            now, LOCAL, int(entry.evictable)))
        self._last_touch[shard_id] = time.monotonic()

    def _reserve(self, shard_id: int) -> None:
        """Insert a PREPARING row for the shard, evicting cold shards until it fits."""
        entry = self.entries[shard_id]
        deadline = time.monotonic() + self.wait_timeout
        while True:
            with self._transaction() as db:
                # Our own row can only be left over from a dead process: we hold the shard lock.
                db.execute("DELETE FROM shards WHERE key=?", (entry.key,))
                fits = self._make_room(db, entry.max_size, force=time.monotonic() > deadline)
                if fits:
                    db.execute("INSERT INTO shards VALUES (?, ?, ?, ?, ?, ?)",
                               (entry.key, json.dumps(entry.files), entry.max_size, time.time(),
                                PREPARING, int(entry.evictable)))
                    return
            time.sleep(TICK)

    def _make_room(self, db: LedgerConnection, need: int, force: bool) -> bool:
        """Evict until ``need`` more bytes fit; False if only busy shards stand in the way."""
        if not self.cache_limit:
            return True
        (total,) = db.execute("SELECT COALESCE(SUM(bytes), 0) FROM shards").fetchone()
        usage = int(total) + self.base_usage
        if usage + need <= self.cache_limit:
            return True
        # Reservations left by dead processes go first (garbage), then the coldest shards.
        rows = db.execute("SELECT key, files, bytes, state, evictable FROM shards "
                          "ORDER BY state ASC, atime ASC").fetchall()
        busy = False
        for key, files, size, state, evictable in rows:
            if usage + need <= self.cache_limit:
                break
            lock = FileLock(self.lock_path(key), thread_local=False)
            try:
                lock.acquire(timeout=0)
            except Timeout:
                busy = True  # being prepared or checked right now: not ours to delete
                continue
            try:
                if state == PREPARING:
                    # Nobody holds its lock, so whoever was preparing it died: drop the partial
                    # files (only where a remote copy exists) and the reservation.
                    logger.info(f"Dropping shard {key} left half-prepared by a dead process")
                elif not evictable:
                    continue
                if evictable:
                    _remove_files(json.loads(files))
                db.execute("DELETE FROM shards WHERE key=?", (key,))
                usage -= int(size)
            finally:
                lock.release()
        if usage + need <= self.cache_limit:
            return True
        if busy and not force:
            return False
        logger.warning(
            f"Cache limit ({self.cache_limit} bytes) exceeded: {usage} bytes resident that "
            f"cannot be evicted (no remote copy, or in use) and {need} more needed. Raise "
            f"`cache_limit` to avoid this.")
        return True

    # -- explicit eviction -----------------------------------------------------------------------

    def evict(self, shard_id: int) -> int:
        """Evict one shard now (its files and its ledger row).

        Args:
            shard_id (int): Which shard.

        Returns:
            int: Bytes freed.

        Raises:
            ValueError: The shard has no remote copy, so deleting it would lose data.
        """
        entry = self.entries[shard_id]
        if not entry.evictable:
            raise ValueError(f"{entry.key}: refusing to evict a shard that has no remote copy")
        with self._hold(shard_id):
            with self._transaction() as db:
                row = db.execute("SELECT bytes FROM shards WHERE key=?", (entry.key,)).fetchone()
                _remove_files(entry.files)
                db.execute("DELETE FROM shards WHERE key=?", (entry.key,))
        self._last_touch.pop(shard_id, None)
        return int(row[0]) if row else 0

    def evict_coldest(self) -> str:
        """Evict the least recently used evictable shard.

        Returns:
            str: The evicted shard's ledger key.

        Raises:
            ValueError: Nothing can be evicted.
        """
        with self._transaction() as db:
            rows = db.execute("SELECT key, files FROM shards WHERE state=? AND evictable=1 "
                              "ORDER BY atime ASC", (LOCAL,)).fetchall()
            for key, files in rows:
                lock = FileLock(self.lock_path(key), thread_local=False)
                try:
                    lock.acquire(timeout=0)
                except Timeout:
                    continue
                try:
                    _remove_files(json.loads(files))
                    db.execute("DELETE FROM shards WHERE key=?", (key,))
                    return key
                finally:
                    lock.release()
        raise ValueError("Attempted shard eviction, but there are no shards present locally to "
                         "evict. Your cache limit may be too low.")
