"""``Array``: a read-only sequence that can be fancy-indexed like a NumPy array."""

from __future__ import annotations

from typing import Any, Iterator, Union

import numpy as np
from numpy.typing import NDArray

__all__ = ["Array"]


class Array:
    """A read-only list of items that can be fancy indexed like a numpy array.

    Index with ints (negative ones count from the end), slices, lists of ints, NumPy arrays of
    ints, and lists/arrays of those, recursively. Subclasses provide ``size`` and
    ``get_item(0 <= idx < size)``.

    Slices follow Python's rules, including negative steps (the reference returns an empty list
    for ``[::-1]``).
    """

    @property
    def size(self) -> int:
        """Get the size of the array.

        Returns:
            int: Array size.
        """
        raise NotImplementedError

    def get_item(self, idx: int) -> Any:
        """Get the item at the index.

        Args:
            idx (int): The index.

        Returns:
            Any: The item.
        """
        raise NotImplementedError

    def _each_slice_index(self, at: slice) -> Iterator[int]:
        """Get each index that a slice selects.

        Args:
            at (slice): The slice.

        Returns:
            Iterator[int]: Its indices.
        """
        return iter(range(*at.indices(self.size)))

    def __getitem__(self, at: Union[int, slice, list[int], NDArray[np.int64]]) -> Any:
        """Get item(s) by index, slice, int list, or numpy array.

        Args:
            at (int | slice | List[int] | NDArray[np.int64]): Sample index(es).

        Returns:
            Any: An item if passed an int, or recursive lists of items otherwise.

        Raises:
            ValueError: Unsupported index type.
        """
        if isinstance(at, (int, np.integer)):
            size = self.size
            if -size <= at < 0:
                at += size
            return self.get_item(int(at))
        if isinstance(at, slice):
            return [self.get_item(idx) for idx in self._each_slice_index(at)]
        if isinstance(at, (list, np.ndarray)):
            return [self.__getitem__(sub) for sub in at]
        raise ValueError(f"Unsupported argument type passed to __getitem__: {type(at)}.")
