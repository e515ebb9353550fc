"""open_dataset: samples and Arrow tables equal LocalDataset's, fetching only the shards needed."""

from __future__ import annotations

import decimal
import io
import json
import os
import pickle

import numpy as np
import pytest

from streaming.explore import open_dataset
from streaming.explore.dataset import Undecoded

Image = pytest.importorskip("PIL.Image", reason="Pillow is needed for image columns")

COLUMNS = {
    "id": "int",
    "small": "int8",
    "count": "uint16",
    "half": "float16",
    "single": "float32",
    "double": "float64",
    "text": "str",
    "blob": "bytes",
    "big": "str_int",
    "ratio": "str_float",
    "price": "str_decimal",
    "grid": "ndarray:float32:2,3",
    "ragged": "ndarray:int64",
    "any_array": "ndarray",
    "photo": "jpeg",
    "icon": "png",
    "raw_image": "pil",
    "frames": "list[png]",
    "meta": "json",
    "obj": "pkl",
}
N = 23


def make_sample(i: int) -> dict:
    rng = np.random.default_rng(i)
    pixels = rng.integers(0, 255, (8, 10, 3), dtype=np.uint8)
    return {
        "id": i,
        "small": np.int8(i - 10),
        "count": np.uint16(i * 1000),
        "half": np.float16(i / 4),
        "single": np.float32(i / 3),
        "double": i / 7,
        "text": "word " * i + "<&>",
        "blob": bytes(range(i % 17)),
        "big": 10**30 + i,
        "ratio": i / 9,
        "price": decimal.Decimal(f"{i}.05"),
        "grid": rng.standard_normal((2, 3)).astype(np.float32),
        "ragged": np.arange(1 + i % 4, dtype=np.int64),
        "any_array": np.ones((1 + i % 2, 2), np.uint8 if i % 2 else np.float64),
        "photo": Image.fromarray(pixels),
        "icon": Image.fromarray(pixels[..., 0]),
        "raw_image": Image.fromarray(pixels),
        "frames": [Image.fromarray(pixels[:4]), Image.fromarray(pixels[4:])],
        "meta": {"i": i, "tags": ["a", "b"][: i % 3]},
        "obj": {"set": {i}},
    }


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """The same samples written uncompressed (for LocalDataset) and zstd-compressed."""
    from streaming import MDSWriter

    root = tmp_path_factory.mktemp("explore-ds")
    plain, packed = str(root / "plain"), str(root / "packed")
    for out, compression in ((plain, None), (packed, "zstd")):
        with MDSWriter(out=out, columns=COLUMNS, compression=compression, hashes=["xxh64"],
                       size_limit="6kb") as writer:
            for i in range(N):
                writer.write(make_sample(i))
    return plain, packed


def same_image(a, b) -> bool:
    return a.size == b.size and a.mode == b.mode and a.tobytes() == b.tobytes()


def png_or_jpeg(data: bytes):
    return Image.open(io.BytesIO(data))


def test_dataset_has_several_compressed_shards(datasets):
    _, packed = datasets
    ds = open_dataset(packed)
    assert ds.index.num_shards >= 4 and len(ds) == N
    assert all(name.endswith(".zstd") for name in os.listdir(packed) if name.startswith("shard"))


def test_samples_equal_local_dataset(datasets):
    from streaming import LocalDataset

    plain, packed = datasets
    local = LocalDataset(plain)
    with open_dataset(packed, allow_unsafe_types=True) as ds:
        for i in [0, 5, N - 1]:
            ours, theirs = ds.sample(i), local[i]
            assert set(ours) == set(theirs) == set(COLUMNS)
            for name, value in theirs.items():
                if isinstance(value, np.ndarray):
                    np.testing.assert_array_equal(ours[name], value)
                    assert ours[name].dtype == value.dtype
                elif name in ("photo", "icon", "raw_image"):
                    assert same_image(ours[name], value)
                elif name == "frames":
                    assert all(same_image(a, b) for a, b in zip(ours[name], value))
                else:
                    assert ours[name] == value, name
        head = ds.head(7)
        assert [s["id"] for s in head] == list(range(7))
        assert [s.index for s in ds[20:23]] == [20, 21, 22]
        assert ds[-1]["id"] == N - 1


def test_to_arrow_round_trip_equals_local_dataset(datasets):
    from streaming import LocalDataset

    plain, packed = datasets
    local = LocalDataset(plain)
    limit = 17
    with open_dataset(packed) as ds:
        table = ds.to_arrow(limit=limit)
    assert table.num_rows == limit
    assert table.column_names == sorted(COLUMNS)
    assert table.schema.field("photo").metadata[b"encoding"] == b"jpeg"
    rows = table.to_pylist()
    grid = table.column("grid").combine_chunks().to_numpy_ndarray()
    assert grid.shape == (limit, 2, 3) and grid.dtype == np.float32
    for i in range(limit):
        want, got = local[i], rows[i]
        for name in ("id", "small", "count", "text", "blob", "price"):
            assert got[name] == want[name], name
        assert int(got["big"]) == want["big"]  # beyond int64: kept as its decimal text
        for name in ("half", "single", "double", "ratio"):
            assert got[name] == pytest.approx(float(want[name]), rel=0, abs=0), name
        np.testing.assert_array_equal(grid[i], want["grid"])
        np.testing.assert_array_equal(np.array(got["ragged"]["data"]).reshape(
            got["ragged"]["shape"]), want["ragged"])
        any_array = np.frombuffer(got["any_array"]["data"], got["any_array"]["dtype"]).reshape(
            got["any_array"]["shape"])
        np.testing.assert_array_equal(any_array, want["any_array"])
        assert any_array.dtype == want["any_array"].dtype
        for name in ("photo", "icon", "raw_image"):
            assert same_image(png_or_jpeg(got[name]), want[name]), name
        assert [same_image(png_or_jpeg(f), w) for f, w in zip(got["frames"], want["frames"])] \
            == [True, True]
        assert json.loads(got["meta"]) == want["meta"]
        assert pickle.loads(got["obj"]) == want["obj"]  # kept as bytes, unpickled only here


def test_to_arrow_columns_and_unknown_column(datasets):
    _, packed = datasets
    with open_dataset(packed) as ds:
        table = ds.to_arrow(columns=["text", "id"], limit=3)
        assert table.column_names == ["text", "id"]
        assert table.column("id").to_pylist() == [0, 1, 2]
        assert ds.to_arrow(columns=["id"], limit=0).num_rows == 0
        with pytest.raises(KeyError, match="nope"):
            ds.to_arrow(columns=["nope"])


def test_to_pandas(datasets):
    pytest.importorskip("pandas")
    _, packed = datasets
    with open_dataset(packed) as ds:
        frame = ds.to_pandas(columns=["id", "text"], limit=4)
    assert frame["id"].tolist() == [0, 1, 2, 3]


def test_pickle_columns_stay_encoded_by_default(datasets):
    _, packed = datasets
    with open_dataset(packed) as ds:
        value = ds.sample(3)["obj"]
    assert isinstance(value, Undecoded) and value.encoding == "pkl"
    assert pickle.loads(value.data) == {"set": {3}}


def test_only_needed_shards_are_fetched(datasets, tmp_path):
    _, packed = datasets
    cache = tmp_path / "cache"
    with open_dataset(packed, cache_dir=str(cache)) as ds:
        ds.head(1)
        assert sorted(os.listdir(cache)) == [ds.index.shards[0].basename]
        last = ds.index.shards[-1]
        ds.sample(-1)
        assert sorted(os.listdir(cache)) == sorted([ds.index.shards[0].basename, last.basename])
    assert os.path.isdir(cache)  # a cache_dir given by the caller is kept


def test_temporary_cache_is_removed_on_close(datasets):
    _, packed = datasets
    ds = open_dataset(packed)
    ds.head(1)
    cache = ds.cache_dir
    assert os.listdir(cache)
    ds.close()
    assert not os.path.exists(cache)


def test_corrupt_shard_is_reported(datasets, tmp_path):
    import shutil

    _, packed = datasets
    copy = tmp_path / "copy"
    shutil.copytree(packed, copy)
    ds = open_dataset(str(copy), validate_hash="xxh64")
    victim = copy / ds.index.shards[1].zip_basename
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    ds.head(1)  # shard 0 is fine
    with pytest.raises(ValueError, match=r"xxh64.*index\.json") as err:
        ds.sample(ds.index.shards[1].first_sample)
    assert str(victim) in str(err.value)
    victim.write_bytes(bytes(data[:-5]))
    with pytest.raises(ValueError, match="bytes"):
        open_dataset(str(copy)).sample(ds.index.shards[1].first_sample)


def test_json_and_csv_datasets(tmp_path):
    from streaming import CSVWriter, JSONWriter, LocalDataset

    for writer_cls, name in ((JSONWriter, "json"), (CSVWriter, "csv")):
        out = str(tmp_path / name)
        with writer_cls(out=out, columns={"n": "int", "s": "str", "f": "float"},
                        size_limit=64) as writer:
            for i in range(9):
                writer.write({"n": i, "s": f"row{i}", "f": i / 2})
        local = LocalDataset(out)
        with open_dataset(out) as ds:
            assert ds.index.num_shards > 1
            rows = ds.to_arrow().to_pylist()
            assert rows == [dict(local[i]) for i in range(9)]
            assert dict(ds.sample(4)) == dict(local[4])


def test_remote_head_fetches_index_and_first_shard_only(datasets, counted_bucket):
    server, bucket, client = counted_bucket
    _, packed = datasets
    name = bucket[len("s3://"):]
    for file in os.listdir(packed):
        client.upload_file(os.path.join(packed, file), name, f"ds/{file}")
    server.reset()
    with open_dataset(f"{bucket}/ds") as ds:
        rows = ds.head(2)
        assert [r["id"] for r in rows] == [0, 1]
        first = ds.index.shards[0].zip_basename
        touched = {path for _, path, _ in server.requests}
        assert touched == {f"/{name}/ds/index.json", f"/{name}/ds/{first}"}, server.requests
        server.reset()
        assert ds.sample(-1)["id"] == N - 1
        last = ds.index.shards[-1].zip_basename
        assert {path for _, path, _ in server.requests} == {f"/{name}/ds/{last}"}
