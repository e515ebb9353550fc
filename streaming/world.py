"""Information about nodes, ranks, and DataLoader workers of this run."""

from __future__ import annotations

from typing import Any

from streaming import distributed as dist


class World:
    """Information about the nodes, ranks and workers of this run.

    Counts (``num_nodes``, ``num_ranks``, ``num_workers``) are global, not per rank. Nodes are
    assumed to hold the same number of ranks (``LOCAL_WORLD_SIZE``).

    Args:
        num_nodes (int): Number of nodes.
        ranks_per_node (int): Ranks per node.
        workers_per_rank (int): DataLoader workers per rank (1 when iterating in the rank).
        worker (int): Global worker index.
    """

    def __init__(self, num_nodes: int, ranks_per_node: int, workers_per_rank: int,
                 worker: int) -> None:
        per_node = ranks_per_node * workers_per_rank
        self.node = worker // per_node
        self.num_nodes = num_nodes
        self.is_multinode = 1 < num_nodes

        self.rank = worker // workers_per_rank
        self.num_ranks = num_nodes * ranks_per_node
        self.rank_of_node = self.rank % ranks_per_node
        self.ranks_per_node = ranks_per_node

        self.worker = worker
        self.num_workers = num_nodes * per_node
        self.worker_of_node = worker % per_node
        self.workers_per_node = per_node
        self.worker_of_rank = worker % workers_per_rank
        self.workers_per_rank = workers_per_rank
        self.is_leader = not worker
        self.is_local_leader = not self.worker_of_node

    def to_json(self) -> dict[str, Any]:
        """Get a JSON version of this config.

        Returns:
            Dict[str, Any]: JSON config.
        """
        return dict(self.__dict__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, World) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        return (f"World(num_nodes={self.num_nodes}, ranks_per_node={self.ranks_per_node}, "
                f"workers_per_rank={self.workers_per_rank}, worker={self.worker})")

    @classmethod
    def _get_worker_info(cls) -> tuple[int, int]:
        """Get DataLoader worker info, or default to 0 of 1.

        Returns:
            Tuple[int, int]: Worker ID out of how many workers.
        """
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        return (info.id, info.num_workers) if info else (0, 1)

    @classmethod
    def detect(cls) -> World:
        """Detect the world state from the environment and DataLoader worker info.

        Returns:
            World: A new World state object.

        Raises:
            ValueError: The environment describes an impossible world.
        """
        rank = dist.get_rank()
        ranks_per_node = dist.get_local_world_size()
        world_size = dist.get_world_size()
        if ranks_per_node < 1 or world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"Invalid distributed environment: RANK={rank}, "
                             f"WORLD_SIZE={world_size}, LOCAL_WORLD_SIZE={ranks_per_node}")
        worker_of_rank, workers_per_rank = cls._get_worker_info()
        worker = rank * workers_per_rank + worker_of_rank
        return cls(world_size // ranks_per_node, ranks_per_node, workers_per_rank, worker)

    def copy(self) -> World:
        """Get a copy of this world state.

        Returns:
            World: A new copy with the same state.
        """
        return World(self.num_nodes, self.ranks_per_node, self.workers_per_rank, self.worker)

    def replicate(self, replication: int) -> World:
        """Get a copy of this world state with the given replication factor.

        Args:
            replication (int): How many consecutive devices see the same samples.

        Returns:
            World: The world as seen by groups of ``replication`` devices.

        Raises:
            ValueError: ``replication`` is not positive or does not divide the world size.
        """
        if replication <= 0:
            raise ValueError("Replication factor must be positive.")
        if self.num_ranks % replication:
            raise ValueError("World size must be divisible by your replication factor.")
        rank = self.rank // replication
        num_ranks = self.num_ranks // replication
        worker = rank * self.workers_per_rank + self.worker_of_rank
        # Keep ranks per node when they divide evenly; otherwise the reference folds to one node.
        num_nodes = num_ranks // self.ranks_per_node if num_ranks % self.ranks_per_node == 0 else 1
        return World(num_nodes, num_ranks // num_nodes, self.workers_per_rank, worker)

    def detect_workers(self) -> World:
        """Get a copy of this world state with the worker information newly detected.

        Returns:
            World: This rank's world with the current DataLoader worker filled in.
        """
        worker_of_rank, workers_per_rank = self._get_worker_info()
        worker = self.rank * workers_per_rank + worker_of_rank
        return World(self.num_nodes, self.ranks_per_node, workers_per_rank, worker)
