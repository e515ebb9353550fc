"""Format-agnostic shard readers: random access to the samples of one shard.

:class:`Reader` knows a shard's files (``file_pairs``: raw file info with its optional
compressed twin), their sizes and how to bring the local copies to a consistent state
(:meth:`Reader.set_up_local`) or remove them (:meth:`Reader.evict`). Subclasses know the bytes:
:meth:`Reader.get_sample_data` returns a sample's encoded bytes and :meth:`Reader.decode_sample`
turns them into a dict. :class:`JointReader` shards are one data file; :class:`SplitReader` shards
are a data file and a meta (offsets) file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator, Union

from streaming.array import Array
from streaming.util import bytes_to_int

__all__ = ["FileInfo", "JointReader", "Reader", "SplitReader"]


@dataclass
class FileInfo:
    """File validation info.

    Args:
        basename (str): File basename.
        bytes (int): File size in bytes.
        hashes (Dict[str, str]): Mapping of hash algorithm to hash value.
    """

    basename: str
    bytes: int
    hashes: dict[str, str]


class Reader(Array):
    """Provides random access to the samples of a shard.

    Args:
        dirname (str): Local dataset directory.
        split (str, optional): Which dataset split to use, if any.
        compression (str, optional): Optional compression or compression:level.
        hashes (List[str]): Optional list of hash algorithms to apply to shard files.
        samples (int): Number of samples in this shard.
        size_limit (Union[int, str], optional): Optional shard size limit, after which point to
            start a new shard. If None, puts everything in one shard. Can specify bytes in
            human-readable format as well, for example ``"100kb"`` for 100 kilobyte (100*1024).

    Raises:
        ValueError: Negative ``size_limit``.
    """

    def __init__(
        self,
        dirname: str,
        split: str | None,
        compression: str | None,
        hashes: list[str],
        samples: int,
        size_limit: Union[int, str] | None,
    ) -> None:
        if size_limit:
            if isinstance(size_limit, str):
                size_limit = bytes_to_int(size_limit)
            if size_limit < 0:
                raise ValueError(
                    f"`size_limit` must be greater than zero, instead, found as {size_limit}."
                )
        self.dirname = dirname
        self.split = split or ""
        self.compression = compression
        self.hashes = hashes
        self.samples = samples
        self.size_limit = size_limit
        self.file_pairs: list[tuple[FileInfo, FileInfo | None]] = []

    def validate(self, allow_unsafe_types: bool) -> None:
        """Check whether this shard is acceptable to be part of some Stream.

        Args:
            allow_unsafe_types (bool): If a shard contains Pickle, which allows arbitrary code
                execution during deserialization, whether to keep going if ``True`` or raise an
                error if ``False``.
        """

    @property
    def size(self) -> int:
        """Get the number of samples in this shard.

        Returns:
            int: Sample count.
        """
        return self.samples

    def __len__(self) -> int:
        """Get the number of samples in this shard.

        Returns:
            int: Sample count.
        """
        return self.samples

    def _path(self, info: FileInfo) -> str:
        return os.path.join(self.dirname, self.split, info.basename)

    def _remove(self, infos: list[FileInfo | None]) -> int:
        """Remove the given files of this shard that exist, returning the bytes freed."""
        size = 0
        for info in infos:
            if info:
                try:
                    os.remove(self._path(info))
                except FileNotFoundError:
                    continue
                size += info.bytes
        return size

    def _evict_raw(self) -> int:
        """Remove all raw files belonging to this shard.

        Returns:
            int: Bytes evicted from cache.
        """
        self.close()
        return self._remove([raw for raw, _ in self.file_pairs])

    def _evict_zip(self) -> int:
        """Remove all zip files belonging to this shard.

        Returns:
            int: Bytes evicted from cache.
        """
        return self._remove([zip_info for _, zip_info in self.file_pairs])

    def evict(self) -> int:
        """Remove all files belonging to this shard.

        Returns:
            int: Bytes evicted from cache.
        """
        return self._evict_raw() + self._evict_zip()

    def close(self) -> None:
        """Release any open handle or memory map on this shard's files.

        Readers map a shard lazily on first access and keep the map; call this when the shard
        is evicted by another process so the disk space is freed. Reading again re-opens.
        """

    def set_up_local(self, listing: set[str], safe_keep_zip: bool) -> int:
        """Bring what shard files are present to a consistent state, returning their size.

        Args:
            listing (Set[str]): The listing of all files under dirname/[split/]. This is listed
                once and then saved because there could potentially be very many shard files.
            safe_keep_zip (bool): Whether to keep zip files when decompressing. Possible when
                compression was used. Necessary when local is the remote or there is no remote.

        Returns:
            int: Bytes of this shard's files that are present (0 if the shard is missing).

        Raises:
            ValueError: A compressed file is present but the shard is not compressed.
        """
        raw_present = sum(1 for raw, _ in self.file_pairs if raw and self._path(raw) in listing)
        zip_present = sum(1 for _, z in self.file_pairs if z and self._path(z) in listing)

        # A partially present form is garbage: remove it and treat the form as missing.
        has_raw = raw_present == len(self.file_pairs) and raw_present > 0
        if raw_present and not has_raw:
            self._evict_raw()
        has_zip = zip_present == len(self.file_pairs) and zip_present > 0
        if zip_present and not has_zip:
            self._evict_zip()

        if self.compression:
            if safe_keep_zip:
                if has_raw and not has_zip:
                    # Unreachable by normal operation (zip is kept): distrust the raw form.
                    has_raw = False
                    self._evict_raw()
            elif has_raw and has_zip:
                # The zip form is not needed any more. The reference evicts the raw files here
                # (a bug: it then reports the zip as absent and the raw as present); we evict
                # the zip files, which is what its comment and accounting intend.
                has_zip = False
                self._evict_zip()
        elif has_zip:
            raise ValueError(
                f"{self._path(self.file_pairs[0][1])}: shard is invalid: compression was not "
                f"used, but it has a compressed form"
            )

        size = 0
        if has_raw:
            size += self.get_raw_size()
        if has_zip:
            size += self.get_zip_size() or 0
        return size

    def get_raw_size(self) -> int:
        """Get the raw (uncompressed) size of this shard.

        Returns:
            int: Size in bytes.
        """
        return sum(info.bytes for info, _ in self.file_pairs)

    def get_zip_size(self) -> int | None:
        """Get the zip (compressed) size of this shard, if compression was used.

        Returns:
            Optional[int]: Size in bytes, or ``None`` if does not exist.
        """
        size = 0
        for _, info in self.file_pairs:
            if info is None:
                return None
            size += info.bytes
        return size

    def get_max_size(self) -> int:
        """Get the full size of this shard (raw and zip forms both resident).

        When compression was used, even if keep_zip is ``False``, the zip form must still be
        resident at the same time as the raw form during shard decompression.

        Returns:
            int: Size in bytes.
        """
        return self.get_raw_size() + (self.get_zip_size() or 0)

    def get_persistent_size(self, keep_zip: bool) -> int:
        """Get the size this shard occupies on disk once it is ready to read.

        Args:
            keep_zip (bool): Whether to keep zip files after decompressing.

        Returns:
            int: Size in bytes.
        """
        if self.compression and keep_zip:
            return self.get_max_size()
        return self.get_raw_size()

    def decode_sample(self, data: bytes) -> dict[str, Any]:
        """Decode a sample dict from bytes.

        Args:
            data (bytes): The sample encoded as bytes.

        Returns:
            Dict[str, Any]: Sample dict.
        """
        raise NotImplementedError

    def get_sample_data(self, idx: int) -> bytes:
        """Get the raw sample data at the index.

        Args:
            idx (int): Sample index.

        Returns:
            bytes: Sample data.
        """
        raise NotImplementedError

    def get_item(self, idx: int) -> dict[str, Any]:
        """Get the sample at the index.

        Args:
            idx (int): Sample index.

        Returns:
            Dict[str, Any]: Sample dict.
        """
        return self.decode_sample(self.get_sample_data(idx))

    def get_items(self, idxs: Any) -> list[dict[str, Any]]:
        """Get many samples of this shard at once (faster than one by one for some formats).

        Args:
            idxs (Sequence[int] | NDArray[np.int64]): Sample indices within this shard.

        Returns:
            List[Dict[str, Any]]: Sample dicts, in order.
        """
        return [self.get_item(int(idx)) for idx in idxs]

    def release_rows(self, rows: Any) -> None:
        """Note that ``rows`` were just read (formats reading a memory map unmap what is behind
        when they were read in order; others ignore it).

        Args:
            rows (NDArray[np.int64]): Rows of this shard, as read.
        """

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Iterate over the samples of this shard.

        Returns:
            Iterator[Dict[str, Any]]: Iterator over samples.
        """
        for i in range(len(self)):
            yield self[i]


class JointReader(Reader):
    """Provides random access to the samples of a joint shard (one data file).

    Args:
        dirname (str): Local dataset directory.
        split (str, optional): Which dataset split to use, if any.
        compression (str, optional): Optional compression or compression:level.
        hashes (List[str]): Optional list of hash algorithms to apply to shard files.
        raw_data (FileInfo): Uncompressed data file info.
        samples (int): Number of samples in this shard.
        size_limit (Union[int, str], optional): Optional shard size limit, after which point to
            start a new shard. If None, puts everything in one shard.
        zip_data (FileInfo, optional): Compressed data file info.
    """

    def __init__(
        self,
        dirname: str,
        split: str | None,
        compression: str | None,
        hashes: list[str],
        raw_data: FileInfo,
        samples: int,
        size_limit: Union[int, str] | None,
        zip_data: FileInfo | None,
    ) -> None:
        super().__init__(dirname, split, compression, hashes, samples, size_limit)
        self.raw_data = raw_data
        self.zip_data = zip_data
        self.file_pairs.append((raw_data, zip_data))


class SplitReader(Reader):
    """Provides random access to the samples of a split shard (data file + meta file).

    Args:
        dirname (str): Local dataset directory.
        split (str, optional): Which dataset split to use, if any.
        compression (str, optional): Optional compression or compression:level.
        hashes (List[str]): Optional list of hash algorithms to apply to shard files.
        raw_data (FileInfo): Uncompressed data file info.
        raw_meta (FileInfo): Uncompressed meta file info.
        samples (int): Number of samples in this shard.
        size_limit (Union[int, str], optional): Optional shard size limit, after which point to
            start a new shard. If None, puts everything in one shard.
        zip_data (FileInfo, optional): Compressed data file info.
        zip_meta (FileInfo, optional): Compressed meta file info.
    """

    def __init__(
        self,
        dirname: str,
        split: str | None,
        compression: str | None,
        hashes: list[str],
        raw_data: FileInfo,
        raw_meta: FileInfo,
        samples: int,
        size_limit: Union[int, str] | None,
        zip_data: FileInfo | None,
        zip_meta: FileInfo | None,
    ) -> None:
        super().__init__(dirname, split, compression, hashes, samples, size_limit)
        self.raw_data = raw_data
        self.raw_meta = raw_meta
        self.zip_data = zip_data
        self.zip_meta = zip_meta
        self.file_pairs.append((raw_meta, zip_meta))
        self.file_pairs.append((raw_data, zip_data))
