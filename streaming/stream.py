"""A dataset, or sub-dataset if mixing, from which we stream/cache samples."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.constant import DEFAULT_TIMEOUT
from streaming.format import get_index_basename, reader_from_json
from streaming.locks import FileLock
from streaming.registry import create_registry
from streaming.world import World

__all__ = ["DEFAULT_TIMEOUT", "Stream", "streams_registry"]

logger = logging.getLogger(__name__)

# Bytes at most that :meth:`Stream.read_rows_early` reads from the head of a shard.
EARLY_READ_MAX = 8 << 20
# Seconds :meth:`Stream.read_rows_early` waits for the shard's download to begin in this process
# (its prefetch was just submitted; if another process holds the shard, the wait overlaps that
# process's download, which the normal path waits for anyway).
EARLY_START_WAIT = 0.2


class Stream:
    """A dataset, or sub-dataset if mixing, from which we stream/cache samples.

    We initialize a StreamingDataset with one or more Streams. Streams may be resampled to achieve
    different mixtures of samples.

    * At least one of ``remote`` and ``local`` must exist. If no ``remote``, the data must be
      local. If no ``local``, we cache to a temp directory.
    * At most one of ``proportion``, ``repeat``, or ``choose`` may exist. If provided one of these,
      we derive the rest. ``proportion`` (relative) and ``repeat``/``choose`` (absolute) are
      mutually incompatible across the streams of one dataset.
    * The remaining arguments default to ``None``, meaning the StreamingDataset's value.

    Args:
        remote (str, optional): Remote path or directory to download the dataset from. If ``None``,
            its data must exist locally. Defaults to ``None``.
        local (str, optional): Local working directory to download shards to. This is where shards
            are cached while they are being used. Uses a temp directory if not set. Defaults to
            ``None``.
        split (str, optional): Which dataset split to use, if any. If provided, we stream from/to
            the ``split`` subdirs of  ``remote`` and ``local``. Defaults to ``None``.
        proportion (float, optional): How much to upsample or downsample this sub-dataset, as the
            proportion of the total combined dataset that consists of this sub-dataset. Must be
            non-negative. Defaults to ``None``.
        repeat (float, optional): How much to upsample or downsample this sub-dataset, as a
            multipler on the number of samples. Must be non-negative. Defaults to ``None``.
        choose (int, optional): How much to upsample or downsample this sub-dataset, as the exact
            number of resulting samples. Must be non-negative. Defaults to ``None``.
        download_retry (int, optional): Number of download re-attempts before giving up. Defaults
            to ``None``.
        download_timeout (float, optional): Number of seconds to wait for a shard to download
            before raising an exception. Defaults to ``None``.
        validate_hash (str, optional): Optional hash or checksum algorithm to use to validate
            shards. Defaults to ``None``.
        keep_zip (bool, optional): Whether to keep or delete the compressed form when decompressing
            downloaded shards. If ``False``, keep if and only if remote is local or no remote.
            Defaults to ``None``.

    Raises:
        ValueError: More than one weight, or a negative weight/retry, or a non-positive timeout.
    """

    def __init__(self,
                 *,
                 remote: str | None = None,
                 local: str | None = None,
                 split: str | None = None,
                 proportion: float | None = None,
                 repeat: float | None = None,
                 choose: int | None = None,
                 download_retry: int | None = None,
                 download_timeout: float | None = None,
                 validate_hash: str | None = None,
                 keep_zip: bool | None = None) -> None:
        self.remote = remote
        self._local = local
        self.split = split or ""

        if (proportion is not None) + (repeat is not None) + (choose is not None) > 1:
            raise ValueError("At most one of `proportion`, `repeat`, and `choose` may be "
                             "specified; the others are derived")
        # As in the reference, a given weight is an attribute; a missing one is absent until
        # StreamingDataset derives it (``hasattr`` tells which weights were given).
        self._proportion = proportion
        self._repeat = repeat
        self._choose = choose
        for name, value in (("proportion", proportion), ("repeat", repeat), ("choose", choose)):
            if value is not None:
                if value < 0:
                    raise ValueError(f"`{name}` must be non-negative")
                setattr(self, name, value)

        self._download_retry = download_retry
        if download_retry is not None:
            if download_retry < 0:
                raise ValueError("`download_retry` must be non-negative")
            self.download_retry = download_retry

        self._download_timeout = download_timeout
        if download_timeout is not None:
            if download_timeout <= 0:
                raise ValueError("`download_timeout` must be positive")
            self.download_timeout = download_timeout

        # The S3 client's imports take ~0.03-0.2 s; start them now, beside the rest of setup.
        from streaming.storage.s3client import prewarm
        prewarm(remote, download_timeout or DEFAULT_TIMEOUT)

        self.validate_hash = validate_hash

        if local is None:
            # The reference refuses to reuse this directory on a second run; reusing it is what a
            # cache is for (see docs/compatibility.md).
            self.local = self._get_temporary_directory()
            os.makedirs(self.local, exist_ok=True)
        else:
            self.local = local

        self._keep_zip = keep_zip
        if keep_zip is not None:
            self.keep_zip = keep_zip
            self.safe_keep_zip = self.keep_zip or self.remote in {None, self.local}

    def _get_temporary_directory(self) -> str:
        """Construct a path to a temporary directory based on remote and split."""
        digest = ""
        if self.remote is not None:
            digest = hashlib.blake2s(self.remote.encode("utf-8"), digest_size=16).hexdigest()
        return os.path.join(tempfile.gettempdir(), digest, self.split)

    def apply_default(self, default: dict) -> None:
        """Apply defaults, setting any unset fields.

        Args:
            default (dict): StreamingDataset's values for ``split``, ``download_retry``,
                ``download_timeout``, ``validate_hash`` and ``keep_zip``.

        Raises:
            ValueError: Neither ``remote`` nor ``local`` was given.
        """
        if not (self.remote or self._local):
            raise ValueError("`remote` and/or `local` path must be provided")
        if not self.split:
            self.split = default["split"] or ""
        if self._download_retry is None:
            self.download_retry = default["download_retry"]
        if self._download_timeout is None:
            self.download_timeout = default["download_timeout"]
        if self.validate_hash is None:
            self.validate_hash = default["validate_hash"] or None
        if self._keep_zip is None:
            self.keep_zip = default["keep_zip"]
            self.safe_keep_zip = default["keep_zip"] or self.remote in {None, self.local}

    @classmethod
    def validate_weights(cls, streams: Sequence[Stream]) -> tuple[bool, bool]:
        """Validate stream weights, returning whether relative or absolute weighting was used.

        Args:
            streams (Sequence[Stream]): Every stream comprising the dataset.

        Returns:
            Tuple[bool, bool]: Whether streams are weighted relatively (proportionally), and
                whether no stream gave any weight.

        Raises:
            ValueError: A stream gives several weights, or relative and absolute weights mix.
        """
        is_proportional = hasattr(streams[0], "proportion")
        is_unspecified = True
        for stream_id, stream in enumerate(streams):
            has = [hasattr(stream, name) for name in ("proportion", "repeat", "choose")]
            if sum(has) > 1:
                raise ValueError(f"Streams must provide at most one of `proportion`, `repeat`, "
                                 f"or `choose` (error in stream {stream_id})")
            if is_proportional != has[0]:
                raise ValueError(f"Relative (`proportion`) and absolute (`repeat`, `choose`, "
                                 f"none) stream weights are incompatible with each other (error "
                                 f"in stream {stream_id})")
            if any(has):
                is_unspecified = False
        return is_proportional, is_unspecified

    @classmethod
    def apply_weights(cls, streams: Sequence[Stream], samples_per_stream: NDArray[np.int64],
                      choose_per_epoch: int | None, seed: int) -> int:
        """Given samples per stream, derive each stream's proportion/repeat/samples.

        Modifies streams to save the derived weights.

        Args:
            streams (Sequence[Stream]): The list of streams which comprise the dataset.
            samples_per_stream (NDArray[np.int64]): Underlying samples of each stream.
            choose_per_epoch (int, optional): Absolute epoch size if weighting relatively.
            seed (int): Random number generator seed used to sample evenly.

        Returns:
            int: Number of samples to draw per epoch.
        """
        from streaming.plan.sampling import resolve_stream_weights

        cls.validate_weights(streams)
        weights = resolve_stream_weights(
            [getattr(s, "proportion", None) for s in streams],
            [getattr(s, "repeat", None) for s in streams],
            [getattr(s, "choose", None) for s in streams],
            samples_per_stream, choose_per_epoch, seed)
        for stream, proportion, repeat, choose in zip(streams, weights.proportion, weights.repeat,
                                                      weights.choose):
            stream.proportion = proportion
            stream.repeat = repeat
            stream.choose = choose
        return int(weights.epoch_size)

    # -- files -----------------------------------------------------------------------------------

    @property
    def is_remote(self) -> bool:
        """Whether shards have a remote copy (so the local copy may be evicted)."""
        if self.remote is None:
            return False
        if "://" not in self.remote or self.remote.startswith("file://"):
            path = self.remote[len("file://"):] if self.remote.startswith("file://") else \
                self.remote
            return os.path.abspath(os.path.join(path, self.split)) != \
                os.path.abspath(os.path.join(self.local, self.split))
        return True

    def _local_path(self, basename: str) -> str:
        """The path of a dataset file in the local cache directory.

        Args:
            basename (str): The file's name in the index.

        Returns:
            str: Its local path.

        Raises:
            ValueError: ``basename`` would reach outside the directory (the index is validated
                when loaded; this guards every path the stream writes or deletes).
        """
        from streaming.format.index import validate_basename

        dirname = os.path.join(self.local, self.split)
        return os.path.join(dirname, validate_basename(basename, dirname))

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        """Safely download a file from remote to local cache.

        Args:
            from_basename (str): Source basename.
            to_basename (str, optional): Destination basename, if different.

        Returns:
            str: Local cache filename.

        Raises:
            FileNotFoundError: There is no remote and the file is not local.
            ValueError: The basename would reach outside the local directory.
        """
        from streaming.storage.download import download

        local = self._local_path(to_basename or from_basename)
        if self.remote is None:
            if not os.path.isfile(local):
                raise FileNotFoundError(f"{local}: not found locally and no `remote` is set")
            return local
        remote = os.path.join(self.remote, self.split, from_basename)
        download(remote, local, timeout=self.download_timeout,
                 retry=max(1, int(self.download_retry)))
        return local

    def read_rows_early(self, shard: Any, rows: NDArray[np.int64]) -> list | None:
        """Decode ``rows`` of a shard that is not resident yet from its download in progress.

        For the first rows of an epoch, so that they need not wait for their whole shard (a
        64 MB shard is ~0.1 s even on loopback): the download this process just started
        publishes the head of the file as it is written (:mod:`streaming.storage.partial`), and
        the rows are decoded from it as soon as their bytes are there. Only for uncompressed MDS
        shards without ``validate_hash`` (a hash can be checked only once the whole file is
        there), and only for rows within the first :data:`EARLY_READ_MAX` bytes. Every row is
        bounds-checked by the same kernel as a resident shard's.

        Args:
            shard (Reader): The shard (an ``MDSReader``; other formats return ``None``).
            rows (NDArray[np.int64]): Row indices within the shard.

        Returns:
            List[Dict[str, Any]] | None: The samples, in order, or ``None`` if this shortcut
            does not apply (the caller then prepares the shard as usual, which reports any
            error properly).
        """
        from streaming.format.mds.reader import MDSReader

        if (type(shard) is not MDSReader or not self.is_remote or self.validate_hash
                or shard.zip_data is not None or not len(rows)):
            return None
        from streaming.storage.download import publishes_head
        from streaming.storage.partial import read_head

        remote = os.path.join(self.remote, self.split, shard.raw_data.basename)
        if not publishes_head(remote):
            return None
        samples = int(shard.samples)
        size = int(shard.raw_data.bytes)
        last = int(np.max(rows))
        if int(np.min(rows)) < 0 or last >= samples:
            return None
        header = 4 + 4 * (samples + 1)  # sample count, then samples + 1 offsets
        if header > min(size, EARLY_READ_MAX):
            return None
        local = os.path.join(self.local, self.split, shard.raw_data.basename)
        wait = {"start_within": EARLY_START_WAIT, "timeout": self.download_timeout}
        data = read_head(local, header, **wait)
        if data is None or int.from_bytes(data[:4], "little") != samples:
            return None  # not there, or not the shard the index describes: the normal path
        need = int.from_bytes(data[8 + 4 * last:12 + 4 * last], "little")  # end of row `last`
        if not header <= need <= min(size, EARLY_READ_MAX):
            return None
        data = read_head(local, need, **wait)
        if data is None:
            return None
        source = f"{local} (first {len(data)} bytes, still downloading)"
        try:
            return shard.items_from_buffer(data, rows, source)
        except ValueError as error:  # corrupt: the normal path reads the file and says so
            logger.debug("%s", error)
            return None

    def _check_hash(self, info: Any, filename: str, data: bytes | None = None) -> None:
        """Raise if ``validate_hash`` is set and the file does not match the index."""
        if not self.validate_hash:
            return
        from streaming.format.shard_files import verify_hash

        if data is None:
            with open(filename, "rb") as f:
                data = f.read()
        verify_hash(filename, data, self.validate_hash, info)

    def _decompress_shard_part(self, zip_info: Any, zip_filename: str, raw_filename: str,
                               compression: str | None, raw_info: Any = None) -> None:
        """Validate and decompress shard data (atomically: raw appears only when complete).

        Args:
            zip_info (FileInfo): Compressed file info.
            zip_filename (str): Compressed filename.
            raw_filename (str): Decompressed filename.
            compression (str, optional): Compression algorithm.
            raw_info (FileInfo, optional): Decompressed file info: the codec stops beyond its
                ``bytes`` and the output must be exactly that size.

        Raises:
            ValueError: Checksum failure, corrupt compressed data, or the output is not the size
                the index says (each naming the file).
        """
        from streaming.format.shard_files import decompress_shard

        decompress_shard(zip_filename, raw_filename, compression,
                         validate_hash=self.validate_hash, zip_info=zip_info, raw_info=raw_info,
                         keep_zip=self.safe_keep_zip)

    def _prepare_shard_part(self, raw_info: Any, zip_info: Any = None,
                            compression: str | None = None) -> int:
        """Get shard data given metadata for the raw and compressed versions of it.

        Args:
            raw_info (FileInfo): Raw file info.
            zip_info (FileInfo, optional): Zip file info. Defaults to ``None``.
            compression (str, optional): Compression algorithm used for zip_info.

        Returns:
            int: Change in cache usage.
        """
        delta = 0
        raw_filename = self._local_path(raw_info.basename)
        if os.path.isfile(raw_filename):
            if zip_info and not self.safe_keep_zip:
                zip_filename = self._local_path(zip_info.basename)
                if os.path.isfile(zip_filename):
                    os.remove(zip_filename)
                    delta -= zip_info.bytes
        elif zip_info:
            zip_filename = self._local_path(zip_info.basename)
            if not os.path.isfile(zip_filename):
                self._download_file(zip_info.basename)
                delta += zip_info.bytes
            self._decompress_shard_part(zip_info, zip_filename, raw_filename, compression,
                                        raw_info)
            delta += raw_info.bytes
            if not self.safe_keep_zip:
                delta -= zip_info.bytes
        else:
            self._download_file(raw_info.basename)
            delta += raw_info.bytes
            self._check_hash(raw_info, raw_filename)
        return delta

    def prepare_shard(self, shard: Any) -> int:
        """Ensure (download, validate, extract, etc.) that we have the given shard.

        Args:
            shard (Reader): Which shard.

        Returns:
            int: Change in cache usage.
        """
        delta = 0
        for raw_info, zip_info in shard.file_pairs:
            delta += self._prepare_shard_part(raw_info, zip_info, shard.compression)
        return delta

    def get_shards(self, world: World, allow_unsafe_types: bool) -> list:
        """Load this Stream's index, retrieving its shard readers.

        The index is downloaded once per node: whoever takes its lock first fetches it
        (atomically), the others find it in place.

        Args:
            world (World): Distributed context (kept for the reference's signature).
            allow_unsafe_types (bool): If a shard contains Pickle, which allows arbitrary code
                execution during deserialization, whether to keep going if ``True`` or raise an
                error.

        Returns:
            List[Reader]: Shard readers.

        Raises:
            RuntimeError: No remote and no local index.
            ValueError: The index is corrupt or of an unsupported version, or a shard entry is
                malformed (a basename escaping the directory, a bad size or field...), naming
                the index file and the shard.
        """
        from streaming.format.index import validate_index

        basename = get_index_basename()
        filename = os.path.join(self.local, self.split, basename)
        if not os.path.exists(filename):
            if not self.remote:
                raise RuntimeError(f"No `remote` provided, but local file {filename} does not "
                                   "exist either")
            os.makedirs(os.path.dirname(filename), exist_ok=True)
            with FileLock(filename + ".lock"):
                if not os.path.exists(filename):
                    self._download_file(basename)
        try:
            with open(filename) as f:
                obj = json.load(f)
        except json.decoder.JSONDecodeError as error:
            error.args = (f"Index file at {filename} is empty or corrupted. " + error.args[0],)
            raise error
        if not isinstance(obj, dict) or obj.get("version") != 2:
            version = obj.get("version") if isinstance(obj, dict) else None
            raise ValueError(f"Unsupported streaming data version: {version}. Expected version 2.")
        # The index comes from the network: check every entry (types, sizes, basenames that
        # would escape the cache directory) before anything is downloaded, written or deleted.
        validate_index(obj, filename)
        shards = []
        for info in obj["shards"]:
            shard = reader_from_json(self.local, self.split, info)
            shard.validate(allow_unsafe_types)
            shards.append(shard)
        return shards

    def set_up_local(self, shards: list, cache_usage_per_shard: NDArray[np.int64]) -> None:
        """Bring a local directory into a consistent state, getting which shards are present.

        Args:
            shards (List[Reader]): List of this stream's shards.
            cache_usage_per_shard (NDArray[np.int64]): Cache usage per shard of this stream.
        """
        local_dirname = os.path.join(self.local, self.split)
        listing = set()
        for dirname, _, subfiles in os.walk(local_dirname):
            for subfile in subfiles:
                listing.add(os.path.join(dirname, subfile))
        for i, shard in enumerate(shards):
            cache_usage_per_shard[i] = shard.set_up_local(listing, self.safe_keep_zip)

    def get_index_size(self) -> int:
        """Get the size of the index file in bytes.

        Returns:
            int: Size in bytes.
        """

        return os.stat(os.path.join(self.local, self.split, get_index_basename())).st_size


streams_registry = create_registry(
    "streaming", "streams_registry", generic_type=type[Stream], entry_points=True,
    description="The streams registry is used for registering Stream classes.")
streams_registry.register("stream", func=Stream)
