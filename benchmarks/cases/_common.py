"""Helpers shared by the benchmark workers.

Every worker runs inside ONE implementation's venv (the project, the reference, a peer), so this
module imports nothing beyond the standard library and NumPy at top level. A worker is invoked as
``<venv>/bin/python benchmarks/cases/<bench>.py --impl NAME --params JSON`` and prints exactly one
line starting with ``BENCH_RESULT `` followed by a JSON object; everything else it prints (library
logs, warnings) is ignored by ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
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

    Memory-maps each shard, reads its offset table with one ``np.frombuffer``, and per sample does
    the least a Python-level reader must: slice the bytes and build the sample dict. Supports the
    benchmark kinds only (``tokens``: one ``ndarray:int32`` column; ``text``: ``str`` + ``int``).
    """

    def __init__(self, local: str, kind: str) -> None:
        import mmap

        with open(os.path.join(local, "index.json")) as f:
            index = json.load(f)
        self.kind = kind
        self.maps: list[Any] = []
        self.offsets: list[np.ndarray] = []
        sizes = []
        for shard in index["shards"]:
            path = os.path.join(local, shard["raw_data"]["basename"])
            with open(path, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            n = shard["samples"]
            self.maps.append(mm)
            self.offsets.append(np.frombuffer(mm, np.uint32, n + 1, 4).tolist())
            sizes.append(n)
        # Columns are stored sorted by name; variable-size ones have a uint32 size up front.
        first = index["shards"][0] if index["shards"] else {"column_names": [], "column_sizes": []}
        self.columns = list(
            zip(first["column_names"], first["column_encodings"], first["column_sizes"])
        )
        self.num_var = sum(1 for _, _, size in self.columns if size is None)
        self.ends = np.cumsum(sizes)
        self.num_samples = int(self.ends[-1]) if sizes else 0

    def _decode(self, mm: Any, begin: int, end: int) -> dict[str, Any]:
        if self.kind == "tokens":  # one column: shape header + 2048 int32 at the end
            return {"tokens": np.frombuffer(mm, np.int32, TOKENS_PER_ROW, end - TOKENS_PER_ROW * 4)}
        var = np.frombuffer(mm, np.uint32, self.num_var, begin).tolist() if self.num_var else []
        pos = begin + 4 * self.num_var
        out: dict[str, Any] = {}
        k = 0
        for name, enc, size in self.columns:
            if size is None:
                size = var[k]
                k += 1
            raw = mm[pos : pos + size]
            out[name] = raw.decode() if enc == "str" else int.from_bytes(raw, "little", signed=True)
            pos += size
        return out

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, i: int) -> dict[str, Any]:
        shard = int(np.searchsorted(self.ends, i, "right"))
        j = i - (int(self.ends[shard - 1]) if shard else 0)
        off = self.offsets[shard]
        return self._decode(self.maps[shard], off[j], off[j + 1])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for mm, off in zip(self.maps, self.offsets):
            decode = self._decode
            for j in range(len(off) - 1):
                yield decode(mm, off[j], off[j + 1])
