"""Mapping of global sample index to shard and relative sample index."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np
from numpy.typing import NDArray

from streaming._kernels import _spanner

__all__ = ["Spanner"]


class Spanner:
    """Given a list of shards, construct a mapping of global index to shard and relative index.

    Args:
        shard_sizes (NDArray[np.int64]): Number of samples in each shard.
        span_size (int): Kept for the reference's signature; lookups are a binary search.
            Defaults to ``1 << 10``.
    """

    def __init__(self, shard_sizes: NDArray[np.int64], span_size: int = 1 << 10) -> None:
        self.shard_sizes = np.asarray(shard_sizes, np.int64)
        self.span_size = span_size
        self.num_samples = int(self.shard_sizes.sum())
        self.shard_bounds = np.concatenate([np.zeros(1, np.int64), self.shard_sizes.cumsum()])
        # Shards with zero samples never own an index: search only the non-empty ones.
        self._nonempty = np.flatnonzero(self.shard_sizes).astype(np.int64)
        self._starts = self.shard_bounds[self._nonempty]
        # Plain lists for one index at a time: bisect on a list is ~10x faster than a NumPy call.
        self._starts_list = self._starts.tolist()
        self._nonempty_list = self._nonempty.tolist()
        self._bounds_list = self.shard_bounds.tolist()

    def __getitem__(self, index: int) -> tuple[int, int]:
        """Map global sample index to shard and relative sample index.

        Args:
            index (int): Global sample index.

        Returns:
            Tuple[int, int]: Shard and relative sample index.

        Raises:
            IndexError: The index is out of range.
        """
        if not 0 <= index < self.num_samples:
            raise IndexError(f"Invalid sample index `{index}`: 0 <= {index} < {self.num_samples}")
        shard = self._nonempty_list[bisect_right(self._starts_list, index) - 1]
        return shard, int(index) - self._bounds_list[shard]

    def locate(self, indices: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Map many global sample indices at once (no bounds check: callers pass valid ids).

        Args:
            indices (NDArray[np.int64]): Global sample indices.

        Returns:
            Tuple[NDArray[np.int64], NDArray[np.int64]]: Shard and relative index of each.
        """
        pos = np.searchsorted(self._starts, indices, "right") - 1
        shards = self._nonempty[pos]
        return shards, indices - self.shard_bounds[shards]

    def first_visits(self,
                     indices: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each shard that a sequence of global sample indices visits, in order of first visit.

        One compiled pass that stops once every non-empty shard has been seen.

        Args:
            indices (NDArray[np.int64]): Global sample indices.

        Returns:
            Tuple[NDArray[np.int64], NDArray[np.int64]]: The shards, and the position in
                ``indices`` of each one's first visit.

        Raises:
            ValueError: An index is out of range.
        """
        if not self.num_samples:
            if len(indices):
                raise ValueError("Spanner.first_visits: there are no samples to index")
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return _spanner.first_visits(np.ascontiguousarray(indices, np.int64), self._starts,
                                     self._nonempty, self.num_samples, len(self.shard_sizes))
