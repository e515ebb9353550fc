"""Torch's ``default_collate``, made cheaper for the batches a StreamingDataset yields."""

from __future__ import annotations

from itertools import islice
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch
from torch import Tensor
from torch.utils.data._utils import collate as torch_collate

from streaming._kernels import _collate

__all__ = ["collate_batch", "collated_batches", "stock_registry"]


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
