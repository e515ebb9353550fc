"""MDSWriter / Writer semantics, Reader cache-state methods, Array indexing, LocalDataset."""

from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest

from streaming.array import Array
from streaming.format import reader_from_json
from streaming.format.index import load_index
from streaming.format.mds.writer import MDSWriter
from streaming.local import LocalDataset

COLUMNS = {"id": "int", "tokens": "ndarray:int32:4", "text": "str"}


def _sample(i: int) -> dict:
    return {"id": i, "tokens": np.arange(4, dtype=np.int32) + i, "text": "t" * (i % 7)}


def _write(out, count=20, **kwargs) -> str:
    out = out if isinstance(out, tuple) else str(out)
    with MDSWriter(out=out, columns=COLUMNS, **kwargs) as writer:
        for i in range(count):
            writer.write(_sample(i))
    return out


def test_rollover_and_index_contents(tmp_path) -> None:
    out = _write(tmp_path / "d", size_limit="400b", hashes=["md5", "sha1"], compression="zstd:7")
    index = load_index(os.path.join(out, "index.json"))
    shards = index["shards"]
    assert len(shards) > 2
    assert sum(s["samples"] for s in shards) == 20
    for i, shard in enumerate(shards):
        assert shard["raw_data"]["basename"] == f"shard.{i:05}.mds"
        assert shard["zip_data"]["basename"] == f"shard.{i:05}.mds.zstd"
        assert shard["size_limit"] == 400 and shard["compression"] == "zstd:7"
        assert sorted(shard["raw_data"]["hashes"]) == ["md5", "sha1"]
        assert 0 < shard["raw_data"]["bytes"] <= 400 and shard["samples"] > 1
    assert sorted(os.listdir(out)) == ["index.json"] + [s["zip_data"]["basename"] for s in shards]
    # Index text is exactly json.dumps(sort_keys=True) of the model.
    text = open(os.path.join(out, "index.json")).read()
    assert text == json.dumps({"shards": shards, "version": 2}, sort_keys=True)


def test_exist_ok(tmp_path) -> None:
    out = tmp_path / "d"
    out.mkdir()
    (out / "junk").write_text("x")
    with pytest.raises(FileExistsError, match="Directory is not empty"):
        MDSWriter(out=str(out), columns=COLUMNS)
    _write(out, count=3, exist_ok=True)
    assert "junk" not in os.listdir(out)
    empty = tmp_path / "empty"
    empty.mkdir()
    _write(empty, count=1)
    assert len(LocalDataset(str(empty))) == 1


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"compression": "lz4"}, "Invalid compression"),
        ({"hashes": ["sha1", "md5"]}, "sorted order"),
        ({"hashes": ["nope"]}, "Invalid hash"),
        ({"size_limit": 1 << 32}, "less than 2\\*\\*32"),
        ({"size_limit": -5}, "greater than zero"),
        ({"size_limit": "12 parsecs"}, "Unsupported value/suffix"),
        ({"bogus": 1}, "Invalid Writer argument"),
    ],
)
def test_invalid_arguments(tmp_path, kwargs, error) -> None:
    with pytest.raises(ValueError, match=error):
        MDSWriter(out=str(tmp_path / "d"), columns=COLUMNS, **kwargs)


def test_unsupported_encoding_creates_nothing(tmp_path) -> None:
    with pytest.raises(TypeError, match="column `x` with encoding `float128`"):
        MDSWriter(out=str(tmp_path / "d"), columns={"x": "float128"})
    with pytest.raises(TypeError):
        MDSWriter(out=str(tmp_path / "d"), columns={"x": "ndarray:int32:0"})
    assert not (tmp_path / "d").exists()


def test_wrong_fixed_size_and_missing_column(tmp_path) -> None:
    with MDSWriter(out=str(tmp_path / "d"), columns=COLUMNS) as writer:
        with pytest.raises(KeyError, match="Unexpected data size"):
            writer.write({"id": 1, "tokens": b"abc", "text": ""})
        with pytest.raises(KeyError):
            writer.write({"id": 1, "text": ""})
        with pytest.raises(ValueError, match="Wrong shape"):
            writer.write({"id": 1, "tokens": np.zeros(5, np.int32), "text": ""})


def test_bytes_values_pass_through_any_encoding(tmp_path) -> None:
    with MDSWriter(out=str(tmp_path / "d"), columns={"a": "str", "b": "int"}) as writer:
        writer.write({"a": "é".encode(), "b": (7).to_bytes(8, "little")})
        assert writer.new_samples == [writer.encode_sample({"a": "é", "b": 7})]
    assert LocalDataset(str(tmp_path / "d"))[0] == {"a": "é", "b": 7}


def test_empty_dataset_and_idempotent_finish(tmp_path) -> None:
    writer = MDSWriter(out=str(tmp_path / "d"), columns=COLUMNS)
    writer.finish()
    writer.finish()
    assert json.load(open(tmp_path / "d" / "index.json")) == {"shards": [], "version": 2}


def test_index_written_last_and_no_temp_files(tmp_path) -> None:
    out = tmp_path / "d"
    writer = MDSWriter(out=str(out), columns=COLUMNS, size_limit=100)
    for i in range(10):
        writer.write(_sample(i))
    assert not (out / "index.json").exists()
    writer.finish()
    assert (out / "index.json").exists()
    assert not [name for name in os.listdir(out) if name.startswith(".")]


def test_background_failure_surfaces(tmp_path, monkeypatch) -> None:
    import streaming.format.base.writer as base_writer

    def boom(algo, data):
        raise OSError("disk on fire")

    monkeypatch.setattr(base_writer, "compress", boom)
    writer = MDSWriter(out=str(tmp_path / "d"), columns=COLUMNS, compression="zstd", size_limit=100)
    with pytest.raises(RuntimeError, match="disk on fire"):
        for i in range(100):
            writer.write(_sample(i))
        writer.finish()
    assert not (tmp_path / "d" / "index.json").exists()


def test_upload_to_second_directory(tmp_path) -> None:
    local, remote = tmp_path / "local", tmp_path / "remote"
    _write((str(local), str(remote)), count=30, size_limit=150, keep_local=True)
    assert sorted(os.listdir(local)) == sorted(os.listdir(remote))
    assert (remote / "index.json").read_bytes() == (local / "index.json").read_bytes()
    local2, remote2 = tmp_path / "local2", tmp_path / "remote2"
    _write((str(local2), str(remote2)), count=30, size_limit=150)
    assert not local2.exists()
    assert len(LocalDataset(str(remote2))) == 30


def test_new_samples_property(tmp_path) -> None:
    with MDSWriter(out=str(tmp_path / "d"), columns=COLUMNS) as writer:
        rows = [writer.encode_sample(_sample(i)) for i in range(3)]
        for i in range(3):
            writer.write(_sample(i))
        assert writer.new_samples == rows
        assert writer.encode_joint_shard().endswith(b"".join(rows))


# ---- readers --------------------------------------------------------------------------------


def test_reader_sizes_set_up_local_and_evict(tmp_path) -> None:
    out = _write(tmp_path / "d", count=5, compression="gz")
    info = load_index(os.path.join(out, "index.json"))["shards"][0]
    reader = reader_from_json(out, None, info)
    raw, zipped = info["raw_data"]["bytes"], info["zip_data"]["bytes"]
    assert reader.get_raw_size() == raw and reader.get_zip_size() == zipped
    assert reader.get_max_size() == raw + zipped
    assert reader.get_persistent_size(keep_zip=True) == raw + zipped
    assert reader.get_persistent_size(keep_zip=False) == raw
    zip_path = os.path.join(out, info["zip_data"]["basename"])
    raw_path = os.path.join(out, info["raw_data"]["basename"])
    # Only zip present.
    assert reader.set_up_local({zip_path}, safe_keep_zip=True) == zipped
    from streaming.format import decompress_shard

    decompress_shard(zip_path, raw_path, "gz", raw_info=info["raw_data"])
    assert reader[0]["id"] == 0
    # Both present and zip not wanted: zip goes, raw stays.
    assert reader.set_up_local({zip_path, raw_path}, safe_keep_zip=False) == raw
    assert os.path.exists(raw_path) and not os.path.exists(zip_path)
    # Raw without zip when zip must be kept: raw is distrusted and removed.
    assert reader.set_up_local({raw_path}, safe_keep_zip=True) == 0
    assert not os.path.exists(raw_path)
    assert reader.evict() == 0


def test_uncompressed_shard_with_zip_is_invalid(tmp_path) -> None:
    out = _write(tmp_path / "d", count=2)
    info = load_index(os.path.join(out, "index.json"))["shards"][0]
    reader = reader_from_json(out, None, info)
    reader.zip_data = type(reader.raw_data)("shard.00000.mds.zstd", 1, {})
    reader.file_pairs = [(reader.raw_data, reader.zip_data)]
    with pytest.raises(ValueError, match="compression was not used"):
        reader.set_up_local({os.path.join(out, "shard.00000.mds.zstd")}, safe_keep_zip=False)


def test_evict_closes_the_map_and_reader_pickles(tmp_path) -> None:
    out = _write(tmp_path / "d", count=4)
    info = load_index(os.path.join(out, "index.json"))["shards"][0]
    reader = reader_from_json(out, None, info)
    assert reader[1]["id"] == 1
    clone = pickle.loads(pickle.dumps(reader))
    assert clone[3]["text"] == "ttt"
    assert reader.evict() == info["raw_data"]["bytes"]
    with pytest.raises(FileNotFoundError):
        reader[0]


class _Squares(Array):
    @property
    def size(self) -> int:
        return 6

    def get_item(self, idx: int) -> int:
        if not 0 <= idx < 6:
            raise IndexError(idx)
        return idx * idx


def test_array_indexing() -> None:
    arr = _Squares()
    assert arr[2] == 4 and arr[-1] == 25 and arr[np.int64(3)] == 9
    assert arr[1:4] == [1, 4, 9] and arr[::2] == [0, 4, 16] and arr[-2:] == [16, 25]
    assert arr[::-1] == [25, 16, 9, 4, 1, 0]
    assert arr[[0, [1, 2]]] == [0, [1, 4]]
    assert arr[np.array([[5, 0]])] == [[25, 0]]
    with pytest.raises(ValueError, match="Unsupported argument type"):
        arr["x"]
    with pytest.raises(IndexError):
        arr[6]


def test_local_dataset_with_split(tmp_path) -> None:
    _write(tmp_path / "root" / "train", count=7, size_limit=120)
    ds = LocalDataset(str(tmp_path / "root"), split="train")
    assert len(ds) == ds.size == 7
    assert [s["id"] for s in ds[::3]] == [0, 3, 6]
    assert ds[-1]["id"] == 6
    with pytest.raises(IndexError):
        ds[7]
    with pytest.raises(FileNotFoundError):
        LocalDataset(str(tmp_path / "root"), split="val")


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_large_values_kept_by_reference_write_the_same_bytes(tmp_path, compression) -> None:
    rng = np.random.default_rng(0)
    columns = {"big": "bytes", "name": "str", "arr": "ndarray:uint8"}
    samples = [
        {
            "big": rng.bytes(int(rng.integers(0, 90_000))),
            "name": "n" * i,
            "arr": rng.integers(0, 255, int(rng.integers(1, 50_000)), dtype=np.uint8),
        }
        for i in range(12)
    ]
    out = tmp_path / "d"
    with MDSWriter(out=str(out), columns=columns, size_limit="300kb", compression=compression) as w:
        rows = [w.encode_sample(s) for s in samples]
        for s in samples:
            w.write(s)
    index = load_index(str(out / "index.json"))
    from streaming.format import decompress_shard

    start = 0
    for shard in index["shards"]:
        raw_path = str(out / shard["raw_data"]["basename"])
        if compression:
            decompress_shard(str(out / shard["zip_data"]["basename"]), raw_path, compression,
                             raw_info=shard["raw_data"])
        body = b"".join(rows[start : start + shard["samples"]])
        assert open(raw_path, "rb").read().endswith(body)
        start += shard["samples"]
    assert start == len(samples) and len(index["shards"]) > 2
    got = LocalDataset(str(out))
    for i, sample in enumerate(samples):
        assert got[i]["big"] == sample["big"] and got[i]["arr"].tobytes() == sample["arr"].tobytes()


def test_open_maps_are_bounded(tmp_path, monkeypatch) -> None:
    import streaming.format.mds.reader as mds_reader

    monkeypatch.setattr(mds_reader, "MAX_OPEN_SHARDS", 3)
    out = _write(tmp_path / "d", count=40, size_limit=260)
    ds = LocalDataset(out)
    assert len(ds.shards) > 6
    for _ in range(2):
        assert [ds[i]["id"] for i in range(40)] == list(range(40))
        assert sum(shard._mmap is not None for shard in ds.shards) <= 3


def test_upload_to_s3(tmp_path, s3_bucket) -> None:
    import boto3

    remote = f"{s3_bucket}/ds"
    _write(remote, count=25, size_limit=300, compression="zstd", hashes=["xxh64"])
    bucket = s3_bucket[len("s3://") :]
    client = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"])
    keys = sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"])
    index = json.loads(client.get_object(Bucket=bucket, Key="ds/index.json")["Body"].read())
    want = sorted(["ds/index.json"] + [f"ds/{s['zip_data']['basename']}" for s in index["shards"]])
    assert keys == want and sum(s["samples"] for s in index["shards"]) == 25


def test_write_all_survives_partial_writes(tmp_path, monkeypatch) -> None:
    from streaming.format import index as index_mod

    real = os.writev

    def stingy(fd, buffers):  # the kernel may write less than asked
        return real(fd, [bytes(memoryview(buffers[0])[:7])])

    monkeypatch.setattr(os, "writev", stingy)
    chunks = [b"", b"abcdefghij" * 3, np.arange(10, dtype=np.uint8), memoryview(b"xyz")[1:], b"q"]
    path = tmp_path / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        index_mod._write_all(fd, chunks)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"".join(bytes(memoryview(c)) for c in chunks)
