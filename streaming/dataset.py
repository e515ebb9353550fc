"""A mid-epoch-resumable streaming/caching pytorch IterableDataset.

One epoch is a short story: resolve the epoch (and any checkpoint) with the rank's other
workers, compute this worker's part of the epoch's plan, make each shard local through the cache
as the plan reaches it (prefetching ahead), decode rows a block at a time with the shards'
readers, yield.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import warnings
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from math import ceil
from typing import Any, Callable, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray
from torch.utils.data import IterableDataset

from streaming._kernels import _mds
from streaming.array import Array
from streaming.constant import DEFAULT_TIMEOUT
from streaming.format import get_index_basename
from streaming.format.mds.reader import MDSReader  # noqa: F401 - the usual format, loaded up front
from streaming.plan import (
    PlanSpec,
    default_num_canonical_nodes,
    default_shuffle_block_size,
    worker_plan,
    worker_plan_head,
)
from streaming.plan import resample_streams as plan_resample_streams
from streaming.plan_file import load_or_compute_plan, shares_plan
from streaming.registry import construct_from_registry
from streaming.run_state import RunState
from streaming.spanner import Spanner
from streaming.storage.cache import CacheEntry, ShardCache, runtime_dir
from streaming.stream import Stream, streams_registry
from streaming.util import bytes_to_int, number_abbrev_to_int
from streaming.world import World

__all__ = ["StreamingDataset"]

logger = logging.getLogger(__name__)

# Plan positions handled at a time while iterating (at most the default ``predownload``, so
# the prefetch check at a block's start covers the whole block).
DECODE_BLOCK = 256
# A block reading one shard that is resident already runs on along it, up to this many
# positions and about BLOCK_BYTES of its rows: each block costs ~8 us of bookkeeping (prefetch
# check, ledger touch, the decoder's setup), as much as decoding 256 small rows.
MOST_BLOCK = 8192
BLOCK_BYTES = 1 << 19
# Plan positions mapped to (shard, row) at a time, as iteration reaches them.
LOCATE_CHUNK = 1 << 16
# Shard readers (memory maps) kept open per process while iterating.
MAX_OPEN_SHARDS = 16
# Threads per process preparing upcoming shards.
PREFETCH_THREADS = 4
# Shards queued for prefetching beyond the ``predownload`` window, per process.
PREFETCH_AHEAD_SHARDS = 2 * PREFETCH_THREADS
# Bytes of those shards, per node (divided among its processes; see _prefetch_budget).
PREFETCH_AHEAD_BYTES = 1 << 30


class StreamingDataset(Array, IterableDataset):
    """A mid-epoch-resumable streaming/caching pytorch IterableDataset.

    Features elastically deterministic shuffling, which enables fast mid-epoch resumption.
    Checkpoints are JSON: ``epoch``, ``sample_in_epoch``, ``shuffle_seed``,
    ``num_canonical_nodes`` and ``initial_physical_nodes``.

    Args:
        streams (Sequence[Stream], optional): One or more streams to stream/cache samples from,
            which may be upsampled or downsampled. StreamingDataset uses either ``streams`` or
            ``remote``/``local``. Defaults to ``None``.
        remote (str, optional): Remote path or directory to download the dataset from. If ``None``,
            its data must exist locally. Defaults to ``None``.
        local (str, optional): Local working directory to download shards to. Uses a temp
            directory if not set. Defaults to ``None``.
        split (str, optional): Which dataset split to use, if any. Defaults to ``None``.
        download_retry (int): Number of download re-attempts before giving up. Defaults to ``2``.
        download_timeout (float): Number of seconds to wait for a shard to download before raising
            an exception. Defaults to ``60``.
        validate_hash (str, optional): Optional hash or checksum algorithm to use to validate
            shards. Defaults to ``None``.
        keep_zip (bool): Whether to keep or delete the compressed form when decompressing
            downloaded shards. If ``False``, keep iff remote is local or no remote. Defaults to
            ``False``.
        epoch_size (Union[int, str], optional): Number of samples to draw per epoch balanced
            across all streams. If ``None``, takes its value from the total number of underlying
            samples. Accepts abbreviations (``"100k"``, ``"64M"``, ``"77b"``). Defaults to
            ``None``.
        predownload (int, optional): Target number of samples to download per worker in advance
            of current sample. If ``None``, its value is set to ``8 * batch_size`` (or 64).
            Defaults to ``None``.
        cache_limit (Union[int, str], optional): Maximum size in bytes of this StreamingDataset's
            shard cache, counted over every process on the node sharing the cache. Before
            downloading a shard, the least recently used resident shard(s) may be evicted. Set to
            ``None`` to disable shard eviction. Accepts ``"100b"``, ``"64kb"``, ``"77mb"``, ...
            Defaults to ``None``.
        sampling_method (str): Which sampling method to use, either ``balanced`` or ``fixed``.
            Defaults to ``balanced``.
        sampling_granularity (int): When picking samples for a stream's final partial repeat,
            how many samples to pick from the same shard at a time. Defaults to ``1``.
        partition_algo (str): Which partitioning algorithm to use. Defaults to ``relaxed``.
        num_canonical_nodes (int, optional): Canonical number of nodes for shuffling with
            resumption. If ``None``, 64 times the number of physical nodes of the initial run for
            ``py1s``/``py2s``, else the number of physical nodes. Defaults to ``None``.
        batch_size (int, optional): Per-device batch size, the same as what is passed to the
            DataLoader. Defaults to ``None``.
        shuffle (bool): Whether to iterate over the samples in randomized order. Defaults to
            ``False``.
        shuffle_algo (str): Which shuffling algorithm to use. Defaults to ``py1e``.
        shuffle_seed (int): Seed for deterministic data shuffling. Defaults to ``9176``.
        shuffle_block_size (int, optional): Unit of shuffle. If ``None``, its value is
            ``max(4_000_000 // num_canonical_nodes, 1 << 18)``. Defaults to ``None``.
        batching_method (str): Which batching method to use, either ``random``, ``stratified``,
            ``per_stream``, or ``device_per_stream``. Defaults to ``random``.
        allow_unsafe_types (bool): If a shard contains Pickle, which allows arbitrary code
            execution during deserialization, whether to keep going if ``True`` or raise an error
            if ``False``. Defaults to ``False``.
        replication (int, optional): Determines how many consecutive devices will receive the same
            samples. Defaults to ``None``.
        stream_name (str): The name of the Stream to use which is registered in streams_registry.
            Defaults to ``stream``.
        stream_config (dict[str, Any]): Additional arguments to pass to the Stream constructor.

    Raises:
        ValueError: Invalid arguments (the same checks and messages as the reference).
    """

    def __init__(self,
                 *,
                 streams: Sequence[Stream] | None = None,
                 remote: str | None = None,
                 local: str | None = None,
                 split: str | None = None,
                 download_retry: int = 2,
                 download_timeout: float = DEFAULT_TIMEOUT,
                 validate_hash: str | None = None,
                 keep_zip: bool = False,
                 epoch_size: int | str | None = None,
                 predownload: int | None = None,
                 cache_limit: int | str | None = None,
                 sampling_method: str = "balanced",
                 sampling_granularity: int = 1,
                 partition_algo: str = "relaxed",
                 num_canonical_nodes: int | None = None,
                 batch_size: int | None = None,
                 shuffle: bool = False,
                 shuffle_algo: str = "py1e",
                 shuffle_seed: int = 9176,
                 shuffle_block_size: int | None = None,
                 batching_method: str = "random",
                 allow_unsafe_types: bool = False,
                 replication: int | None = None,
                 stream_name: str = "stream",
                 stream_config: dict[str, Any] | None = None) -> None:
        self.predownload = predownload
        self.cache_limit = cache_limit
        self.sampling_method = sampling_method
        self.sampling_granularity = sampling_granularity
        self.partition_algo = partition_algo
        self.num_canonical_nodes = num_canonical_nodes
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.shuffle_algo = shuffle_algo
        self.shuffle_seed = shuffle_seed
        self.shuffle_block_size = shuffle_block_size
        self.batching_method = batching_method
        self.allow_unsafe_types = allow_unsafe_types
        self.replication = replication

        # `unique` worlds tell processes apart; `parallel` worlds are who we are when iterating
        # (with `replication`, groups of ranks act as one).
        world = World.detect()
        self._unique_rank_world = world
        self._parallel_rank_world = world.replicate(replication) if replication is not None \
            else world.copy()
        self.initial_physical_nodes: int | None = None

        self._validate_args(streams, remote, local)
        epoch_size_value = None
        if epoch_size:
            epoch_size_value = number_abbrev_to_int(epoch_size)
            if epoch_size_value < 0:
                raise ValueError(f"Epoch size cannot be negative. Received {epoch_size_value}.")
        self.epoch_seed_change = self.shuffle and self.sampling_method == "balanced"

        default = {"remote": remote, "local": local, "split": split,
                   "download_retry": download_retry, "download_timeout": download_timeout,
                   "validate_hash": validate_hash, "keep_zip": keep_zip}
        if streams:
            for stream in streams:
                stream.apply_default(default)
        else:
            config = dict(stream_config or {})
            config.update(default)
            streams = [construct_from_registry(stream_name, streams_registry,
                                               partial_function=False, kwargs=config)]
            streams[0].apply_default(default)
        Stream.validate_weights(streams)
        self.streams = list(streams)
        self.num_streams = len(self.streams)

        self._load_shards()
        self._check_cache_limit()

        self.samples_per_shard = np.array([shard.samples for shard in self.shards], np.int64)
        self.sample_offset_per_shard = self.samples_per_shard.cumsum() - self.samples_per_shard
        self.spanner = Spanner(self.samples_per_shard)
        self.epoch_size = Stream.apply_weights(self.streams, self.samples_per_stream,
                                               epoch_size_value, self.shuffle_seed)
        self.length = ceil(self.epoch_size / self._parallel_rank_world.num_ranks)

        # Cross-process state lives in the cache directory (no shared memory, no barriers).
        self._runtime_dir = runtime_dir([os.path.join(s.local, s.split) for s in self.streams])
        self._cache = ShardCache(self._runtime_dir, self._cache_entries(), self.cache_limit,
                                 base_usage=sum(s.get_index_size() for s in self.streams),
                                 wait_timeout=max(s.download_timeout for s in self.streams))
        self._cache.reconcile()
        self._run = RunState(self._runtime_dir)
        self._init_process_state()

    # -- construction helpers --------------------------------------------------------------------

    def _validate_args(self, streams: Sequence[Stream] | None, remote: str | None,
                       local: str | None) -> None:
        if bool(streams) == (bool(remote) or bool(local)):
            raise ValueError(
                "You must provide either `streams` or `remote`/`local`, but not both.")
        if self.sampling_method not in ["balanced", "fixed"]:
            raise ValueError(f"Invalid sampling method: {self.sampling_method}. Must be one of "
                             "`balanced` or `fixed`.")
        if self.sampling_granularity <= 0:
            raise ValueError("`sampling_granularity` must be a positive integer, but got: "
                             f"{self.sampling_granularity}.")
        if self.batching_method not in ["random", "stratified", "per_stream",
                                        "device_per_stream"]:
            raise ValueError(f"Invalid batching method: {self.batching_method}. Must be one of "
                             "`random`, `stratified`, `per_stream`, or `device_per_stream`.")
        if self.shuffle_seed < 0:
            raise ValueError("`shuffle_seed` must be a non-negative integer, but got: "
                             f"{self.shuffle_seed}.")
        if self.predownload is not None and self.batch_size is not None and \
                self.predownload < self.batch_size:
            warnings.warn(f"predownload < batch_size ({self.predownload} < {self.batch_size})."
                          "This may result in slower batch time. Recommendation is to set "
                          "predownload to at-least batch_size.", stacklevel=3)
        elif self.predownload is None:
            logger.info("Because `predownload` was not specified, it will default to "
                        "8*batch_size if batch_size is not None, otherwise 64.")
            self.predownload = 8 * self.batch_size if self.batch_size is not None else 64

    def _load_shards(self) -> None:
        """Read each stream's index; lay out shards and samples of all streams end to end."""
        self.num_samples = 0
        self.shards: list = []
        stream_per_shard: list[int] = []
        self.shard_offset_per_stream = np.zeros(self.num_streams, np.int64)
        self.shards_per_stream = np.zeros(self.num_streams, np.int64)
        self.sample_offset_per_stream = np.zeros(self.num_streams, np.int64)
        self.samples_per_stream = np.zeros(self.num_streams, np.int64)
        for stream_id, stream in enumerate(self.streams):
            stream_shards = stream.get_shards(self._unique_rank_world, self.allow_unsafe_types)
            num_stream_samples = sum(map(len, stream_shards))
            if not num_stream_samples:
                index = os.path.join(stream.local, stream.split, get_index_basename())
                raise RuntimeError(f"Stream contains no samples: {index}.")
            stream_per_shard += [stream_id] * len(stream_shards)
            self.shard_offset_per_stream[stream_id] = len(self.shards)
            self.shards_per_stream[stream_id] = len(stream_shards)
            self.sample_offset_per_stream[stream_id] = self.num_samples
            self.samples_per_stream[stream_id] = num_stream_samples
            self.shards += stream_shards
            self.num_samples += num_stream_samples
        self.stream_per_shard = np.array(stream_per_shard, np.int64)
        self.num_shards = len(self.shards)

    def _check_cache_limit(self) -> None:
        if not self.cache_limit:
            return
        if isinstance(self.cache_limit, str):
            self.cache_limit = bytes_to_int(self.cache_limit)
        min_cache_usage = sum(stream.get_index_size() for stream in self.streams)
        if self.cache_limit <= min_cache_usage:
            raise ValueError(f"Minimum cache usage ({min_cache_usage} bytes) is larger than the "
                             f"cache limit ({self.cache_limit} bytes). Please raise "
                             "`cache_limit`. Recommendation is to provide a `cache_limit` as "
                             "high as possible to avoid thrashing.")
        self.max_shard_size_across_all_streams = max(s.get_max_size() for s in self.shards)
        if self.cache_limit < 4 * self.max_shard_size_across_all_streams:
            raise ValueError(f"Cache limit ({self.cache_limit} bytes) is too low. Increase the "
                             "`cache_limit` to at-least four times the largest shard size "
                             f"({self.max_shard_size_across_all_streams} bytes) which includes "
                             "raw (decompressed) and zip (compressed) file size. Recommendation "
                             "is to provide a `cache_limit` as high as possible to avoid "
                             "thrashing.")

    def _cache_entries(self) -> list[CacheEntry]:
        entries = []
        for shard, stream_id in zip(self.shards, self.stream_per_shard):
            stream = self.streams[stream_id]
            dirname = os.path.abspath(os.path.join(stream.local, stream.split))
            raws = tuple(os.path.join(dirname, raw.basename) for raw, _ in shard.file_pairs)
            zips = tuple(os.path.join(dirname, z.basename) for _, z in shard.file_pairs if z)
            if len(zips) != len(raws):
                zips = ()
            entries.append(CacheEntry(
                key=raws[0], raw_files=raws, zip_files=zips, raw_size=shard.get_raw_size(),
                zip_size=(shard.get_zip_size() or 0) if zips else 0,
                keep_zip=bool(stream.safe_keep_zip), evictable=stream.is_remote,
                dirname=dirname))
        return entries

    # -- per-process state (never pickled) ------------------------------------------------------

    def _init_process_state(self) -> None:
        self._pid = os.getpid()
        self._ready: set[int] = set()  # shards this process knows are resident
        self._open: OrderedDict[int, None] = OrderedDict()  # readers with an open memory map
        self._pool: ThreadPoolExecutor | None = None

    def _check_pid(self) -> None:
        if self._pid != os.getpid():  # forked into a DataLoader worker
            self._init_process_state()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in ("_pid", "_ready", "_open", "_pool"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_process_state()

    def __del__(self) -> None:
        run = self.__dict__.get("_run")
        if run is not None:
            run.close()
        pool = self.__dict__.get("_pool")
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # -- sizes and shared counters --------------------------------------------------------------

    @property
    def size(self) -> int:
        """Get the size of the dataset in samples.

        Returns:
            int: Number of samples.
        """
        return self.num_samples

    @property
    def next_epoch(self) -> int:
        """Get the next epoch (shared by this rank and its DataLoader workers).

        Returns:
            int: Next epoch.
        """
        return self._run.next_epoch

    @next_epoch.setter
    def next_epoch(self, next_epoch: int) -> None:
        self._run.next_epoch = next_epoch

    @property
    def cache_usage(self) -> int:
        """Get the cache usage in bytes, over every process sharing the cache.

        Returns:
            int: Cache usage in bytes.
        """
        return self._cache.usage

    def __len__(self) -> int:
        """Get the length as a PyTorch IterableDataset.

        Returns:
            int: Dataset length.
        """
        return self.length

    def _repr_html_(self) -> str:
        """Render a summary table for Jupyter (streams, shards, samples, columns)."""
        from streaming.explore.html import render_dataset

        return render_dataset(self)

    # -- epochs and checkpoints -----------------------------------------------------------------

    def _resume(self, world: World, epoch: int,
                obj: dict[str, Any] | None = None) -> tuple[int, int]:
        """Either resume from checkpoint ``obj`` or start epoch ``epoch`` at the beginning.

        Args:
            world (World): World state.
            epoch (int): What epoch we think it is (pre-checkpoint).
            obj (Dict[str, Any], optional): The loaded checkpoint, if any.

        Returns:
            Tuple[int, int]: What epoch this is, and sample offset in that epoch.
        """
        sample_in_epoch = 0
        if obj is None or obj["epoch"] < epoch:
            if not self.num_canonical_nodes:
                if self.shuffle_algo not in ("py1s", "py2s") and not world.worker_of_rank:
                    # (the reference's messages and levels: a stale checkpoint warns)
                    log = logger.info if obj is None else logger.warning
                    log(f"Because `num_canonical_nodes` was not specified, and `shuffle_algo` "
                        f"is {self.shuffle_algo}, it will default to be equal to physical nodes.")
                self.num_canonical_nodes = default_num_canonical_nodes(self.shuffle_algo,
                                                                       world.num_nodes)
        else:
            self.num_canonical_nodes = obj["num_canonical_nodes"]
            self.shuffle_seed = obj["shuffle_seed"]
            self.initial_physical_nodes = obj.get("initial_physical_nodes", None)
            epoch, sample_in_epoch = obj["epoch"], obj["sample_in_epoch"]
        if self.shuffle_block_size is None:
            if not world.worker_of_rank:
                logger.info("Because `shuffle_block_size` was not specified, it will default to "
                            "max(4_000_000 // num_canonical_nodes, 1 << 18) if "
                            "num_canonical_nodes is not None, otherwise 262144.")
            self.shuffle_block_size = default_shuffle_block_size(self.num_canonical_nodes)
        return epoch, sample_in_epoch

    def state_dict(self, num_samples: int, from_beginning: bool) -> dict[str, Any]:
        """Get a dict containing training state (called from non-worker process).

        Our stock StreamingDataLoader counts samples from start of training (from_beginning=false).
        However, if you are always counting from the start of the epoch, set from_beginning=true.

        Args:
            num_samples (int): The number of samples processed so far in the current epoch.
            from_beginning (int): Whether we are counting samples from the start of this epoch, or
                the start of just this potentially resumed training run this epoch.

        Returns:
            Dict[str, Any]: The state.
        """
        world = self._parallel_rank_world
        epoch, offset = self._resume(world, self.next_epoch - 1, self._run.resume)
        sample_in_epoch = num_samples if from_beginning else offset + num_samples
        initial_physical_nodes = world.num_nodes if self.initial_physical_nodes is None \
            else self.initial_physical_nodes
        return {
            "epoch": epoch,
            "sample_in_epoch": sample_in_epoch,
            "num_canonical_nodes": self.num_canonical_nodes,
            "shuffle_seed": self.shuffle_seed,
            "initial_physical_nodes": initial_physical_nodes,
        }

    def load_state_dict(self, obj: dict[str, Any]) -> None:
        """Load a dict containing training state (called from non-worker process).

        The state is saved in the run's state file, where this rank's workers (persistent or
        not) pick it up when ``__iter__`` is next called.

        Args:
            obj (Dict[str, Any]): The state.

        Raises:
            ValueError: The state is larger than the reference allows (a page).
        """
        data = json.dumps(obj, sort_keys=True)
        if len(data) > mmap.PAGESIZE:
            raise ValueError(f"The StreamingDataset state dict for resumption is currently "
                             f"allocated {mmap.PAGESIZE} bytes, insufficient to store the state "
                             f"dict that was attempted to load in, which uses {len(data)} bytes. "
                             f"The state dict may also be corrupted. The state dict is: {data}.")
        self._run.resume = json.loads(data)

    def _plan_spec(self) -> PlanSpec:
        return PlanSpec(
            samples_per_shard=self.samples_per_shard,
            shards_per_stream=self.shards_per_stream,
            choose_per_stream=np.array([s.choose for s in self.streams], np.int64),
            proportion_per_stream=np.array([s.proportion for s in self.streams], np.float64),
            num_canonical_nodes=self.num_canonical_nodes,
            batch_size=self.batch_size,
            shuffle=self.shuffle,
            shuffle_algo=self.shuffle_algo,
            shuffle_seed=self.shuffle_seed,
            shuffle_block_size=self.shuffle_block_size,
            partition_algo=self.partition_algo,
            sampling_method=self.sampling_method,
            sampling_granularity=self.sampling_granularity,
            batching_method=self.batching_method,
            initial_physical_nodes=self.initial_physical_nodes,
            replication=self.replication)

    def resample_streams(
            self,
            epoch: int,
            stream_id: int | None = None) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Perform the up/down-sampling needed to generate the weighted epoch.

        Args:
            epoch (int): What epoch this is for. Used in seeding the sampling RNG.
            stream_id (Optional[int]): Which stream to resample. If ``None``, resample all streams.
                Defaults to ``None``.

        Returns:
            Tuple[NDArray[np.int64], NDArray[np.int64]]: Sampled shard sizes and sample mapping.
        """
        return plan_resample_streams(
            self.samples_per_shard, self.shards_per_stream,
            np.array([s.choose for s in self.streams], np.int64), self.shuffle_seed, epoch,
            self.sampling_method, self.sampling_granularity, self.shuffle, stream_id)

    def _get_work(self, world: World, epoch: int, sample_in_epoch: int) -> NDArray[np.int64]:
        """Get this worker's sample ids for the epoch (``-1`` for padding).

        Args:
            world (World): This worker's parallel world.
            epoch (int): Which epoch it is.
            sample_in_epoch (int): Where we are in the epoch.

        Returns:
            NDArray[np.int64]: Our partition of the epoch.
        """
        if not isinstance(self.batch_size, int):
            raise ValueError("Please pass `batch_size` to StreamingDataset. It should be set the "
                             "same as the DataLoader, and is the number of samples per batch, "
                             "for each device. It is necessary for deterministic resumption and "
                             "optimal performance.")
        shape = self._plan_shape(world)
        spec = self._plan_spec()
        if spec.batching_method == "random" and not shares_plan(spec, shape):
            # Each worker maps only its own ids through the shuffle: cheaper than reading every
            # worker's plan, so nothing is shared (see docs/compatibility.md, "Epoch plan").
            return worker_plan(spec, *shape, epoch, sample_in_epoch, world.node,
                               world.rank_of_node, world.worker_of_rank)
        # The other batching methods need the whole epoch's plan, and so many processes
        # planning their own ids over big canonical nodes would cost more than planning it
        # once: compute it once per node.
        work = load_or_compute_plan(self._runtime_dir, spec, shape, epoch, sample_in_epoch)
        return np.asarray(work[world.node, world.rank_of_node, world.worker_of_rank]).reshape(-1)

    def _plan_shape(self, world: World) -> tuple[int, int, int]:
        """The world the plan is for: physical nodes, ranks per node, this rank's workers."""
        physical = self._unique_rank_world
        return physical.num_nodes, physical.ranks_per_node, world.workers_per_rank

    def _work_parts(self, world: World, epoch: int,
                    sample_in_epoch: int) -> Iterator[NDArray[np.int64]]:
        """This worker's sample ids for the epoch (``_get_work``'s), in consecutive parts: with
        large ``py1e`` canonical nodes, its first samples' ids first, the rest once planned on a
        thread (see ``worker_plan_head``); any other plan is one part.
        """
        head = None
        if isinstance(self.batch_size, int):
            spec = self._plan_spec()
            shape = self._plan_shape(world)
            # The rest from the node's plan file when it is shared, else planned by the thread.
            planner = partial(self._get_work, world, epoch, sample_in_epoch) \
                if shares_plan(spec, shape) else None
            head = worker_plan_head(spec, *shape, epoch, sample_in_epoch, world.node,
                                    world.rank_of_node, world.worker_of_rank, planner)
        if head is None:
            yield self._get_work(world, epoch, sample_in_epoch)
            return
        first, rest = head
        yield first
        yield rest()

    # -- the shard cache --------------------------------------------------------------------------

    def prepare_shard(self, shard_id: int, blocking: bool = True) -> None:
        """Download a shard, either waiting or skipping if in progress by another worker.

        This method is multithread/multiprocess-safe. If cache limit is enabled, this method may
        delete one or more other shards to make space for this download.

        Args:
            shard_id (int): Shard to download.
            blocking (bool): Whether to wait or skip if the shard is currently being downloaded by
                someone else.
        """
        self._check_pid()
        stream = self.streams[self.stream_per_shard[shard_id]]
        shard = self.shards[shard_id]
        if self._cache.prepare(shard_id, lambda: stream.prepare_shard(shard), blocking):
            self._ready.add(shard_id)

    def evict_shard(self, shard_id: int) -> None:
        """Evict the given shard.

        This method is multithread/multiprocess-safe.

        Args:
            shard_id (int): Shard to evict.

        Raises:
            IndexError: ``shard_id`` is not a shard's index (the reference's message).
        """
        self._check_pid()
        self.stream_per_shard[shard_id]  # out of range: NumPy's IndexError, as prepare_shard's
        self._cache.evict(shard_id)
        self._forget(shard_id)

    def evict_coldest_shard(self) -> None:
        """Evict the coldest (i.e., least recently accessed) shard.

        This method is multithread/multiprocess-safe.
        """
        self._check_pid()
        key = self._cache.evict_coldest()
        for shard_id, entry in enumerate(self._cache.entries):
            if entry.key == key:
                self._forget(shard_id)

    def on_exception(self, future: Future) -> None:
        """Raise the exception a background task ended with, if any (the reference's callback).

        Prefetching here does not need it (a shard whose background preparation failed is
        prepared again by the iterating thread, which raises); it is kept for code that hands
        its own futures to it.

        Args:
            future (Future): The finished task.

        Raises:
            Exception: The task's exception.
        """
        exception = future.exception()
        if exception:
            raise exception

    def _forget(self, shard_id: int) -> None:
        self._ready.discard(shard_id)
        self._open.pop(shard_id, None)
        self.shards[shard_id].close()

    def _opened(self, shard_id: int) -> None:
        """Note that a reader is (about to be) mapped; unmap the least recently used beyond a few
        so that evicted shards free their disk space."""
        if shard_id in self._open:
            self._open.move_to_end(shard_id)
            return
        self._open[shard_id] = None
        while len(self._open) > MAX_OPEN_SHARDS:
            old, _ = self._open.popitem(last=False)
            self.shards[old].close()

    # -- random access ----------------------------------------------------------------------------

    def get_item(self, sample_id: int, retry: int = 7) -> Any:
        """Get sample by global index, blocking to download its shard if not present.

        Args:
            sample_id (int): Sample index.
            retry (int): Maximum number of times to download its shard before giving up. In the
                edge case of a shard being evicted before sample access, you will have to
                re-download it. Defaults to ``7``.

        Returns:
            Dict[str, Any]: Mapping of column name to column data.

        Raises:
            RuntimeError: The shard could not be made resident.
        """
        self._check_pid()
        shard_id, row = self.spanner[sample_id]
        shard = self.shards[shard_id]
        try:
            return self._read_resident(shard_id, max(1, 1 + retry), shard.get_item, row)
        except FileNotFoundError as e:
            error = e
        if self.cache_limit:
            raise RuntimeError(f"{error}. StreamingDataset repeatedly failed to download a shard. "
                               "This may be due to thrashing caused by `cache_limit` being set "
                               "too low.")
        raise RuntimeError(f"{error}. Check if the shard file exists in your remote location or "
                           "have you deleted the shard file from the local directory?")

    # -- iteration --------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Iterate over all the samples in our partition.

        Returns:
            Iterator[Dict[str, Any]]: Each sample.
        """
        return self._iterate(False)

    def _iter_blocks(self) -> Iterator[Any]:
        """Iterate as :meth:`__iter__` does, a block of samples at a time: each an iterator of
        samples, consumed before the next is asked for; MDS blocks are
        :class:`~streaming._kernels._mds.Rows`, which can also decode their rows a column at a
        time (:meth:`~streaming._kernels._mds.Rows.decode_columns`).

        Returns:
            Iterator[Iterator[Dict[str, Any]]]: The blocks.
        """
        return self._iterate(True)

    def _iterate(self, blocks: bool) -> Iterator[Any]:
        """:meth:`__iter__`'s samples, or (``blocks``) :meth:`_iter_blocks`'s blocks."""
        self._check_pid()
        unique = self._unique_rank_world.detect_workers()
        parallel = self._parallel_rank_world.detect_workers()
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        key = None if info is None else [info.num_workers, int(info.seed) - info.id]
        presumed, resume = self._run.start_epoch(key, unique.worker_of_rank)
        epoch, sample_in_epoch = self._resume(parallel, presumed, resume)
        overridden = type(self).get_item is not StreamingDataset.get_item or \
            type(self).__getitem__ is not StreamingDataset.__getitem__
        for sample_ids in self._work_parts(parallel, epoch, sample_in_epoch):
            if len(sample_ids) and sample_ids.min() < 0:
                # Padding out; most plans have none, and the copy of an epoch-sized plan costs
                # more than the look (~25 ms and 90 MB at 1e7 samples).
                sample_ids = sample_ids[sample_ids >= 0]
            if not len(sample_ids):
                continue
            # A subclass deciding what a sample is gets one block: its samples one at a time.
            parts = (self._iter_overridden(sample_ids),) if overridden else \
                self._iter_blocks_of(sample_ids)
            for block in parts:
                if blocks:
                    yield block
                else:  # (straight from the block's iterator: one generator between)
                    yield from block

    @contextmanager
    def _prefetching(self, sample_ids: NDArray[np.int64]) -> Iterator[Callable[[int], None]]:
        """Prefetch along a plan: ``with self._prefetching(ids) as ahead:``, where
        ``ahead(position)`` starts preparing the shards after ``position`` in the background.

        On leaving the block, what has not started is cancelled. If the block ended normally
        (the plan read to its end), what is running is also waited for, so none of it still
        touches the cache (shard files, the ledger) after the epoch, when the caller may remove
        the local directory; a loop left early (``break``, an error) does not wait for a
        download in progress.

        Every shard the next ``predownload`` samples need is submitted, as the reference does;
        beyond that, up to :data:`PREFETCH_AHEAD_SHARDS` further shards along the plan are kept
        queued, as long as their bytes fit this process's share of the prefetch budget. The
        reference's sample-count window alone leaves one big shard in flight at a time (256
        samples of 8 KB is 2 MB ahead, a shard is 64 MB), which made a cold remote epoch a
        series of single downloads; several in flight hide each request's latency and use the
        endpoint's parallelism.
        """
        shard_ids, starts = self._first_visits(sample_ids)
        pool = self._pool
        if pool is None:
            pool = self._pool = ThreadPoolExecutor(PREFETCH_THREADS,
                                                   thread_name_prefix="streaming-prefetch")
        submitted: dict[int, Future[None]] = {}  # shard id -> its prefetch
        queued: deque[tuple[int, int]] = deque()  # (run index, bytes) of shards submitted ahead
        queued_bytes = 0
        next_run = 0
        current_run = 0
        window = max(1, int(self.predownload or 1))
        budget = self._prefetch_budget()
        entries = self._cache.entries

        def prepare(shard_id: int) -> None:
            try:
                self.prepare_shard(shard_id, blocking=False)
            except Exception as e:  # the iterating thread prepares again and raises it
                logger.debug(f"Prefetching shard {shard_id} failed: {e}")

        def ahead(position: int) -> None:
            nonlocal next_run, current_run, queued_bytes
            while current_run + 1 < len(starts) and starts[current_run + 1] <= position:
                current_run += 1
            while queued and queued[0][0] <= current_run:
                queued_bytes -= queued.popleft()[1]
            while next_run < len(starts):
                in_window = starts[next_run] < position + window
                shard_id = int(shard_ids[next_run])
                new = shard_id not in self._ready and shard_id not in submitted
                size = entries[shard_id].max_size if new else 0
                if not in_window and new and (
                        len(queued) >= PREFETCH_AHEAD_SHARDS or queued_bytes + size > budget
                        # Until the shard being read is resident, it gets the bandwidth alone:
                        # that is the time to first sample (and after a seek).
                        or int(shard_ids[current_run]) not in self._ready):
                    break
                next_run += 1
                if new:
                    if next_run - 1 > current_run:
                        queued.append((next_run - 1, size))
                        queued_bytes += size
                    submitted[shard_id] = pool.submit(prepare, shard_id)

        try:
            yield ahead
        finally:  # the plan has been read (or the loop left): what is left in flight is redundant
            for future in submitted.values():
                future.cancel()
        wait(submitted.values())  # reached only when the block ended normally

    def _prefetch_budget(self) -> int:
        """Bytes of not-yet-reached shards this process may prefetch beyond ``predownload``.

        A share of :data:`PREFETCH_AHEAD_BYTES` (or, with a ``cache_limit``, of a quarter of it,
        so prefetched shards rarely evict each other before use) per process on the node.
        """
        world = self._unique_rank_world.detect_workers()
        processes = max(1, world.ranks_per_node * world.workers_per_rank)
        total = PREFETCH_AHEAD_BYTES
        if self.cache_limit:
            total = min(total, max(0, int(self.cache_limit) - self._cache.base_usage) // 4)
        return total // processes

    def _first_visits(self,
                      sample_ids: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each shard the plan visits, in order of first visit, and that first position.

        The prefetcher submits a shard once, at its first visit, so this is all it needs (a
        shuffled plan switches shard at nearly every sample: walking those runs one by one in
        Python cost seconds before the first sample at 1e7 samples). One compiled pass; the
        plan itself is located a chunk at a time as iteration reaches it.
        """
        return self.spanner.first_visits(sample_ids)

    def _iter_blocks_of(self, sample_ids: NDArray[np.int64]) -> Iterator[Iterator[Any]]:
        """The fast path: locate the plan a block at a time, each block an iterator that
        decodes a sample when asked for (to be consumed before the next block is asked for).

        Per block (not per sample): one prefetch check, one readiness check and ledger touch
        per shard in it. Rows are decoded lazily, in plan order, by one compiled iterator over
        the block's shards (MDS), so each sample's memory can be reused by the next one.
        """
        with self._prefetching(sample_ids) as ahead:
            yield from self._located_blocks(sample_ids, ahead)

    def _located_blocks(self, sample_ids: NDArray[np.int64],
                        ahead: Callable[[int], None]) -> Iterator[Iterator[Any]]:
        """:meth:`_iter_blocks_of`'s blocks, calling ``ahead`` as iteration reaches each."""
        slot_of = np.zeros(self.num_shards, np.int64)
        total = len(sample_ids)
        for base in range(0, total, LOCATE_CHUNK):
            chunk = sample_ids[base:base + LOCATE_CHUNK]
            self._check_ids(chunk)
            chunk_shards, chunk_rows = self.spanner.locate(chunk)
            size = len(chunk_shards)
            lo = 0
            while lo < size:
                hi = min(lo + DECODE_BLOCK, size)
                ahead(base + lo)
                shards = chunk_shards[lo:hi]
                first = int(shards[0])
                one = first == int(shards[-1]) and bool((shards == first).all())
                if one and first in self._ready and hi < size:
                    hi = self._block_end(chunk_shards, lo, hi, first)
                    shards = chunk_shards[lo:hi]
                    ahead(base + hi - 1)  # (prefetch as if read up to the block's end)
                rows = chunk_rows[lo:hi]
                start, lo = lo, hi
                if one:
                    shard = self.shards[first]
                    items = None
                    if base == start == 0 and first not in self._ready:
                        # Time to first sample: these rows from the shard's download still in
                        # progress, where possible (see Stream.read_rows_early).
                        stream = self.streams[self.stream_per_shard[first]]
                        items = stream.read_rows_early(shard, rows)
                    yield iter(items) if items is not None else \
                        self._decode_block(shards, rows, [first], None)
                    # If read in order, unmap the pages behind, or the whole shard would stay
                    # mapped (and count as resident memory) until closed.
                    shard.release_rows(rows)
                    continue
                # First-seen order (and no np.unique, which imports numpy.ma: ~0.1 s of TTFS).
                order = list(dict.fromkeys(shards.tolist()))
                yield self._decode_block(shards, rows, order, slot_of)

    def _block_end(self, shards: NDArray[np.int64], lo: int, hi: int, shard_id: int) -> int:
        """Where a block of positions ``lo .. hi`` reading only resident shard ``shard_id``
        may end instead: further along while the plan stays in that shard, up to
        :data:`MOST_BLOCK` positions and about :data:`BLOCK_BYTES` of its rows."""
        shard = self.shards[shard_id]
        row_bytes = max(1, int(shard.get_raw_size()) // max(1, int(shard.samples)))
        most = min(MOST_BLOCK, max(hi - lo, BLOCK_BYTES // row_bytes))
        if most <= hi - lo:
            return hi
        stop = min(lo + most, len(shards))
        other = np.flatnonzero(shards[hi:stop] != shard_id)
        return hi + int(other[0]) if len(other) else stop

    def _decode_block(self, shards: NDArray[np.int64], rows: NDArray[np.int64],
                      order: list[int], slot_of: NDArray[np.int64] | None) -> Iterator[Any]:
        """The samples of one block, in plan order (``order``: its shards, first seen first).

        MDS shards are decoded lazily by one compiled iterator over the block's shards, so each
        sample's memory can be reused by the next one; other formats one call per shard.
        ``slot_of`` is scratch of one entry per shard (not needed when the block has one shard).
        """
        if not all(hasattr(self.shards[i], "decode_source") for i in order):
            return iter(self._decode_grouped(shards, rows, order))
        sources = tuple(self._read_resident(i, 8, self.shards[i].decode_source) for i in order)
        if len(order) == 1:
            return _mds.Rows(sources, None, rows)
        slot_of[order] = np.arange(len(order))
        return _mds.Rows(sources, slot_of[shards], rows)

    def _check_ids(self, ids: NDArray[np.int64]) -> None:
        """Refuse plan ids outside the dataset (``locate`` does not check them; a bad id would
        surface as an out-of-range row of some shard)."""
        if len(ids) and not 0 <= int(ids.min()) <= int(ids.max()) < self.num_samples:
            bad = ids[(ids < 0) | (ids >= self.num_samples)]
            raise RuntimeError(f"The epoch plan holds sample id {int(bad[0])}, outside the "
                               f"dataset's {self.num_samples} samples (epoch "
                               f"{self.next_epoch - 1}, {self._parallel_rank_world}). This is "
                               "a bug: please report it with the dataset's arguments.")

    def _decode_grouped(self, shards: NDArray[np.int64], rows: NDArray[np.int64],
                        order: list[int]) -> list[Any]:
        """Decode a block of shards of any format, one call per shard."""
        if len(order) == 1:
            return self._read_resident(order[0], 8, self.shards[order[0]].get_items, rows)
        out: list[Any] = [None] * len(shards)
        for shard_id in order:
            where = np.flatnonzero(shards == shard_id)
            items = self._read_resident(shard_id, 8, self.shards[shard_id].get_items, rows[where])
            for pos, item in zip(where.tolist(), items):
                out[pos] = item
        return out

    def _read_resident(self, shard_id: int, attempts: int, read: Callable[..., Any],
                       *args: Any) -> Any:
        """Return ``read(*args)`` of a shard made resident first (again, if evicted meanwhile).

        Raises:
            FileNotFoundError: The shard was still missing at the last attempt.
        """
        if shard_id in self._open and shard_id in self._ready:
            # Resident and mapped, the usual case, per sample for a subclass's ``__getitem__``:
            # nothing to prepare or map, so no loop of attempts (~0.5 us of a ~2.6 us
            # ``get_item``). A map outlives its file's eviction; a miss here is a reader closed
            # meanwhile, which the loop handles.
            self._cache.touch(shard_id)
            self._open.move_to_end(shard_id)
            try:
                return read(*args)
            except FileNotFoundError:
                pass
        for attempt in range(1, attempts + 1):
            try:
                if shard_id not in self._ready:
                    self.prepare_shard(shard_id)  # touches the shard's ledger row itself
                else:
                    self._cache.touch(shard_id)
                self._opened(shard_id)
                return read(*args)
            except FileNotFoundError:
                if attempt == attempts:
                    raise
                self._ready.discard(shard_id)
                self.shards[shard_id].close()
        raise AssertionError("unreachable")

    def _iter_overridden(self, sample_ids: NDArray[np.int64]) -> Iterator[Any]:
        with self._prefetching(sample_ids) as ahead:
            for position, sample_id in enumerate(sample_ids.tolist()):
                ahead(position)
                yield self[sample_id]
