"""JSONL to MDS rows, chunk by chunk.

A JSONL file is cut at line boundaries into chunks of a few MiB. A chunk is first given to the
compiled scanner (``streaming._kernels._jsonl``), which reads plain lines of numbers, ASCII
strings and number arrays straight into typed columns; any chunk it declines is parsed with
orjson (or the standard library) and encoded value by value
(:func:`streaming.converters.arrow.encode_rows`), which also reports bad values by column.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import numpy as np

__all__ = [
    "chunk_ranges",
    "encode_jsonl_range",
    "encode_scanned",
    "infer_json_columns",
    "iter_encoded_jsonl",
]

CHUNK_BYTES = 8 << 20


def _loads() -> Callable[[bytes], Any]:
    try:
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover - orjson is a dependency; stdlib is the fallback
        import json

        return json.loads


def chunk_ranges(path: str, chunk_bytes: int = CHUNK_BYTES) -> list[tuple[int, int]]:
    """Cut a file into ``[start, end)`` byte ranges of about ``chunk_bytes``, at newlines.

    Args:
        path (str): The file.
        chunk_bytes (int): Target range size.

    Returns:
        List[Tuple[int, int]]: Consecutive ranges covering the file.
    """
    size = os.path.getsize(path)
    ranges = []
    start = 0
    with open(path, "rb") as fp:
        while start < size:
            fp.seek(min(start + chunk_bytes, size))
            fp.readline()
            end = min(fp.tell(), size)
            if end <= start:
                end = size
            ranges.append((start, end))
            start = end
    return ranges


def _parse(path: str, start: int, data: bytes) -> list[dict[str, Any]]:
    loads = _loads()
    rows = []
    offset = start
    for line in data.split(b"\n"):
        if line.strip():
            try:
                obj = loads(line)
            except ValueError as err:
                raise ValueError(f"{path}: byte {offset}: not valid JSON: {err}") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}: byte {offset}: expected a JSON object per line")
            rows.append(obj)
        offset += len(line) + 1
    return rows


def read_range(path: str, start: int, end: int) -> bytes:
    """The bytes ``[start, end)`` of a file."""
    with open(path, "rb") as fp:
        fp.seek(start)
        return fp.read(end - start)


def encode_jsonl_range(
    path: str, start: int, end: int, names: list[str], encodings: list[str],
    sizes: list[int | None],
) -> list[bytes]:
    """Parse the JSON lines in ``[start, end)`` and encode them as MDS rows.

    Args:
        path (str): The file.
        start (int): First byte (a line start).
        end (int): End byte (a line end).
        names (List[str]): MDS column names, sorted.
        encodings (List[str]): Their encodings.
        sizes (List[int | None]): Their fixed sizes.

    Returns:
        List[bytes]: Encoded rows, in file order.

    Raises:
        ValueError: A line is not a JSON object or a value does not fit its column (the
            message names the file, and the byte offset or column).
    """
    from streaming.converters.arrow import encode_rows

    data = read_range(path, start, end)
    fast = encode_scanned(data, names, encodings, sizes)
    if fast is not None:
        return fast
    rows = _parse(path, start, data)
    try:
        return encode_rows(rows, names, encodings, sizes)
    except ValueError as err:
        raise ValueError(f"{path}: bytes {start}-{end}: {err}") from None


def _scan_kind(encoding: str) -> int | None:
    """The scanner kind that reads values of an MDS encoding, if the scanner can."""
    from streaming._kernels import _jsonl
    from streaming.converters.arrow import _FIXED, _NDARRAY_DTYPES

    if encoding in _FIXED:
        return _jsonl.KIND_FLOAT if np.dtype(_FIXED[encoding]).kind == "f" else _jsonl.KIND_INT
    if encoding == "str":
        return _jsonl.KIND_STR
    if encoding.startswith("ndarray:") and encoding.count(":") == 1:
        dtype = encoding.split(":")[1]
        if dtype in _NDARRAY_DTYPES:
            return _jsonl.KIND_FLOAT_LIST if dtype.startswith("float") else _jsonl.KIND_INT_LIST
    return None


def _exact_cast(values: np.ndarray, dtype: np.dtype, check: bool = True) -> np.ndarray | None:
    """``values`` as ``dtype`` (little-endian), or ``None`` if ``check`` and some value changes.

    A value changes when it is out of range, not an integer (for integer types), or not exactly
    representable (float16/float32, which includes overflowing to infinity). The general path
    raises for those, except in one case the caller knows about: scalar floats cast from a
    column with a float literal in it (``check=False``), which it casts silently, as NumPy does.
    """
    dtype = np.dtype(dtype).newbyteorder("<")
    if values.dtype == dtype:
        return values
    with np.errstate(all="ignore"):
        cast = values.astype(dtype)
    # Compared in float64 for float targets, as NumPy compares the general path's int64 or
    # float64 values with their cast (the scanner declines NaN and infinity, so == is exact).
    if check and not np.array_equal(cast, values):
        return None
    return cast


def encode_scanned(data: bytes, names: list[str], encodings: list[str],
                   sizes: list[int | None]) -> list[bytes] | None:
    """Encode JSON lines as MDS rows with the compiled scanner, if it can read them all.

    Args:
        data (bytes): Whole JSON lines.
        names (List[str]): MDS column names, sorted.
        encodings (List[str]): Their encodings.
        sizes (List[int | None]): Their fixed sizes.

    Returns:
        Optional[List[bytes]]: The rows, the same bytes as :func:`encode_rows` of the parsed
        lines; ``None`` when a column or a line needs the general path (which also reports
        errors properly).
    """
    from streaming._kernels import _jsonl
    from streaming.converters.arrow import _FIXED, _shape_head, join_columns

    kinds = [_scan_kind(e) for e in encodings]
    if any(k is None for k in kinds) or not all(n.isascii() for n in names):
        return None
    scanned = _jsonl.scan_jsonl(data, [n.encode() for n in names], kinds)
    if scanned is None:
        return None
    count, columns, ints_only = scanned
    parts: list[list[bytes]] = []
    for enc, kind, col, only_ints in zip(encodings, kinds, columns, ints_only):
        if kind in (_jsonl.KIND_INT, _jsonl.KIND_FLOAT):
            # The general path (encode_rows) makes one array of the chunk's values: int64 if
            # they were all integer literals, and then checks that the cast keeps them; float64
            # if any was a float literal, and then casts without a check.
            cast = _exact_cast(col, _FIXED[enc], check=kind == _jsonl.KIND_INT or only_ints)
            if cast is None:
                return None
            raw, item = cast.tobytes(), cast.dtype.itemsize
            parts.append([raw[i : i + item] for i in range(0, len(raw), item)])
        elif kind == _jsonl.KIND_STR:
            parts.append([data[a:b] for a, b in col.tolist()])
        else:
            offsets, values = col
            lengths = np.diff(offsets)
            if count and lengths.min() == 0:
                return None  # empty arrays: the general path raises the reference's error
            # The general path checks every list's cast, of ints or of floats alike.
            cast = _exact_cast(values, enc.split(":")[1])
            if cast is None:
                return None
            raw, item = cast.tobytes(), cast.dtype.itemsize
            bounds = (offsets * item).tolist()
            parts.append([
                _shape_head(n) + raw[a:b]
                for n, a, b in zip(lengths.tolist(), bounds[:-1], bounds[1:])
            ])
    return join_columns(parts, sizes)


def infer_json_columns(path: str, sample_bytes: int = 1 << 20) -> dict[str, str]:
    """Infer MDS columns from the first lines of a JSONL file.

    ints -> ``int64``; numbers with a float -> ``float64``; strings -> ``str``; lists of ints
    -> ``ndarray:int64``; lists of numbers -> ``ndarray:float64``; anything else (booleans,
    objects, nulls, nested or mixed values) -> ``json``.

    Args:
        path (str): The file.
        sample_bytes (int): How much of the file to look at.

    Returns:
        Dict[str, str]: Column name -> encoding, in first-seen key order.

    Raises:
        ValueError: No rows in the sample.
    """
    ranges = chunk_ranges(path, sample_bytes)
    rows = _parse(path, 0, read_range(path, *ranges[0])) if ranges else []
    if not rows:
        raise ValueError(f"{path}: no rows to infer columns from; pass --columns")
    kinds: dict[str, set[str]] = {}
    for row in rows:
        for key, value in row.items():
            kinds.setdefault(key, set()).add(_kind(value))
    columns = {}
    for key, seen in kinds.items():
        if seen == {"int"}:
            columns[key] = "int64"
        elif seen <= {"int", "float"}:
            columns[key] = "float64"
        elif seen == {"str"}:
            columns[key] = "str"
        elif seen == {"ints"}:
            columns[key] = "ndarray:int64"
        elif seen <= {"ints", "floats"}:
            columns[key] = "ndarray:float64"
        else:
            columns[key] = "json"
    return columns


def _kind(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "other"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list) and value:
        if all(type(v) is int for v in value):
            return "ints"
        if all(type(v) in (int, float) for v in value):
            return "floats"
    return "other"


def iter_encoded_jsonl(
    path: str, names: list[str], encodings: list[str], sizes: list[int | None],
) -> Iterator[list[bytes]]:
    """Encode a JSONL file chunk by chunk.

    Args:
        path (str): The file.
        names (List[str]): MDS column names, sorted.
        encodings (List[str]): Their encodings.
        sizes (List[int | None]): Their fixed sizes.

    Yields:
        List[bytes]: Each chunk's encoded rows, in file order.
    """
    for start, end in chunk_ranges(path):
        yield encode_jsonl_range(path, start, end, names, encodings, sizes)
