"""Batches from DataLoader worker processes, a few at a time instead of one message each.

Torch's multi-process loader sends every batch as its own message, and shares every tensor in
it through a new shared-memory file whose descriptor the main process fetches over a socket:
~0.5 ms of the main process's CPU per batch, whatever its size — more than decoding a batch of
MDS rows takes. Here each worker batches and collates its samples itself and sends them in
chunks of up to :data:`MOST_BATCHES` batches (:data:`MOST_LIGHT_BATCHES` of light rows); tensor
bytes, and the packed bytes of light rows' strings, go through the worker's ring of shared memory
(:mod:`streaming.batch_ring`), or in the message when it is full; the main process hands out
tensors viewing the ring (the bytes are not copied again) and takes the workers' batches in
turn, one each, as torch's loader yields them (round robin, a worker dropping out when its
samples end), so the batches and their order are torch's. Torch's own worker processes run it
all (seeding, ``worker_init_fn``, errors, timeouts, persistent workers, pinning): each worker's
"dataset" is :class:`ChunkedBatches`.
"""

from __future__ import annotations

import gc
from collections import deque
from functools import partial
from typing import Any, Iterator

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info
from torch.utils.data._utils import worker as torch_worker
from torch.utils.data._utils.pin_memory import pin_memory as pin_batch

from streaming._kernels import _collate
from streaming.batch_ring import ALIGN, Ring, ring_of
from streaming.blocks import PackedText
from streaming.collate import (
    collated_batches,
    column_chunks,
    light_reader,
    split_columns,
)

__all__ = ["PIPE_BYTES", "Chunk", "ChunkedBatches", "WorkerSetup", "interleave"]

# A chunk grows 1, 2, 4, ... batches up to this many (the first batch leaves at once), and
# closes early past CHUNK_BYTES of arrays (what a worker holds before the main process has it).
MOST_BATCHES = 64
CHUNK_BYTES = 4 << 20
# The same for chunks of light rows, whose strings and bytes count towards CHUNK_BYTES too: each
# chunk costs the main process ~70 us of torch's loader around it, as much as ~1,500 of their
# strings (text rows, 2 workers, steady epochs: 64 at most, 70-145 ms; 256, 62-115 ms; 1024,
# 73-123 ms).
MOST_LIGHT_BATCHES = 256
# Each worker's ring (see streaming.batch_ring): a few chunks in flight (its pages are touched
# only as far as that needs: small payloads reuse the first slots).
RING_BYTES = 24 << 20
# A chunk that does not fit in the ring carries its tensors' bytes in its message up to this
# size; past it, tensors bigger than this go as torch sends tensors (each in shared memory).
IN_MESSAGE_BYTES = 1 << 20
# What the main process asks the result pipe to hold (Linux caps it: pipe-max-size, 1 MB).
PIPE_BYTES = 1 << 20


class Chunk:
    """Consecutive batches of one worker.

    Pickled, its batches' big arrays were made in the worker's ring already; the bytes of its
    other plain CPU tensors, and of its columns of strings or bytes (packed), go into the ring
    if they fit (else into the message, as one payload, or for those over
    :data:`IN_MESSAGE_BYTES` as torch pickles tensors and values by value).
    Unpickled, they are tensors viewing the ring (its slots free again once none of them, or
    views of them, is left) or new tensors of the message's bytes: no shared memory is made or
    fetched per tensor, as torch's pickling of tensors does.

    Args:
        worker (int): The worker's id.
        batches (List[Any]): Its next batches, in order.
        last (bool): Whether the worker has no batches after these.
        ring (Ring, optional): The worker's ring. Defaults to ``None``.
        split (int, optional): If given, ``batches`` is one item, the batches' columns
            (:func:`streaming.collate.collate_columns`), cut into batches of this many samples
            where it is unpickled. Defaults to ``None``.
    """

    __slots__ = ("worker", "batches", "last", "ring", "split")

    def __init__(self, worker: int, batches: list[Any], last: bool,
                 ring: Ring | None = None, split: int | None = None) -> None:
        self.worker = worker
        self.batches = batches
        self.last = last
        self.ring = ring
        self.split = split

    def __reduce__(self) -> tuple[Any, ...]:
        ring = self.ring
        arrays: list[tuple[int, np.ndarray]] = []
        offset = [0]
        batches = self.batches
        if self.split is not None:  # (one item: the columns) strings and bytes go packed
            batches = [{key: _packed(column) if type(column) is list else column
                        for key, column in batches[0].items()}]
        skeleton = [_pack(batch, ring, arrays, offset) for batch in batches]
        token = None if ring is None else ring.token
        if ring is not None and offset[0]:
            start = ring.put(arrays, offset[0])
            if start is not None:
                where = (token, start, offset[0])
                return _unpack_chunk, (self.worker, skeleton, self.last, None, where,
                                       self.split)
        if offset[0] > IN_MESSAGE_BYTES:
            # Big tensors go as torch sends tensors (in shared memory of their own), the others
            # in the message.
            arrays, offset = [], [0]
            skeleton = [_pack(batch, ring, arrays, offset, IN_MESSAGE_BYTES)
                        for batch in batches]
        # One payload of every other tensor's bytes: pickling many big arrays grows the
        # pickle's buffer step by step (copying it each time).
        pieces: list[Any] = []
        end = 0
        for at, array in arrays:
            pieces += [bytes(at - end), array] if at > end else [array]
            end = at + array.nbytes
        return _unpack_chunk, (self.worker, skeleton, self.last, b"".join(pieces),
                               (token, None, 0), self.split)

    def pin_memory(self) -> Chunk:
        """Pin every batch, as torch's pinning thread does a batch (it calls this).

        Returns:
            Chunk: The same batches, pinned.
        """
        return Chunk(self.worker, [pin_batch(batch) for batch in self.batches], self.last)


def _packed(values: list[Any]) -> Any:
    """A column of strings or of bytes to pickle packed (a
    :class:`~streaming.blocks.PackedText`: one buffer, not an opcode and a memo entry a value;
    unpickled, the list), or the list itself when it does not pack (mixed types, a lone
    surrogate: pickled value by value)."""
    try:
        ends, data = _collate.pack_text(values)
    except (TypeError, UnicodeEncodeError):
        return values
    return PackedText(ends, data, bool(values) and type(values[0]) is str)


class _SlotMark:
    """Marks a tuple as a tensor's slot: ``(_SLOT, dtype, array dtype, shape, start, stop,
    in_ring)`` — where its bytes are: in its chunk's payload, or (``in_ring``) made in the ring.
    Tuples, not objects: a chunk of small batches unpickles ~2x faster (one marker, memoized).
    A packed column of strings or bytes (:class:`~streaming.blocks.PackedText`) has a slot too,
    ``(_SLOT, None, text, count, start, stop, False)``: its ends then its bytes in the payload,
    made into its values where the chunk is unpickled."""

    def __reduce__(self) -> str:
        return "_SLOT"  # (unpickled as this module's own marker: compared by identity)


_SLOT = _SlotMark()


def _slot(data: Any) -> bool:
    """Whether ``data`` is a slot tuple (see :class:`_SlotMark`)."""
    return type(data) is tuple and len(data) == 7 and data[0] is _SLOT


def _walk(data: Any, leaf: Any) -> Any:
    """``data`` with ``leaf`` applied to everything in its dicts, lists and tuples (the
    containers ``default_collate`` makes), those rebuilt around the results."""
    kind = type(data)
    if kind is dict:
        return {key: _walk(value, leaf) for key, value in data.items()}
    if kind is list:
        if set(map(type, data)) <= _AS_IS:  # (a batch's strings: ~0.5 us each otherwise)
            return data
        return [_walk(value, leaf) for value in data]
    if kind is tuple and not _slot(data):
        return tuple(_walk(value, leaf) for value in data)
    return leaf(data)


# What _walk passes by without looking: leaves no packing touches.
_AS_IS = frozenset({str, bytes, int, float, bool, type(None)})


def _plain(data: Any) -> np.ndarray | None:
    """A plain CPU tensor's array, or ``None`` (tensor subclasses, other devices, layouts and
    dtypes NumPy lacks, tensors that need grad or are not contiguous: pickled as torch would)."""
    if type(data) is not torch.Tensor or data.device.type != "cpu" or \
            data.layout is not torch.strided or data.requires_grad or not data.is_contiguous():
        return None
    try:
        return data.numpy()
    except (TypeError, RuntimeError):  # a dtype NumPy lacks
        return None


def _pack(batch: Any, ring: Ring | None, arrays: list[tuple[int, np.ndarray]],
          offset: list[int], keep_over: int | None = None) -> tuple[Any, tuple[Any, ...] | None]:
    """``batch`` with each plain CPU tensor replaced by its slot (:class:`_SlotMark`): those
    made in ``ring`` (:meth:`~streaming.batch_ring.Ring.array`) stay where they are; the others are
    moved to ``arrays`` (their offset in the payload, a multiple of
    :data:`~streaming.batch_ring.ALIGN`, and their bytes; ``offset``: the payload's length so
    far, updated), but for those of more than ``keep_over`` bytes, left as they are. Returned
    with the keys of its slots if it is a dict holding no slot deeper, so that the main process looks at nothing
    else (a batch of 32 strings is walked in ~1 us).
    """
    def move(data: Any) -> Any:
        if type(data) is PackedText:
            return _move_text(data, arrays, offset, keep_over)
        array = _plain(data)
        if array is None:
            return data
        at = None if ring is None else ring.where(data.data_ptr(), array.nbytes)
        if at is not None:
            return (_SLOT, data.dtype, array.dtype, tuple(data.shape), at, at + array.nbytes, True)
        if keep_over is not None and array.nbytes > keep_over:
            return data
        start = _append(arrays, offset, array.reshape(-1).view(np.uint8))
        return (_SLOT, data.dtype, array.dtype, tuple(data.shape), start, offset[0], False)

    if type(batch) is not dict:
        return _walk(batch, move), None
    # A dict's values one by one, noting its slots' keys: while no other value is a container
    # _walk rebuilt (one that may hold slots; leaves-only lists come back as they are), those
    # are all the main process needs to look at.
    packed: dict[Any, Any] = {}
    keys: list[Any] | None = []
    for key, value in batch.items():
        packed[key] = new = _walk(value, move)
        if _slot(new):
            if keys is not None:
                keys.append(key)
        elif new is not value and type(new) in _CONTAINERS:
            keys = None
    return packed, None if keys is None else tuple(keys)


def _move_text(column: PackedText, arrays: list[tuple[int, np.ndarray]], offset: list[int],
               keep_over: int | None) -> Any:
    """A packed column's slot, its ends and bytes moved to ``arrays`` (as :func:`_pack` moves a
    tensor's): in the ring they skip the pickle, the pipe and their copies on either side (a
    text chunk's ~0.5 MB). Past ``keep_over`` bytes it stays as it is (pickled by value)."""
    nbytes = len(column.ends) + len(column.data)
    if keep_over is not None and nbytes > keep_over:
        return column
    start = _append(arrays, offset, np.frombuffer(column.ends, np.uint8),
                    np.frombuffer(column.data, np.uint8))
    return (_SLOT, None, column.text, len(column), start, offset[0], False)


def _append(arrays: list[tuple[int, np.ndarray]], offset: list[int], *pieces: np.ndarray) -> int:
    """Place byte arrays one after another at the payload's end, from its next multiple of
    :data:`~streaming.batch_ring.ALIGN` (``offset``: the payload's length, updated); returns
    where the first starts."""
    start = end = -(-offset[0] // ALIGN) * ALIGN
    for piece in pieces:
        arrays.append((end, piece))
        end += piece.nbytes
    offset[0] = end
    return start


# What _walk rebuilds (and so what may hold slots).
_CONTAINERS = frozenset({dict, list, tuple})


def _build(data: Any, ring: Ring | None, payload: np.ndarray | None, lent: bool) -> Any:
    """A slot's tensor (anything else as it is): of its bytes in the ring (viewed, see
    :meth:`~streaming.batch_ring.Ring.lend`), or in ``payload`` (viewed if ``lent``, else
    copied)."""
    if not _slot(data):
        return data
    _, dtype, array_dtype, shape, start, stop, in_ring = data
    if dtype is None:  # a packed column's values (see _move_text): made from the bytes
        ends = start + 8 * shape
        return _collate.unpack_text(payload[start:ends], payload[ends:stop], array_dtype)
    if in_ring:
        raw, view = ring.lend(start, stop - start), True
    else:
        raw, view = payload[start:stop], lent
    if view:
        return torch.from_numpy(raw.view(array_dtype).reshape(shape))
    out = torch.empty(shape, dtype=dtype)
    if stop > start:
        out.numpy().reshape(-1).view(np.uint8)[:] = raw
    return out


def _unpack(packed: Any, keys: tuple[Any, ...] | None, ring: Ring | None,
            payload: np.ndarray | None, lent: bool) -> Any:
    """Undo :func:`_pack`: each slot (:class:`_SlotMark`) becomes its tensor (:func:`_build`);
    with ``keys`` (see :func:`_pack`), only those values of the dict are looked at."""
    if keys is None:
        return _walk(packed, lambda data: _build(data, ring, payload, lent))
    for key in keys:
        packed[key] = _build(packed[key], ring, payload, lent)
    return packed


def _unpack_chunk(worker: int, skeleton: list[Any], last: bool, payload: bytes | None,
                  where: tuple[str | None, int | None, int], split: int | None = None) -> Chunk:
    """Unpickle a :class:`Chunk`: tensors made in the ring and, for the others, their bytes
    in ``payload`` (copied out), or in the ring at ``where`` (token, position, length); a
    chunk of columns (``split``) cut into its batches."""
    token, start, nbytes = where
    ring = None if token is None else ring_of(token)
    raw, lent = None, False
    if payload is not None:
        raw = np.frombuffer(payload, np.uint8)
    elif start is not None:
        raw, lent = ring.lend(start, nbytes), True
    batches = [_unpack(batch, keys, ring, raw, lent) for batch, keys in skeleton]
    if split is not None:
        batches = split_columns(batches[0], split)
    return Chunk(worker, batches, last)


def _give_back(ring: Ring, batch: Any) -> None:
    """Free the ring slots of a batch's tensors made in the ring that will not be sent."""
    def free(data: Any) -> Any:
        array = _plain(data)
        if array is not None:
            _free_array(ring, array)
        return data

    _walk(batch, free)


def _free_array(ring: Ring, array: np.ndarray, kept: int = 0) -> None:
    """Free the ring slots of an array :meth:`Ring.array` made that will not be sent, or,
    with ``kept`` rows of it sent, its slots past theirs."""
    at = ring.where(array.ctypes.data, array.nbytes)
    if at is not None:
        ring.release(at, array.nbytes, kept * array.strides[0] if kept else 0)


def _array_bytes(data: Any) -> int:
    """Bytes of the tensors at the top of a collated batch (a dict, list or tuple of them)."""
    values = data.values() if type(data) is dict else data if type(data) in (list, tuple) \
        else (data,)
    # (element_size * numel: Tensor.nbytes is torch 2.1+, and pyproject allows 2.0)
    return sum(value.element_size() * value.numel() for value in values
               if type(value) is torch.Tensor)


class ChunkedBatches(IterableDataset):
    """What each DataLoader worker iterates: its share of the dataset, batched, in chunks.

    Batches are made as torch's worker makes them from an iterable dataset (``batch_size``
    samples each, the last one short unless ``drop_last``) and collated as ``default_collate``
    collates them.

    Args:
        dataset (IterableDataset): The dataset whose samples to batch.
        batch_size (int): Samples per batch.
        drop_last (bool): Whether to drop a worker's last, short batch.
    """

    def __init__(self, dataset: IterableDataset, batch_size: int, drop_last: bool) -> None:
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.rings: list[Ring] | None = None  # by worker id, set by the main process

    def new_rings(self, num_workers: int) -> None:
        """Give the workers about to start new rings (where the platform has them).

        Args:
            num_workers (int): How many workers.
        """
        try:
            self.rings = [Ring(RING_BYTES) for _ in range(num_workers)]
        except OSError:  # no memfd_create here, or refused (seccomp): chunks carry their bytes
            self.rings = None

    def __iter__(self) -> Iterator[Chunk]:
        """Iterate this worker's batches, a chunk at a time.

        Returns:
            Iterator[Chunk]: Chunks of batches; the last says so (even if it holds none).
        """
        info = get_worker_info()
        worker = 0 if info is None else info.id
        ring = None
        if info is not None and self.rings is not None and worker < len(self.rings):
            ring = self.rings[worker]
        alloc = None if ring is None else ring.array  # stacked arrays made in the ring
        free = None if ring is None else partial(_free_array, ring)
        # Packed: the columns' values are made where the chunks are unpickled, not here too.
        reader, light = light_reader(self.dataset, True, alloc, free)
        if light:  # (rows of light columns: whole chunks collated a column at a time)
            for columns, batches, last in column_chunks(reader, self.batch_size, self.drop_last,
                                                        MOST_LIGHT_BATCHES, CHUNK_BYTES, alloc):
                yield Chunk(worker, batches, last, ring) if columns is None else \
                    Chunk(worker, [columns], last, ring, self.batch_size)
            return
        batches = collated_batches(reader.samples(), self.batch_size, self.drop_last, alloc)
        ahead = chunk = None
        try:
            ahead = next(batches, None)
            size = 1
            while True:
                chunk = []
                held = 0
                while ahead is not None and len(chunk) < size and held < CHUNK_BYTES:
                    chunk.append(ahead)
                    held += _array_bytes(ahead)
                    ahead = next(batches, None)
                sent, chunk = chunk, None
                yield Chunk(worker, sent, ahead is None, ring)
                if ahead is None:
                    return
                size = min(2 * size, MOST_BATCHES)
        finally:  # stopped early (an error, or the epoch abandoned): free what was not sent
            if ring is not None:
                for batch in (chunk or []) + [ahead]:
                    _give_back(ring, batch)


class WorkerSetup:
    """A DataLoader's ``worker_init_fn`` for :class:`ChunkedBatches`: first freezes the objects
    the worker inherited (``gc.freeze``) and makes the worker's ``get_worker_info().dataset``
    the user's dataset (as torch's own loader has it), then calls the user's
    ``worker_init_fn``, if any.

    Args:
        init_fn (Callable[[int], None], optional): The user's ``worker_init_fn``.
    """

    def __init__(self, init_fn: Any = None) -> None:
        self.init_fn = init_fn

    def __call__(self, worker_id: int) -> None:
        """Set up worker ``worker_id``.

        Args:
            worker_id (int): The worker's id.
        """
        # What the worker inherited (a forked worker: the main process's whole heap; torch
        # alone is ~170k objects) is frozen, so that its collections never walk it: its first
        # full collection otherwise took ~0.1 s and wrote into every inherited object's
        # header, copying those pages. What the worker makes from here on is collected.
        gc.freeze()
        info = get_worker_info()
        if info is not None and isinstance(info.dataset, ChunkedBatches):
            torch_worker._worker_info = torch_worker.WorkerInfo(
                id=info.id, num_workers=info.num_workers, seed=info.seed,
                dataset=info.dataset.dataset)
        if self.init_fn is not None:
            self.init_fn(worker_id)


def interleave(chunks: Iterator[Chunk], num_workers: int) -> Iterator[Any]:
    """Yield the workers' batches in the order torch's loader yields them: one from each worker
    in turn, a worker leaving the turn when it has no more.

    Args:
        chunks (Iterator[Chunk]): Every worker's chunks, each worker's in order.
        num_workers (int): How many workers.

    Returns:
        Iterator[Any]: The batches.
    """
    held: list[deque[Any]] = [deque() for _ in range(num_workers)]
    ended = [False] * num_workers
    turn = list(range(num_workers))
    while turn:
        still = []
        for worker in turn:
            while not held[worker] and not ended[worker]:
                chunk = next(chunks, None)
                if chunk is None:  # every worker has finished
                    ended = [True] * num_workers
                    break
                held[chunk.worker].extend(chunk.batches)
                ended[chunk.worker] = ended[chunk.worker] or chunk.last
            if held[worker]:
                yield held[worker].popleft()
                still.append(worker)
        turn = still
