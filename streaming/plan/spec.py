"""What epoch planning needs to know about a dataset (``PlanSpec``) and its defaulted settings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "UnknownAlgorithmError",
    "get_algorithm",
    "PlanSpec",
    "default_num_canonical_nodes",
    "default_predownload",
    "default_shuffle_block_size",
    "parallel_world_shape",
]


class UnknownAlgorithmError(KeyError, ValueError):
    """An unknown shuffle or partition algorithm name.

    The reference lets the ``KeyError`` of its algorithm table through; this is one too, and a
    ``ValueError`` as well, so handlers written for either catch it. Its message names the
    argument and the known names.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def get_algorithm(kind: str, algos: dict, name: str):
    """Return ``algos[name]``.

    Args:
        kind (str): The argument the name came from (``shuffle_algo``, ``partition_algo``).
        algos (Dict[str, Any]): The known algorithms.
        name (str): The name asked for.

    Returns:
        Any: The algorithm.

    Raises:
        UnknownAlgorithmError: ``name`` is not one of ``algos``.
    """
    try:
        return algos[name]
    except (KeyError, TypeError):
        raise UnknownAlgorithmError(
            f"{kind}: unknown algorithm {name!r}; choose one of {sorted(algos)}") from None


def default_num_canonical_nodes(shuffle_algo: str, num_physical_nodes: int) -> int:
    """Get the reference's default ``num_canonical_nodes``.

    Args:
        shuffle_algo (str): The shuffle algorithm.
        num_physical_nodes (int): Physical nodes of the (replicated) world.

    Returns:
        int: ``64 * num_physical_nodes`` for ``py1s``/``py2s``, else ``num_physical_nodes``.
    """
    return 64 * num_physical_nodes if shuffle_algo in ("py1s", "py2s") else num_physical_nodes


def default_shuffle_block_size(num_canonical_nodes: int | None) -> int:
    """Get the reference's default ``shuffle_block_size``.

    Args:
        num_canonical_nodes (int, optional): Canonical nodes, if known.

    Returns:
        int: ``max(4_000_000 // num_canonical_nodes, 1 << 18)``, or ``1 << 18`` without nodes.
    """
    if num_canonical_nodes is None:
        return 1 << 18
    return max(4_000_000 // num_canonical_nodes, 1 << 18)


def default_predownload(batch_size: int | None) -> int:
    """Get the reference's default ``predownload``.

    Args:
        batch_size (int, optional): Per-device batch size.

    Returns:
        int: ``8 * batch_size``, or ``64`` without a batch size.
    """
    return 8 * batch_size if batch_size is not None else 64


def parallel_world_shape(
    num_nodes: int, ranks_per_node: int, replication: int | None
) -> tuple[int, int]:
    """Get ``(num_nodes, ranks_per_node)`` of the world that plans, given sample replication.

    With ``replication`` r, each r consecutive ranks see the same samples, so planning happens
    for ``num_ranks // r`` ranks (on one node when they do not fill whole nodes). A rank's
    position in that world is ``rank // r``.

    Args:
        num_nodes (int): Physical nodes.
        ranks_per_node (int): Ranks per physical node.
        replication (int, optional): Replication factor, or ``None``.

    Returns:
        Tuple[int, int]: Nodes and ranks per node of the parallel world.

    Raises:
        ValueError: If ``replication`` is not positive or does not divide the world size.
    """
    if replication is None:
        return num_nodes, ranks_per_node
    if replication <= 0:
        raise ValueError("Replication factor must be positive.")
    num_ranks = num_nodes * ranks_per_node
    if num_ranks % replication:
        raise ValueError("World size must be divisible by your replication factor.")
    num_ranks //= replication
    nodes = num_ranks // ranks_per_node if num_ranks % ranks_per_node == 0 else 1
    return nodes, num_ranks // nodes


@dataclass(frozen=True, eq=False)
class PlanSpec:
    """Everything epoch planning needs to know about a dataset, resolved.

    Attributes:
        samples_per_shard (NDArray[np.int64]): Samples of every shard, streams one after another.
        shards_per_stream (NDArray[np.int64]): Number of shards of each stream.
        choose_per_stream (NDArray[np.int64]): Samples drawn from each stream per epoch.
        proportion_per_stream (NDArray[np.float64]): Each stream's derived proportion.
        num_canonical_nodes (int): Canonical nodes (see ``default_num_canonical_nodes``).
        batch_size (int, optional): Per-device batch size (required to plan work).
        shuffle (bool): Whether to shuffle.
        shuffle_algo (str): ``naive, py1br, py1e, py1s, py2s``.
        shuffle_seed (int): Seed of the run.
        shuffle_block_size (int, optional): Unit of shuffle; ``None`` means the default for
            ``num_canonical_nodes``.
        partition_algo (str): ``orig`` or ``relaxed``.
        sampling_method (str): ``balanced`` or ``fixed``.
        sampling_granularity (int): Samples drawn at a time from one shard.
        batching_method (str): ``random, stratified, per_stream, device_per_stream``.
        initial_physical_nodes (int, optional): Physical nodes of the run being resumed.
        replication (int, optional): Consecutive ranks that see the same samples.
    """

    samples_per_shard: NDArray[np.int64]
    shards_per_stream: NDArray[np.int64]
    choose_per_stream: NDArray[np.int64]
    proportion_per_stream: NDArray[np.float64]
    num_canonical_nodes: int
    batch_size: int | None = None
    shuffle: bool = False
    shuffle_algo: str = "py1e"
    shuffle_seed: int = 9176
    shuffle_block_size: int | None = None
    partition_algo: str = "relaxed"
    sampling_method: str = "balanced"
    sampling_granularity: int = 1
    batching_method: str = "random"
    initial_physical_nodes: int | None = None
    replication: int | None = None

    def __post_init__(self) -> None:
        for name in ("samples_per_shard", "shards_per_stream", "choose_per_stream"):
            arr = np.array(getattr(self, name), np.int64).reshape(-1)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        prop = np.array(self.proportion_per_stream, np.float64).reshape(-1)
        prop.flags.writeable = False
        object.__setattr__(self, "proportion_per_stream", prop)
        if int(self.shards_per_stream.sum()) != len(self.samples_per_shard):
            raise ValueError("shards_per_stream must add up to the number of shards")
        if not len(self.shards_per_stream) == len(self.choose_per_stream) == len(prop):
            raise ValueError(
                "shards_per_stream, choose_per_stream and proportion_per_stream "
                "must have one entry per stream"
            )

    @property
    def num_streams(self) -> int:
        """Number of streams."""
        return len(self.shards_per_stream)

    @property
    def epoch_size(self) -> int:
        """Samples per epoch over all streams."""
        return int(self.choose_per_stream.sum())

    @property
    def epoch_seed_change(self) -> bool:
        """Whether shard apportioning and stream batch order change every epoch."""
        return bool(self.shuffle) and self.sampling_method == "balanced"

    @property
    def resolved_shuffle_block_size(self) -> int:
        """``shuffle_block_size``, or its default for ``num_canonical_nodes``."""
        if self.shuffle_block_size is None:
            return default_shuffle_block_size(self.num_canonical_nodes)
        return self.shuffle_block_size
