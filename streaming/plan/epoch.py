"""The work of one epoch: every worker's sample ids, and one worker's share of them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from streaming._kernels import _plan
from streaming.plan.batching import _batch_size, _block_size, _resample_spec, generate_work
from streaming.plan.partition import worker_partition
from streaming.plan.shuffle import (
    _py1e_epoch,
    get_shuffle,
    get_shuffle_py1e_head,
    shuffle_places,
)
from streaming.plan.spec import PlanSpec, parallel_world_shape

__all__ = ["epoch_work", "worker_plan", "worker_plan_head", "worker_work"]

logger = logging.getLogger(__name__)

# worker_plan_head: py1e canonical nodes from this many samples give their readers their plan's
# head first (below, a node is planned in a few ms), the samples placed before this position.
HEAD_MIN_SAMPLES = 1 << 20
HEAD_UNTIL = 1 << 17


def epoch_work(
    spec: PlanSpec,
    world_num_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    epoch: int,
    sample_in_epoch: int,
) -> NDArray[np.int64]:
    """Get the epoch's sample ids for every node, rank and worker (``StreamingDataset._get_work``).

    With ``spec.replication`` r, planning happens for the parallel world in which each r
    consecutive ranks are one (see ``parallel_world_shape``); index the result with the rank's
    position in that world (``rank // r``).

    Args:
        spec (PlanSpec): The dataset's planning spec.
        world_num_nodes (int): Physical nodes of the run.
        ranks_per_node (int): Ranks per physical node.
        workers_per_rank (int): DataLoader workers per rank (1 without workers).
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Samples already seen this epoch (over all ranks).

    Returns:
        NDArray[np.int64]: Contiguous ``(nodes, ranks per node, workers per rank, batches per
            worker, batch size)`` sample ids of the parallel world, ``-1`` for padding.

    Raises:
        ValueError: If ``batch_size`` is missing, or the world does not fit the settings.
    """
    nodes, ranks = parallel_world_shape(world_num_nodes, ranks_per_node, spec.replication)
    if spec.replication is not None and spec.replication > 1 and sample_in_epoch:
        logger.warning(
            f"The `replication` arg has been set to {spec.replication} and training is resuming "
            f"from sample {sample_in_epoch}. Make sure you are accounting for sample replication "
            f"when using StreamingDataset's `state_dict` method for deterministic resumption. "
            f"Otherwise, you will resume training from the wrong sample."
        )
    work = generate_work(
        spec.batching_method, spec, (nodes, ranks, workers_per_rank), epoch, sample_in_epoch
    )
    return np.ascontiguousarray(work)


def _reads_in_order(spec: PlanSpec, nodes: int, ranks: int, workers_per_rank: int,
                    sample_in_epoch: int, batch_size: int, units: NDArray[np.int64]) -> bool:
    """Whether the world's one worker is partitioned the epoch's places in order, unpadded: one
    canonical node, nothing dropped, whole batches (both partition algorithms, then)."""
    return (nodes == ranks == workers_per_rank == 1 and sample_in_epoch == 0
            and spec.num_canonical_nodes == 1 and spec.epoch_size % batch_size == 0
            and int(np.sum(units)) == spec.epoch_size)


def _first_place(places: NDArray[np.int64]) -> int | None:
    """The first non-negative place, or ``None`` (all padding)."""
    real = np.flatnonzero(places >= 0)
    return int(places[real[0]]) if len(real) else None


def _places(spec: PlanSpec, nodes: int, ranks: int, workers_per_rank: int, batch_size: int,
            sample_in_epoch: int, node: int, rank_of_node: int,
            worker_of_rank: int) -> NDArray[np.int64]:
    """One worker's places of the (parallel) world's epoch: its partition (``-1`` padding)."""
    return worker_partition(spec.partition_algo, spec.epoch_size, spec.num_canonical_nodes,
                            nodes, ranks, workers_per_rank, batch_size, sample_in_epoch,
                            spec.initial_physical_nodes, node, rank_of_node, worker_of_rank)


def worker_work(
    work: NDArray[np.int64], node: int, rank_of_node: int, worker_of_rank: int
) -> NDArray[np.int64]:
    """Get one worker's sample ids, in iteration order, from the epoch's work.

    Args:
        work (NDArray[np.int64]): The epoch's work from ``epoch_work``.
        node (int): The worker's node in the parallel world.
        rank_of_node (int): The worker's rank within that node.
        worker_of_rank (int): The worker's index within its rank.

    Returns:
        NDArray[np.int64]: The worker's sample ids (``-1`` for padding), flattened.
    """
    return np.asarray(work[node, rank_of_node, worker_of_rank]).reshape(-1)


def worker_plan(
    spec: PlanSpec,
    world_num_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    epoch: int,
    sample_in_epoch: int,
    node: int,
    rank_of_node: int,
    worker_of_rank: int,
) -> NDArray[np.int64]:
    """Get one worker's sample ids without building every worker's (``random`` batching only).

    Equals ``worker_work(epoch_work(...), node, rank_of_node, worker_of_rank)``; other batching
    methods fall back to exactly that. Only the worker's ids are mapped through the shuffle.

    Args:
        spec (PlanSpec): The dataset's planning spec.
        world_num_nodes (int): Physical nodes of the run.
        ranks_per_node (int): Ranks per physical node.
        workers_per_rank (int): DataLoader workers per rank (1 without workers).
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Samples already seen this epoch (over all ranks).
        node (int): The worker's node in the parallel world.
        rank_of_node (int): The worker's rank within that node.
        worker_of_rank (int): The worker's index within its rank.

    Returns:
        NDArray[np.int64]: The worker's sample ids (``-1`` for padding), flattened.
    """
    if spec.batching_method != "random":
        work = epoch_work(
            spec, world_num_nodes, ranks_per_node, workers_per_rank, epoch, sample_in_epoch
        )
        return worker_work(work, node, rank_of_node, worker_of_rank).copy()
    nodes, ranks = parallel_world_shape(world_num_nodes, ranks_per_node, spec.replication)
    batch_size = _batch_size(spec)
    units, small_per_big = _resample_spec(spec, epoch, None, True)

    def places() -> NDArray[np.int64]:
        return _places(spec, nodes, ranks, workers_per_rank, batch_size, sample_in_epoch, node,
                       rank_of_node, worker_of_rank)

    if not spec.shuffle:
        ids = places()
    elif _reads_in_order(spec, nodes, ranks, workers_per_rank, sample_in_epoch, batch_size,
                         units):
        # Its places are the epoch's, in order: the shuffle is its plan (nothing epoch-sized to
        # lay out and look up; this is a single-process run's time to first sample).
        ids = get_shuffle(spec.shuffle_algo, units, spec.num_canonical_nodes, spec.shuffle_seed,
                          epoch, _block_size(spec))
    else:
        # The places are computed while the shuffle's first draws are made (py1s).
        ids = shuffle_places(
            spec.shuffle_algo,
            units,
            spec.num_canonical_nodes,
            spec.shuffle_seed,
            epoch,
            _block_size(spec),
            places,
            overwrite=True,  # the places are ours (fresh from worker_partition)
        )
    if small_per_big is not None:
        _plan.compose_ids(ids, None, small_per_big)
    return ids


def worker_plan_head(
    spec: PlanSpec,
    world_num_nodes: int,
    ranks_per_node: int,
    workers_per_rank: int,
    epoch: int,
    sample_in_epoch: int,
    node: int,
    rank_of_node: int,
    worker_of_rank: int,
    planner: Callable[[], NDArray[np.int64]] | None = None,
) -> tuple[NDArray[np.int64], Callable[[], NDArray[np.int64]]] | None:
    """``worker_plan``'s ids in two parts, the first one as soon as possible.

    A ``py1e`` canonical node is ordered by every sample's drawn position, so the whole node
    is planned before any of it is known (~0.25 s for a node of 1e7 samples, in every rank and
    worker; py1e's default is one canonical node per physical node). But the samples placed
    first are the node's head (``get_shuffle_py1e_head``, ~35 ms for 1e7): a worker's first
    places fall in the head of its first place's node (a lone reader's: its first ~12k samples
    at 1e7; each of 8 ranks x 8 workers: its first ~200), and those come first, while a thread
    plans the rest.

    Args:
        spec (PlanSpec): The dataset's planning spec.
        world_num_nodes (int): Physical nodes of the run.
        ranks_per_node (int): Ranks per physical node.
        workers_per_rank (int): DataLoader workers per rank (1 without workers).
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Samples already seen this epoch (over all ranks).
        node (int): The worker's node in the parallel world.
        rank_of_node (int): The worker's rank within that node.
        worker_of_rank (int): The worker's index within its rank.
        planner (Callable[[], NDArray[np.int64]], optional): Returns all of ``worker_plan``'s
            ids (from a plan the node shares, say); the thread takes the rest from it instead
            of planning them. Defaults to ``None``.

    Returns:
        Optional[Tuple[NDArray[np.int64], Callable[[], NDArray[np.int64]]]]: The first ids and
            a callable returning the rest (waiting for it; raising what planning raised), whose
            concatenation is ``worker_plan(...)``; ``None`` for any other plan (or canonical
            nodes under :data:`HEAD_MIN_SAMPLES`, planned in a few ms anyway), or when the head
            holds less than a batch of the worker's first places (resumed past it, or places
            alternating between canonical nodes).
    """
    if spec.batching_method != "random" or not spec.shuffle or spec.shuffle_algo != "py1e" \
            or spec.epoch_size // spec.num_canonical_nodes < HEAD_MIN_SAMPLES:
        return None
    nodes, ranks = parallel_world_shape(world_num_nodes, ranks_per_node, spec.replication)
    units, small_per_big = _resample_spec(spec, epoch, None, True)
    if small_per_big is not None:
        return None
    nc = spec.num_canonical_nodes
    batch_size = _batch_size(spec)
    args = (units, nc, spec.shuffle_seed, epoch, _block_size(spec))
    places = None
    if not _reads_in_order(spec, nodes, ranks, workers_per_rank, sample_in_epoch, batch_size,
                           units):
        places = _places(spec, nodes, ranks, workers_per_rank, batch_size, sample_in_epoch,
                         node, rank_of_node, worker_of_rank)
    # The head of the worker's first place's canonical node holds that node's first places.
    first_place = 0 if places is None else _first_place(places)
    got = None if first_place is None else get_shuffle_py1e_head(*args, HEAD_UNTIL, first_place)
    if got is None:
        return None
    start, head = got
    if places is None:  # the places are the epoch's, in order (one canonical node)
        first, covered = head, len(head)
        whole = spec.epoch_size
    else:
        inside = (places < 0) | ((places >= start) & (places < start + len(head)))
        covered = len(places) if inside.all() else int(np.argmin(inside))
        first = places[:covered].copy()
        first[first >= 0] -= start
        _plan.compose_ids(first, head, None)
        whole = len(places)
    if not batch_size <= covered < whole:  # (a batch at least, or it is not worth a thread)
        return None
    done: dict[str, object] = {}

    def plan() -> None:
        try:
            if planner is not None:
                done["ids"] = planner()[covered:]
            elif places is None:
                done["ids"] = _py1e_epoch(*args, warn=False)[covered:]  # (the head warned)
            elif nc == 1:
                rest = places[covered:]
                _plan.compose_ids(rest, _py1e_epoch(*args, warn=False), None)
                done["ids"] = rest
            else:  # the nodes it needs only (this view gives the warning, if any)
                done["ids"] = shuffle_places("py1e", *args, places[covered:], overwrite=True)
        except BaseException as e:  # handed to the reader in rest()
            done["error"] = e

    # A daemon: a reader that stops early does not hold up the interpreter's exit.
    thread = threading.Thread(target=plan, name="streaming-plan", daemon=True)
    thread.start()

    def rest() -> NDArray[np.int64]:
        thread.join()
        if "error" in done:
            raise done["error"]  # type: ignore[misc]
        return done["ids"]  # type: ignore[return-value]

    return first, rest
