"""open_index: shard tables, schema and totals from index.json alone, locally and on S3."""

from __future__ import annotations

import json
import sys
import time

import pytest

from streaming.explore import open_index

COLUMNS = {"id": ("int", 8), "image": ("jpeg", None), "tokens": ("ndarray:int32:16", 64),
           "text": ("str", None)}


def mds_shard(i: int, samples: int, compressed: bool = True) -> dict:
    """One synthetic MDS shard entry, shaped exactly like MDSWriter's."""
    names = sorted(COLUMNS)
    raw = {"basename": f"shard.{i:05}.mds", "bytes": 1000 + i,
           "hashes": {"sha1": f"{i:040x}", "xxh64": f"{i:016x}"}}
    zipped = ({"basename": f"shard.{i:05}.mds.zstd", "bytes": 400 + i,
               "hashes": {"sha1": f"{i + 1:040x}", "xxh64": f"{i + 1:016x}"}}
              if compressed else None)
    return {
        "column_encodings": [COLUMNS[n][0] for n in names],
        "column_names": names,
        "column_sizes": [COLUMNS[n][1] for n in names],
        "compression": "zstd:7" if compressed else None,
        "format": "mds",
        "hashes": ["sha1", "xxh64"],
        "raw_data": raw,
        "samples": samples,
        "size_limit": 1 << 26,
        "version": 2,
        "zip_data": zipped,
    }


def synthetic_index(n: int, samples=lambda i: 100 + i % 7, compressed: bool = True) -> bytes:
    shards = [mds_shard(i, samples(i), compressed) for i in range(n)]
    return json.dumps({"shards": shards, "version": 2}, sort_keys=True).encode()


def write_index(path, data: bytes) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "index.json").write_bytes(data)


def test_local_index_totals_and_tables(tmp_path):
    write_index(tmp_path, synthetic_index(5))
    index = open_index(tmp_path)
    expected_samples = [100 + i % 7 for i in range(5)]
    assert index.num_shards == 5
    assert index.num_samples == sum(expected_samples)
    assert index.raw_bytes == sum(1000 + i for i in range(5))
    assert index.zip_bytes == sum(400 + i for i in range(5))
    assert index.formats == ["mds"] and index.compressions == ["zstd:7"]
    assert index.hash_algorithms == ["sha1", "xxh64"]
    assert [(c.name, c.encoding, c.size) for c in index.columns] == [
        (n, *COLUMNS[n]) for n in sorted(COLUMNS)]
    assert index.consistent_schema

    table = index.to_arrow()
    assert table.num_rows == 5
    assert table.column("samples").to_pylist() == expected_samples
    assert table.column("first_sample").to_pylist() == [0, 100, 201, 303, 406]
    assert table.column("basename").to_pylist()[3] == "shard.00003.mds"
    assert table.column("zip_basename").to_pylist()[3] == "shard.00003.mds.zstd"
    assert table.column("raw_sha1").to_pylist()[2] == f"{2:040x}"
    assert table.column("zip_xxh64").to_pylist()[2] == f"{3:016x}"
    assert table.column("compression").to_pylist() == ["zstd:7"] * 5

    schema = index.columns_to_arrow()
    assert schema.column("name").to_pylist() == sorted(COLUMNS)
    assert schema.column("size").to_pylist() == [COLUMNS[n][1] for n in sorted(COLUMNS)]

    summary = index.summary()
    assert summary["samples"] == index.num_samples and summary["shards"] == 5
    json.dumps(summary)  # JSON-friendly


def test_to_pandas_matches_arrow(tmp_path):
    pytest.importorskip("pandas")
    write_index(tmp_path, synthetic_index(3, compressed=False))
    index = open_index(tmp_path)
    frame = index.to_pandas()
    assert list(frame.columns) == index.to_arrow().column_names
    assert frame["samples"].tolist() == [100, 101, 102]
    assert frame["zip_bytes"].isna().all()


def test_to_pandas_without_pandas_names_it(tmp_path, monkeypatch):
    write_index(tmp_path, synthetic_index(2))
    index = open_index(tmp_path)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(ImportError, match="pandas"):
        index.to_pandas()


def test_split_and_index_path(tmp_path):
    write_index(tmp_path / "train", synthetic_index(2))
    by_split = open_index(tmp_path, split="train")
    by_file = open_index(tmp_path / "train" / "index.json")
    assert by_split.split == "train"
    assert by_split.num_samples == by_file.num_samples == 201
    with pytest.raises(FileNotFoundError, match="index.json"):
        open_index(tmp_path, split="val")


def test_shard_of_sample_skips_empty_shards(tmp_path):
    counts = [3, 0, 0, 2, 4]
    write_index(tmp_path, synthetic_index(5, samples=lambda i: counts[i]))
    index = open_index(tmp_path)
    owners = [index.shard_of_sample(s).index for s in range(index.num_samples)]
    assert owners == [0, 0, 0, 3, 3, 4, 4, 4, 4]
    assert index.shard_of_sample(-1).index == 4
    with pytest.raises(IndexError):
        index.shard_of_sample(9)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(version=1), "version"),
        (lambda d: d["shards"][1]["raw_data"].update(basename="../../etc/passwd"), "basename"),
        (lambda d: d["shards"][0].update(samples=-3), "sample count"),
        (lambda d: d["shards"][0]["zip_data"].update(bytes="many"), "byte size"),
        (lambda d: d.pop("shards"), "shards"),
    ],
)
def test_malformed_index_is_refused(tmp_path, mutate, message):
    doc = json.loads(synthetic_index(3))
    mutate(doc)
    write_index(tmp_path, json.dumps(doc).encode())
    with pytest.raises(ValueError, match=message) as err:
        open_index(tmp_path)
    assert "index.json" in str(err.value)


def test_not_json_names_the_file(tmp_path):
    write_index(tmp_path, b"{not json")
    with pytest.raises(ValueError, match=r"index\.json.*JSON"):
        open_index(tmp_path)


def test_reprs_show_counts_and_columns(tmp_path):
    write_index(tmp_path, synthetic_index(30))
    index = open_index(tmp_path)
    text = repr(index)
    assert f"{index.num_samples:,} samples in 30 mds shards" in text
    for name in COLUMNS:
        assert name in text
    assert "shard.00000.mds" in text and "shard.00029.mds" in text
    assert "20 more shards" in text  # 10 rows shown of 30
    page = index._repr_html_()
    for name, (encoding, _) in COLUMNS.items():
        assert f"<td>{name}</td>" in page and encoding in page
    assert f"{index.num_samples:,}" in page
    assert "shard.00029.mds" in page and "10 more shards" in page  # 20 rows shown of 30
    assert "<script" not in page


def test_html_escapes_untrusted_names(tmp_path):
    doc = json.loads(synthetic_index(1))
    doc["shards"][0]["column_names"][0] = "<b>x</b>"
    write_index(tmp_path, json.dumps(doc).encode())
    page = open_index(tmp_path)._repr_html_()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_s3_index_of_10000_shards_fetches_only_index_json(counted_bucket):
    """Opening and showing a 10,000-shard remote index is one GET of index.json, under 2 s."""
    from streaming.storage.filesystem import clear_filesystem_cache

    server, bucket, client = counted_bucket
    name = bucket[len("s3://"):]
    data = synthetic_index(10_000)
    client.put_object(Bucket=name, Key="big/train/index.json", Body=data)
    import pyarrow  # noqa: F401  (import costs are not the index's cost)
    import s3fs  # noqa: F401

    # Best of three cold opens (a fresh S3 client each time), as timeit does: the box is shared.
    timings = []
    for _ in range(3):
        clear_filesystem_cache()
        server.reset()
        start = time.perf_counter()
        index = open_index(f"{bucket}/big", split="train")
        table = index.to_arrow()
        page = index._repr_html_()
        text = repr(index)
        timings.append(time.perf_counter() - start)

        assert server.requests == [("GET", f"/{name}/big/train/index.json", "")], server.requests
        assert table.num_rows == 10_000
        assert index.num_samples == sum(100 + i % 7 for i in range(10_000))
        assert "shard.09999.mds" in page and "shard.09999.mds" in text
        if min(timings) < 2.0:
            break
    assert min(timings) < 2.0, f"opening a 10,000-shard index took {timings} s"
