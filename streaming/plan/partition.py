"""Partition an epoch's sample space over nodes, ranks, workers and batches: ``orig``, ``relaxed``.

The result has shape ``(physical nodes, ranks per node, workers per rank, batches per worker,
batch size)``, padded with ``-1``, and equals the reference's (MosaicML Streaming 0.13.0) for the
same arguments. Canonical node ``c`` owns the sample range
``[c * num_samples // C, (c + 1) * num_samples // C)``, the same cut the shuffles use, so the
global order survives a change in the number of physical nodes (elastic resumption).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streaming._kernels import _partition
from streaming.plan.spec import get_algorithm

__all__ = [
    "algos",
    "get_partitions",
    "get_partitions_orig",
    "get_partitions_relaxed",
    "worker_partition",
]

logger = logging.getLogger(__name__)

_NOT_DIVISIBLE = (
    "Either canonical or physical nodes must be evenly divisible by the other, otherwise "
    "striping slices of shards over nodes may lead to each node downloading all shards"
)


def _check_world(
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int,
) -> None:
    for name, value in (
        ("num_canonical_nodes", num_canonical_nodes),
        ("num_physical_nodes", num_physical_nodes),
        ("ranks_per_node", ranks_per_node),
        ("workers_per_rank", workers_per_rank),
        ("batch_size", batch_size),
    ):
        if int(value) < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    if int(num_samples) < 1:
        raise ValueError(f"num_samples must be a positive integer, got {num_samples}")


def _note_repeats(repeated: int) -> None:
    # The reference's count: a whole world's worth when the epoch divides evenly.
    logger.debug(
        "Using %d repeated samples to ensure that the epoch size is divisible by the number of "
        "total devices. This ensures that each device contributes the same number of samples "
        "per global batch. ",
        repeated,
    )


def _canonical_rows(num_samples: int, ncn: int, pn: int) -> NDArray[np.int64]:
    """Sample ids per canonical node: ``(ncn, padded samples per canonical node)``."""
    per_cn = (num_samples + ncn - 1) // ncn
    node_ratio = 0
    padding = 0
    if ncn < pn:
        node_ratio = pn // ncn
        overflow = per_cn % node_ratio
        if overflow:
            padding = node_ratio - overflow
    width = per_cn + padding
    if num_samples > ncn or (num_samples == ncn and ncn >= pn):
        # Row c counts up from its start; a short row repeats its last id; padding repeats ids
        # from just before it so each physical node of a canonical node gets as many.
        starts = np.arange(ncn, dtype=np.int64) * num_samples // ncn
        stops = np.arange(1, ncn + 1, dtype=np.int64) * num_samples // ncn
        ids = np.empty((ncn, width), np.int64)
        ids[:] = np.arange(width, dtype=np.int64)
        ids += starts[:, None]
        ids[:, per_cn - 1] -= stops - starts < per_cn
        if padding:
            ids[:, -padding:] = ids[
                :, -padding - node_ratio + 1 - padding : -padding - node_ratio + 1
            ]
        return ids
    warnings.warn(
        f"Trying to partition {num_samples} samples over {ncn} canonical nodes. This will result "
        f"in many samples being repeated, and depending on your batching method, batches being "
        f"completely dropped. Check if your dataset has the expected number of samples, and "
        f"consider decreasing the number of canonical nodes.",
        stacklevel=3,
    )
    total = ncn * width
    return np.resize(np.arange(num_samples, dtype=np.int64), total).reshape(ncn, width)


def get_partitions_orig(
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int = 1,
    drop_first: int = 0,
    initial_physical_nodes: int | None = None,
) -> NDArray[np.int64]:
    """Partition the given number of samples to nodes, ranks, and workers.

    Either canonical or physical nodes must be evenly divisible by the other.

    Args:
        num_samples (int): Dataset size.
        num_canonical_nodes (int): Number of canonical nodes.
        num_physical_nodes (int): Number of physical nodes.
        ranks_per_node (int): Number of ranks per node.
        workers_per_rank (int): Number of worker partitions per rank.
        batch_size (int): Batch size of DataLoader and dataset, which affects how the dataset is
            partitioned over the workers. Defaults to ``1``.
        drop_first (int): Number of samples seen already, which are dropped. Defaults to ``0``.
        initial_physical_nodes (int, optional): Unused by this algorithm. Defaults to ``None``.

    Returns:
        NDArray[np.int64]: Partitions of shape (physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).

    Raises:
        ValueError: If neither node count divides the other, or an argument is not positive.
    """
    ncn, pn = int(num_canonical_nodes), int(num_physical_nodes)
    rpn, wpr, bs = int(ranks_per_node), int(workers_per_rank), int(batch_size)
    _check_world(num_samples, ncn, pn, rpn, wpr, bs)
    if (ncn < pn and pn % ncn) or (pn < ncn and ncn % pn):
        raise ValueError(_NOT_DIVISIBLE)
    drop_first = int(drop_first)
    if drop_first % pn:
        logger.warning(
            "`drop_first` was not divisible by `num_physical_nodes`. Rounding it down to make it "
            "divisible."
        )
        drop_first -= drop_first % pn

    # Usual case: each worker's share straight from index arithmetic, one share at a time.
    first = _partition.orig_worker_ids(int(num_samples), ncn, pn, rpn, wpr, bs, drop_first, 0, 0, 0)
    if first is not None:
        out = np.empty((pn, rpn, wpr, len(first) // bs, bs), np.int64)
        for node in range(pn):
            for rank in range(rpn):
                for worker in range(wpr):
                    share = _partition.orig_worker_ids(
                        int(num_samples), ncn, pn, rpn, wpr, bs, drop_first, node, rank, worker
                    )
                    out[node, rank, worker] = share.reshape(-1, bs)
        return out

    # Corner cases (tiny datasets): follow the dealing steps on the whole array.
    # Interleave canonical rows into one stream, drop what was seen, deal it to physical nodes.
    ids = _canonical_rows(int(num_samples), ncn, pn).T.ravel()[drop_first:]
    ids = ids.reshape(-1, pn).T

    # Deal each node's samples to its ranks, repeating a few samples to even them out.
    per_node = ids.shape[1]
    overflow = per_node % rpn
    if overflow:
        underflow = rpn - overflow
        if rpn + underflow - 1 <= per_node:
            last = ids[:, -rpn - underflow + 1 : -rpn + 1]
        else:
            warnings.warn(
                f"Attempting to partition {per_node} samples per physical node over {rpn} gpus. "
                f"This will result in many samples being repeated, and depending on your batching "
                f"method, batches being completely dropped. Check if your dataset has the expected "
                f"number of samples.",
                stacklevel=2,
            )
            last = np.concatenate(
                [np.tile(ids, underflow // per_node), ids[:, : underflow % per_node]], 1
            )
        ids = np.concatenate([ids, last], 1)
    ids = ids.reshape(pn, -1, rpn)

    # Pad each rank's samples with -1 up to whole batches for every worker.
    per_rank = ids.shape[1]
    unit = wpr * bs
    padded = -(-per_rank // unit) * unit
    out = np.full((pn, rpn, padded), -1, np.int64)
    out[:, :, :per_rank] = ids.transpose(0, 2, 1)

    # Deal each rank's batches to its workers round-robin.
    return out.reshape(pn, rpn, -1, wpr, bs).transpose(0, 1, 3, 2, 4)


def get_partitions_relaxed(
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int = 1,
    drop_first: int = 0,
    initial_physical_nodes: int | None = None,
) -> NDArray[np.int64]:
    """Partition the given number of samples to nodes, ranks, and workers, elastically.

    When resuming on a physical node count that does not divide (or is not divided by) the
    canonical node count, the partition of the initial run is traversed in order and re-dealt to
    the new world; the global batch size must stay the same.

    Args:
        num_samples (int): Dataset size.
        num_canonical_nodes (int): Number of canonical nodes.
        num_physical_nodes (int): Number of physical nodes.
        ranks_per_node (int): Number of ranks per node.
        workers_per_rank (int): Number of worker partitions per rank.
        batch_size (int): Batch size of DataLoader and dataset. Defaults to ``1``.
        drop_first (int): Number of samples seen already, which are dropped. Defaults to ``0``.
        initial_physical_nodes (int, optional): Number of physical nodes at the start of training.
            Defaults to ``None``.

    Returns:
        NDArray[np.int64]: Partitions of shape (physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).

    Raises:
        ValueError: If the global batch size is not divisible by the initial number of devices.
    """
    ncn, pn = int(num_canonical_nodes), int(num_physical_nodes)
    if (
        initial_physical_nodes is None
        or (pn <= ncn and ncn % pn == 0)
        or (pn > ncn and pn % ncn == 0)
    ):
        return get_partitions_orig(
            num_samples, ncn, pn, ranks_per_node, workers_per_rank, batch_size, drop_first
        )
    rpn, wpr, bs = int(ranks_per_node), int(workers_per_rank), int(batch_size)
    global_batch_size = pn * rpn * bs
    initial_devices = int(initial_physical_nodes) * rpn
    if global_batch_size % initial_devices:
        raise ValueError(
            f"A global batch size of {global_batch_size} is not evenly divisible by the initial "
            f"total number of devices of {initial_devices}. Make sure that when using the "
            f"`relaxed` partitioning algorithm, the global batch size does not change during "
            f"resumption of training."
        )
    initial = get_partitions_orig(
        num_samples,
        ncn,
        int(initial_physical_nodes),
        rpn,
        wpr,
        global_batch_size // initial_devices,
        drop_first,
    )
    # Traversal order: (batches, workers, nodes, ranks, batch); re-deal it to the new world.
    order = initial.transpose(3, 2, 0, 1, 4).ravel()
    return order.reshape(-1, wpr, pn, rpn, bs).transpose(2, 3, 1, 0, 4)


def worker_partition(
    algo: str,
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int | None,
    drop_first: int,
    initial_physical_nodes: int | None,
    node: int,
    rank_of_node: int,
    worker_of_rank: int,
) -> NDArray[np.int64]:
    """One worker's partition, flattened: ``get_partitions(...)[node, rank, worker].ravel()``.

    Computed from index arithmetic for that worker only (memory and time proportional to its
    share), except in corner cases where the full partition is built and sliced.

    Args:
        algo (str): Partition algorithm name (``orig`` or ``relaxed``).
        num_samples (int): Dataset size.
        num_canonical_nodes (int): Number of canonical nodes.
        num_physical_nodes (int): Number of physical nodes.
        ranks_per_node (int): Number of ranks per node.
        workers_per_rank (int): Number of worker partitions per rank.
        batch_size (int, optional): Batch size per device. ``None`` means ``1``.
        drop_first (int): Number of samples seen already, which are dropped.
        initial_physical_nodes (int, optional): Number of physical nodes at the start of training.
        node (int): The worker's physical node.
        rank_of_node (int): The worker's rank within its node.
        worker_of_rank (int): The worker's index within its rank.

    Returns:
        NDArray[np.int64]: The worker's sample ids in iteration order, ``-1`` for padding.

    Raises:
        ValueError: As ``get_partitions``, or if the worker is outside the world.
    """
    ncn, pn = int(num_canonical_nodes), int(num_physical_nodes)
    rpn, wpr = int(ranks_per_node), int(workers_per_rank)
    bs = 1 if batch_size is None else int(batch_size)
    fast = None
    resize = not (
        algo != "relaxed"
        or initial_physical_nodes is None
        or (pn <= ncn and ncn % pn == 0)
        or (pn > ncn and pn % ncn == 0)
    )
    world_size = rpn * pn
    # A world get_partitions accepts: the fast paths may plan it (its note logged here).
    valid = world_size >= 1 and (
        algo in algos
        and min(ncn, pn, rpn, wpr, bs) >= 1
        and int(num_samples) >= 1
        and int(drop_first) >= 0
        and int(num_samples) + world_size - int(num_samples) % world_size >= int(drop_first)
    )
    if valid:
        if not (0 <= node < pn and 0 <= rank_of_node < rpn and 0 <= worker_of_rank < wpr):
            raise ValueError(
                f"worker (node {node}, rank {rank_of_node}, worker {worker_of_rank}) is outside "
                f"the world of {pn} nodes x {rpn} ranks x {wpr} workers"
            )
        _note_repeats(world_size - int(num_samples) % world_size)
        if not resize:
            if int(drop_first) % pn:
                logger.warning(
                    "`drop_first` was not divisible by `num_physical_nodes`. Rounding it down to "
                    "make it divisible."
                )
            fast = _partition.orig_worker_ids(
                int(num_samples),
                ncn,
                pn,
                rpn,
                wpr,
                bs,
                int(drop_first) - int(drop_first) % pn,
                node,
                rank_of_node,
                worker_of_rank,
            )
        else:
            fast = _relaxed_worker_ids(
                int(num_samples),
                ncn,
                pn,
                rpn,
                wpr,
                bs,
                int(drop_first),
                int(initial_physical_nodes),
                node,
                rank_of_node,
                worker_of_rank,
            )
    if fast is not None:
        return fast
    if valid:  # a resize the fast path declined: the algorithm itself, no second note
        get = get_algorithm("partition_algo", algos, algo)
        parts = get(num_samples, ncn, pn, rpn, wpr, bs, drop_first, initial_physical_nodes)
    else:
        parts = get_partitions(
            algo, num_samples, ncn, pn, rpn, wpr, batch_size, drop_first, initial_physical_nodes
        )
    return parts[node, rank_of_node, worker_of_rank].reshape(-1).copy()


def _relaxed_worker_ids(
    num_samples: int,
    ncn: int,
    pn: int,
    rpn: int,
    wpr: int,
    bs: int,
    drop_first: int,
    ipn: int,
    node: int,
    rank: int,
    worker: int,
) -> NDArray[np.int64] | None:
    """``get_partitions_relaxed`` re-dealing a resumed run's partition, for one worker."""
    global_batch_size = pn * rpn * bs
    if ipn < 1 or global_batch_size % (ipn * rpn) or drop_first % ipn:
        return None
    ibs = global_batch_size // (ipn * rpn)
    # Every initial worker's share, in traversal order (batches, workers, nodes, ranks, batch).
    shares = [
        [
            [
                _partition.orig_worker_ids(
                    num_samples, ncn, ipn, rpn, wpr, ibs, drop_first, p, r, w
                )
                for r in range(rpn)
            ]
            for p in range(ipn)
        ]
        for w in range(wpr)
    ]
    if any(x is None for a in shares for b in a for x in b):
        return None
    initial = np.array(shares)  # (workers, nodes, ranks, batches * batch)
    ib = initial.shape[-1] // ibs
    order = initial.reshape(wpr, ipn, rpn, ib, ibs).transpose(3, 0, 1, 2, 4).reshape(-1)
    unit = wpr * pn * rpn * bs
    if order.size % unit:
        return None
    # Re-dealt as (batches, workers, nodes, ranks, batch): take this worker's batches.
    return order.reshape(-1, wpr, pn, rpn, bs)[:, worker, node, rank].reshape(-1).copy()


algos: dict[str, Callable[..., NDArray[np.int64]]] = {
    "orig": get_partitions_orig,
    "relaxed": get_partitions_relaxed,
}


def get_partitions(
    algo: str,
    num_samples: int,
    num_canonical_nodes: int,
    num_physical_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    batch_size: int | None = None,
    drop_first: int = 0,
    initial_physical_nodes: int | None = None,
) -> NDArray[np.int64]:
    """Partition the given number of samples to nodes, ranks, and workers.

    Either canonical or physical nodes must be evenly divisible by the other (unless resuming
    elastically with ``relaxed``).

    Args:
        algo (str): Partition algorithm name (``orig`` or ``relaxed``).
        num_samples (int): Dataset size.
        num_canonical_nodes (int): Number of canonical nodes.
        num_physical_nodes (int): Number of physical nodes.
        ranks_per_node (int): Number of ranks per node.
        workers_per_rank (int): Number of worker partitions per rank.
        batch_size (int, optional): Batch size per device. ``None`` means ``1``.
        drop_first (int): Number of samples seen already, which are dropped. Defaults to ``0``.
        initial_physical_nodes (int, optional): Number of physical nodes at the start of training.
            Defaults to ``None``.

    Returns:
        NDArray[np.int64]: Partitions of shape (physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).

    Raises:
        ValueError: If ``algo`` is unknown, the world does not fit, or ``drop_first`` is beyond
            the epoch.
    """
    get = get_algorithm("partition_algo", algos, algo)
    world_size = int(ranks_per_node) * int(num_physical_nodes)
    if world_size < 1:
        raise ValueError(f"the world must have at least one rank, got {world_size}")
    repeated = world_size - (int(num_samples) % world_size)
    if int(num_samples) + repeated < int(drop_first):
        raise ValueError(
            f"Resuming further into the dataset ({drop_first}) than it has samples ({num_samples})"
        )
    _note_repeats(repeated)
    return get(
        num_samples,
        num_canonical_nodes,
        num_physical_nodes,
        ranks_per_node,
        workers_per_rank,
        1 if batch_size is None else batch_size,
        drop_first,
        initial_physical_nodes,
    )
