"""open_dataset fetches compressed shards through the same bounded, file-naming decompression as
StreamingDataset."""

from __future__ import annotations

import json
import os

import pytest

from streaming import MDSWriter
from streaming.explore import open_dataset


def _zstd_dataset(out: str) -> dict:
    with MDSWriter(out=out, columns={"x": "int"}, compression="zstd") as w:
        for i in range(3):
            w.write({"x": i})
    with open(os.path.join(out, "index.json")) as f:
        return json.load(f)["shards"][0]


def _set_index(out: str, **changes) -> None:
    path = os.path.join(out, "index.json")
    with open(path) as f:
        index = json.load(f)
    index["shards"][0].update(changes)
    with open(path, "w") as f:
        json.dump(index, f)


def test_wrong_codec_names_the_file(tmp_path) -> None:
    """Was a bare ``gzip.BadGzipFile``."""
    out = str(tmp_path / "ds")
    shard = _zstd_dataset(out)
    _set_index(out, compression="gz")
    zip_path = os.path.join(out, shard["zip_data"]["basename"])
    with open_dataset(out, cache_dir=str(tmp_path / "cache")) as view:
        with pytest.raises(ValueError, match=f"{zip_path}: corrupt gz data"):
            view.shard(0)[0]


def test_corrupt_payload_names_the_file(tmp_path) -> None:
    """Was ``zstandard.ZstdError: ... Destination buffer is too small``."""
    out = str(tmp_path / "ds")
    shard = _zstd_dataset(out)
    zip_path = os.path.join(out, shard["zip_data"]["basename"])
    with open(zip_path, "rb") as f:
        data = bytearray(f.read())
    data[-6:] = b"\xff" * 6
    with open(zip_path, "wb") as f:
        f.write(data)
    with open_dataset(out, cache_dir=str(tmp_path / "cache")) as view:
        with pytest.raises(ValueError, match=f"{zip_path}: corrupt zstd data"):
            view.shard(0)[0]
    assert not os.path.exists(tmp_path / "cache" / shard["raw_data"]["basename"])
