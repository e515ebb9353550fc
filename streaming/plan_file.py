"""An epoch's plan, computed once per node and memory-mapped by every process that needs it.

The plan (every worker's sample ids for one epoch, from :func:`streaming.plan.epoch_work`) is a
pure function of the planning spec, the world shape, the epoch and the resume position. Its file
name is a hash of all of those, so processes that would compute the same plan find the same file:
whoever takes the file's lock first computes it and writes it atomically (temp file, fsync,
rename), and the others memory-map it. A crash leaves at worst a temp file, never a lock that
blocks (``flock`` dies with its process) nor a half-written plan under the final name.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.locks import FileLock
from streaming.plan import PlanSpec, epoch_work
from streaming.storage.atomic import atomic_file

__all__ = ["load_or_compute_plan", "plan_key", "shares_plan"]

# Plans kept per runtime directory; older ones are deleted when a new one is written, and
# beyond the newest one, older ones only while they add up to KEEP_PLAN_BYTES (a shared plan
# of 1e8 samples is ~0.8 GB).
KEEP_PLANS = 8
KEEP_PLAN_BYTES = 2 << 30
# With random batching each worker plans its own ids (see StreamingDataset._get_work), which
# means ordering whole canonical nodes: ~9 bytes a sample of the nodes it needs (a view of one
# py1e node of 1e8 samples peaks at ~0.9 GB), ~4 bytes a sample of the epoch for naive. Past
# this many bytes for all the node's processes at once, and when one whole-epoch plan (~17
# bytes a sample at its peak) costs less than half of that, the node plans once into a file.
SHARE_PLAN_BYTES = 8 << 30


def plan_key(spec: PlanSpec, world_shape: tuple[int, int, int], epoch: int,
             sample_in_epoch: int) -> str:
    """Hash everything that determines an epoch's plan.

    Args:
        spec (PlanSpec): The planning spec.
        world_shape (Tuple[int, int, int]): Physical nodes, ranks per node, workers per rank.
        epoch (int): The epoch.
        sample_in_epoch (int): Where in the epoch to resume.

    Returns:
        str: A hex digest naming the plan.
    """
    h = hashlib.sha256()
    for name in ("samples_per_shard", "shards_per_stream", "choose_per_stream",
                 "proportion_per_stream"):
        arr = np.ascontiguousarray(getattr(spec, name))
        h.update(f"{name}:{arr.dtype.str}:{arr.shape}".encode())
        h.update(arr.tobytes())
    scalars: dict[str, Any] = {
        name: getattr(spec, name) for name in (
            "num_canonical_nodes", "batch_size", "shuffle", "shuffle_algo", "shuffle_seed",
            "shuffle_block_size", "partition_algo", "sampling_method", "sampling_granularity",
            "batching_method", "initial_physical_nodes", "replication")
    }
    scalars.update(world=list(world_shape), epoch=epoch, sample_in_epoch=sample_in_epoch,
                   version=1)
    h.update(json.dumps(scalars, sort_keys=True).encode())
    return h.hexdigest()[:32]


def shares_plan(spec: PlanSpec, world_shape: tuple[int, int, int]) -> bool:
    """Whether a random-batching epoch is planned once per node (``load_or_compute_plan``)
    instead of by each worker for itself: when every process of the node planning its own ids
    at once would hold more than :data:`SHARE_PLAN_BYTES` (say 9 ranks x 1 worker or more over
    one py1e canonical node of 1e8 samples, ~0.9 GB each), and more than twice the peak of
    one process planning the whole epoch.

    Args:
        spec (PlanSpec): The planning spec.
        world_shape (Tuple[int, int, int]): Physical nodes, ranks per node, workers per rank.

    Returns:
        bool: Whether the node's processes share one plan file.
    """
    _, ranks_per_node, workers_per_rank = world_shape
    processes = ranks_per_node * max(1, workers_per_rank)
    if processes < 2 or not spec.shuffle:
        return False
    size = spec.epoch_size
    each = 4 * size if spec.shuffle_algo == "naive" else \
        9 * size // max(1, spec.num_canonical_nodes)
    total = processes * each
    return total > SHARE_PLAN_BYTES and total > 2 * 17 * size


def _prune(dirname: str, keep: str) -> None:
    with contextlib.suppress(OSError):
        plans = [os.path.join(dirname, n) for n in os.listdir(dirname) if n.endswith(".npy")]
        plans.sort(key=lambda p: os.stat(p).st_mtime if os.path.exists(p) else 0)
        kept = 0
        for at, path in enumerate(reversed(plans)):  # newest first
            if path == keep:
                continue
            with contextlib.suppress(OSError):
                kept += os.stat(path).st_size
            if at < KEEP_PLANS and kept <= KEEP_PLAN_BYTES:
                continue
            with contextlib.suppress(OSError):
                os.remove(path)
            with contextlib.suppress(OSError):
                os.remove(path[:-4] + ".lock")


def load_or_compute_plan(root: str, spec: PlanSpec, world_shape: tuple[int, int, int],
                         epoch: int, sample_in_epoch: int) -> NDArray[np.int64]:
    """Get an epoch's plan, computing it only if no process on this node has yet.

    Args:
        root (str): The cache's runtime directory.
        spec (PlanSpec): The planning spec.
        world_shape (Tuple[int, int, int]): Physical nodes, ranks per node, workers per rank.
        epoch (int): The epoch.
        sample_in_epoch (int): Where in the epoch to resume.

    Returns:
        NDArray[np.int64]: The plan, shape ``(nodes, ranks per node, workers per rank, batches
            per worker, batch size)`` of the parallel world (memory-mapped, read-only).
    """
    dirname = os.path.join(root, "plans")
    os.makedirs(dirname, exist_ok=True)
    path = os.path.join(dirname, plan_key(spec, world_shape, epoch, sample_in_epoch) + ".npy")
    with FileLock(path[:-4] + ".lock", thread_local=False):
        if not os.path.exists(path):
            work = epoch_work(spec, *world_shape, epoch, sample_in_epoch)
            with atomic_file(path) as (fd, _):
                with os.fdopen(os.dup(fd), "wb") as f:
                    np.save(f, np.ascontiguousarray(work, np.int64))
            _prune(dirname, path)
            return work
    try:
        return np.load(path, mmap_mode="r")
    except ValueError:  # an empty plan (the epoch is over) can't be memory-mapped
        return np.load(path)
