"""A StreamingDataset's samples taken a block at a time: as samples, or as columns.

:meth:`StreamingDataset._iter_blocks <streaming.dataset.StreamingDataset._iter_blocks>` yields
its samples a block at a time; an MDS block (:class:`~streaming._kernels._mds.Rows`) can also
decode its rows a column at a time, which skips a dict per sample and the Python loop that
would gather the columns back out of them. :class:`BlockReader` takes ``n`` samples at a time
over block boundaries: as columns when every block they come from has the same light columns
(strings, bytes, ints, and arrays of one dtype and shape, see :data:`LIGHT_KINDS`), as samples
otherwise. A DataLoader worker, which only sends its columns on, takes strings and bytes packed
(:class:`PackedText`): no value is made per row there, only in the main process that unpickles
them.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain, islice
from typing import Any, Iterator

import numpy as np

from streaming._kernels import _collate, _mds

__all__ = ["LIGHT_KINDS", "BlockReader", "PackedText", "as_samples", "blocks_of", "head",
           "listed"]

# MDS column kinds (streaming._kernels._mds) whose values are only ``bytes`` (0), ``str`` (1),
# ``int`` (3) and ``ndarray`` (4): what torch's default_collate keeps as a list, or makes an
# int64 tensor of, or stacks (an ndarray column is taken as columns only while its values
# share a dtype and shape: see BlockReader.take).
LIGHT_KINDS = frozenset({0, 1, 3, 4})
ARRAY_KIND = 4


class BlockReader:
    """Takes samples from a dataset's blocks, ``n`` at a time.

    Args:
        blocks (Iterator[Iterator[Any]]): The blocks (each an iterator of samples, consumed
            before the next is asked for).
        packed (bool): Whether :meth:`take` gives ``str`` and ``bytes`` columns packed (see
            :meth:`~streaming._kernels._mds.Rows.take_columns`), as :class:`PackedText`.
            Defaults to ``False``: lists of the values.
        alloc (Callable, optional): Where a take's arrays of ``ndarray`` rows are made
            (``alloc(shape, dtype)``, ``None`` when it cannot; see
            :meth:`~streaming.batch_ring.Ring.array`), else new arrays. Defaults to ``None``.
        free (Callable, optional): Gives back what ``alloc`` made that a take did not use
            in the end (``free(array, kept)``: the array past its first ``kept`` rows; all
            of it when ``kept`` is 0). Defaults to ``None``.
    """

    def __init__(self, blocks: Iterator[Any], packed: bool = False,
                 alloc: Callable[[tuple[int, ...], np.dtype], np.ndarray | None] | None = None,
                 free: Callable[[np.ndarray, int], None] | None = None) -> None:
        self._blocks = blocks
        self._packed = packed
        self._alloc = alloc
        self._free = free
        self._block: Any = None
        self._schema: tuple[tuple[Any, ...], tuple[int, ...]] | None = None
        self._pending: list[Any] = []  # samples taken from a block to look ahead

    def _current(self) -> Any:
        """The block to take from next (``None``: no more); sets its schema."""
        while self._block is None:
            block = next(self._blocks, None)
            if block is None:
                return None
            self._block = block
            self._schema = None
            if type(block) is _mds.Rows:
                if not len(block):
                    self._block = None
                    continue
                schema = block.schema()
                if schema is not None and schema[0] and set(schema[1]) <= LIGHT_KINDS:
                    self._schema = schema
        return self._block

    def light(self) -> bool | None:
        """Whether the next samples come as columns (``None``: not known before a sample is
        looked at: see :meth:`peek`)."""
        if self._pending or self._current() is None:
            return None
        return True if self._schema is not None else None

    def peek(self) -> Any:
        """The next sample, left to be taken (``None`` if there is none: see :meth:`more`)."""
        return self._pending[0] if self._look() else None

    def more(self) -> bool:
        """Whether any sample is left."""
        if self._pending:
            return True
        block = self._current()
        if block is None:
            return False
        if type(block) is _mds.Rows:
            return True  # (never current once empty)
        return self._look()

    def _look(self) -> bool:
        """Take the next sample ahead, if not yet; whether there is one."""
        if not self._pending:
            schema, data = self.take(1)
            self._pending = data if schema is None else as_samples(schema[0], data)
        return bool(self._pending)

    def take(self, n: int) -> tuple[tuple[tuple[Any, ...], tuple[int, ...]] | None, list[Any]]:
        """Take the next ``n`` samples (fewer if fewer are left).

        Args:
            n (int): How many.

        Returns:
            Tuple[Optional[tuple], list]: ``((names, kinds), columns)``: the samples' keys (in
                every sample exactly these, in this order), their :data:`LIGHT_KINDS` kinds
                and, per key, its values: for ``bytes``/``str`` a list (or a
                :class:`PackedText`), for ``int`` an int64 array (or a list), for ``ndarray``
                one array of the rows stacked (all of one dtype and shape); or
                ``(None, samples)``.
        """
        pieces: list[tuple[Any, list[Any]]] = []
        left = n
        arrays: list[Any] | None = None  # a take's stacked rows, per ndarray column
        filled = 0
        if self._pending and left:
            taken, self._pending = self._pending[:left], self._pending[left:]
            pieces.append((None, taken))
            left -= len(taken)
        try:
            while left > 0:
                block = self._current()
                if block is None:
                    break
                columns = None
                schema = self._schema
                before = len(block) if schema is not None else 0
                if schema is not None:
                    stacks = ARRAY_KIND in schema[1]
                    if stacks and not pieces:  # (arrays for the whole take, made once)
                        arrays = self._new_arrays(block, schema, n)
                    if not stacks or arrays is not None:
                        columns = block.take_columns(left, self._packed, arrays, filled)
                    if columns is None and not stacks:
                        columns = block.decode_columns(left)
                if columns is not None:
                    count = before - len(block)
                    columns = [arrays[at][filled:filled + count] if kind == ARRAY_KIND else
                               PackedText(*column, kind == 1) if type(column) is tuple else
                               column for at, (kind, column) in enumerate(zip(schema[1],
                                                                              columns))]
                    pieces.append((schema, columns))
                    filled += count
                    left -= count
                    if not len(block):
                        self._block = None
                else:
                    samples = list(islice(block, left))
                    pieces.append((None, samples))
                    if len(samples) < left:
                        self._block = None
                    left -= len(samples)
        except BaseException:
            self._give_back(arrays)
            raise
        schemas = {schema for schema, _ in pieces}
        if len(schemas) == 1 and None not in schemas:
            # A take the data ended short of (an epoch's last) leaves its arrays' tail unused.
            self._give_back(arrays, filled)
            schema = pieces[0][0]
            if len(pieces) == 1:
                return schema, pieces[0][1]
            return schema, [arrays[at][:filled] if kind == ARRAY_KIND else
                            _join([columns[at] for _, columns in pieces])
                            for at, kind in enumerate(schema[1])]
        samples = []
        for schema, data in pieces:
            if schema is None:
                samples += data
            else:
                samples += as_samples(schema[0], data)
        self._give_back(arrays)  # (rows copied out of them)
        return None, samples

    def _new_arrays(self, block: Any, schema: tuple[tuple[Any, ...], tuple[int, ...]],
                    n: int) -> list[Any] | None:
        """Arrays for ``n`` rows of each ndarray column, shaped as the block's next row's
        values (``None`` where there is no column of arrays to make)."""
        specs = block.array_specs()
        if specs is None:
            return None
        arrays: list[Any] = [None] * len(specs)
        for at, kind in enumerate(schema[1]):
            if kind != ARRAY_KIND:
                continue
            if specs[at] is None:
                self._give_back(arrays)
                return None
            dtype, shape = specs[at]
            made = None if self._alloc is None else self._alloc((n, *shape), dtype)
            arrays[at] = made if made is not None else np.empty((n, *shape), dtype)
        return arrays

    def _give_back(self, arrays: list[Any] | None, kept: int = 0) -> None:
        """Give back what a take made with ``alloc`` and did not use: its arrays past their
        first ``kept`` rows (all of them when ``kept`` is 0)."""
        if arrays is not None and self._free is not None:
            for array in arrays:
                if array is not None and kept < len(array):
                    self._free(array, kept)

    def samples(self) -> Iterator[Any]:
        """Every sample not taken yet, one at a time.

        Returns:
            Iterator[Any]: The samples.
        """
        pending, self._pending = self._pending, []
        yield from pending
        while True:
            block = self._current()
            if block is None:
                return
            self._block = None
            yield from block


def as_samples(names: tuple[Any, ...], columns: list[Any]) -> list[dict[Any, Any]]:
    """The sample dicts of columns.

    Args:
        names (tuple): The columns' keys.
        columns (List[Any]): Per key, its values (a list, or packed: see :func:`listed`).

    Returns:
        List[Dict[Any, Any]]: The samples.
    """
    return [dict(zip(names, values)) for values in zip(*map(listed, columns))]


class PackedText:
    """A column of ``str`` (or ``bytes``) values kept as their bytes (made by
    :meth:`~streaming._kernels._mds.Rows.take_columns` or
    :func:`~streaming._kernels._collate.pack_text`): pickled as they are, unpickled as the
    list of the values (:func:`~streaming._kernels._collate.unpack_text`).

    Args:
        ends (bytes): Each value's end in ``data`` (native int64).
        data (bytes): The values' bytes (UTF-8 for strings), one after another.
        text (bool): Whether the values are ``str`` (else ``bytes``).
    """

    __slots__ = ("ends", "data", "text")

    def __init__(self, ends: bytes, data: bytes, text: bool) -> None:
        self.ends = ends
        self.data = data
        self.text = text

    def __len__(self) -> int:
        return len(self.ends) // 8

    def nbytes(self, count: int) -> int:
        """Bytes of the first ``count`` values."""
        count = min(count, len(self))
        return int(np.frombuffer(self.ends, np.int64, 1, 8 * (count - 1))[0]) if count else 0

    def head(self, count: int) -> PackedText:
        """The first ``count`` values."""
        return PackedText(self.ends[:8 * count], self.data[:self.nbytes(count)], self.text)

    def values(self) -> list[Any]:
        """The values, as a list."""
        return _collate.unpack_text(self.ends, self.data, self.text)

    def __reduce__(self) -> tuple[Any, ...]:
        return _collate.unpack_text, (self.ends, self.data, self.text)


def listed(column: Any) -> list[Any]:
    """A column's values as a list (a packed one's unpacked; see :class:`BlockReader`).

    Args:
        column (Any): A list, a :class:`PackedText` or an int64 array.

    Returns:
        List[Any]: Its values (ints as ``int``).
    """
    if type(column) is PackedText:
        return column.values()
    if type(column) is np.ndarray:  # ints, or rows of arrays (each its own, as decoded)
        return column.tolist() if column.ndim == 1 else [row.copy() for row in column]
    return column


def head(column: Any, count: int) -> Any:
    """A column's first ``count`` values, of the same type (see :func:`listed`).

    Args:
        column (Any): A list, a :class:`PackedText` or an int64 array.
        count (int): How many.

    Returns:
        Any: Those values.
    """
    return column.head(count) if type(column) is PackedText else column[:count]


def _join(parts: list[Any]) -> Any:
    """Columns' values one after another, packed if all are packed alike (else listed)."""
    if len(parts) == 1:
        return parts[0]
    kinds = set(map(type, parts))
    if kinds == {np.ndarray}:
        return np.concatenate(parts)
    if kinds == {PackedText}:
        offsets = np.cumsum([0] + [len(part.data) for part in parts[:-1]])
        ends = np.concatenate([np.frombuffer(part.ends, np.int64) + offset
                               for part, offset in zip(parts, offsets)])
        return PackedText(ends.tobytes(), b"".join(part.data for part in parts),
                          parts[0].text)
    return list(chain.from_iterable(map(listed, parts)))


def blocks_of(dataset: Any) -> Iterator[Any]:
    """A dataset's samples in blocks: a StreamingDataset's own (see
    :meth:`~streaming.dataset.StreamingDataset._iter_blocks`), else all in one.

    Args:
        dataset (Any): The dataset.

    Returns:
        Iterator[Iterator[Any]]: Its blocks.
    """
    blocks = getattr(dataset, "_iter_blocks", None)
    return blocks() if blocks is not None else iter([iter(dataset)])
