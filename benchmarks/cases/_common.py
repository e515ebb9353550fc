"""Helpers shared by the benchmark workers.

Every worker runs inside ONE implementation's venv (the project, the reference, a peer), so this
module imports nothing beyond the standard library and NumPy at top level. A worker is invoked as
``<venv>/bin/python benchmarks/cases/<bench>.py --impl NAME --params JSON`` and prints exactly one
line starting with ``BENCH_RESULT `` followed by a JSON object; everything else it prints (library
logs, warnings) is ignored by ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

RESULT_PREFIX = "BENCH_RESULT "

# Row shapes used by every benchmark (deterministic, so each venv can regenerate the same rows).
TOKENS_PER_ROW = 2048
TOKEN_POOL = 64  # distinct token rows cycled through (keeps generation out of the timings)
BYTES_PER_ROW = 100_000
BYTES_POOL = 16
MDS_COLUMNS = {
    "tokens": {"tokens": "ndarray:int32"},
    "bytes": {"blob": "bytes"},
    "text": {"text": "str", "id": "int"},
}
_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa")


def token_pool() -> np.ndarray:
    """Return the fixed pool of 2048-token int32 rows."""
    rng = np.random.default_rng(1234)
    return rng.integers(0, 50_000, size=(TOKEN_POOL, TOKENS_PER_ROW), dtype=np.int32)


def bytes_pool() -> list[bytes]:
    """Return the fixed pool of ~100 KB binary rows."""
    rng = np.random.default_rng(4321)
    return [rng.bytes(BYTES_PER_ROW) for _ in range(BYTES_POOL)]


def text_row(i: int) -> dict[str, Any]:
    """Return small row ``i`` of the ``text`` dataset (a short str and an int)."""
    words = " ".join(_WORDS[(i * 7 + k) % len(_WORDS)] for k in range(3 + i % 5))
    return {"text": f"sample {i}: {words}", "id": i}


def rows(kind: str, n: int) -> Iterator[dict[str, Any]]:
    """Yield ``n`` rows of dataset kind ``tokens``, ``bytes`` or ``text``."""
    if kind == "tokens":
        pool = token_pool()
        for i in range(n):
            yield {"tokens": pool[i % TOKEN_POOL]}
    elif kind == "bytes":
        bpool = bytes_pool()
        for i in range(n):
            yield {"blob": bpool[i % BYTES_POOL]}
    elif kind == "text":
        for i in range(n):
            yield text_row(i)
    else:
        raise ValueError(f"unknown row kind {kind!r}")


def row_nbytes(kind: str) -> float:
    """Approximate payload bytes of one row, for MB/s figures."""
    return {"tokens": TOKENS_PER_ROW * 4, "bytes": BYTES_PER_ROW, "text": 40}[kind]


def rss_mb() -> float:
    """Current resident set size of this process in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """Peak RSS in MB of this process, and separately of its largest reaped child (max of both)."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return max(me, kids)


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS high-water mark (Linux >= 4.0), so it measures only the work."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def vm_hwm_mb() -> float:
    """Peak RSS since the last :func:`reset_peak_rss` (``VmHWM``), in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def fresh_view(src: str | os.PathLike[str], root: str | None = None) -> str:
    """Make a fresh directory whose shard files are symlinks into ``src`` (index.json copied).

    Implementations may write cache metadata (locks, ledgers, plan files) into their local
    directory; a fresh view per run keeps the shared dataset pristine and stops one run's cached
    state from flattering the next one.
    """
    src = Path(src)
    dst = Path(tempfile.mkdtemp(prefix="view-", dir=root or os.environ.get("BENCH_TMP")))
    for entry in src.iterdir():
        if entry.name.endswith(".json"):
            shutil.copyfile(entry, dst / entry.name)
        elif entry.is_dir():
            fresh = Path(fresh_view(entry, str(dst)))
            fresh.rename(dst / entry.name)
        else:
            (dst / entry.name).symlink_to(entry.resolve())
    return str(dst)


def clean_shm(impl: str) -> None:
    """Clear stale POSIX shared memory the reference may have left (no-op elsewhere)."""
    try:
        from streaming.base.util import clean_stale_shared_memory

        clean_stale_shared_memory()
    except Exception:  # noqa: BLE001 - best effort: not every implementation has it
        pass


def emit(result: dict[str, Any]) -> None:
    """Print the one result line."""
    sys.stdout.flush()
    print(RESULT_PREFIX + json.dumps(result, default=float), flush=True)


def collect_garbage() -> None:
    """Run a full garbage collection, so that none is due when a timing starts.

    Importing the libraries (torch alone tracks ~0.4M objects) leaves Python's collector with a
    full collection due; it falls on the first few hundred objects allocated next, whoever
    allocates them: inside the timings, ~60 ms here (half a 32,768-row token epoch), or not,
    depending only on what was imported and how. Every implementation's timings start after
    one (``timeit`` goes further and turns the collector off; here it stays on).
    """
    gc.collect()


def start_clock() -> float:
    """:func:`collect_garbage`, then ``time.perf_counter()``: where every timing starts.

    Returns:
        float: The clock.
    """
    collect_garbage()
    return time.perf_counter()


def settle(quiet_ms: float = 2.0, window_s: float = 0.05, most_s: float = 2.0) -> float:
    """Wait until this process burns (almost) no CPU while idle: NumPy's bundled OpenBLAS spins
    its threads for ~50-100 ms after ``import numpy`` (~50 ms of CPU on the other core here),
    which a measurement started at once would share its cores with. Returns the seconds
    waited."""
    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    start = time.perf_counter()
    while time.perf_counter() - start < most_s:
        before = cpu()
        time.sleep(window_s)
        if (cpu() - before) * 1e3 < quiet_ms:
            break
    return time.perf_counter() - start


def main(run: Callable[[str, dict[str, Any]], dict[str, Any]]) -> None:
    """Parse ``--impl``/``--params``, call ``run(impl, params)`` and emit its metrics.

    An exception becomes ``{"error": "<Type>: <message>"}`` so one failing implementation never
    stops the run.
    """
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", required=True)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    params = json.loads(args.params)
    settle()  # (the libraries themselves are imported inside run, before timing starts)
    t0 = time.perf_counter()
    try:
        metrics = run(args.impl, params)
    except BaseException as err:  # noqa: BLE001 - the harness reports every failure as a cell
        traceback.print_exc()
        msg = str(err).strip().splitlines()
        emit({"error": f"{type(err).__name__}: {msg[0] if msg else ''}"[:300]})
        sys.exit(1)
    metrics.setdefault("peak_rss_mb", peak_rss_mb())
    metrics["wall_s"] = time.perf_counter() - t0
    emit(metrics)


class RawMDS:
    """The raw-read ceiling: NumPy over the same MDS shard bytes, no library in between.

    Memory-maps each shard and locates every column of every sample with vectorised NumPy (the
    offset table, the uint32 size headers of variable-size columns), so per sample it does only
    what any Python-level reader must: slice the bytes, decode ``str``, build the dict. Knows the
    benchmark kinds only (``tokens``: one ``ndarray:int32`` column of 2048 values at the end of
    each sample; ``text``: ``str`` + ``int``).
    """

    def __init__(self, local: str, kind: str) -> None:
        import mmap

        with open(os.path.join(local, "index.json")) as f:
            index = json.load(f)
        self.kind = kind
        self.shards: list[dict[str, list[Any]]] = []
        self.ends: list[int] = []
        total = 0
        for shard in index["shards"]:
            path = os.path.join(local, shard["raw_data"]["basename"])
            with open(path, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self.shards.append(self._layout(mm, shard))
            total += shard["samples"]
            self.ends.append(total)
        self.num_samples = total

    def _layout(self, mm: Any, shard: dict[str, Any]) -> dict[str, Any]:
        n = shard["samples"]
        buf = np.frombuffer(mm, np.uint8)
        off = np.frombuffer(mm, np.uint32, n + 1, 4).astype(np.int64)
        if self.kind == "tokens":
            # The array's values end each sample: a zero-copy 2-D view when rows are evenly spaced.
            starts = off[1:] - TOKENS_PER_ROW * 4
            if n and (np.diff(off) == off[1] - off[0]).all():
                stride = int(off[1] - off[0]) if n > 1 else TOKENS_PER_ROW * 4
                rows2d = np.lib.stride_tricks.as_strided(
                    np.frombuffer(mm, np.int32, TOKENS_PER_ROW, int(starts[0])),
                    shape=(n, TOKENS_PER_ROW),
                    strides=(stride, 4),
                )
                return {"tokens": list(rows2d)}
            return {"tokens": [np.frombuffer(mm, np.int32, TOKENS_PER_ROW, s) for s in starts]}
        names, encs, sizes = shard["column_names"], shard["column_encodings"], shard["column_sizes"]
        begins = off[:-1]
        var = [k for k, size in enumerate(sizes) if size is None]

        def u32(at: np.ndarray) -> np.ndarray:
            b = buf[at[:, None] + np.arange(4)].astype(np.int64)
            return b[:, 0] | b[:, 1] << 8 | b[:, 2] << 16 | b[:, 3] << 24

        var_sizes = {k: u32(begins + 4 * v) for v, k in enumerate(var)}
        pos = begins + 4 * len(var)
        out: dict[str, Any] = {"_mm": mm}
        for k, (name, enc) in enumerate(zip(names, encs)):
            size = var_sizes[k] if k in var_sizes else np.full(n, sizes[k], np.int64)
            if enc == "str":
                out[name] = (pos.tolist(), (pos + size).tolist())
            else:  # int: little-endian int64
                out[name] = buf[pos[:, None] + np.arange(8)].copy().view("<i8").ravel().tolist()
            pos = pos + size
        return out

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, i: int) -> dict[str, Any]:
        import bisect

        k = bisect.bisect_right(self.ends, i)
        j = i - (self.ends[k - 1] if k else 0)
        cols = self.shards[k]
        if self.kind == "tokens":
            return {"tokens": cols["tokens"][j]}
        mm, (b, e) = cols["_mm"], cols["text"]
        return {"id": cols["id"][j], "text": mm[b[j] : e[j]].decode()}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for cols in self.shards:
            if self.kind == "tokens":
                for row in cols["tokens"]:
                    yield {"tokens": row}
                continue
            mm, (b, e), ids = cols["_mm"], cols["text"], cols["id"]
            for j in range(len(ids)):
                yield {"id": ids[j], "text": mm[b[j] : e[j]].decode()}


def check_row(kind: str, item: Any, batched: bool = False) -> None:
    """Raise if a yielded row (or the first row of a batch) is not what the dataset holds.

    Keeps a fast-but-wrong reader from looking good: rows are deterministic, so a text row must
    match :func:`text_row` of its id, and a token row must be one of the pool's rows.
    """

    def first(value: Any) -> Any:
        return value[0] if batched else value

    if kind == "text":
        got_id = int(first(item["id"]))
        if first(item["text"]) != text_row(got_id)["text"]:
            raise AssertionError(f"row {got_id} has the wrong text: {first(item['text'])!r}")
    elif kind == "tokens":
        tokens = np.asarray(first(item["tokens"]))
        if tokens.shape != (TOKENS_PER_ROW,) or not (token_pool() == tokens).all(1).any():
            raise AssertionError("a token row does not match any written row")
