"""The shard cache deletes and overwrites files: it refuses any path that could reach outside
its cache directory, as a second line behind the index's validation."""

from __future__ import annotations

import json
import os
import time

import pytest

from streaming.storage.cache import LOCAL, CacheEntry, ShardCache


def _entry(root: str, *names: str, **kwargs) -> CacheEntry:
    files = tuple(os.path.join(root, name) for name in names)
    return CacheEntry(key=files[0], raw_files=files, zip_files=(), raw_size=10, zip_size=0,
                      keep_zip=False, evictable=True, **kwargs)


@pytest.mark.parametrize("name", ["../victim.txt", "a/../../victim.txt", "/etc/passwd",
                                  "./x", "a//b"])
def test_entry_refuses_paths_leaving_its_directory(tmp_path, name) -> None:
    dirname = str(tmp_path / "cache" / "ds")
    with pytest.raises(ValueError, match="refusing to manage a shard file"):
        _entry(dirname, "shard.00000.csv.meta", name, dirname=dirname)


def test_entry_refuses_unnormalized_paths_without_a_directory(tmp_path) -> None:
    with pytest.raises(ValueError, match="not a normalized absolute path"):
        _entry(str(tmp_path / "ds"), "../victim.txt")
    with pytest.raises(ValueError, match="not a normalized absolute path"):
        CacheEntry(key="relative/shard", raw_files=("relative/shard",), zip_files=(),
                   raw_size=1, zip_size=0, keep_zip=False, evictable=True)


def test_entry_accepts_files_in_subdirectories(tmp_path) -> None:
    dirname = str(tmp_path / "ds")
    entry = _entry(dirname, "shard.00000.mds", "sub/shard.00001.mds", dirname=dirname + "/")
    assert entry.raw_files[1] == os.path.join(dirname, "sub", "shard.00001.mds")


def test_eviction_refuses_a_ledger_row_leaving_the_cache(tmp_path) -> None:
    """A ledger row naming ``<cache>/ds/../victim.txt`` (a corrupt or forged ledger) is not
    deleted when room is made."""
    dirname = str(tmp_path / "cache" / "ds")
    os.makedirs(dirname)
    victim = tmp_path / "cache" / "victim.txt"
    victim.write_text("precious")
    cache = ShardCache(str(tmp_path / "rt"), [_entry(dirname, "shard.00000.mds",
                                                     dirname=dirname)], cache_limit=15)
    with cache._transaction() as db:
        db.execute("INSERT INTO shards VALUES (?, ?, ?, ?, ?, ?)",
                   (os.path.join(dirname, "other"),
                    json.dumps([os.path.join(dirname, "..", "victim.txt")]), 10, time.time(),
                    LOCAL, 1))

    def materialize() -> None:
        with open(os.path.join(dirname, "shard.00000.mds"), "wb") as f:
            f.write(b"0123456789")

    with pytest.raises(ValueError, match="victim.txt: refusing to manage a shard file"):
        cache.prepare(0, materialize)
    assert victim.read_text() == "precious"


def test_dataset_cache_refuses_even_if_the_index_were_not_checked(tmp_path, monkeypatch) -> None:
    """With every index check disabled, the cache alone still keeps ``../victim.txt``."""
    import streaming.format.index
    import streaming.format.split_reader
    from streaming import CSVWriter, StreamingDataset

    remote, local = str(tmp_path / "remote"), str(tmp_path / "cache" / "ds")
    with CSVWriter(out=remote, columns={"x": "int"}) as w:
        w.write({"x": 1})
    path = os.path.join(remote, "index.json")
    with open(path) as f:
        index = json.load(f)
    index["shards"][0]["raw_data"]["basename"] = "../victim.txt"
    with open(path, "w") as f:
        json.dump(index, f)
    os.makedirs(local)
    victim = tmp_path / "cache" / "victim.txt"
    victim.write_text("precious")
    monkeypatch.setattr(streaming.format.index, "validate_index", lambda obj, filename: obj)
    monkeypatch.setattr(streaming.format.split_reader, "validate_shard", lambda obj, where: None)
    with pytest.raises(ValueError, match="victim.txt: refusing to manage a shard file"):
        StreamingDataset(remote=remote, local=local, batch_size=1)
    assert victim.read_text() == "precious"
