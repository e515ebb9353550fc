"""The JSONL scanner's fast path gives exactly what the general path gives, or declines.

``encode_jsonl_range`` reads a chunk with the compiled scanner when it can and with orjson plus
the per-value encoders otherwise, so which path a line takes depends on its neighbours in the
same 8 MiB chunk. Both must agree: same bytes for every value, and the same lines accepted.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.converters import jsonl
from streaming.converters.arrow import encode_rows
from streaming.converters.jsonl import encode_jsonl_range, encode_scanned
from streaming.format.mds.encodings import get_mds_encoded_size


def _general(data: bytes, names: list[str], encodings: list[str]) -> list[bytes] | ValueError:
    """What the general path makes of a chunk: its rows, or the error it raises."""
    sizes = [get_mds_encoded_size(e) for e in encodings]
    try:
        return encode_rows(jsonl._parse("chunk.jsonl", 0, data), names, encodings, sizes)
    except ValueError as err:
        return err


def _fast(data: bytes, names: list[str], encodings: list[str]) -> list[bytes] | None:
    sizes = [get_mds_encoded_size(e) for e in encodings]
    return encode_scanned(data, names, encodings, sizes)


def _assert_agree(data: bytes, names: list[str], encodings: list[str]) -> list[bytes] | None:
    fast = _fast(data, names, encodings)
    if fast is not None:
        general = _general(data, names, encodings)
        assert not isinstance(general, ValueError), f"fast path accepted what fails: {general}"
        assert fast == general
    return fast


@pytest.mark.parametrize(
    ("line", "encoding", "fast"),
    [
        # Numbers that overflow a double: orjson rejects them (strtod says infinity).
        (b'{"x": 1e400}', "float64", False),
        (b'{"x": -1e400}', "float32", False),
        (b'{"x": [1.5, 1e400]}', "ndarray:float64", False),
        # -0 is the integer 0 to a JSON parser, so +0.0; -0.0 is a float, so -0.0.
        (b'{"x": -0}', "float64", True),
        (b'{"x": -0}\n{"x": 2.5}', "float64", True),
        (b'{"x": -0.0}', "float64", True),
        (b'{"x": [-0, 1.5]}', "ndarray:float64", True),
        (b'{"x": [-0]}', "ndarray:float32", True),
        # Integers that change when cast to float16/float32: the general path raises.
        (b'{"x": 70000}', "float16", False),
        (b'{"x": 2049}', "float16", False),
        (b'{"x": 16777217}', "float32", False),
        (b'{"x": 2048}\n{"x": -65504}', "float16", True),
        # A column with a float literal is cast without a check, by both paths.
        (b'{"x": 70000.5}', "float16", True),
        (b'{"x": 70000}\n{"x": 0.5}', "float16", True),
        (b'{"x": 0.1}', "float32", True),
        # Lists are checked whatever their literals.
        (b'{"x": [0.1]}', "ndarray:float32", False),
        (b'{"x": [70000]}', "ndarray:float16", False),
        (b'{"x": [1, 2.5]}', "ndarray:float16", True),
        # Integers beyond 18 digits: left to the parser (big ints, or floats in orjson).
        (b'{"x": 12345678901234567890}', "float64", False),
        (b'{"x": [1, 12345678901234567890]}', "ndarray:float64", False),
    ],
)
def test_wanted_numbers_read_as_the_general_path_reads_them(line, encoding, fast) -> None:
    got = _assert_agree(line + b"\n", ["x"], [encoding])
    assert (got is not None) == fast


@pytest.mark.parametrize(
    "value",
    [
        b"nonsense garbage", b"nan", b"NaN", b"Infinity", b"-", b"@@", b"", b"1.5[[1]]",
        b"tru", b"nul", b"01", b"1.", b".5", b"1e", b"+1", b"[1,]", b"[,1]", b"[1 2]", b"[1",
        b'{"a"}', b'{"a":}', b'{"a" 1}', b"{1: 2}", b'{"a": 1,}', b'{"a": 1 "b": 2}',
        b"[1}", b'{"a": 1]', b'"\\x"', b'"\\u12"', b'"\\ud800"', b'"\\udc00"',
        b'"\\ud800\\u0041"', b'"\xff"', b'"\xc0\x80"', b'"\xed\xa0\x80"', b'"\xf4\x90\x80\x80"',
        b'"\xe2\x82"', b'"\x01"', b'"tab\there"', b"1e400", b"[-1e400]",
        # Past DBL_MAX (orjson: "number is infinity"), whatever the spelling.
        b"1.7976931348623159e308", b"-17976931348623159" + b"0" * 292, b"1" + b"0" * 309,
        b"1" + b"0" * 20 + b"e290", b"0.00001e314", b"1e99999999999999999999",
        b"[" * 100 + b"]" * 100,  # deeper than the scanner follows: the parser decides
    ],
)
def test_keys_not_wanted_must_still_hold_valid_json(value) -> None:
    data = b'{"x": 1, "junk": ' + value + b', "y": 2}\n'
    assert _fast(data, ["x", "y"], ["int64", "int64"]) is None
    _assert_agree(data, ["x", "y"], ["int64", "int64"])


@pytest.mark.parametrize(
    "value",
    [
        b"null", b"true", b"false", b"-0", b"1.5e-3", b"12345678901234567", b'""', b"[]", b"{}",
        b'"caf\xc3\xa9 \\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00 \xf0\x9f\x98\x80"',
        b'{"a": [1, -2.5E+3, {"b": null}, [[]]], "c": {"d": "e"}}', b"[ 1 , 2 ]",
        b"[" * 64 + b"]" * 64,
        # Up to DBL_MAX, and any length (the scanner does not convert what it skips).
        b"1.7976931348623157e308", b"-1.5e308", b"1e308", b"1" + b"0" * 300,
        b"0." + b"0" * 500 + b"1e400", b"0." + b"1" * 100, b"1e-99999999999999999999", b"0e999",
    ],
)
def test_valid_values_of_keys_not_wanted_stay_on_the_fast_path(value) -> None:
    data = b'{"x": 1, "junk": ' + value + b', "y": 2}\n'
    assert _assert_agree(data, ["x", "y"], ["int64", "int64"]) is not None


TOKENS = [
    "0", "-0", "1", "-1", "255", "256", "-129", "65504", "65520", "70000", "2049", "16777217",
    "123456789012345678", "9223372036854775807", "18446744073709551615", "1.5", "-0.0", "0.1",
    "1e5", "1E-3", "1e400", "-1e400", "1e-400", "3.4028235e38", "3.5e38", "00", "01", ".5",
    "-", "1.", '"abc"', '"a\\"b"', '"\\u00e9"', '"é"', '""', '"\\ud800"', "true", "null", "[]",
    "[1,2]", "[1, 2.5]", "[ 1 , 2 ]", "[1,]", "[,1]", '{"a":1}', '{"a"}', "[[1]]", "[-0]",
    "[1e400]", "[0.1]", "[70000]", "nan", "NaN", "Infinity", "@@", "[1 2]", '"x', "{", "}",
    "]", " ",
]
ENCODINGS = ["int64", "int32", "uint8", "uint64", "int8", "float64", "float32", "float16", "str",
             "ndarray:int64", "ndarray:uint8", "ndarray:float64", "ndarray:float32"]


@st.composite
def jsonl_chunks(draw: st.DrawFn) -> tuple[bytes, list[str], list[str]]:
    names = ["k0", "k1", "k2"][: draw(st.integers(1, 3))]
    encodings = [draw(st.sampled_from(ENCODINGS)) for _ in names]
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        keys = names + draw(st.lists(st.sampled_from(["zz", "k0"]), max_size=2))
        keys = draw(st.permutations(keys))
        parts = []
        for key in keys:
            value = draw(st.sampled_from(TOKENS))
            if draw(st.booleans()):
                value += draw(st.sampled_from(["", " ", ","])) + draw(st.sampled_from(TOKENS))
            parts.append(f'"{key}":{draw(st.sampled_from(["", " "]))}{value}')
        lines.append("{" + ", ".join(parts) + "}")
    return ("\n".join(lines) + "\n").encode(), names, encodings


@settings(max_examples=400, deadline=None)
@given(chunk=jsonl_chunks())
def test_fast_path_agrees_with_the_general_path(chunk) -> None:
    _assert_agree(*chunk)


def test_a_chunk_of_blank_lines_has_no_rows(tmp_path) -> None:
    # The general path (here: a json column the scanner does not read) made np.array([]), a
    # float64 array, of an empty integer column, and rejected it as "non-integer values".
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"i": 1, "m": {}}\n\n \n')
    names, encodings, sizes = ["i", "m"], ["int64", "json"], [8, None]
    assert encode_rows([], names, encodings, sizes) == []
    assert encode_jsonl_range(str(path), 18, 21, names, encodings, sizes) == []


@pytest.mark.parametrize(
    ("text", "columns", "error"),
    [
        ('{"x": 1.5, "y": 1}\n{"x": 1e400, "y": 2}\n{"x": -0, "y": 3}\n',
         {"x": "float64", "y": "int64"}, "infinity"),
        ('{"x": 1.5, "y": 1}\n{"x": 2.5, "y": 2, "junk": nonsense garbage}\n',
         {"x": "float64", "y": "int64"}, "not valid JSON"),
        ('{"h": 70000}\n', {"h": "float16"}, "out of range"),
    ],
)
def test_a_file_reads_the_same_whichever_path_takes_it(tmp_path, monkeypatch, text, columns,
                                                       error) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(text)
    names = sorted(columns)
    encodings = [columns[n] for n in names]
    sizes = [get_mds_encoded_size(e) for e in encodings]
    args = (str(path), 0, len(text), names, encodings, sizes)
    with pytest.raises(ValueError, match=error):
        encode_jsonl_range(*args)
    monkeypatch.setattr(jsonl, "encode_scanned", lambda *a: None)
    with pytest.raises(ValueError, match=error):
        encode_jsonl_range(*args)


def test_negative_zero_integer_is_positive_zero() -> None:
    rows = _assert_agree(b'{"x": -0}\n{"x": -0.0}\n', ["x"], ["float64"])
    assert rows == [struct.pack("<d", 0.0), struct.pack("<d", -0.0)]
