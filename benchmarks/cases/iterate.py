"""Full-epoch iteration over a local, already-cached dataset; also time to first sample (TTFS).

MDS implementations: ``StreamingDataset(local=<view>, remote=None, shuffle=..., batch_size=32)``
iterated directly (``mode=direct``) or through ``StreamingDataLoader`` with ``num_workers`` 0 or 2
(``mode=dl0``/``dl2``). litdata: its ``StreamingDataset``/``StreamingDataLoader`` over its own copy
of the same rows. ``raw``: the NumPy ceiling over the same shard bytes (direct mode only; shuffled
means a random permutation of indices). TTFS is measured from dataset construction (library
already imported) to the first sample or batch. Params: ``kind``, ``data``, ``litdata``, ``mode``,
``shuffle``, optional ``ttfs_only`` (stop after the first sample), ``batch_size``, ``work``
(per-sample CPU work in ``__getitem__``, the same for every library: that many SHA-256 passes
over the sample's tokens, as a transform would cost; this is where DataLoader workers can help),
``epochs`` (default 1: iterate that many epochs with ``persistent_workers`` on, and report the
last one's throughput: the steady state of a long run, without the workers' start; the time to
first sample stays the first epoch's), ``repeat`` (default 1: an epoch reads the dataset that many
times, as ``Stream(local=<view>, repeat=N)``; ``raw`` walks it that many times, and litdata, with
no per-stream repeat, reports the case as not applicable).
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
import time
from typing import Any

import numpy as np
from _common import RawMDS, check_row, clean_shm, fresh_view, main, row_nbytes, start_clock


def _count(item: Any, batched: bool) -> int:
    if not batched:
        return 1
    value = item["tokens"] if "tokens" in item else item["id"]
    return len(value)


def _with_work(cls: type, passes: int) -> type:
    """``cls`` whose ``__getitem__`` also hashes the sample's tokens ``passes`` times."""

    class Working(cls):  # type: ignore[misc, valid-type]
        def __getitem__(self, index: Any) -> Any:
            sample = super().__getitem__(index)
            data = np.ascontiguousarray(sample["tokens"]).tobytes()
            for _ in range(passes):
                data = hashlib.sha256(data).digest() + data[32:]
            return sample

    return Working


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    kind, mode, shuffle = params["kind"], params["mode"], bool(params["shuffle"])
    batch_size = int(params.get("batch_size", 32))
    workers = {"direct": None, "dl0": 0, "dl2": 2}[mode]
    epochs = int(params.get("epochs", 1))
    repeat = int(params.get("repeat", 1))
    loader_args = {"persistent_workers": True} if epochs > 1 and workers else {}
    view = fresh_view(params["litdata" if impl == "litdata" else "data"])
    try:
        if impl == "raw":
            if workers is not None:
                raise ValueError("raw ceiling is direct-mode only")
            t0 = start_clock()
            raw = RawMDS(view, kind)
            if shuffle:
                total = len(raw) * repeat
                order = (np.random.default_rng(0).permutation(total) % len(raw)).tolist()
                source = (raw[i] for i in order)
            else:
                source = itertools.chain.from_iterable(itertools.repeat(raw, repeat))
        elif impl == "litdata":
            if repeat > 1:
                raise ValueError("n/a: litdata's StreamingDataset has no per-stream repeat")
            from litdata import StreamingDataLoader, StreamingDataset

            if params.get("work"):
                StreamingDataset = _with_work(StreamingDataset, int(params["work"]))  # noqa: N806
            t0 = start_clock()
            ds = StreamingDataset(view, shuffle=shuffle)
            source = ds if workers is None else StreamingDataLoader(
                ds, batch_size=batch_size, num_workers=workers, **loader_args)
        else:
            from streaming import Stream, StreamingDataLoader, StreamingDataset

            if params.get("work"):
                StreamingDataset = _with_work(StreamingDataset, int(params["work"]))  # noqa: N806
            clean_shm(impl)
            t0 = start_clock()
            where = (
                {"streams": [Stream(local=view, repeat=repeat)]}
                if repeat > 1
                else {"local": view, "remote": None}
            )
            ds = StreamingDataset(**where, shuffle=shuffle, batch_size=batch_size)
            source = ds if workers is None else StreamingDataLoader(
                ds, batch_size=batch_size, num_workers=workers, **loader_args)
        it = iter(source)
        first = next(it)
        ttfs = time.perf_counter() - t0
        batched = workers is not None
        count = _count(first, batched)
        if not params.get("ttfs_only"):
            for item in it:
                count += _count(item, batched)
        elapsed = time.perf_counter() - t0
        for _ in range(epochs - 1):  # (the first epoch's count and time are replaced)
            t0, count = start_clock(), 0
            for item in source:
                count += _count(item, batched)
            elapsed = time.perf_counter() - t0
        check_row(kind, first, batched=batched)  # outside the timings
    finally:
        shutil.rmtree(view, ignore_errors=True)
    out = {"ttfs_s": ttfs}
    if not params.get("ttfs_only"):
        out.update(
            expected=int(params["samples"]) * repeat if "samples" in params else count,
            samples=count,
            seconds=elapsed,
            samples_s=count / elapsed,
            MB_s=count * row_nbytes(kind) / elapsed / 1e6,
        )
    return out


if __name__ == "__main__":
    main(run)
