"""``LocalDataset``: a map-style PyTorch dataset over a dataset directory already on disk."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from torch.utils.data import Dataset

from streaming.array import Array
from streaming.format import reader_from_json
from streaming.format.index import get_index_basename, load_index
from streaming.spanner import Spanner

__all__ = ["LocalDataset"]


class LocalDataset(Array, Dataset):
    """A streaming dataset whose shards reside locally as a pytorch Dataset.

    Shards must be present in their raw (decompressed) form.

    Args:
        local (str): Local dataset directory where shards are cached by split.
        split (str, optional): Which dataset split to use, if any. Defaults to ``None``.

    Raises:
        FileNotFoundError: No ``index.json`` in ``local/split``.
        ValueError: The index is malformed (the error names the file).
    """

    def __init__(self, local: str, split: str | None = None) -> None:
        split = split or ""
        self.local = local
        self.split = split
        filename = os.path.join(local, split, get_index_basename())
        obj = load_index(filename)
        self.shards = [reader_from_json(local, split, info) for info in obj["shards"]]
        shard_sizes = np.array([shard.samples for shard in self.shards], np.int64)
        self.num_samples = int(shard_sizes.sum())
        self.spanner = Spanner(shard_sizes)

    def __len__(self) -> int:
        """Get the length as a PyTorch Dataset.

        Returns:
            int: Dataset length.
        """
        return self.num_samples

    @property
    def size(self) -> int:
        """Get the size of the dataset in samples.

        Returns:
            int: Number of samples.
        """
        return self.num_samples

    def __getitem__(self, at: Any) -> Any:
        """Get item(s) by index, slice, int list, or numpy array (see :class:`Array`).

        A plain int (the common case, e.g. from a DataLoader sampler) skips the generic dispatch.
        """
        if type(at) is int and 0 <= at < self.num_samples:
            shard_id, index_in_shard = self.spanner[at]
            return self.shards[shard_id].get_item(index_in_shard)
        return super().__getitem__(at)

    def get_item(self, sample_id: int) -> dict[str, Any]:
        """Get sample by global sample ID.

        Args:
            sample_id (int): Sample ID.

        Returns:
            Dict[str, Any]: Column name with sample data.

        Raises:
            IndexError: ``sample_id`` out of range.
        """
        shard_id, index_in_shard = self.spanner[sample_id]
        return self.shards[shard_id].get_item(index_in_shard)
