"""An epoch's work array per batching method: ``random, stratified, per_stream, device_per_stream``.

Each returns ``(physical nodes, ranks per node, workers per rank, batches per worker, batch
size)`` underlying sample ids padded with ``-1``, equal to the reference's (MosaicML Streaming
0.13.0) ``generate_work_*`` for the same dataset, world, epoch and position.
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming._kernels import _plan
from streaming.plan.partition import get_partitions
from streaming.plan.sampling import _resample
from streaming.plan.shuffle import get_shuffle
from streaming.plan.spec import PlanSpec

__all__ = [
    "batching_methods",
    "generate_work",
    "generate_work_device_per_stream_batching",
    "generate_work_per_stream_batching",
    "generate_work_random_batching",
    "generate_work_stratified_batching",
]

logger = logging.getLogger(__name__)

World = tuple[int, int, int]  # (num_nodes, ranks_per_node, workers_per_rank)


def _takes_dataset(
    generate: Callable[[PlanSpec, World, int, int], NDArray[np.int64]],
) -> Callable[..., NDArray[np.int64]]:
    """Let a ``generate_work_*`` also take what the reference's does: a ``StreamingDataset`` and
    a ``streaming.World`` (its parallel world), as well as a ``PlanSpec`` and a shape tuple."""

    @functools.wraps(generate)
    def accepting(dataset: Any, world: Any, epoch: int, sample_in_epoch: int) -> NDArray[np.int64]:
        spec = dataset if isinstance(dataset, PlanSpec) else dataset._plan_spec()
        if spec.num_canonical_nodes is None:  # (a dataset sets its default when iterated)
            raise RuntimeError("`num_canonical_nodes` can never be None. Provide a positive "
                               "integer.")
        if not isinstance(world, tuple):
            world = (world.num_nodes, world.ranks_per_node, world.workers_per_rank)
        return generate(spec, world, epoch, sample_in_epoch)

    del accepting.__wrapped__  # its signature (``dataset``, as the reference names it) is the API
    return accepting


def _compose(
    ids: NDArray[np.int64],
    shuffle: NDArray[np.int64] | None,
    small_per_big: NDArray[np.int64] | None,
) -> NDArray[np.int64]:
    # Callers pass arrays they own (fresh partitions), so mapping in place is safe.
    out = np.ascontiguousarray(ids, np.int64)
    if not out.flags.writeable:
        out = out.copy()
    _plan.compose_ids(out.reshape(-1), shuffle, small_per_big)
    return out


def _resample_spec(spec: PlanSpec, epoch: int, stream_id: int | None, identity_as_none: bool):
    return _resample(
        spec.samples_per_shard,
        spec.shards_per_stream,
        spec.choose_per_stream,
        spec.shuffle_seed,
        epoch,
        spec.sampling_method,
        spec.sampling_granularity,
        spec.shuffle,
        stream_id,
        identity_as_none,
    )


def _block_size(spec: PlanSpec) -> int:
    block = spec.resolved_shuffle_block_size
    if not isinstance(block, (int, np.integer)):
        raise TypeError(
            f"Dataset `shuffle_block_size` must be an integer. Got {type(block)} instead."
        )
    return int(block)


def _batch_size(spec: PlanSpec) -> int:
    if not isinstance(spec.batch_size, (int, np.integer)) or isinstance(spec.batch_size, bool):
        raise ValueError(
            "Please pass `batch_size` to StreamingDataset. It should be set the same as the "
            "DataLoader, and is the number of samples per batch, for each device. It is necessary "
            "for deterministic resumption and optimal performance."
        )
    return int(spec.batch_size)


def _stream_partition(
    spec: PlanSpec,
    stream_id: int,
    epoch: int,
    num_nodes: int,
    world: World,
    batch_size: int,
    block_portion: int | None,
) -> NDArray[np.int64]:
    """One stream's partition (batch size and nodes as given), mapped to underlying ids."""
    units, small_per_big = _resample_spec(spec, epoch, stream_id, False)
    if not len(small_per_big):
        # (The reference fails on this too, in NumPy: "need at least one array to concatenate".)
        raise ValueError(
            f"Stream {stream_id} gets no samples this epoch (its choose, proportion or the "
            f"epoch_size leave it none), but {spec.batching_method} batching needs samples from "
            f"every stream; give it some or use another batching_method")
    parts = get_partitions(
        spec.partition_algo,
        len(small_per_big),
        spec.num_canonical_nodes,
        num_nodes,
        world[1],
        world[2],
        batch_size,
        0,
        spec.initial_physical_nodes,
    )
    shuffle = None
    if spec.shuffle:
        shuffle = get_shuffle(
            spec.shuffle_algo,
            units,
            spec.num_canonical_nodes,
            spec.shuffle_seed,
            epoch,
            block_portion,
        )
    return _compose(parts, shuffle, small_per_big)


def _pad_to_world(batches: NDArray[np.int64], world: World, batch_size: int) -> NDArray[np.int64]:
    """Pad global batches with ``-1`` batches to a whole number per worker; deal them out."""
    num_nodes, rpn, wpr = world
    global_batch_size = batch_size * num_nodes * rpn
    unit = num_nodes * rpn * wpr * batch_size
    if batches.size % unit:
        need = (unit - batches.size % unit) // global_batch_size
        batches = np.concatenate([batches, np.full((need, global_batch_size), -1, np.int64)])
    return batches.reshape(-1, wpr, num_nodes, rpn, batch_size).transpose(2, 3, 1, 0, 4)


def _resume_warning(method: str, sample_in_epoch: int, global_batch_size: int) -> None:
    if sample_in_epoch % global_batch_size:
        logger.warning(
            f"Because of the `{method}` batching method, resumption may only occur on a sample "
            f"that is a multiple of the current global batch size of {global_batch_size}. "
            f"Resuming training after the most recently finished global batch."
        )


def _count_full(batches: NDArray[np.int64], method: str, stream_id: int) -> int:
    """How many batches hold no padding (they come first); warn that the rest are dropped."""
    full = int(np.count_nonzero(batches.min(axis=1) >= 0))
    if full != batches.shape[0]:
        logger.warning(
            f"Because of the `{method}` batching method, some batches with an inadequate number "
            f"of samples from stream with index {stream_id} will be dropped."
        )
    return full


def _stream_order(counts: list[int], rng: np.random.Generator) -> NDArray[np.int64]:
    """Interleave each stream's batches in a seeded random order, each stream's kept in order."""
    origins = np.repeat(np.arange(len(counts)), counts)
    rng.shuffle(origins)
    index = np.zeros(len(origins), np.int64)
    offset = 0
    for stream, count in enumerate(counts):
        index[origins == stream] = offset + np.arange(count)
        offset += count
    return index


@_takes_dataset
def generate_work_random_batching(
    spec: PlanSpec, world: World, epoch: int, sample_in_epoch: int
) -> NDArray[np.int64]:
    """Generate this epoch's arrangement of samples for ``random`` batching.

    Args:
        dataset (StreamingDataset | PlanSpec): The dataset, or its planning spec.
        world (World | Tuple[int, int, int]): The parallel world, or its nodes, ranks per node
            and workers per rank.
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Where we are in the epoch.

    Returns:
        NDArray[np.int64]: The epoch (num physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).
    """
    batch_size = _batch_size(spec)
    units, small_per_big = _resample_spec(spec, epoch, None, True)
    big_ids = get_partitions(
        spec.partition_algo,
        spec.epoch_size,
        spec.num_canonical_nodes,
        world[0],
        world[1],
        world[2],
        batch_size,
        sample_in_epoch,
        spec.initial_physical_nodes,
    )
    shuffle = None
    if spec.shuffle:
        shuffle = get_shuffle(
            spec.shuffle_algo,
            units,
            spec.num_canonical_nodes,
            spec.shuffle_seed,
            epoch,
            _block_size(spec),
        )
    return _compose(big_ids, shuffle, small_per_big)


@_takes_dataset
def generate_work_stratified_batching(
    spec: PlanSpec, world: World, epoch: int, sample_in_epoch: int
) -> NDArray[np.int64]:
    """Generate this epoch's arrangement of samples for ``stratified`` batching.

    Every global batch holds the same number of samples from each stream.

    Args:
        dataset (StreamingDataset | PlanSpec): The dataset, or its planning spec.
        world (World | Tuple[int, int, int]): The parallel world, or its nodes, ranks per node
            and workers per rank.
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Where we are in the epoch.

    Returns:
        NDArray[np.int64]: The epoch (num physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).

    Raises:
        ValueError: If some stream gets no sample of a global batch.
    """
    batch_size = _batch_size(spec)
    num_nodes, rpn, _ = world
    global_batch_size = batch_size * rpn * num_nodes
    proportions = spec.proportion_per_stream
    portions = np.array([int(p * global_batch_size) for p in proportions], np.int64)
    partitions = []
    for stream_id, proportion in enumerate(proportions):
        block = int(_block_size(spec) * proportion) if spec.shuffle else None
        partitions.append(_stream_partition(spec, stream_id, epoch, 1, world, 1, block))

    # Rounding down left some of the global batch unassigned: give one more sample to each of
    # the streams that were closest to getting one.
    missing = global_batch_size - int(portions.sum())
    if missing:
        leftover = global_batch_size * np.array(proportions) - portions
        portions[np.flip(np.argsort(leftover))[:missing]] += 1
    for stream_id, portion in enumerate(portions):
        if portion <= 0:
            raise ValueError(
                f"Number of samples for stream {stream_id} is {portion} because the portion of "
                f"this stream in the global batch, which is of size {global_batch_size}, is too "
                f"low. Please increase the global batch size or increase the proportion of total "
                f"samples that come from stream {stream_id}."
            )

    min_parts: float = np.inf
    parts_per_stream = []
    for stream_id, partition in enumerate(partitions):
        inorder = partition.transpose(3, 2, 0, 1, 4).ravel()
        portion = int(portions[stream_id])
        if inorder.size % portion:
            pad = portion - inorder.size % portion
            inorder = np.concatenate([inorder, np.full(pad, -1, np.int64)])
        inorder = inorder.reshape(-1, portion)
        full = int(np.count_nonzero(inorder.min(axis=1) >= 0))
        if full != inorder.shape[0]:
            logger.warning(
                f"Because of the `stratified` batching method, some batches with an inadequate "
                f"number of samples from stream with index {stream_id} are being dropped."
            )
        min_parts = min(min_parts, full)
        parts_per_stream.append(inorder)
    batches = np.concatenate([p[: int(min_parts)] for p in parts_per_stream], axis=1)

    if sample_in_epoch % global_batch_size:
        warnings.warn(
            f"Because of the `stratified` batching method, resumption may only occur on a sample "
            f"that is a multiple of the current global batch size of {global_batch_size}. "
            f"Resuming training after the most recently finished global batch. Set "
            f"{global_batch_size} to the original value for deterministic resumption.",
            stacklevel=2,
        )
    batches = batches[sample_in_epoch // global_batch_size :]
    return _pad_to_world(batches, world, batch_size)


@_takes_dataset
def generate_work_per_stream_batching(
    spec: PlanSpec, world: World, epoch: int, sample_in_epoch: int
) -> NDArray[np.int64]:
    """Generate this epoch's arrangement of samples for ``per_stream`` batching.

    Every global batch holds samples of one stream only.

    Args:
        dataset (StreamingDataset | PlanSpec): The dataset, or its planning spec.
        world (World | Tuple[int, int, int]): The parallel world, or its nodes, ranks per node
            and workers per rank.
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Where we are in the epoch.

    Returns:
        NDArray[np.int64]: The epoch (num physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).

    Raises:
        ValueError: If some stream cannot fill a single global batch.
    """
    batch_size = _batch_size(spec)
    num_nodes, rpn, _ = world
    global_batch_size = batch_size * rpn * num_nodes
    counts = []
    batches_per_stream = []
    for stream_id, proportion in enumerate(spec.proportion_per_stream):
        block = int(_block_size(spec) * proportion) if spec.shuffle else None
        partition = _stream_partition(spec, stream_id, epoch, num_nodes, world, batch_size, block)
        inorder = partition.transpose(3, 2, 0, 1, 4).reshape(-1, global_batch_size)
        full = _count_full(inorder, "per_stream", stream_id)
        counts.append(full)
        if not full:
            raise ValueError(
                f"Stream with index {stream_id} does not have an adequate number of samples to "
                f"construct a complete global batch. Training will occur without any samples "
                f"from this stream."
            )
        batches_per_stream.append(inorder[:full])
    batches = np.concatenate(batches_per_stream)
    seed = spec.shuffle_seed + epoch if spec.epoch_seed_change else spec.shuffle_seed
    batches = batches[_stream_order(counts, np.random.default_rng(seed))]
    _resume_warning("per_stream", sample_in_epoch, global_batch_size)
    batches = batches[sample_in_epoch // global_batch_size :]
    return _pad_to_world(batches, world, batch_size)


@_takes_dataset
def generate_work_device_per_stream_batching(
    spec: PlanSpec, world: World, epoch: int, sample_in_epoch: int
) -> NDArray[np.int64]:
    """Generate this epoch's arrangement of samples for ``device_per_stream`` batching.

    Every device batch holds samples of one stream only.

    Args:
        dataset (StreamingDataset | PlanSpec): The dataset, or its planning spec.
        world (World | Tuple[int, int, int]): The parallel world, or its nodes, ranks per node
            and workers per rank.
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Where we are in the epoch.

    Returns:
        NDArray[np.int64]: The epoch (num physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).

    Raises:
        ValueError: If canonical nodes are not divisible by physical nodes, a stream's shuffle
            block portion is 0, or a stream cannot fill a single device batch on some node.
    """
    batch_size = _batch_size(spec)
    num_nodes, rpn, _ = world
    ncn = spec.num_canonical_nodes
    if ncn % num_nodes:
        raise ValueError(
            f"For `device_per_stream` batching, num_canonical_nodes must be divisible by physical "
            f"nodes. Got {ncn} canonical nodes and {num_nodes} physical nodes."
        )
    partitions = []
    for stream_id, proportion in enumerate(spec.proportion_per_stream):
        block = None
        if spec.shuffle:
            block = int(_block_size(spec) * proportion)
            if block == 0:
                raise ValueError(
                    f"Samples from stream {stream_id} are not being used. Please either increase "
                    f"the `shuffle_block_size` from {_block_size(spec)}, or increase the stream "
                    f"proportion from {proportion}."
                )
        partitions.append(_stream_partition(spec, stream_id, epoch, ncn, world, 1, block))

    per_node = ncn // num_nodes
    counts_per_node = []
    batches_per_node = []
    for node in range(num_nodes):
        counts = []
        node_batches = []
        for stream_id, partition in enumerate(partitions):
            inorder = partition[node * per_node : (node + 1) * per_node]
            inorder = inorder.transpose(3, 2, 0, 1, 4).ravel()
            pad = batch_size - inorder.size % batch_size
            inorder = np.concatenate([inorder, np.full(pad, -1, np.int64)]).reshape(-1, batch_size)
            full = _count_full(inorder, "device_per_stream", stream_id)
            counts.append(full)
            if not full:
                raise ValueError(
                    f"Stream with index {stream_id} does not have an adequate number of samples "
                    f"to construct even a single device batch of size {batch_size}. Training "
                    f"will occur without any samples from this stream!"
                )
            node_batches.append(inorder[:full])
        counts_per_node.append(counts)
        batches_per_node.append(np.concatenate(node_batches))

    num_devices = num_nodes * rpn
    most = max(b.shape[0] for b in batches_per_node)
    most += num_devices - most % num_devices
    seed = spec.shuffle_seed + epoch if spec.epoch_seed_change else spec.shuffle_seed
    rng = np.random.default_rng(seed)
    for node in range(num_nodes):
        node_batches = batches_per_node[node][_stream_order(counts_per_node[node], rng)]
        pad = np.full((most - node_batches.shape[0], batch_size), -1, np.int64)
        batches_per_node[node] = np.concatenate([node_batches, pad])

    # Device batches in training order: node 0's first, node 1's first, ..., node 0's second...
    batches = np.stack(batches_per_node, axis=1).reshape(-1, batch_size)
    global_batch_size = batch_size * num_devices
    _resume_warning("device_per_stream", sample_in_epoch, global_batch_size)
    batches = batches.reshape(-1, global_batch_size)[sample_in_epoch // global_batch_size :]
    return _pad_to_world(batches, world, batch_size)


batching_methods: dict[str, Callable[..., NDArray[np.int64]]] = {
    "random": generate_work_random_batching,
    "stratified": generate_work_stratified_batching,
    "per_stream": generate_work_per_stream_batching,
    "device_per_stream": generate_work_device_per_stream_batching,
}


def generate_work(
    batching_method: str, dataset: Any, world: Any, epoch: int, sample_in_epoch: int
) -> NDArray[np.int64]:
    """Apportion shards/samples to nodes/ranks/workers for elastically deterministic order.

    Args:
        batching_method (str): The batching method to use.
        dataset (StreamingDataset | PlanSpec): The dataset, or its planning spec.
        world (World | Tuple[int, int, int]): The parallel world, or its nodes, ranks per node
            and workers per rank.
        epoch (int): Which epoch it is.
        sample_in_epoch (int): Where we are in the epoch.

    Returns:
        NDArray[np.int64]: The epoch (num physical nodes, ranks per node, workers per rank,
            batches per worker, batch size).

    Raises:
        ValueError: If ``batching_method`` is unknown.
    """
    try:
        get = batching_methods[batching_method]
    except KeyError:
        raise ValueError(
            f"Invalid batching method: {batching_method}. Must be one of `random`, `stratified`, "
            f"`per_stream`, or `device_per_stream`."
        ) from None
    return get(dataset, world, epoch, sample_in_epoch)
