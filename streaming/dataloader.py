"""Streaming DataLoader: a DataLoader that can checkpoint and resume mid-epoch."""

from __future__ import annotations

import contextlib
import fcntl
import warnings
from collections.abc import Mapping
from typing import Any, Iterator

from torch import Tensor
from torch.utils.data import DataLoader
from torch.utils.data._utils import collate as torch_collate

from streaming.collate import collated_batches, column_chunks, light_reader, split_columns
from streaming.dataset import StreamingDataset
from streaming.fork_heap import HeapFreeze
from streaming.worker_batches import (
    CHUNK_BYTES,
    PIPE_BYTES,
    ChunkedBatches,
    WorkerSetup,
    interleave,
)
from streaming.worker_queues import DirectContext
from streaming.world import World

__all__ = ["StreamingDataLoader"]

# Most batches the in-process loader collates at a time (a column at a time, see
# streaming.collate.column_chunks); later batches wait for them (~1 ms for 64 of small rows).
IN_PROCESS_BATCHES = 64


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
        self._chunk_loader: DataLoader | None = None

    def _get_batch_size(self, batch: Any) -> int:
        """Get the number of samples in a batch.

        Args:
            batch (Any): The batch.

        Returns:
            int: Number of samples.

        Raises:
            ValueError: The batch is an empty mapping.
        """
        # Mappings include transformers' BatchEncoding/BatchFeature (UserDicts); a dict is
        # told first without isinstance's ABC checks.
        if type(batch) is dict or isinstance(batch, Mapping):
            for value in batch.values():
                return _length(value)
            raise ValueError("Batch is empty")
        if isinstance(batch, Tensor):
            return _length(batch)
        return _length(batch[0])

    def __iter__(self) -> Iterator[Any]:
        """Iterate over this DataLoader, yielding batches.

        Also tracks the number of samples seen this rank.

        Returns:
            Iterator[Any]: Each batch.
        """
        self.num_samples_yielded = 0
        # Before any worker is forked (see streaming.fork_heap).
        freeze = HeapFreeze(self.num_workers, self.multiprocessing_context)
        try:
            ours = True
            if self._batches_in_process():
                batches = self._iter_in_process()
            elif self._batches_in_chunks():
                batches = self._iter_chunks()
            else:
                batches, ours = super().__iter__(), False  # (torch's iterator warns itself)
            state = self.__dict__  # (DataLoader.__setattr__ checks every name it is given)
            for yielded, batch in enumerate(batches, 1):
                if ours:
                    self._warn_past_length(yielded)
                state["num_samples_yielded"] += self._get_batch_size(batch)
                yield batch
        finally:
            freeze.release()

    def _batches_ours(self) -> bool:
        """Whether we may batch: automatic batching with the default ``collate_fn`` over a
        StreamingDataset whose iteration is ours (then every batch is exactly what torch would
        make, see :func:`streaming.collate.collate_batch`)."""
        return (self.batch_size is not None and self.batch_sampler is not None
                and self.collate_fn is torch_collate.default_collate
                and isinstance(self.dataset, StreamingDataset)
                and type(self.dataset).__iter__ is StreamingDataset.__iter__)

    def _batches_in_process(self) -> bool:
        """Whether batches can be made here: without worker processes or memory pinning."""
        return self.num_workers == 0 and not self.pin_memory and self._batches_ours()

    def _batches_in_chunks(self) -> bool:
        """Whether worker processes can send their batches in chunks (see
        :mod:`streaming.worker_batches`): with workers, delivering batches in order."""
        return (self.num_workers > 0 and getattr(self, "in_order", True)
                and self._batches_ours())

    def _warn_past_length(self, yielded: int) -> None:
        """Torch's warning for a batch past the length ``len(loader)`` reported, if it is."""
        reported = self._IterableDataset_len_called
        if reported is not None and yielded > reported:
            message = (f"Length of IterableDataset {self.dataset} was reported to be "
                       f"{reported}(when accessing len(dataloader)), but {yielded} samples have "
                       "been fetched. ")
            if self.num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each worker. "
                            "Please see https://pytorch.org/docs/stable/data.html#torch.utils."
                            "data.IterableDataset for examples.")
            warnings.warn(message, stacklevel=2)

    def _iter_chunks(self) -> Iterator[Any]:
        """Batch in torch's worker processes, each sending its batches a chunk at a time, and
        yield them in torch's order (see :mod:`streaming.worker_batches`)."""
        first = self._chunk_loader is None
        if first:
            # Torch runs the workers: seeds (its base-seed draw from ``generator`` is the
            # same), worker_init_fn, errors, timeouts, persistent workers, pinning. Its queues
            # write their small messages themselves (see streaming.worker_queues).
            self._chunk_loader = DataLoader(
                ChunkedBatches(self.dataset, self.batch_size, self.drop_last),
                batch_size=None, collate_fn=_as_is, num_workers=self.num_workers,
                pin_memory=self.pin_memory, timeout=self.timeout,
                worker_init_fn=WorkerSetup(self.worker_init_fn),
                multiprocessing_context=DirectContext(self.multiprocessing_context),
                generator=self.generator, prefetch_factor=self.prefetch_factor,
                persistent_workers=self.persistent_workers,
                pin_memory_device=self.pin_memory_device)
        retired = self.__dict__.pop("_retired", None)
        if first or not self.persistent_workers:
            # Workers about to start get new rings, or the last epoch's once its workers are
            # gone (no process writes in them then; the slots of batches still held stay taken):
            # their pages are made already (~4k page faults a worker otherwise).
            rings = self._chunk_loader.dataset.rings
            if not (_reap(retired) and rings is not None and len(rings) == self.num_workers):
                self._chunk_loader.dataset.new_rings(self.num_workers)
        chunks = iter(self._chunk_loader)
        _widen_pipe(chunks)
        yield from interleave(chunks, self.num_workers)
        if not self.persistent_workers and not self.pin_memory:
            # Every worker has sent its last chunk: they are told to exit now and reaped at
            # the next epoch (or when the loader goes), so the epoch's last batch is not
            # followed by a wait for the workers' exits (the kernel tearing down each one's
            # address space: ~5-8 ms an epoch on the benchmark box, docs/performance.md).
            # Not with a pinning thread, which torch stops before the workers.
            _retire(chunks)
            self.__dict__["_retired"] = chunks

    def _iter_in_process(self) -> Iterator[Any]:
        """Batch the dataset's samples as torch's single-process loader does (same batches, same
        end of epoch, same ``drop_last``; see :func:`streaming.collate.collated_batches`)."""
        # Torch builds its iterator as usual (its checks, warnings and base-seed draw from the
        # loader's generator happen just the same) but never starts it; its unstarted
        # iteration of the dataset is a generator that does nothing.
        super().__iter__()
        reader, light = light_reader(self.dataset)
        if not light:
            yield from collated_batches(reader.samples(), self.batch_size, self.drop_last)
            return
        for columns, batches, _ in column_chunks(reader, self.batch_size, self.drop_last,
                                                 IN_PROCESS_BATCHES, CHUNK_BYTES):
            yield from batches if columns is None else split_columns(columns, self.batch_size)

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
        iterators = [getattr(loader, "_iterator", None)
                     for loader in (self, getattr(self, "_chunk_loader", None))]
        for iterator in (self.__dict__.get("_retired"), *iterators):
            if iterator is not None and hasattr(iterator, "_shutdown_workers"):
                iterator._shutdown_workers()


def _length(value: Any) -> int:
    """``len(value)``; for a tensor of one or more dimensions, read off its shape (torch's
    ``Tensor.__len__`` is Python: ~2 us a batch)."""
    if type(value) is Tensor and value.dim():
        return value.shape[0]
    return len(value)


def _retire(iterator: Any) -> None:
    """Tell the workers of torch's multi-process ``iterator`` to exit, as its shutdown does,
    without waiting for them: each one's last message has been taken (what
    ``_shutdown_workers`` then does, joining them, costs no wait once they are gone)."""
    iterator._workers_done_event.set()
    for worker, queue in enumerate(iterator._index_queues):
        if iterator._workers_status[worker]:
            queue.put(None)


def _reap(iterator: Any) -> bool:
    """Shut down torch's multi-process ``iterator`` (retired by :func:`_retire`), if any;
    whether it had one and every one of its workers is gone."""
    if iterator is None:
        return False
    iterator._shutdown_workers()  # (a no-op while the interpreter exits)
    return iterator._shutdown and not any(worker.is_alive() for worker in iterator._workers)


def _widen_pipe(iterator: Any) -> None:
    """Let the workers' result pipe hold a whole chunk (Linux: 64 KB by default, so a chunk
    crosses in many rounds of the worker writing and this process waking to read)."""
    queue = getattr(iterator, "_worker_result_queue", None)
    reader = getattr(queue, "_reader", None)
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if reader is None or setsize is None:
        return
    with contextlib.suppress(OSError, ValueError):
        fcntl.fcntl(reader.fileno(), setsize, PIPE_BYTES)


def _as_is(chunk: Any) -> Any:
    """The ``collate_fn`` of the workers' chunk loader: chunks are collated already."""
    return chunk
