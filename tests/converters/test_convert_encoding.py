"""Bulk row encoders of the converters == MDSWriter.encode_sample, and the JSONL scanner's twin."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streaming._kernels import _jsonl
from streaming.converters.arrow import encode_batch, encode_rows, infer_mds_columns
from streaming.converters.jsonl import (
    chunk_ranges,
    encode_jsonl_range,
    encode_scanned,
    infer_json_columns,
)
from streaming.format.mds.writer import MDSWriter

COLUMNS = {
    "i": "int64", "u": "uint16", "f": "float32", "d": "float64", "s": "str",
    "t": "ndarray:int32", "v": "ndarray:float64",
}


@pytest.fixture(scope="module")
def writer(tmp_path_factory):
    """An MDSWriter used only for its encode_sample (nothing is written)."""
    w = MDSWriter(out=str(tmp_path_factory.mktemp("w")), columns=COLUMNS)
    yield w
    w.finish()


def _expected(writer: MDSWriter, rows: list[dict]) -> list[bytes]:
    """What MDSWriter makes of the rows given as the reference's users give them."""
    out = []
    for row in rows:
        sample = {}
        for name, enc in writer.columns.items():
            value = row[name]
            if enc.startswith("ndarray:"):
                value = np.asarray(value, enc.split(":")[1])
            elif enc in ("uint16", "float32", "float64", "int64"):
                value = np.dtype(enc).type(value)
            sample[name] = value
        out.append(writer.encode_sample(sample))
    return out


row_strategy = st.fixed_dictionaries(
    {
        "i": st.integers(-(2**63), 2**63 - 1),
        "u": st.integers(0, 2**16 - 1),
        "f": st.floats(width=32, allow_nan=False, allow_infinity=False),
        "d": st.floats(allow_nan=False, allow_infinity=False),
        "s": st.text(max_size=12),
        "t": st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=300),
        "v": st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=5),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(row_strategy, min_size=1, max_size=8))
def test_bulk_encoders_match_mdswriter(writer, rows) -> None:
    args = (writer.column_names, writer.column_encodings, writer.column_sizes)
    expected = _expected(writer, rows)
    assert encode_rows(rows, *args) == expected
    table = pa.Table.from_pylist(
        rows,
        schema=pa.schema([("i", pa.int64()), ("u", pa.int64()), ("f", pa.float64()),
                          ("d", pa.float64()), ("s", pa.string()),
                          ("t", pa.list_(pa.int64())), ("v", pa.list_(pa.float64()))]),
    )
    assert encode_batch(table.to_batches()[0], *args) == expected
    # The scanner reads the same rows from JSON text (escaped or non-ASCII text: declined).
    text = "".join(json.dumps(r) + "\n" for r in rows).encode()
    scanned = encode_scanned(text, *args)
    plain = all(
        r["s"].isascii() and '"' not in r["s"] and "\\" not in r["s"] and r["s"].isprintable()
        and abs(r["i"]) < 10**18  # the scanner leaves 19-digit integers to the general path
        for r in rows
    )
    if plain:
        assert scanned == expected
    else:
        assert scanned is None or scanned == expected


def _scan_twin(data: bytes, keys: list[str], kinds: list[int]):
    """Pure-Python twin of scan_jsonl for the lines it accepts."""
    rows = [json.loads(line) for line in data.split(b"\n") if line.strip()]
    cols = []
    for key, kind in zip(keys, kinds):
        values = [r[key] for r in rows]
        if kind == _jsonl.KIND_INT:
            cols.append(np.array(values, np.int64))
        elif kind == _jsonl.KIND_FLOAT:
            cols.append(np.array(values, np.float64))
        elif kind == _jsonl.KIND_STR:
            cols.append(values)
        else:
            lengths = [len(v) for v in values]
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            dtype = np.int64 if kind == _jsonl.KIND_INT_LIST else np.float64
            flat = np.array([x for v in values for x in v], dtype)
            cols.append((offsets, flat))
    return len(rows), cols


ascii_text = st.text(st.characters(min_codepoint=32, max_codepoint=126,
                                   blacklist_characters='"\\'), max_size=10)
scan_rows = st.fixed_dictionaries(
    {
        "a": st.integers(-(10**18) + 1, 10**18 - 1),
        "b": st.floats(allow_nan=False, allow_infinity=False),
        "c": ascii_text,
        "d": st.lists(st.integers(-(10**18) + 1, 10**18 - 1), max_size=6),
        "e": st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=4),
    },
    optional={"zz": st.recursive(st.none() | st.booleans() | st.text(max_size=4),
                                 lambda c: st.lists(c, max_size=3)
                                 | st.dictionaries(st.text(max_size=3), c, max_size=3))},
)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(scan_rows, max_size=6), indent=st.sampled_from([None, 0]),
       separators=st.sampled_from([(", ", ": "), (",", ":")]))
def test_scanner_matches_python_twin(rows, indent, separators) -> None:
    data = "".join(json.dumps(r, separators=separators) + "\n" for r in rows).encode()
    keys = ["a", "b", "c", "d", "e"]
    kinds = [_jsonl.KIND_INT, _jsonl.KIND_FLOAT, _jsonl.KIND_STR, _jsonl.KIND_INT_LIST,
             _jsonl.KIND_FLOAT_LIST]
    got = _jsonl.scan_jsonl(data, [k.encode() for k in keys], kinds)
    assert got is not None
    count, cols, ints_only = got
    want_count, want = _scan_twin(data, keys, kinds)
    assert count == want_count
    # json.dumps writes floats with a '.' or an exponent: only empty columns are all integers.
    assert ints_only == [True, not rows, True, True, not any(r["e"] for r in rows)]
    np.testing.assert_array_equal(cols[0], want[0])
    np.testing.assert_array_equal(cols[1], want[1])  # strtod is correctly rounded, as Python
    assert [data[a:b].decode() for a, b in cols[2].reshape(-1, 2).tolist()] == want[2]
    for j in (3, 4):
        np.testing.assert_array_equal(cols[j][0], want[j][0])
        np.testing.assert_array_equal(cols[j][1], want[j][1])


@pytest.mark.parametrize(
    "line",
    [
        b'{"a": 1.5}', b'{"a": "x"}', b'{"a": true}', b'{"a": [1]}', b'{"b": 1}',
        b'{"a": 1, "a": 2}', b'{"a": 1', b'[1]', b'{"a": 01}', b'{"a": 1} x',
        b'{"a": 1234567890123456789}', b'{"a": -}', b'{"\\u0061": 1}', b'{"a": 1,}',
        b'{"a": 1, "z": "unterminated}', b'{"a": 1, "z": [1, 2}',
    ],
)
def test_scanner_declines_what_it_does_not_handle(line) -> None:
    assert _jsonl.scan_jsonl(line + b"\n", [b"a"], [_jsonl.KIND_INT]) is None
    # Truncating the input anywhere never reads out of bounds: it declines or parses a prefix.
    for cut in range(len(line)):
        _jsonl.scan_jsonl(line[:cut], [b"a"], [_jsonl.KIND_INT])


def test_scanner_argument_checks() -> None:
    with pytest.raises(ValueError):
        _jsonl.scan_jsonl(b"", [], [])
    with pytest.raises(ValueError):
        _jsonl.scan_jsonl(b"", [b"a"], [9])
    with pytest.raises(TypeError):
        _jsonl.scan_jsonl(b"", ["a"], [0])
    assert _jsonl.scan_jsonl(b"\n \n", [b"a"], [0])[0] == 0


def test_jsonl_chunks_and_fallback_give_the_same_rows(tmp_path) -> None:
    rng = np.random.default_rng(1)
    lines = []
    for i in range(3000):
        row = {"id": i, "tokens": rng.integers(0, 1000, int(rng.integers(1, 40))).tolist()}
        if i % 997 == 0:
            row["note"] = "caf\u00e9 \"quoted\""  # unwanted keys: skipped by the scanner
        lines.append(json.dumps(row))
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(lines) + "\n\n")
    ranges = chunk_ranges(str(path), 4096)
    assert len(ranges) > 10 and ranges[0][0] == 0 and ranges[-1][1] == path.stat().st_size
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    names, encs, sizes = ["id", "tokens"], ["int64", "ndarray:int16"], [8, None]
    rows = [r for a, b in ranges for r in encode_jsonl_range(str(path), a, b, names, encs, sizes)]
    parsed = [json.loads(x) for x in lines]
    assert rows == encode_rows(parsed, names, encs, sizes)
    assert infer_json_columns(str(path)) == {"id": "int64", "tokens": "ndarray:int64",
                                             "note": "str"}


def test_bad_values_name_their_column() -> None:
    names, encs, sizes = ["t"], ["ndarray:uint8"], [None]
    with pytest.raises(ValueError, match="'t'"):
        encode_rows([{"t": [1, 300]}], names, encs, sizes)
    with pytest.raises(ValueError, match="'t'"):
        encode_batch(pa.table({"t": [[1, 300]]}).to_batches()[0], names, encs, sizes)
    with pytest.raises(ValueError, match="empty"):
        encode_batch(pa.table({"t": [[1], []]}).to_batches()[0], names, encs, sizes)
    with pytest.raises(ValueError, match="null"):
        encode_batch(pa.table({"x": [1, None]}).to_batches()[0], ["x"], ["int64"], [8])
    with pytest.raises(ValueError, match="'x'"):
        encode_rows([{"x": 1.5}], ["x"], ["int32"], [4])


def test_arrow_schema_inference() -> None:
    schema = pa.schema([
        ("a", pa.int32()), ("b", pa.float64()), ("c", pa.string()), ("d", pa.binary()),
        ("e", pa.list_(pa.uint16())), ("f", pa.bool_()), ("g", pa.struct([("x", pa.int8())])),
    ])
    assert infer_mds_columns(schema) == {
        "a": "int32", "b": "float64", "c": "str", "d": "bytes", "e": "ndarray:uint16",
        "f": "json", "g": "json",
    }
    with pytest.raises(ValueError, match="timestamp"):
        infer_mds_columns(pa.schema([("t", pa.timestamp("s"))]))
