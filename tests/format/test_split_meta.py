"""The meta file of a JSON/XSV shard is checked against the index's sample count before it is
read: a huge count is a clear error naming the file, not a huge allocation."""

from __future__ import annotations

import json
import os
import tracemalloc

import pytest

from streaming import CSVWriter
from streaming.format import reader_from_json
from streaming.format.split import read_offsets


def _write(out: str) -> dict:
    with CSVWriter(out=out, columns={"x": "int"}) as w:
        w.write({"x": 1})
        w.write({"x": 2})
    with open(os.path.join(out, "index.json")) as f:
        return json.load(f)["shards"][0]


def test_meta_file_bounds_the_sample_count(tmp_path) -> None:
    """A huge ``samples`` is checked against the meta file's size before anything is read, so
    it costs no memory (the reader used to allocate ``4 * samples`` bytes first)."""
    out = str(tmp_path)
    entry = _write(out)
    meta = os.path.join(out, entry["raw_meta"]["basename"])
    data = os.path.join(out, entry["raw_data"]["basename"])
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=f"{meta}: meta file is truncated"):
            read_offsets(meta, data, 2 ** 28)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    # Through a reader, the index entry is refused first (its count cannot fit the meta file).
    entry["samples"] = (1 << 32) - 1
    with pytest.raises(ValueError, match="4294967295 samples cannot fit in shard.00000.csv.meta"):
        reader_from_json(out, None, entry)[0]
