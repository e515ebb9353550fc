""":class:`MDSReader` reads samples from ``.mds`` shards written by :class:`MDSWriter`.

The raw shard file is memory-mapped on first access and its offset table validated once against
the file size (compiled kernel ``streaming._kernels._mds``); each sample is then cut into columns
and decoded without another system call. A truncated or corrupt shard raises ``ValueError``
naming the file.
"""

from __future__ import annotations

import mmap
import os
import weakref
from collections import OrderedDict
from typing import Any, Union

import numpy as np

from streaming._kernels import _mds
from streaming.format.base.reader import FileInfo, JointReader
from streaming.format.index import get_index_basename, validate_shard
from streaming.format.mds.encodings import (
    Bytes,
    Int,
    NDArray,
    Str,
    get_coder,
    is_mds_encoding_safe,
    unsupported_reason,
)

__all__ = ["MDSReader"]

_KIND_BYTES, _KIND_STR, _KIND_CALL, _KIND_INT64, _KIND_NDARRAY = 0, 1, 2, 3, 4

# Each mapped shard is one kernel memory map; Linux allows ~65k per process. Keep at most this
# many shards mapped per process, unmapping the least recently opened (it re-maps on next use).
MAX_OPEN_SHARDS = 1024
_open_maps: OrderedDict[int, weakref.ref] = OrderedDict()
# Bytes read in order that are unmapped at a time (see MDSReader.release_rows).
RELEASE_BYTES = 1 << 20
# A shard's offsets are uint32, so no column value (nor the whole shard) reaches 4 GiB.
_MAX_COLUMN_SIZE = (1 << 32) - 1


def _remember_open(reader: MDSReader) -> None:
    _open_maps[id(reader)] = weakref.ref(reader)
    while len(_open_maps) > MAX_OPEN_SHARDS:
        try:
            _, ref = _open_maps.popitem(last=False)
        except KeyError:  # emptied by another thread
            break
        oldest = ref()
        if oldest is not None:
            oldest._buf = oldest._mmap = None


class MDSReader(JointReader):
    """Provides random access to the samples of an MDS shard.

    Args:
        dirname (str): Local dataset directory.
        split (str, optional): Which dataset split to use, if any.
        column_encodings (List[str]): Column encodings.
        column_names (List[str]): Column names.
        column_sizes (List[Optional[int]]): Column fixed sizes, if any.
        compression (str, optional): Optional compression or compression:level.
        hashes (List[str]): Optional list of hash algorithms to apply to shard files.
        raw_data (FileInfo): Uncompressed data file info.
        samples (int): Number of samples in this shard.
        size_limit (Union[int, str], optional): Optional shard size limit, after
            which point to start a new shard. If None, puts everything in one shard.
            Can specify bytes in human-readable format as well, for example
            ``"100kb"`` for 100 kilobyte (100*1024) and so on.
        zip_data (FileInfo, optional): Compressed data file info.

    Raises:
        ValueError: Columns are inconsistent or use an unknown encoding.
    """

    def __init__(
        self,
        dirname: str,
        split: str | None,
        column_encodings: list[str],
        column_names: list[str],
        column_sizes: list[int | None],
        compression: str | None,
        hashes: list[str],
        raw_data: FileInfo,
        samples: int,
        size_limit: Union[int, str] | None,
        zip_data: FileInfo | None,
    ) -> None:
        super().__init__(
            dirname, split, compression, hashes, raw_data, samples, size_limit, zip_data
        )
        self.column_encodings = column_encodings
        self.column_names = column_names
        self.column_sizes = column_sizes
        where = os.path.join(dirname, self.split, raw_data.basename)
        if not (len(column_encodings) == len(column_names) == len(column_sizes)):
            raise ValueError(f"{where}: column names, encodings and sizes differ in length")
        kinds, decoders, fixed, arrays = [], [], [], []
        for name, encoding, size in zip(column_names, column_encodings, column_sizes):
            coder = get_coder(encoding)
            if coder is None:
                raise ValueError(f"{where}: column {name!r} has unsupported encoding {encoding!r} "
                                 f"({unsupported_reason(encoding)})")
            if size is not None and (not isinstance(size, int) or isinstance(size, bool)
                                     or not 0 <= size <= _MAX_COLUMN_SIZE):
                raise ValueError(f"{where}: column {name!r} has invalid size {size!r} (a fixed "
                                 f"size is an int from 0 to {_MAX_COLUMN_SIZE}, or null)")
            # Exact types: a user subclass may decode differently (the kernel cuts these itself;
            # it hands anything unusual back to ``coder.decode``).
            kind = {Bytes: _KIND_BYTES, Str: _KIND_STR, Int: _KIND_INT64,
                    NDArray: _KIND_NDARRAY}.get(type(coder), _KIND_CALL)
            arrays.append((coder._np_dtype, coder.shape) if kind == _KIND_NDARRAY else None)
            kinds.append(kind)
            decoders.append(coder.decode)
            fixed.append(-1 if size is None else size)
        # Every row holds the fixed-size columns and a uint32 size per variable one, after the
        # header and offset table: sizes the index declares that cannot fit are corrupt.
        row_min = sum(4 if size < 0 else size for size in fixed)
        need = 4 * (int(samples) + 2) + int(samples) * row_min
        if isinstance(raw_data.bytes, int) and need > raw_data.bytes:
            raise ValueError(
                f"{where}: {samples} samples of at least {row_min} bytes each (column sizes "
                f"{column_sizes}) cannot fit in the shard's {raw_data.bytes} bytes; the index is "
                f"corrupt"
            )
        self._columns = _mds.Columns(tuple(column_names), np.array(kinds, np.int64),
                                     tuple(decoders), np.array(fixed, np.int64), tuple(arrays))
        self._filename = ""
        self._release_from: int | None = None  # where in-order reads not yet unmapped begin
        self._mmap: mmap.mmap | None = None
        self._buf: Any = None

    @classmethod
    def from_json(cls, dirname: str, split: str | None, obj: dict[str, Any]) -> MDSReader:
        """Initialize from JSON object.

        Args:
            dirname (str): Local directory containing shards.
            split (str, optional): Which dataset split to use, if any.
            obj (Dict[str, Any]): JSON object to load.

        Returns:
            Self: Loaded MDSReader.

        Raises:
            ValueError: The object is not a valid MDS shard entry.
        """
        where = f"{os.path.join(dirname, split or '', get_index_basename())}: MDS shard"
        if obj.get("version") != 2:
            raise ValueError(
                f"Unsupported streaming data version: {obj.get('version')}. Expected version 2."
            )
        if obj.get("format") != "mds":
            raise ValueError(f"Unsupported data format: {obj.get('format')}. Expected to be `mds`.")
        validate_shard(obj, where)
        for key in ("column_encodings", "column_names", "column_sizes"):
            if not isinstance(obj.get(key), list):
                raise ValueError(f"{where}: {key} must be a list")
        zip_data = obj.get("zip_data")
        return cls(
            dirname=dirname,
            split=split,
            column_encodings=list(obj["column_encodings"]),
            column_names=list(obj["column_names"]),
            column_sizes=list(obj["column_sizes"]),
            compression=obj["compression"],
            hashes=list(obj["hashes"]),
            raw_data=FileInfo(**obj["raw_data"]),
            samples=obj["samples"],
            size_limit=obj["size_limit"],
            zip_data=FileInfo(**zip_data) if zip_data else None,
        )

    def validate(self, allow_unsafe_types: bool) -> None:
        """Check whether this shard is acceptable to be part of some Stream.

        Args:
            allow_unsafe_types (bool): If a shard contains Pickle, which allows arbitrary code
                execution during deserialization, whether to keep going if ``True`` or raise an
                error if ``False``.

        Raises:
            ValueError: A column is unsafe and ``allow_unsafe_types`` is False.
        """
        if not allow_unsafe_types:
            for name, encoding in zip(self.column_names, self.column_encodings):
                if not is_mds_encoding_safe(encoding):
                    # The reference's message, after the shard and index it is about.
                    dirname = os.path.join(self.dirname, self.split)
                    raise ValueError(
                        f"{os.path.join(dirname, self.raw_data.basename)} (in "
                        f"{os.path.join(dirname, get_index_basename())}): Column {name} contains "
                        f"an unsafe type: {encoding}. To proceed anyway, set "
                        f"``allow_unsafe_types=True``."
                    )

    # ---- the memory map ---------------------------------------------------------------------

    def _open(self) -> Any:
        filename = os.path.join(self.dirname, self.split, self.raw_data.basename)
        with open(filename, "rb") as fp:
            size = os.fstat(fp.fileno()).st_size
            if size < 8:
                raise ValueError(
                    f"{filename}: shard is truncated ({size} bytes, need at least 8); delete it "
                    f"or re-download it"
                )
            mapped = mmap.mmap(fp.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            buf = memoryview(mapped)
            _mds.check_shard(buf, self.samples, filename)
        except BaseException:
            buf = None
            mapped.close()
            raise
        self._filename = filename
        self._mmap = mapped
        self._buf = buf
        _remember_open(self)
        return buf

    def close(self) -> None:
        """Unmap the shard file (it is mapped again on next access).

        The map is dropped, not force-closed: a thread still decoding from it finishes safely,
        and the memory is unmapped when the last such user lets go.
        """
        self._buf = self._mmap = None
        self._release_from = None
        _open_maps.pop(id(self), None)

    def release_rows(self, rows: Any) -> None:
        """Note that ``rows`` were just read; if in order, unmap the pages behind them.

        Reading a shard in order would otherwise leave all of it mapped, which counts in this
        process's resident memory until the shard is closed. The pages stay in the page cache:
        reading them again costs a page fault. Consecutive calls accumulate until
        :data:`RELEASE_BYTES` are behind, so small rows cost one system call per megabyte.

        Args:
            rows (NDArray[np.int64]): Rows of this shard, as read.
        """
        buf, mapped = self._buf, self._mmap  # another thread may close the reader meanwhile
        if buf is None or mapped is None:
            return
        span = _mds.rows_span(buf, np.ascontiguousarray(rows, np.int64), self.samples,
                              self._filename)
        if span is None:
            return
        begin, end = span
        pending = self._release_from
        if pending is None or not pending <= begin:  # a new run of in-order reads
            pending = begin
        if end - pending < RELEASE_BYTES:
            self._release_from = pending
            return
        self._release_from = None
        page = mmap.PAGESIZE
        start = -(-pending // page) * page  # pages shared with the rows around stay mapped
        stop = end - end % page
        if stop > start:
            mapped.madvise(mmap.MADV_DONTNEED, start, stop - start)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_mmap"] = state["_buf"] = None  # maps don't cross processes; re-open there
        return state

    # ---- samples ----------------------------------------------------------------------------

    def decode_sample(self, data: bytes) -> dict[str, Any]:
        """Decode a sample dict from bytes.

        Args:
            data (bytes): The sample encoded as bytes.

        Returns:
            Dict[str, Any]: Sample dict.

        Raises:
            ValueError: The bytes are inconsistent with the columns.
        """
        # Present the row as a one-row shard so the checked kernel does the cutting.
        head = np.array([1, 12, 12 + len(data)], np.uint32).tobytes()
        return self._columns.decode(head + bytes(data), 0, 1,
                                    self._filename or self.raw_data.basename)

    def get_sample_data(self, idx: int) -> bytes:
        """Get the raw sample data at the index.

        Args:
            idx (int): Sample index.

        Returns:
            bytes: Sample data.

        Raises:
            IndexError: ``idx`` out of range.
            ValueError: The shard is truncated or corrupt.
        """
        buf = self._buf if self._buf is not None else self._open()
        return _mds.row_bytes(buf, idx, self.samples, self._filename)

    def get_item(self, idx: int) -> dict[str, Any]:
        """Get the sample at the index.

        Args:
            idx (int): Sample index.

        Returns:
            Dict[str, Any]: Sample dict.

        Raises:
            IndexError: ``idx`` out of range.
            ValueError: The shard is truncated or corrupt.
        """
        buf = self._buf if self._buf is not None else self._open()
        return self._columns.decode(buf, idx, self.samples, self._filename)

    def get_items(self, idxs: Any) -> list[dict[str, Any]]:
        """Get many samples of this shard in one call.

        Args:
            idxs (Sequence[int] | NDArray[np.int64]): Sample indices within this shard.

        Returns:
            List[Dict[str, Any]]: Sample dicts, in order.
        """
        return list(_mds.Rows((self.decode_source(),), None, idxs))

    def items_from_buffer(self, data: Any, idxs: Any, source: str) -> list[dict[str, Any]]:
        """Decode samples of this shard from ``data`` instead of the shard file.

        For bytes of this shard obtained another way (e.g. the head of a download still in
        progress). ``data`` may be only the leading part of the shard: every offset is checked
        against its length, so a row past its end raises instead of reading out of range.

        Args:
            data (bytes | memoryview): The shard's leading bytes.
            idxs (Sequence[int] | NDArray[np.int64]): Sample indices within this shard.
            source (str): What ``data`` is, named in errors.

        Returns:
            List[Dict[str, Any]]: Sample dicts, in order.

        Raises:
            ValueError: ``data`` is truncated or corrupt for these rows.
        """
        return list(_mds.Rows(((memoryview(data), self.samples, self._columns, source),), None,
                              idxs))

    def decode_source(self) -> tuple[Any, int, Any, str]:
        """What the compiled row iterator needs to read this shard (mapping it first).

        Returns:
            Tuple[Any, int, Any, str]: The mapped shard, its sample count, its columns and its
                path, as :class:`streaming._kernels._mds.Rows` takes them.
        """
        buf = self._buf if self._buf is not None else self._open()
        return buf, self.samples, self._columns, self._filename
