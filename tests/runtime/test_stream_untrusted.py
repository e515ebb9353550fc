"""StreamingDataset treats a remote index and its shards as untrusted: JSON/CSV/TSV/XSV entries
are validated like MDS ones before any file is written or deleted, decompression is bounded by
the index's raw size, and errors name the file."""

from __future__ import annotations

import json
import os

import pytest

from streaming import CSVWriter, JSONWriter, MDSWriter, StreamingDataset, TSVWriter, XSVWriter
from streaming.format.compression import compress

SPLIT_WRITERS = {
    "json": lambda out: JSONWriter(out=out, columns={"x": "int"}),
    "csv": lambda out: CSVWriter(out=out, columns={"x": "int"}),
    "tsv": lambda out: TSVWriter(out=out, columns={"x": "int"}),
    "xsv": lambda out: XSVWriter(out=out, columns={"x": "int"}, separator="|"),
}


def _edit_index(root: str, edit) -> str:
    path = os.path.join(root, "index.json")
    with open(path) as f:
        index = json.load(f)
    edit(index["shards"][0])
    with open(path, "w") as f:
        json.dump(index, f)
    return path


@pytest.mark.parametrize("fmt", sorted(SPLIT_WRITERS))
@pytest.mark.parametrize("key", ["raw_data", "raw_meta"])
def test_escaping_basename_deletes_nothing_outside_the_cache(tmp_path, fmt, key) -> None:
    """A split shard's ``../victim.txt`` looked like half a shard to the cache, which deleted
    it; now the index is refused first, naming it."""
    remote, local = str(tmp_path / "remote"), str(tmp_path / "cache" / "ds")
    with SPLIT_WRITERS[fmt](remote) as w:
        for i in range(4):
            w.write({"x": i})
    _edit_index(remote, lambda shard: shard[key].update(basename="../victim.txt"))
    os.makedirs(local)
    victim = tmp_path / "cache" / "victim.txt"
    victim.write_text("precious")
    index = os.path.join(local, "index.json")
    with pytest.raises(ValueError, match=f"{index}: shard 0: {key}: basename '../victim.txt'"):
        StreamingDataset(remote=remote, local=local, batch_size=2)
    assert victim.read_text() == "precious"


def test_escaping_basename_is_never_fetched(tmp_path) -> None:
    """A JSON shard named ``../evil.json`` was copied from ``<remote>/..`` to ``<local>/..``."""
    remote, local = str(tmp_path / "remote" / "ds"), str(tmp_path / "cache" / "ds")
    with JSONWriter(out=remote, columns={"x": "int"}) as w:
        for i in range(4):
            w.write({"x": i})
    os.rename(os.path.join(remote, "shard.00000.json"), tmp_path / "remote" / "evil.json")
    _edit_index(remote, lambda shard: shard["raw_data"].update(basename="../evil.json"))
    with pytest.raises(ValueError, match="basename '../evil.json' must not contain"):
        list(StreamingDataset(remote=remote, local=local, batch_size=2))
    assert sorted(os.listdir(tmp_path / "cache")) == ["ds"]


@pytest.mark.parametrize("change, problem", [
    ({"newline": 5}, "newline must be a string"),
    ({"extra": 1}, r"unknown field\(s\) \['extra'\]"),
    ({"column_encodings": None}, "column_encodings must be a list of strings"),
    ({"samples": -1}, "shard 0: invalid sample count -1"),
    ({"samples": 2 ** 63}, "shard 0: invalid sample count"),
])
def test_bad_fields_name_the_index(tmp_path, change, problem) -> None:
    out = str(tmp_path)
    with CSVWriter(out=out, columns={"x": "int"}) as w:
        w.write({"x": 1})
    index = _edit_index(out, lambda shard: shard.update(change))
    with pytest.raises(ValueError, match=f"{index}: .*{problem}"):
        list(StreamingDataset(local=out, batch_size=1))


def _mds(remote: str, compression: str) -> dict:
    with MDSWriter(out=remote, columns={"x": "int"}, compression=compression) as w:
        for i in range(4):
            w.write({"x": i})
    with open(os.path.join(remote, "index.json")) as f:
        return json.load(f)["shards"][0]


def test_decompression_bomb_is_refused(tmp_path, zstd_bomb) -> None:
    """A valid shard followed by 64 MiB of zeros in a zstd frame that does not declare its size
    was written out whole (past ``cache_limit``) and read normally."""
    remote, local = str(tmp_path / "remote"), str(tmp_path / "local")
    shard = _mds(remote, "zstd")
    size = zstd_bomb(os.path.join(remote, shard["zip_data"]["basename"]), 64 << 20)
    _edit_index(remote, lambda s: s["zip_data"].update(bytes=size))
    ds = StreamingDataset(remote=remote, local=local, batch_size=2, cache_limit="10mb")
    cached_zip = os.path.join(local, shard["zip_data"]["basename"])
    with pytest.raises(ValueError, match=f"{cached_zip}: .*beyond {shard['raw_data']['bytes']}"):
        list(ds)
    assert not os.path.exists(os.path.join(local, shard["raw_data"]["basename"]))


@pytest.mark.parametrize("written, said", [("zstd", "gz"), ("zstd", "bz2"), ("gz", "zstd")])
def test_wrong_codec_names_the_file(tmp_path, written, said) -> None:
    """Was a bare ``gzip.BadGzipFile`` / ``OSError`` / ``ZstdError`` naming nothing."""
    remote, local = str(tmp_path / "remote"), str(tmp_path / "local")
    shard = _mds(remote, written)
    _edit_index(remote, lambda s: s.update(compression=said))
    cached_zip = os.path.join(local, shard["zip_data"]["basename"])
    with pytest.raises(ValueError, match=f"{cached_zip}: corrupt {said} data"):
        list(StreamingDataset(remote=remote, local=local, batch_size=1))


def test_short_decompressed_shard_is_refused(tmp_path) -> None:
    """Data that decompresses to less than the index's raw size is refused, naming the file."""
    remote, local = str(tmp_path / "remote"), str(tmp_path / "local")
    shard = _mds(remote, "gz")
    zip_path = os.path.join(remote, shard["zip_data"]["basename"])
    packed = compress("gz", b"\x04\x00\x00\x00 too short")
    with open(zip_path, "wb") as f:
        f.write(packed)
    _edit_index(remote, lambda s: s["zip_data"].update(bytes=len(packed)))
    cached_zip = os.path.join(local, shard["zip_data"]["basename"])
    with pytest.raises(ValueError, match=f"{cached_zip}: decompressed to 14 bytes, but the index"):
        list(StreamingDataset(remote=remote, local=local, batch_size=1))
