"""Streaming DataLoader: a DataLoader that can checkpoint and resume mid-epoch."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator

from torch import Tensor
from torch.utils.data import DataLoader

from streaming.dataset import StreamingDataset
from streaming.world import World

__all__ = ["StreamingDataLoader"]


class StreamingDataLoader(DataLoader):
    """A streaming data loader.

    Provides an additional checkpoint/resumption interface, for which it tracks the number of
    samples seen by the model this rank.

    Args:
        *args: List arguments.
        **kwargs: Keyword arguments.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.num_samples_yielded = 0

    def _get_batch_size(self, batch: Any) -> int:
        """Get the number of samples in a batch.

        Args:
            batch (Any): The batch.

        Returns:
            int: Number of samples.

        Raises:
            ValueError: The batch is an empty mapping.
        """
        # Mappings include transformers' BatchEncoding/BatchFeature (UserDicts).
        if isinstance(batch, Mapping):
            for value in batch.values():
                return len(value)
            raise ValueError("Batch is empty")
        if isinstance(batch, Tensor):
            return len(batch)
        return len(batch[0])

    def __iter__(self) -> Iterator[Any]:
        """Iterate over this DataLoader, yielding batches.

        Also tracks the number of samples seen this rank.

        Returns:
            Iterator[Any]: Each batch.
        """
        self.num_samples_yielded = 0
        for batch in super().__iter__():
            self.num_samples_yielded += self._get_batch_size(batch)
            yield batch

    def state_dict(self) -> dict[str, Any] | None:
        """Get a dict containing training state (called from non-worker process).

        Returns:
            Optional[Dict[str, Any]]: The state, if a streaming dataset.
        """
        if isinstance(self.dataset, StreamingDataset):
            world = World.detect()
            num_samples = self.num_samples_yielded * world.num_ranks
            if self.dataset.replication is not None:
                # Replicated ranks share sample ids, so each group counts once.
                num_samples //= self.dataset.replication
            return self.dataset.state_dict(num_samples, False)
        return None

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Load a dict containing training state (called from non-worker process).

        Args:
            obj (Dict[str, Any]): The state.
        """
        if isinstance(self.dataset, StreamingDataset):
            self.dataset.load_state_dict(obj)

    def __del__(self) -> None:
        """Terminate the workers during cleanup."""
        iterator = getattr(self, "_iterator", None)
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()
