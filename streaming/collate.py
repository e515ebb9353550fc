"""Torch's ``default_collate``, made cheaper for the batches a StreamingDataset yields."""

from __future__ import annotations

from itertools import islice
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch
from torch import Tensor
from torch.utils.data._utils import collate as torch_collate

from streaming._kernels import _collate
from streaming.blocks import ARRAY_KIND, BlockReader, PackedText, as_samples, blocks_of, head

__all__ = ["collate_batch", "collate_columns", "collated_batches", "column_chunks", "light_reader",
           "light_sample", "split_columns", "stock_registry", "typed_columns"]


# Where a batch's stacked arrays may be made: (shape, dtype) -> an array, or None for anywhere.
Alloc = Callable[[tuple[int, ...], np.dtype], "np.ndarray | None"]


def collate_batch(batch: list[Any], stock: bool | None = None, alloc: Alloc | None = None) -> Any:
    """``torch.utils.data.default_collate(batch)``, with a cheaper path for dicts of arrays.

    Torch turns each sample's array into a tensor and stacks those (~8 us a sample for 8 KB
    rows); stacking the arrays straight into the batch tensor gives the same tensor. Anything
    else, and any registration a user made in torch's ``default_collate_fn_map``, goes through
    torch's own collation.

    Args:
        batch (List[Any]): The samples of one batch.
        stock (bool, optional): :func:`stock_registry` of torch's registry, if the caller
            checked it once for many batches.
        alloc (Callable, optional): Makes the memory of stacked arrays (a worker's shared
            memory, say); ``None`` from it, or no ``alloc``, means new tensors.

    Returns:
        Any: What ``default_collate(batch)`` returns.
    """
    elem = batch[0]
    registry = torch_collate.default_collate_fn_map
    if stock is None:
        stock = stock_registry(registry)
    if type(elem) is not dict or not stock:
        return torch_collate.default_collate(batch)
    out = {}
    for key in elem:
        values = [sample[key] for sample in batch]
        first = type(values[0])
        stacked = _stack(values, alloc) if first is np.ndarray else \
            _numbers(values) if first is int or first is float else None
        out[key] = stacked if stacked is not None else \
            torch_collate.collate(values, collate_fn_map=registry)
    return out


def collated_batches(samples: Iterable[Any], batch_size: int, drop_last: bool,
                     alloc: Alloc | None = None) -> Iterator[Any]:
    """Batch samples as torch's loader batches an iterable dataset, collating each batch as
    ``default_collate`` does (:func:`collate_batch`).

    Args:
        samples (Iterable[Any]): The samples.
        batch_size (int): Samples per batch.
        drop_last (bool): Whether to drop the last batch if it is short.
        alloc (Callable, optional): Where stacked arrays are made (see :func:`collate_batch`).

    Returns:
        Iterator[Any]: The batches: ``batch_size`` samples each, the last one short unless
            ``drop_last``.
    """
    samples = iter(samples)
    stock = stock_registry(torch_collate.default_collate_fn_map)
    while True:
        batch = list(islice(samples, batch_size))
        if not batch or (drop_last and len(batch) < batch_size):
            return
        yield collate_batch(batch, stock, alloc)
        if len(batch) < batch_size:
            return


def stock_registry(registry: dict[Any, Any]) -> bool:
    """Whether arrays, tensors, ints, floats and dicts collate as torch ships them.

    Args:
        registry (Dict[Any, Any]): Torch's ``default_collate_fn_map``.

    Returns:
        bool: Whether nobody re-registered how those types collate.
    """
    return (registry.get(np.ndarray) is torch_collate.collate_numpy_array_fn
            and registry.get(Tensor) is torch_collate.collate_tensor_fn
            and registry.get(int) is torch_collate.collate_int_fn
            and registry.get(float) is torch_collate.collate_float_fn
            and not any(isinstance(key, type) and issubclass(dict, key) for key in registry)
            and not any(isinstance(key, tuple) and issubclass(dict, key) for key in registry))


def light_reader(dataset: Any, packed: bool = False, alloc: Alloc | None = None,
                 free: Callable[[np.ndarray], None] | None = None) -> tuple[BlockReader, bool]:
    """A reader of ``dataset``'s samples (:class:`~streaming.blocks.BlockReader`), and whether
    they are small rows that :func:`column_chunks` collates a column at a time (told by the
    first block's columns, or else by the first sample: :func:`light_sample`).

    Args:
        dataset (Any): The dataset (a StreamingDataset's blocks are its own).
        packed (bool): Whether columns may come packed (see
            :class:`~streaming.blocks.BlockReader`): for batches that are pickled, not used,
            where they are made. Defaults to ``False``.
        alloc (Callable, optional): Where stacked rows of arrays are made (see
            :class:`~streaming.blocks.BlockReader`). Defaults to ``None``.
        free (Callable, optional): Gives back what ``alloc`` made and was not used.
            Defaults to ``None``.

    Returns:
        Tuple[BlockReader, bool]: The reader (nothing taken yet), and whether its rows are light.
    """
    reader = BlockReader(blocks_of(dataset), packed, alloc, free)
    light = reader.light()
    if light is None:
        light = reader.more() and light_sample(reader.peek())
    return reader, bool(light) and _stock_light()


def column_chunks(reader: BlockReader, batch_size: int, drop_last: bool, most: int,
                  most_bytes: int, alloc: Alloc | None = None
                  ) -> Iterator[tuple[dict[Any, Any] | None, list[Any], bool]]:
    """Batch light samples as torch's loader batches an iterable dataset (as
    :func:`collated_batches`), several batches at a time, each time collated a column at a time
    (:func:`collate_columns`, or :func:`typed_columns` of rows decoded so), else batch by batch.

    Args:
        reader (BlockReader): The samples (see :func:`light_reader`).
        batch_size (int): Samples per batch.
        drop_last (bool): Whether to drop the last batch if it is short.
        most (int): Most batches at a time: 1, 2, 4, ... up to this many (the first batch
            comes at once).
        most_bytes (int): Bytes of strings and arrays at a time (estimated by a batch) past
            which the batches at a time grow no more.
        alloc (Callable, optional): Where batches collated one by one make their stacked
            arrays (see :func:`collate_batch`). Defaults to ``None``.

    Returns:
        Iterator[Tuple[Optional[dict], list, bool]]: ``(columns, [], last)`` (the batches of
            :func:`split_columns`) or ``(None, batches, last)``; ``last``: no batches after.
    """
    size = 1
    while True:
        schema, data = reader.take(size * batch_size)
        last = not reader.more()
        count = len(data[0]) if schema is not None else len(data)
        if last and drop_last:
            count -= count % batch_size
            data = [head(column, count) for column in data] if schema is not None else \
                data[:count]
        columns = None
        if count:
            columns = typed_columns(schema, data) if schema is not None else \
                collate_columns(data, batch_size)
        if columns is not None:
            yield columns, [], last
        else:  # (no samples, or not all light ones: each batch as usual)
            samples = as_samples(schema[0], data) if schema is not None else data
            yield None, [collate_batch(samples[at:at + batch_size], None, alloc)
                         for at in range(0, count, batch_size)], last
        if last:
            return
        # Bytes of a batch of strings and arrays, told by the first batch.
        held = sum(_batch_bytes(column, batch_size) for column in (columns or {}).values())
        size = min(2 * size, most, max(1, most_bytes // held) if held else most)


def _batch_bytes(column: Any, count: int) -> int:
    """Size of a column's first ``count`` values: strings or bytes (characters of ``str``
    values), or a tensor's rows."""
    if type(column) is PackedText:
        return column.nbytes(count)
    if type(column) is list:
        return sum(map(len, column[:count]))
    return column[:count].numel() * column.element_size()


def light_sample(sample: Any) -> bool:
    """Whether ``sample`` is a dict of only ``str``, ``bytes``, ``int`` and ``float`` values,
    all of which ``default_collate`` collates as torch ships it (then batches of such samples
    can be collated a column at a time: :func:`collate_columns`).

    Args:
        sample (Any): A sample.

    Returns:
        bool: Whether it is such a sample.
    """
    return (type(sample) is dict and bool(sample)
            and set(map(type, sample.values())) <= _LIGHT and _stock_light())


def _stock_light() -> bool:
    """Whether torch's registry collates strings, bytes, ints, floats and dicts as shipped."""
    registry = torch_collate.default_collate_fn_map
    return (registry.get(str) is torch_collate.collate_str_fn
            and registry.get(bytes) is torch_collate.collate_str_fn
            and stock_registry(registry))


def collate_columns(samples: list[Any], batch_size: int) -> dict[Any, Any] | None:
    """What ``default_collate`` makes of each ``batch_size`` samples of ``samples`` in turn, as
    columns: ``{key: column}``, a column being the whole list of a key's strings and bytes
    (each batch's value: its slice) or one tensor of its ints or floats (each batch's: its
    part), see :func:`split_columns`. One pass per key for all the batches, instead of one per
    batch (and a tensor per batch), is what a DataLoader worker sending many batches of small
    rows saves.

    Args:
        samples (List[Any]): The samples, the first of them a :func:`light_sample`.
        batch_size (int): Samples per batch (the last batch may be short).

    Returns:
        Optional[Dict[Any, Any]]: The columns, or ``None`` if any batch would collate otherwise
            (then collate each batch: :func:`collate_batch`), or be refused.
    """
    first = samples[0]
    keys = list(first)
    # default_collate keeps each batch's first sample's keys, in its order.
    for at in range(batch_size, len(samples), batch_size):
        lead = samples[at]
        if type(lead) is not dict or list(lead) != keys:
            return None
    columns: dict[Any, Any] = {}
    for key in keys:
        try:
            column = list(map(itemgetter(key), samples))
        except (KeyError, TypeError, IndexError):  # torch's batch would raise it: let it
            return None
        kinds = set(map(type, column))
        if kinds <= _LISTED:
            columns[key] = column
        elif kinds == {int}:
            try:
                columns[key] = torch.from_numpy(np.array(column, np.int64))
            except OverflowError:  # past int64: torch refuses that batch
                return None
        elif kinds == {float}:
            columns[key] = torch.from_numpy(np.array(column, np.float64))
        else:
            return None
    return columns


def typed_columns(schema: tuple[tuple[Any, ...], tuple[int, ...]],
                  values: list[list[Any]]) -> dict[Any, Any]:
    """:func:`collate_columns`'s columns of values decoded a column at a time (see
    :meth:`streaming.blocks.BlockReader.take`), each column's type known by its kind.

    Args:
        schema (Tuple[tuple, tuple]): The column names and their kinds (``3``: ``int``
            values; ``0``, ``1``: ``bytes``, ``str``; ``4``: arrays of one dtype and shape).
        values (List[Any]): Per column, its values: a list, or packed (an int64 array, a
            :class:`~streaming.blocks.PackedText`, kept as it is), or for arrays their rows
            stacked.

    Returns:
        Dict[Any, Any]: The columns.
    """
    names, kinds = schema
    return {name: _int_column(column) if kind == 3 else
            torch.from_numpy(column) if kind == ARRAY_KIND else column
            for name, kind, column in zip(names, kinds, values)}


def _int_column(column: Any) -> Tensor:
    """The int64 tensor of an ``int`` column's values (a list, or already an int64 array)."""
    if type(column) is np.ndarray:
        return torch.from_numpy(column)
    return torch.from_numpy(np.array(column, np.int64))


def split_columns(columns: dict[Any, Any], batch_size: int) -> list[dict[Any, Any]]:
    """The batches of :func:`collate_columns`'s ``columns``.

    Args:
        columns (Dict[Any, Any]): The columns.
        batch_size (int): Samples per batch.

    Returns:
        List[Dict[Any, Any]]: The batches; a tensor of each is a view of its column.
    """
    parts = [_collate.list_batches(column, batch_size) if type(column) is list else
             _tensor_batches(column, batch_size) for column in columns.values()]
    return _collate.batch_dicts(tuple(columns), parts)


def _tensor_batches(column: Tensor, batch_size: int) -> tuple[Tensor, ...]:
    """``column.split(batch_size)``: the same views, those of whole batches made by one
    ``unbind`` (~0.9 us a batch of an int column, against 1.0-1.5 us through ``Tensor.split``)."""
    count = column.shape[0]
    whole = count - count % batch_size
    if not whole or not column.numel() or column.stride() != _row_major(column.shape):
        return column.split(batch_size)  # (and views keep strides a view would change)
    rows = column[:whole].view(whole // batch_size, batch_size, *column.shape[1:]).unbind(0)
    return rows if whole == count else (*rows, column[whole:])


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides (in elements) of a C-contiguous tensor of ``shape``."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


# Values light_sample accepts; of them, those a batch keeps as a list of the samples' values.
_LIGHT = frozenset({str, bytes, int, float})
_LISTED = frozenset({str, bytes})


def _stack(values: list[Any], alloc: Alloc | None = None) -> Tensor | None:
    """Stack same-shape, same-dtype numeric arrays into a new tensor; ``None`` if torch's own
    path must decide (other types, ragged shapes, dtypes it rejects or converts)."""
    first = values[0]
    dtype, shape = first.dtype, first.shape
    if dtype.kind not in "biufc" or not dtype.isnative:
        return None
    match = _collate.match_rows(values)
    if match == _collate.MISMATCH:
        return None
    kind = _TORCH_DTYPES.get(dtype)
    if kind is None:
        try:
            kind = _TORCH_DTYPES[dtype] = torch.from_numpy(first).dtype
        except (TypeError, ValueError, RuntimeError):
            return None
    rows = None if alloc is None else alloc((len(values), *shape), dtype)
    if rows is None:
        out = torch.empty((len(values), *shape), dtype=kind)
        rows = out.numpy()
    else:
        out = torch.from_numpy(rows)
    if match == _collate.CONTIGUOUS:
        _collate.copy_rows(values, rows)
    else:
        for i, value in enumerate(values):
            rows[i] = value
    return out


def _numbers(values: list[Any]) -> Tensor | None:
    """The tensor ``torch.tensor`` makes of a column of only ``int`` (int64) or only ``float``
    (float64, as ``default_collate`` asks), through NumPy (~5x faster for a batch); ``None``
    if torch's own path must decide (mixed types, ints past int64)."""
    kinds = set(map(type, values))
    if kinds == {int}:
        try:
            return torch.from_numpy(np.array(values, np.int64))
        except OverflowError:
            return None
    if kinds == {float}:
        return torch.from_numpy(np.array(values, np.float64))
    return None


# NumPy dtype -> the dtype torch.from_numpy gives it (asking costs ~1 us a batch).
_TORCH_DTYPES: dict[np.dtype, torch.dtype] = {}
