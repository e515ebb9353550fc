""":class:`MDSWriter` writes samples to ``.mds`` shards that :class:`MDSReader` reads.

Shard layout (all integers little-endian uint32)::

    [num_samples] [offsets: num_samples + 1] [config JSON] [row 0] [row 1] ...

``offsets[i]`` is the absolute position of row ``i`` and ``offsets[-1]`` the file size; the config
is ``json.dumps(writer.get_config(), sort_keys=True)``; a row is the sizes of its variable-size
columns followed by every column's encoded value, columns sorted by name. The bytes are identical
to the reference writer's for the same samples and arguments.

Speed: each column's encoder is resolved once; arrays are copied straight from their memory
(their headers are built once per dtype and shape); small values are copied into pooled 4 MiB
blocks that are reused once their shard is written (fresh memory costs page faults); immutable
``bytes`` values of 4 KiB or more are kept by reference; each shard goes out with ``writev`` on
a background thread while the next one is encoded, and is fsynced on another.
:meth:`MDSWriter.write_encoded` takes rows that are already encoded (e.g. by a converter).
"""

from __future__ import annotations

import json
import struct
from typing import Any, Callable, Union

import numpy as np

from streaming.format.base.writer import Chunks, JointWriter
from streaming.format.mds.encodings import NDArray, get_coder, get_mds_encodings

__all__ = ["MDSWriter"]

# Values at least this big (and immutable) are written from the caller's object, not copied.
_BY_REFERENCE = 1 << 12


def _parts_encoder(coder: Any) -> Callable[[Any], tuple[Any, ...]] | None:
    """Get the coder's zero-copy encoder, unless a subclass changed how it encodes."""
    if isinstance(coder, NDArray) and type(coder).encode is NDArray.encode:
        return coder.encode_parts
    return None


# Size of the pooled buffers that rows are copied into.
_BLOCK = 1 << 22


def _new_buffer(size: int) -> Any:
    """Get an uninitialized byte buffer (NumPy skips the zero-fill that bytearray does)."""
    return np.empty(size, np.uint8)


class MDSWriter(JointWriter):
    """Writes a streaming MDS dataset.

    Args:
        columns (Dict[str, str]): Sample columns: name -> MDS encoding (see
            :mod:`streaming.format.mds.encodings`).
        out (str | Tuple[str, str]): Output dataset directory to save shard files.

            1. If ``out`` is a local directory, shard files are saved locally.
            2. If ``out`` is a remote directory, a local temporary directory is created to
               cache the shard files and then the shard files are uploaded to a remote
               location. At the end, the temp directory is deleted once shards are uploaded.
            3. If ``out`` is a tuple of ``(local_dir, remote_dir)``, shard files are saved in the
               `local_dir` and also uploaded to a remote location.
        keep_local (bool): If the dataset is uploaded, whether to keep the local dataset directory
            or remove it after uploading. Defaults to ``False``.
        compression (str, optional): Optional compression or compression:level. Defaults to
            ``None``.
        hashes (List[str], optional): Optional list of hash algorithms to apply to shard files.
            Defaults to ``None``.
        size_limit (Union[int, str], optional): Optional shard size limit, after which point to
            start a new shard. If ``None``, puts everything in one shard. Can specify bytes
            human-readable format as well, for example ``"100kb"`` for 100 kilobyte
            (100*1024) and so on. Defaults to ``1 << 26``.
        **kwargs (Any): Additional settings for the Writer: ``progress_bar``, ``max_workers``,
            ``retry``, ``exist_ok`` (see :class:`~streaming.format.base.writer.Writer`).

    Raises:
        TypeError: A column has an unsupported encoding.
    """

    format = "mds"
    extra_bytes_per_sample = 4

    def __init__(
        self,
        *,
        columns: dict[str, str],
        out: Union[str, tuple[str, str]],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: Union[int, str] | None = 1 << 26,
        **kwargs: Any,
    ) -> None:
        # Validate the columns before the base class creates any directory.
        names = sorted(columns)
        coders = []
        for name in names:
            encoding = columns[name]
            coder = get_coder(encoding)
            if coder is None:
                raise TypeError(
                    f"MDSWriter passed column `{name}` with encoding `{encoding}` is "
                    f"unsupported. Supported encodings are {get_mds_encodings()}"
                )
            coders.append(coder)
        self.columns = columns
        self.column_names = names
        self.column_encodings = [columns[name] for name in names]
        self.column_sizes = [coder.size for coder in coders]
        # Per column: name, encoder, zero-copy encoder (arrays; None elsewhere), size, encoding.
        self._plan: list[tuple[str, Callable[[Any], bytes], Any, int | None, str]] = [
            (name, coder.encode, _parts_encoder(coder), coder.size, encoding)
            for name, coder, encoding in zip(names, coders, self.column_encodings)
        ]
        num_var = sum(size is None for size in self.column_sizes)
        self._sizes_head = struct.Struct(f"<{num_var}I")

        super().__init__(
            out=out,
            keep_local=keep_local,
            compression=compression,
            hashes=hashes,
            size_limit=size_limit,
            extra_bytes_per_sample=self.extra_bytes_per_sample,
            **kwargs,
        )
        self.config_data = json.dumps(self.get_config(), sort_keys=True).encode("utf-8")
        self.extra_bytes_per_shard = 4 + 4 + len(self.config_data)
        self.new_shard_size = self.extra_bytes_per_shard

    # The shard being built. Small values are copied into pooled fixed-size blocks (`_rows`, of
    # which `_pos` bytes are used; `_blocks` lists the shard's blocks); large immutable `bytes`
    # values are kept by reference, so the shard is a list of chunks (`_chunks` + the open block
    # segment from `_seg`). Blocks come back to `_free` once their shard is on disk, so
    # steady-state writing touches no fresh memory (page faults cost more than copies), and a
    # full block is closed, never copied into a bigger one. `_row_ends` holds each row's end in
    # the logical shard body.
    def _reset_cache(self) -> None:
        if not hasattr(self, "_free"):
            self._free: list[Any] = []
        self._clear_rows()
        self.new_shard_size = self.extra_bytes_per_shard

    def _clear_rows(self) -> None:
        self._blocks: list[Any] = []
        self._rows: Any = None
        self._view = memoryview(b"")
        self._cap = 0
        self._pos = 0
        self._seg = 0
        self._chunks: list[Any] = []
        self._row_ends: list[int] = [0]

    def _next_block(self, need: int) -> None:
        """Close the open segment; continue in a fresh buffer of at least ``need`` bytes."""
        if self._pos > self._seg:
            self._chunks.append(self._view[self._seg : self._pos])
        if need <= _BLOCK:
            rows = self._free.pop() if self._free else _new_buffer(_BLOCK)
            self._blocks.append(rows)
        else:  # an outsize row gets a buffer of its own, not pooled
            rows = _new_buffer(need)
        self._rows = rows
        self._view = memoryview(rows)
        self._cap = len(rows)
        self._pos = self._seg = 0

    def _body_chunks(self) -> list[Any]:
        if self._pos > self._seg:
            return [*self._chunks, self._view[self._seg : self._pos]]
        return list(self._chunks)

    def _num_pending(self) -> int:
        return len(self._row_ends) - 1

    @property
    def new_samples(self) -> list[bytes]:  # type: ignore[override]
        """Get the encoded samples of the shard being built (reference attribute).

        Returns:
            List[bytes]: One encoded row per sample.
        """
        body = b"".join(self._body_chunks())
        ends = self._row_ends
        return [body[ends[i] : ends[i + 1]] for i in range(len(ends) - 1)]

    @new_samples.setter
    def new_samples(self, value: list[bytes]) -> None:
        self._clear_rows()
        for row in value:
            self._append_row(b"", [row], len(row))

    def _append_row(self, head: bytes, parts: Any, row_size: int) -> None:
        pos = self._pos
        if pos + row_size > self._cap:
            self._next_block(row_size)
            pos = 0
        view = self._view
        stop = pos + len(head)
        view[pos:stop] = head
        for part in parts:
            size = len(part)
            if size >= _BY_REFERENCE and type(part) is bytes:
                if stop > self._seg:
                    self._chunks.append(view[self._seg : stop])
                self._chunks.append(part)
                self._seg = stop
            else:
                pos = stop
                stop += size
                view[pos:stop] = part
        self._pos = stop
        self._row_ends.append(self._row_ends[-1] + row_size)

    def _encode_parts(self, sample: dict[str, Any]) -> tuple[bytes, list[Any], int]:
        """Encode a sample as (sizes header, buffers of its column values, total bytes)."""
        sizes = []
        parts: list[Any] = []
        total = 0
        for name, encode, encode_parts, size, encoding in self._plan:
            value = sample[name]
            # As the reference: a bytes value is taken as already encoded, whatever the column.
            if isinstance(value, bytes):
                nbytes = len(value)
                parts.append(value)
            elif encode_parts is not None:
                pieces = encode_parts(value)
                nbytes = 0
                for piece in pieces:
                    nbytes += len(piece)
                parts += pieces
            else:
                datum = encode(value)
                nbytes = len(datum)
                parts.append(datum)
            if size is None:
                sizes.append(nbytes)
            elif size != nbytes:
                raise KeyError(
                    f"Unexpected data size; was this data typed with the correct encoding "
                    f"({encoding})?"
                )
            total += nbytes
        head = self._sizes_head.pack(*sizes)
        return head, parts, total + len(head)

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Encode a sample dict to bytes.

        Args:
            sample (Dict[str, Any]): Sample dict.

        Returns:
            bytes: Sample encoded as bytes.
        """
        head, parts, _ = self._encode_parts(sample)
        return b"".join([head, *parts])

    def write(self, sample: dict[str, Any]) -> None:
        """Write a sample.

        May flush an entire new shard, then caches the sample.

        Args:
            sample (Dict[str, Any]): Sample dict.

        Raises:
            KeyError: A column is missing, or a fixed-size column has the wrong size.
            RuntimeError: A background write or upload failed earlier.
        """
        if self._failure is not None:
            self._raise_if_failed()
        head, parts, row_size = self._encode_parts(sample)
        sample_size = row_size + 4
        if self.size_limit and self.size_limit < self.new_shard_size + sample_size:
            self.flush_shard()
            self._reset_cache()
        self._append_row(head, parts, row_size)
        self.new_shard_size += sample_size

    def write_encoded(self, row: bytes) -> None:
        """Write a sample that is already encoded as an MDS row.

        ``row`` must be exactly what :meth:`encode_sample` returns for the sample: the uint32
        sizes of the variable-size columns, then every column's encoded value, columns sorted by
        name. It is not checked; shard rollover happens at the same sample as with
        :meth:`write`.

        Args:
            row (bytes): The encoded sample.

        Raises:
            RuntimeError: A background write or upload failed earlier.
        """
        if self._failure is not None:
            self._raise_if_failed()
        row_size = len(row)
        sample_size = row_size + 4
        if self.size_limit and self.size_limit < self.new_shard_size + sample_size:
            self.flush_shard()
            self._reset_cache()
        self._append_row(b"", (row,), row_size)
        self.new_shard_size += sample_size

    def get_config(self) -> dict[str, Any]:
        """Get object describing shard-writing configuration.

        Returns:
            Dict[str, Any]: JSON object.
        """
        obj = super().get_config()
        obj.update(
            {
                "column_names": self.column_names,
                "column_encodings": self.column_encodings,
                "column_sizes": self.column_sizes,
            }
        )
        return obj

    def _joint_shard_chunks(self) -> Chunks:
        count = self._num_pending()
        head_size = 4 + 4 * (count + 1) + len(self.config_data)
        offsets = np.array(self._row_ends, np.int64)
        offsets += head_size
        if int(offsets[-1]) >= 1 << 32:
            raise ValueError(
                f"{self.local}: shard {len(self.shards)} would be {int(offsets[-1])} bytes, but MDS "
                f"offsets are uint32; set a size_limit below 4 GiB"
            )
        head = struct.pack("<I", count) + offsets.astype("<u4").tobytes() + self.config_data
        return [head, *self._body_chunks()]

    def flush_shard(self) -> None:
        """Flush cached samples to storage, creating a new shard."""
        blocks, free = self._blocks, self._free

        def recycle() -> None:
            free.extend(blocks)

        raw_basename, zip_basename = self._name_next_shard()
        chunks = self._joint_shard_chunks()
        obj: dict[str, Any] = {"samples": self._num_pending(), "raw_data": None, "zip_data": None}
        obj.update(self.get_config())
        self._submit_shard(obj, [("raw_data", chunks, raw_basename, zip_basename)], recycle)

    def finish(self) -> None:
        """Finish writing samples: flush the last shard, write the index, wait for uploads.

        Raises:
            RuntimeError: A background write or upload failed.
        """
        try:
            super().finish()
        finally:
            self._free.clear()  # the buffer pool is only needed while writing

    def encode_joint_shard(self) -> bytes:
        """Encode a joint shard out of the cached samples (single file).

        Returns:
            bytes: File data.
        """
        return b"".join(self._joint_shard_chunks())
