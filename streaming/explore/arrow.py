"""Shard samples to Arrow columns, one converter per encoding, working on encoded bytes.

MDS columns are converted from their encoded bytes in bulk (fixed-size numbers and fixed-shape
arrays are one ``frombuffer`` per shard), so images stay as their encoded files and pickles are
never unpickled. JSON and XSV shards are decoded by their reader and typed by Arrow.
"""

from __future__ import annotations

import contextlib
import io
import struct
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow

    from streaming.explore.index import ColumnInfo, ShardInfo

__all__ = ["concat_tables", "empty_table", "samples_to_table", "split_mds_sample"]

_NUMERIC = {
    "int": "int64", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float16": "float16", "float32": "float32", "float64": "float64",
}
_IMAGE_LISTS = {"list[jpeg]": "jpeg", "list[png]": "png", "list[pil]": "pil"}


def split_mds_sample(info: ShardInfo, data: bytes) -> list[bytes]:
    """Cut one encoded MDS sample into its columns' encoded bytes.

    Layout: a ``uint32`` size for each variable-size column, in column order, then every
    column's bytes in column order (fixed-size columns take their declared size).

    Args:
        info (ShardInfo): The shard (for its column sizes and name in errors).
        data (bytes): The sample's bytes.

    Returns:
        List[bytes]: One entry per column.

    Raises:
        ValueError: The sizes do not fit in ``data``.
    """
    sizes: list[int] = []
    pos = 0
    for column in info.columns:
        if column.size is not None:
            sizes.append(column.size)
        else:
            if pos + 4 > len(data):
                raise ValueError(f"{info.basename}: sample header is truncated")
            sizes.append(int.from_bytes(data[pos:pos + 4], "little"))
            pos += 4
    parts = []
    for size in sizes:
        if pos + size > len(data):
            raise ValueError(f"{info.basename}: sample is shorter than its column sizes")
        parts.append(data[pos:pos + size])
        pos += size
    return parts


# What the converters below raise on corrupt bytes: ValueError and its subclasses
# (UnicodeDecodeError, pyarrow.ArrowInvalid), struct.error, IndexError, decimal's errors.
_CORRUPT = (ValueError, struct.error, IndexError, ArithmeticError)


def _list_items(data: bytes, header: int) -> list[bytes]:
    """Items of an MDS list encoding: ``[pad u32 if header==8][n u32][n x size u32][items]``.

    The count and the sizes come from the shard, so they are checked against the bytes there
    are before anything is built from them (a corrupt count of 4 billion would otherwise make
    a 4-billion-entry list).

    Raises:
        ValueError: The header, the sizes or the items run past the end of ``data``.
    """
    if len(data) < header:
        raise ValueError(f"list header needs {header} bytes, the value has {len(data)}")
    n = int.from_bytes(data[header - 4:header], "little")
    pos = header + 4 * n
    if pos > len(data):
        raise ValueError(f"a list of {n:,} items needs {pos:,} bytes for its sizes, "
                         f"the value has {len(data):,}")
    sizes = np.frombuffer(data, "<u4", n, header).tolist()
    if pos + sum(sizes) > len(data):
        raise ValueError(f"the list's items need {sum(sizes):,} bytes after their sizes, "
                         f"the value has {len(data) - pos:,}")
    items = []
    for size in sizes:
        items.append(bytes(data[pos:pos + size]))
        pos += size
    return items


def _pil_to_png(data: bytes) -> bytes:
    from streaming.format.mds.encodings import mds_decode

    # PIL allocates the whole image before it finds the pixels missing, so bound the header's
    # width and height by the pixel bytes there are (every mode takes at least a bit a pixel).
    if len(data) < 12:
        raise ValueError(f"pil: the value has {len(data)} bytes, its header takes 12")
    width, height, mode_size = struct.unpack_from("<III", data)
    pixel_bytes = len(data) - 12 - mode_size
    if width * height > 8 * max(pixel_bytes, 0):
        raise ValueError(f"pil: a {width}x{height} image, but {max(pixel_bytes, 0):,} bytes of "
                         f"pixels")
    image = mds_decode("pil", data)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _fixed_values(encoding: str, parts: list[bytes], dtype: np.dtype) -> np.ndarray:
    """Values of a fixed-size column as one flat array, each value checked to be its size.

    (The sizes come from ``index.json``; a wrong one must not shift every value that follows.)
    """
    from streaming.format.mds.encodings import get_mds_encoded_size

    size = get_mds_encoded_size(encoding)
    wrong = {len(p) for p in parts} - {size}
    if wrong:
        raise ValueError(f"a value is {min(wrong)} bytes, {encoding} values take {size}")
    return np.frombuffer(b"".join(parts), dtype)


def _ndarray_column(encoding: str, parts: list[bytes]) -> pyarrow.Array:
    import pyarrow as pa

    from streaming.format.mds.encodings import NDArray, get_coder, mds_decode

    coder = get_coder(encoding)
    if not isinstance(coder, NDArray):
        raise ValueError(f"unsupported encoding {encoding!r}")
    dtype, shape = coder.dtype, coder.shape
    if dtype and shape:
        flat = _fixed_values(encoding, parts, np.dtype(dtype).newbyteorder("<"))
        return pa.FixedShapeTensorArray.from_numpy_ndarray(flat.reshape((len(parts), *shape)))
    arrays = [mds_decode(encoding, p) for p in parts]
    shapes = pa.array([list(a.shape) for a in arrays], pa.list_(pa.int64()))
    if dtype:
        data = pa.array([a.reshape(-1) for a in arrays], pa.list_(pa.from_numpy_dtype(dtype)))
        return pa.StructArray.from_arrays([shapes, data], ["shape", "data"])
    dtypes = pa.array([a.dtype.name for a in arrays], pa.string())
    data = pa.array([a.tobytes() for a in arrays], pa.binary())
    return pa.StructArray.from_arrays([dtypes, shapes, data], ["dtype", "shape", "data"])


def _try(values: list[Any], fallback: Callable[[], pyarrow.Array]) -> pyarrow.Array:
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return fallback()


def mds_column(encoding: str, parts: list[bytes]) -> pyarrow.Array:
    """Convert one MDS column (its encoded values, one per sample) to an Arrow array.

    Args:
        encoding (str): The column's MDS encoding.
        parts (List[bytes]): The encoded values.

    Returns:
        pyarrow.Array: The column.

    Raises:
        ValueError: A value is corrupt: the wrong size for a fixed-size encoding, a list count
            or size past the value's end, an image header larger than its pixels, bad text.
    """
    import pyarrow as pa

    base = encoding.split(":")[0]
    if base in _NUMERIC:
        dtype = np.dtype(_NUMERIC[base]).newbyteorder("<")
        return pa.array(_fixed_values(encoding, parts, dtype))
    if base == "str":
        return pa.array([bytes(p).decode("utf-8") for p in parts], pa.string())
    if base in ("bytes", "pkl", "jpeg", "png"):
        return pa.array([bytes(p) for p in parts], pa.binary())
    if base == "json":
        return pa.array([bytes(p).decode("utf-8") for p in parts], pa.string())
    if base == "ndarray":
        return _ndarray_column(encoding, parts)
    if base == "str_int":
        texts = [bytes(p).decode("utf-8") for p in parts]
        return _try([int(t) for t in texts], lambda: pa.array(texts, pa.string()))
    if base == "str_float":
        return pa.array([float(bytes(p).decode("utf-8")) for p in parts], pa.float64())
    if base == "str_decimal":
        texts = [bytes(p).decode("utf-8") for p in parts]
        return _try([Decimal(t) for t in texts], lambda: pa.array(texts, pa.string()))
    if base == "pil":
        return pa.array([_pil_to_png(bytes(p)) for p in parts], pa.binary())
    if encoding in _IMAGE_LISTS:
        items = [_list_items(bytes(p), 8) for p in parts]
        if _IMAGE_LISTS[encoding] == "pil":
            items = [[_pil_to_png(x) for x in row] for row in items]
        return pa.array(items, pa.list_(pa.binary()))
    if encoding in ("jpeg_array", "jpegarray"):
        return pa.array([_list_items(bytes(p), 4) for p in parts], pa.list_(pa.binary()))
    # An encoding registered by the user: decode it and let Arrow type it, else keep bytes.
    from streaming.format.mds.encodings import mds_decode

    return _try([mds_decode(encoding, p) for p in parts],
                lambda: pa.array([bytes(p) for p in parts], pa.binary()))


def _field(name: str, array: pyarrow.Array, encoding: str) -> pyarrow.Field:
    import pyarrow as pa

    meta = {"encoding": encoding}
    base = encoding.split(":")[0]
    if base in ("jpeg", "png", "pil") or encoding in _IMAGE_LISTS or base.startswith("jpeg"):
        meta["content"] = "image/jpeg" if "jpeg" in encoding else "image/png"
    return pa.field(name, array.type, metadata=meta)


def samples_to_table(info: ShardInfo, reader: Any, indices: Sequence[int], names: Sequence[str]
                     ) -> pyarrow.Table:
    """Samples ``indices`` of one shard as an Arrow table with columns ``names``.

    Args:
        info (ShardInfo): The shard's index entry.
        reader (Reader): Its reader (from :func:`streaming.format.reader_from_json`).
        indices (Sequence[int]): Sample indices within the shard.
        names (Sequence[str]): Columns to include.

    Returns:
        pyarrow.Table: The table.

    Raises:
        ValueError: A value is corrupt (a size or count runs past its bytes, text is not UTF-8,
            ...); the message names the shard and the column.
    """
    import pyarrow as pa

    encodings = {c.name: c.encoding for c in info.columns}
    arrays, fields = [], []
    if info.format == "mds":
        position = {c.name: i for i, c in enumerate(info.columns)}
        rows = [split_mds_sample(info, reader.get_sample_data(j)) for j in indices]
        for name in names:
            k = position[name]
            with _naming(info, name, encodings[name]):
                array = mds_column(encodings[name], [row[k] for row in rows])
            arrays.append(array)
            fields.append(_field(name, array, encodings[name]))
    else:
        samples = [reader.get_item(j) for j in indices]
        for name in names:
            with _naming(info, name, encodings.get(name, "")):
                array = pa.array([s[name] for s in samples])
            arrays.append(array)
            fields.append(_field(name, array, encodings.get(name, "")))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


@contextlib.contextmanager
def _naming(info: ShardInfo, name: str, encoding: str) -> Iterator[None]:
    """Name the shard and column in errors raised while converting that column.

    Errors that corrupt bytes cause become a ``ValueError`` naming them (chained to the
    original, whose type was a detail of the converter); anything else (a user's encoding
    raising its own error) keeps its type and gets a note, where Python has notes (3.11+).
    """
    where = f"{info.basename}: column {name!r} ({encoding})"
    try:
        yield
    except _CORRUPT as err:
        raise ValueError(f"{where}: {err}") from err
    except Exception as err:
        if hasattr(err, "add_note"):
            err.add_note(f"while converting {where}")
        raise


def concat_tables(tables: list[pyarrow.Table]) -> pyarrow.Table:
    """Concatenate per-shard tables (types widened where shards differ, e.g. all-null ones).

    Args:
        tables (List[pyarrow.Table]): Tables with the same column names.

    Returns:
        pyarrow.Table: One table.
    """
    import pyarrow as pa

    if len(tables) == 1:
        return tables[0]
    try:
        # Widens what can be widened: nulls, integer sizes, decimal precisions.
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    # A text-backed column typed differently by different shards (str_int that overflows int64
    # in only some shards, ...): fall back to its text for every shard.
    names = tables[0].column_names
    conflicting = {n for n in names if len({t.schema.field(n).type for t in tables}) > 1}
    fixed = []
    for table in tables:
        for name in conflicting:
            i = table.schema.get_field_index(name)
            field = table.schema.field(i)
            table = table.set_column(i, field.with_type(pa.string()),
                                     table.column(i).cast(pa.string()))
        fixed.append(table)
    return pa.concat_tables(fixed, promote_options="permissive")


def empty_table(columns: Sequence[ColumnInfo], names: Sequence[str]) -> pyarrow.Table:
    """A table with no rows and the given columns typed as :func:`mds_column` would type them.

    Args:
        columns (Sequence[ColumnInfo]): The dataset's schema.
        names (Sequence[str]): Columns to include.

    Returns:
        pyarrow.Table: An empty table.
    """
    import pyarrow as pa

    encodings = {c.name: c.encoding for c in columns}
    fields = []
    for name in names:
        try:
            array = mds_column(encodings[name], [])
        except Exception:  # an encoding that can't type an empty column
            array = pa.array([], pa.null())
        fields.append(_field(name, array, encodings[name]))
    return pa.schema(fields).empty_table()

