"""``verify_dataset`` (``streaming verify``) on compressed shards: corrupt or oversized data is a
problem line naming the file, not a traceback."""

from __future__ import annotations

import json
import os

import pytest

from streaming import CSVWriter, MDSWriter
from streaming.cli import main
from streaming.format.check import verify_dataset


def _write_zipped(out: str, fmt: str) -> tuple[str, dict]:
    """A one-shard zstd dataset with only its compressed files and no hashes."""
    writer = (MDSWriter(out=out, columns={"x": "int"}, compression="zstd") if fmt == "mds"
              else CSVWriter(out=out, columns={"x": "int"}, compression="zstd"))
    with writer:
        for i in range(3):
            writer.write({"x": i})
    path = os.path.join(out, "index.json")
    with open(path) as f:
        index = json.load(f)
    shard = index["shards"][0]
    for part in ("data", "meta"):
        if shard.get(f"raw_{part}"):
            assert not os.path.exists(os.path.join(out, shard[f"raw_{part}"]["basename"]))
            shard[f"zip_{part}"]["hashes"] = {}
    with open(path, "w") as f:
        json.dump(index, f)
    count_part = "zip_meta" if fmt == "csv" else "zip_data"
    return os.path.join(out, shard[count_part]["basename"]), shard


@pytest.mark.parametrize("fmt", ["mds", "csv"])
def test_corrupt_payload_is_a_problem_line(tmp_path, fmt, capsys) -> None:
    """The same-size corruption used to crash with ``ZstdError: Destination buffer is too
    small``."""
    zip_path, _ = _write_zipped(str(tmp_path), fmt)
    with open(zip_path, "rb") as f:
        data = bytearray(f.read())
    data[-6:] = b"\xff" * 6
    with open(zip_path, "wb") as f:
        f.write(data)
    problems, counts = verify_dataset(str(tmp_path))
    assert len(problems) == 1 and problems[0].startswith(f"{zip_path}: corrupt zstd data")
    assert counts["shards"] == 1
    assert main(["verify", str(tmp_path)]) == 1
    assert f"{zip_path}: corrupt zstd data" in capsys.readouterr().err


def test_payload_larger_than_the_index_says_is_a_problem_line(tmp_path, zstd_bomb) -> None:
    zip_path, shard = _write_zipped(str(tmp_path), "mds")
    size = zstd_bomb(zip_path, 32 << 20)
    index_path = os.path.join(tmp_path, "index.json")
    with open(index_path) as f:
        index = json.load(f)
    index["shards"][0]["zip_data"]["bytes"] = size
    with open(index_path, "w") as f:
        json.dump(index, f)
    problems, _ = verify_dataset(str(tmp_path))
    assert problems == [f"{zip_path}: corrupt zstd data: compressed data expands beyond "
                        f"{shard['raw_data']['bytes']} bytes"]


def test_sound_compressed_dataset_verifies(tmp_path) -> None:
    _write_zipped(str(tmp_path), "csv")
    assert verify_dataset(str(tmp_path))[0] == []
