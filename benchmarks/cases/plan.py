"""Epoch planning: sampling + shuffle + partition, then one worker's view of the epoch.

The dataset is synthetic (only shard sizes matter): ``samples`` samples in shards of
``shard_samples`` (default 10,000), one stream, ``choose`` = all samples, world of 1 node x 8
ranks x 2 workers, batch size 32, ``relaxed`` partition, shuffle on with ``algo``. The view
measured is the LAST worker's (rank 7, worker 1): a planner that draws only as far as the
canonical nodes a worker needs is slowest there, so this is its worst case, not its best.
- reference: its own ``generate_work_random_batching`` (``resample_streams`` ->
  ``get_partitions`` -> ``get_shuffle`` -> map back), run on a namespace carrying the attributes
  ``StreamingDataset`` would have, then the last worker's rows.
- project: ``streaming.plan.PlanSpec`` + ``worker_plan`` (its planner for one worker's view;
  the same ids as ``worker_work(epoch_work(...), 0, 7, 1)``, checked by ``head_checksum``).
- neprr: its native dataset's own epoch preparation (``prepare_epoch``, then the first of the
  worker's sample ids), over a synthetic MDS index of the same shard sizes (planning opens no
  shard), with the world set as for a DataLoader worker (``RANK``... and ``set_worker``). The
  rest of its ids are read after the timing (a Python iterator, ~0.5 us an id): its time is
  the plan's alone. It yields no ``-1`` padding (32 fewer ids at 1e7); the first 1000 match.
Reports time, CPU time and the work's peak memory above the RSS before planning (VmHWM after a
``clear_refs`` reset). Params: ``samples``, ``nc``, ``algo``, optional ``shard_samples``.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
from _common import collect_garbage, main, reset_peak_rss, rss_mb, vm_hwm_mb

NODES, RANKS, WORKERS, BATCH, SEED, EPOCH = 1, 8, 2, 32, 9176, 0
NODE, RANK, WORKER = NODES - 1, RANKS - 1, WORKERS - 1  # the view measured: the last worker's


def _sizes(n: int, per: int) -> np.ndarray:
    sizes = np.full(n // per, per, np.int64)
    if n % per:
        sizes = np.append(sizes, n % per)
    return sizes


def _block_size(nc: int) -> int:
    """The reference's default ``shuffle_block_size`` for ``nc`` canonical nodes, given to the
    planners that take it as an argument."""
    return max(4_000_000 // nc, 1 << 18)


def _reference_planner(sizes: np.ndarray, nc: int, algo: str):
    from streaming.base.batching.random import generate_work_random_batching
    from streaming.base.dataset import StreamingDataset

    n = int(sizes.sum())
    ds = SimpleNamespace(
        shuffle_seed=SEED,
        sampling_method="balanced",
        sampling_granularity=1,
        epoch_seed_change=True,
        num_streams=1,
        shard_offset_per_stream=np.array([0]),
        shards_per_stream=np.array([len(sizes)]),
        samples_per_shard=sizes,
        sample_offset_per_shard=np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64),
        streams=[SimpleNamespace(choose=n)],
        num_canonical_nodes=nc,
        batch_size=BATCH,
        partition_algo="relaxed",
        epoch_size=n,
        initial_physical_nodes=None,
        shuffle=True,
        shuffle_algo=algo,
        shuffle_block_size=_block_size(nc),
    )
    ds.resample_streams = StreamingDataset.resample_streams.__get__(ds)
    world = SimpleNamespace(num_nodes=NODES, ranks_per_node=RANKS, workers_per_rank=WORKERS)

    def plan() -> np.ndarray:
        work = generate_work_random_batching(ds, world, EPOCH, 0)
        return work[NODE, RANK, WORKER].flatten()

    return plan


def _project_planner(sizes: np.ndarray, nc: int, algo: str):
    from streaming.plan import PlanSpec, worker_plan

    n = int(sizes.sum())
    spec = PlanSpec(
        samples_per_shard=sizes,
        shards_per_stream=[len(sizes)],
        choose_per_stream=[n],
        proportion_per_stream=[1.0],
        num_canonical_nodes=nc,
        batch_size=BATCH,
        shuffle=True,
        shuffle_algo=algo,
        shuffle_seed=SEED,
    )

    def plan() -> np.ndarray:
        return worker_plan(spec, NODES, RANKS, WORKERS, EPOCH, 0, NODE, RANK, WORKER)

    return plan


def _write_index(root: str, sizes: np.ndarray) -> None:
    """An MDS ``index.json`` of shards of ``sizes`` samples (one 8-byte ``int`` column); the
    shard files themselves are not written."""
    shards = [{
        "column_encodings": ["int"], "column_names": ["x"], "column_sizes": [8],
        "compression": None, "format": "mds", "hashes": [],
        "raw_data": {"basename": f"shard.{k:05d}.mds", "bytes": 8 + 12 * int(count),
                     "hashes": {}},
        "samples": int(count), "size_limit": 1 << 26, "version": 2, "zip_data": None,
    } for k, count in enumerate(sizes)]
    with open(os.path.join(root, "index.json"), "w") as f:
        json.dump({"shards": shards, "version": 2}, f)


def _neprr_planner(sizes: np.ndarray, nc: int, algo: str):
    root = tempfile.mkdtemp(prefix="plan-neprr-")
    atexit.register(shutil.rmtree, root, True)
    _write_index(root, sizes)
    os.environ.update(RANK=str(NODE * RANKS + RANK), WORLD_SIZE=str(NODES * RANKS),
                      LOCAL_RANK=str(RANK), LOCAL_WORLD_SIZE=str(RANKS))
    from streaming import StreamingDataset

    ds = StreamingDataset(local=root, remote=None, shuffle=True, shuffle_algo=algo,
                          num_canonical_nodes=nc, batch_size=BATCH, shuffle_seed=SEED,
                          shuffle_block_size=_block_size(nc),
                          partition_algo="relaxed", sampling_method="balanced")
    native = ds._get_native()  # (what its own __iter__ plans and reads through)

    def plan() -> Iterator[int]:
        native.set_worker(WORKER, WORKERS)
        native.set_epoch(EPOCH)
        native.prepare_epoch()
        ids = native.iter_sample_ids()
        return itertools.chain([next(ids)], ids)

    plan.dataset = ds  # type: ignore[attr-defined]  # (a collected dataset closes its native one)
    return plan


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    n, nc, algo = int(params["samples"]), int(params["nc"]), params["algo"]
    sizes = _sizes(n, int(params.get("shard_samples", 10_000)))
    make = {"reference": _reference_planner, "project": _project_planner,
            "neprr": _neprr_planner}.get(impl)
    if make is None:
        raise NotImplementedError(f"{impl} exposes no planner API")
    plan = make(sizes, nc, algo)
    collect_garbage()
    before = rss_mb()
    reset_peak_rss()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    ids = plan()
    elapsed = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    work_mb = vm_hwm_mb() - before
    ids = ids.ravel() if isinstance(ids, np.ndarray) else np.fromiter(ids, np.int64)
    checksum = int(ids[:1000].sum())  # the same for every faithful planner
    return {
        "seconds": elapsed,
        "cpu_s": (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime),
        "work_mb": work_mb,
        "worker_samples": int(len(ids)),
        "head_checksum": checksum,
        "epoch_int64_mb": n * 8 / 2**20,
    }


if __name__ == "__main__":
    main(run)
