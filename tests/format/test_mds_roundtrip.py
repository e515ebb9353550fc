"""MDS write -> read round trips over random schemas and values (hypothesis)."""

from __future__ import annotations

import shutil
import tempfile
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from streaming.format import decompress_shard
from streaming.format.index import load_index
from streaming.format.mds.encodings import mds_decode, mds_encode
from streaming.format.mds.writer import MDSWriter
from streaming.local import LocalDataset

_DTYPES = ["uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32",
           "uint64", "int64", "float64"]


def _ints(dtype: str):
    info = np.iinfo(dtype)
    return st.integers(int(info.min), int(info.max))


def _floats(dtype: str):
    width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
    return st.floats(width=width, allow_nan=False)


_arrays = st.sampled_from(_DTYPES).flatmap(
    lambda dt: hnp.arrays(
        dt,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
        elements=_floats(dt) if dt.startswith("float") else _ints(dt),
    )
)

# encoding -> strategy of values (values that round-trip exactly).
ENCODINGS = {
    "bytes": st.binary(max_size=64),
    "str": st.text(max_size=32),
    "int": st.integers(-(2**63), 2**63 - 1),
    **{dt: _ints(dt) for dt in _DTYPES if not dt.startswith("float")},
    **{dt: _floats(dt) for dt in ("float16", "float32", "float64")},
    "str_int": st.integers(),
    "str_float": st.floats(allow_nan=False),
    "str_decimal": st.decimals(allow_nan=False, allow_infinity=False),
    "json": st.recursive(
        st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=8,
    ),
    "pkl": st.tuples(st.integers(), st.text(max_size=5)),
    "ndarray": _arrays,
    "ndarray:int16": hnp.arrays("int16", st.integers(1, 20), elements=_ints("int16")),
    "ndarray:float64:2,3": hnp.arrays("float64", (2, 3), elements=_floats("float64")),
    "ndarray:uint8:5": hnp.arrays("uint8", (5,)),
}


def _same(encoding: str, got, want) -> bool:
    if encoding.startswith("ndarray"):
        return got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    if encoding in _DTYPES:
        return np.array(got).tobytes() == np.array(want, dtype=encoding).tobytes() and type(got).__name__ == encoding
    if encoding == "str_decimal":
        return isinstance(got, Decimal) and str(got) == str(want)
    return type(got) is type(want) and got == want


@st.composite
def datasets(draw):
    names = draw(st.lists(st.text("abcdefgh_", min_size=1, max_size=6), min_size=1, max_size=4, unique=True))
    columns = {name: draw(st.sampled_from(sorted(ENCODINGS))) for name in names}
    count = draw(st.integers(0, 12))
    samples = [{name: draw(ENCODINGS[enc]) for name, enc in columns.items()} for _ in range(count)]
    compression = draw(st.sampled_from([None, "zstd", "gz", "snappy"]))
    size_limit = draw(st.sampled_from([None, 200, "1kb"]))
    return columns, samples, compression, size_limit


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets())
def test_write_then_read_returns_the_samples(dataset) -> None:
    columns, samples, compression, size_limit = dataset
    root = tempfile.mkdtemp()
    try:
        with MDSWriter(out=root + "/d", columns=columns, compression=compression,
                       hashes=["xxh64"], size_limit=size_limit) as writer:
            for sample in samples:
                writer.write(sample)
        index = load_index(root + "/d/index.json")
        assert sum(s["samples"] for s in index["shards"]) == len(samples)
        for shard in index["shards"]:
            if shard["zip_data"]:
                decompress_shard(root + "/d/" + shard["zip_data"]["basename"],
                                 root + "/d/" + shard["raw_data"]["basename"], compression,
                                 validate_hash="xxh64", zip_info=shard["zip_data"],
                                 raw_info=shard["raw_data"])
        ds = LocalDataset(root + "/d")
        assert len(ds) == len(samples)
        for got, want in zip(ds[:], samples):
            assert sorted(got) == sorted(columns)
            for name, enc in columns.items():
                assert _same(enc, got[name], want[name]), (name, enc, got[name], want[name])
    finally:
        shutil.rmtree(root)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(ENCODINGS)).flatmap(lambda e: st.tuples(st.just(e), ENCODINGS[e])))
def test_encode_decode_single_values(pair) -> None:
    encoding, value = pair
    assert _same(encoding, mds_decode(encoding, mds_encode(encoding, value)), value)


def _images():
    pytest.importorskip("PIL")
    from PIL import Image

    rgb = Image.frombytes("RGB", (3, 2), bytes(range(18)))
    gray = Image.frombytes("L", (4, 4), bytes(range(0, 160, 10)))
    return rgb, gray


def test_image_encodings_round_trip(tmp_path) -> None:
    rgb, gray = _images()
    columns = {"p": "pil", "j": "jpeg", "n": "png", "lp": "list[pil]", "lj": "list[jpeg]",
               "ln": "list[png]", "ja": "jpegarray"}
    import io

    jpeg = io.BytesIO()
    rgb.save(jpeg, format="JPEG")
    sample = {"p": gray, "j": rgb, "n": rgb, "lp": [rgb, gray], "lj": [rgb], "ln": [],
              "ja": [jpeg.getvalue(), jpeg.getvalue()]}
    with MDSWriter(out=str(tmp_path / "d"), columns=columns) as writer:
        writer.write(sample)
    got = LocalDataset(str(tmp_path / "d"))[0]
    assert got["p"].tobytes() == gray.tobytes() and got["p"].mode == "L"
    assert got["n"].tobytes() == rgb.tobytes() and got["n"].format == "PNG"
    assert got["j"].size == rgb.size and got["j"].format == "JPEG"
    assert [x.tobytes() for x in got["lp"]] == [rgb.tobytes(), gray.tobytes()]
    assert len(got["lj"]) == 1 and got["ln"] == []
    assert len(got["ja"]) == 2 and got["ja"][0].size == rgb.size
