"""Arrow tables to MDS: infer MDS columns from an Arrow schema, encode record batches in bulk.

:func:`encode_batch` turns a ``pyarrow.RecordBatch`` into the exact bytes that
``MDSWriter.encode_sample`` makes for each row, working on whole columns with NumPy where the
encoding allows (fixed-size numbers, ``str``, ``bytes``, 1-D ``ndarray:<dtype>`` lists) and
falling back to the per-value MDS encoder otherwise.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Callable

import numpy as np

__all__ = ["arrow_type_to_mds", "encode_batch", "encode_rows", "infer_mds_columns"]

# Fixed-size MDS encodings -> NumPy dtype.
_FIXED = {
    "uint8": "<u1",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "int8": "<i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "int": "<i8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
}

_NDARRAY_DTYPES = ("uint8", "int8", "uint16", "int16", "float16", "uint32", "int32",
                   "float32", "uint64", "int64", "float64")


def arrow_type_to_mds(name: str, arrow_type: Any) -> str:
    """The MDS encoding that holds values of an Arrow type without loss.

    Args:
        name (str): Column name (for errors).
        arrow_type (pyarrow.DataType): The column's type.

    Returns:
        str: An MDS encoding: ``int64``, ``float64``, ``str``, ``bytes``, ``ndarray:<dtype>`` for
        lists of numbers, ``json`` for booleans, nested lists, structs and maps.

    Raises:
        ValueError: The type has no MDS encoding (e.g. timestamps).
    """
    import pyarrow as pa
    import pyarrow.types as t

    if t.is_integer(arrow_type) or t.is_floating(arrow_type):
        return np.dtype(_ARROW_NUMPY[str(arrow_type)]).name
    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return "str"
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type):
        return "bytes"
    if t.is_list(arrow_type) or t.is_large_list(arrow_type):
        value_type = arrow_type.value_type
        if t.is_integer(value_type) or t.is_floating(value_type):
            return f"ndarray:{np.dtype(_ARROW_NUMPY[str(value_type)]).name}"
    if (
        t.is_boolean(arrow_type)
        or t.is_list(arrow_type)
        or t.is_large_list(arrow_type)
        or t.is_struct(arrow_type)
        or t.is_map(arrow_type)
        or arrow_type == pa.null()
    ):
        return "json"
    raise ValueError(f"column {name!r}: Arrow type {arrow_type} has no MDS encoding; "
                     f"give its encoding with --columns")


def infer_mds_columns(schema: Any) -> dict[str, str]:
    """MDS columns for every field of an Arrow schema (see :func:`arrow_type_to_mds`).

    Args:
        schema (pyarrow.Schema): The schema.

    Returns:
        Dict[str, str]: Column name -> MDS encoding.
    """
    return {field.name: arrow_type_to_mds(field.name, field.type) for field in schema}


_ARROW_NUMPY = {
    "int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint8": "<u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
    "halffloat": "<f2", "float": "<f4", "double": "<f8",
}


def _numpy_values(array: Any) -> np.ndarray:
    """A null-free primitive Arrow array as NumPy, straight from its buffer.

    (``Array.to_numpy`` would import pandas, which costs more than the conversion here.)
    """
    import pyarrow as pa

    if pa.types.is_boolean(array.type):
        array = array.cast(pa.uint8())
    dtype = np.dtype(_ARROW_NUMPY[str(array.type)])
    return np.frombuffer(array.buffers()[1], dtype)[array.offset : array.offset + len(array)]


class _Column:
    """One column of a batch, ready to be cut into per-row byte strings."""

    def __init__(self, name: str, encoding: str, array: Any) -> None:
        self.name = name
        self.encoding = encoding
        self.fixed_size: int | None = None
        self.buffer: bytes = b""
        self.starts: np.ndarray | None = None  # byte offsets of rows in buffer (n + 1)
        self.heads: list[bytes] | None = None  # per-row prefix (ndarray shape header)
        self.values: list[bytes] | None = None  # per-row bytes from the fallback encoder
        self._prepare(array)

    def _fail(self, msg: str) -> ValueError:
        return ValueError(f"column {self.name!r} ({self.encoding}): {msg}")

    def _prepare(self, array: Any) -> None:
        import pyarrow as pa
        import pyarrow.types as t

        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if array.null_count and self.encoding != "json":
            raise self._fail(f"{array.null_count} null value(s); MDS columns cannot hold nulls")
        kind = array.type
        enc = self.encoding
        if enc in _FIXED and (t.is_integer(kind) or t.is_floating(kind) or t.is_boolean(kind)):
            dtype = np.dtype(_FIXED[enc])
            values = _numpy_values(array)
            cast = values.astype(dtype)
            if dtype.kind in "iu" and not np.array_equal(cast, values):
                raise self._fail("values out of range or not integers")
            self.fixed_size = dtype.itemsize
            self.buffer = cast.tobytes()
            return
        if enc in ("str", "bytes") and (
            t.is_string(kind) or t.is_large_string(kind) or t.is_binary(kind)
            or t.is_large_binary(kind)
        ):
            if enc == "str" and not (t.is_string(kind) or t.is_large_string(kind)):
                raise self._fail(f"Arrow type {kind} is not text")
            off_type = np.int64 if (t.is_large_string(kind) or t.is_large_binary(kind)) else np.int32
            bufs = array.buffers()
            offsets = np.frombuffer(bufs[1], off_type)[array.offset : array.offset + len(array) + 1]
            self.starts = offsets.astype(np.int64)
            self.buffer = bufs[2].to_pybytes() if bufs[2] is not None else b""
            return
        if enc.startswith("ndarray:") and enc.count(":") == 1 and (
            t.is_list(kind) or t.is_large_list(kind)
        ):
            dtype_name = enc.split(":")[1]
            if dtype_name not in _NDARRAY_DTYPES:
                raise self._fail(f"unsupported dtype {dtype_name}")
            vtype = kind.value_type
            if not (t.is_integer(vtype) or t.is_floating(vtype)):
                raise self._fail(f"list of {vtype} is not a list of numbers")
            offsets = _numpy_values(array.offsets).astype(np.int64)
            offsets -= offsets[0]
            lengths = np.diff(offsets)
            if len(lengths) and lengths.min() == 0:
                raise self._fail("empty list (MDS cannot encode a numpy array with 0 elements)")
            flat = array.flatten()
            if flat.null_count:
                raise self._fail("null inside a list")
            values = _numpy_values(flat)
            dtype = np.dtype(dtype_name).newbyteorder("<")
            cast = values.astype(dtype, copy=False)
            if cast.dtype != values.dtype and not np.array_equal(
                cast, values, equal_nan=dtype.kind == "f"
            ):
                raise self._fail(f"values do not fit {dtype_name}")
            self.starts = offsets * dtype.itemsize
            self.buffer = cast.tobytes()
            self.heads = [_shape_head(n) for n in lengths.tolist()]
            return
        # Anything else: the per-value MDS encoder on Python values.
        items = array.to_pylist()
        self.values = _encode_values(self.name, enc, items)

    def row(self, i: int) -> bytes:
        if self.values is not None:
            return self.values[i]
        if self.fixed_size is not None:
            s = self.fixed_size
            return self.buffer[i * s : (i + 1) * s]
        data = self.buffer[self.starts[i] : self.starts[i + 1]]
        if self.heads is not None:
            return self.heads[i] + data
        return data


def _shape_head(n: int) -> bytes:
    """The NDArray header of a 1-D array of ``n`` items: ``(ndim << 2) | shape dtype``, shape."""
    if n < 1 << 8:
        return bytes([(1 << 2) | 0, n])
    if n < 1 << 16:
        return bytes([(1 << 2) | 1]) + n.to_bytes(2, "little")
    if n < 1 << 32:
        return bytes([(1 << 2) | 2]) + n.to_bytes(4, "little")
    return bytes([(1 << 2) | 3]) + n.to_bytes(8, "little")


def _python_value_coder(encoding: str) -> Callable[[Any], bytes]:
    """Per-value encoder: from Python values, made numpy scalars/arrays where MDS wants them."""
    from streaming.format.mds.encodings import mds_encode

    if encoding == "json":
        # As MDS's JSON encoding; json.dumps takes every value a JSON parser returns.
        return lambda v: json.dumps(v).encode("utf-8")
    if encoding.startswith("ndarray:") and encoding.count(":") == 1:
        # 1-D arrays of a fixed dtype: the common case (token lists), encoded here directly.
        dtype = np.dtype(encoding.split(":")[1]).newbyteorder("<")
        if dtype.name not in _NDARRAY_DTYPES:
            return lambda v: mds_encode(encoding, v)

        def vector(v: Any) -> bytes:
            arr = np.asarray(v)
            if arr.ndim != 1:
                return mds_encode(encoding, arr.astype(dtype))
            if arr.dtype != dtype:
                cast = arr.astype(dtype)
                if arr.dtype.kind not in "iufb" or not np.array_equal(cast, arr):
                    raise ValueError(f"values do not fit {dtype.name}")
                arr = cast
            if not arr.size:
                raise ValueError("empty list (MDS cannot encode a numpy array with 0 elements)")
            return _shape_head(arr.size) + arr.tobytes()

        return vector
    if encoding.startswith("ndarray"):
        parts = encoding.split(":")
        dtype = np.dtype(parts[1]) if len(parts) > 1 else None

        def ndarray(v: Any) -> bytes:
            arr = np.asarray(v)
            if dtype is not None and arr.dtype != dtype:
                cast = arr.astype(dtype)
                if arr.dtype.kind not in "iufb" or not np.array_equal(cast, arr):
                    raise ValueError(f"values do not fit {dtype.name}")
                arr = cast
            return mds_encode(encoding, arr)

        return ndarray
    if encoding in _FIXED:
        dtype = np.dtype(_FIXED[encoding])
        integral = dtype.kind in "iu"

        def scalar(v: Any) -> bytes:
            if integral and not isinstance(v, (int, np.integer)):
                raise TypeError(f"{v!r} is not an integer")
            if not integral and not isinstance(v, (int, float, np.number)):
                raise TypeError(f"{v!r} is not a number")
            return mds_encode(encoding, v if encoding == "int" else dtype.type(v))

        return scalar
    return lambda v: mds_encode(encoding, v)


def _encode_values(name: str, encoding: str, items: list[Any]) -> list[bytes]:
    """Encode Python values of one column, naming the column in any error."""
    coder = _python_value_coder(encoding)
    try:
        return [coder(v) for v in items]
    except (TypeError, AttributeError, KeyError, ValueError, OverflowError) as err:
        raise ValueError(f"column {name!r} ({encoding}): {err}") from None


def _fixed_values(name: str, encoding: str, items: list[Any]) -> list[bytes]:
    """Encode a fixed-size numeric column of Python values through one NumPy array."""
    dtype = np.dtype(_FIXED[encoding])
    if not items:
        # No rows (a chunk of blank lines): np.array([]) is float64, which an integer column
        # would reject as "non-integer values".
        return []
    arr = np.array(items)
    if arr.ndim != 1 or arr.dtype.kind not in "biuf":
        return _encode_values(name, encoding, items)
    if dtype.kind in "iu" and arr.dtype.kind == "f":
        raise ValueError(f"column {name!r} ({encoding}): non-integer values")
    with np.errstate(all="ignore"):
        cast = arr.astype(dtype)
    if arr.dtype.kind != "f" and not np.array_equal(cast, arr):
        raise ValueError(f"column {name!r} ({encoding}): values out of range")
    data = cast.tobytes()
    size = dtype.itemsize
    return [data[i : i + size] for i in range(0, len(data), size)]


def encode_rows(rows: list[dict[str, Any]], column_names: list[str],
                column_encodings: list[str], column_sizes: list[int | None]) -> list[bytes]:
    """Encode rows given as Python dicts (e.g. parsed JSON) as ``MDSWriter.encode_sample`` would.

    Args:
        rows (List[Dict[str, Any]]): The rows.
        column_names (List[str]): MDS column names, in the writer's (sorted) order.
        column_encodings (List[str]): Their encodings.
        column_sizes (List[int | None]): Their fixed sizes (``None`` for variable size).

    Returns:
        List[bytes]: One encoded sample per row.

    Raises:
        ValueError: A column is missing or a value does not fit its encoding.
    """
    cols = []
    for name, enc, size in zip(column_names, column_encodings, column_sizes):
        try:
            items = [row[name] for row in rows]
        except KeyError:
            raise ValueError(f"column {name!r} is missing from a row") from None
        if enc in _FIXED:
            values = _fixed_values(name, enc, items)
        else:
            values = _encode_values(name, enc, items)
        if size is not None and any(len(v) != size for v in values):
            raise ValueError(f"column {name!r} ({enc}): encoded size is not {size}")
        cols.append(values)
    return join_columns(cols, column_sizes)


def join_columns(cols: list[list[bytes]], column_sizes: list[int | None]) -> list[bytes]:
    """MDS samples from encoded columns: the uint32 sizes of the variable ones, then the values."""
    variable = [j for j, size in enumerate(column_sizes) if size is None]
    pack = struct.Struct(f"<{len(variable)}I").pack
    if len(variable) == 1:
        (j,) = variable
        return [pack(len(parts[j])) + b"".join(parts) for parts in zip(*cols)]
    return [
        pack(*[len(parts[j]) for j in variable]) + b"".join(parts) for parts in zip(*cols)
    ]


def encode_batch(batch: Any, column_names: list[str], column_encodings: list[str],
                 column_sizes: list[int | None]) -> list[bytes]:
    """Encode every row of a record batch as ``MDSWriter.encode_sample`` would.

    Args:
        batch (pyarrow.RecordBatch | pyarrow.Table): The rows.
        column_names (List[str]): MDS column names, in the writer's (sorted) order.
        column_encodings (List[str]): Their encodings.
        column_sizes (List[Optional[int]]): Their fixed sizes (``None`` for variable size).

    Returns:
        List[bytes]: One encoded sample per row.

    Raises:
        ValueError: A column is missing, holds nulls, or a value does not fit its encoding;
            the message names the column.
    """
    names = set(batch.schema.names)
    cols = []
    for name, enc in zip(column_names, column_encodings):
        if name not in names:
            raise ValueError(f"column {name!r} is not in the input (it has {sorted(names)})")
        cols.append(_Column(name, enc, batch.column(name)))
    variable = [c for c, size in zip(cols, column_sizes) if size is None]
    for c, size in zip(cols, column_sizes):
        if size is not None and c.fixed_size is not None and c.fixed_size != size:
            raise ValueError(f"column {c.name!r}: encoded size {c.fixed_size} != {size}")
    n = batch.num_rows
    if variable:
        lens = np.zeros((n, len(variable)), np.uint32)
        for j, c in enumerate(variable):
            if c.values is not None:
                lens[:, j] = [len(v) for v in c.values]
            else:
                lens[:, j] = np.diff(c.starts)
                if c.heads is not None:
                    lens[:, j] += np.fromiter((len(h) for h in c.heads), np.uint32, n)
        heads = lens.astype("<u4").tobytes()
        w = 4 * len(variable)
        if len(cols) == 1:
            c = cols[0]
            return [heads[i * w : (i + 1) * w] + c.row(i) for i in range(n)]
        return [
            b"".join([heads[i * w : (i + 1) * w], *[c.row(i) for c in cols]]) for i in range(n)
        ]
    for c, size in zip(cols, column_sizes):
        if size is not None and c.fixed_size is None:
            # Fallback-encoded fixed columns: check their sizes.
            bad = [len(v) for v in (c.values or []) if len(v) != size]
            if bad:
                raise ValueError(f"column {c.name!r}: encoded size {bad[0]} != {size}")
    return [b"".join([c.row(i) for c in cols]) for i in range(n)]
