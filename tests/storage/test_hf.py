"""hf:// through huggingface_hub's real ``HfFileSystem``, against a loopback stand-in of the
Hub's HTTP endpoints (``hub_standin.py``; ``HF_ENDPOINT`` points at it)."""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Iterator

import numpy as np
import pytest

pytest.importorskip("huggingface_hub")

sys.path.insert(0, os.path.dirname(__file__))
from hub_standin import HubStandIn  # noqa: E402

# Calls huggingface_hub makes on its own (a registry it caches daily); 404 is fine for it.
_INCIDENTAL = {"/api/agent-harnesses"}


@pytest.fixture
def hub(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubStandIn]:
    from streaming.storage.filesystem import clear_filesystem_cache

    root = tmp_path / "repo"
    root.mkdir()
    server = HubStandIn(str(root), "user/repo")
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    clear_filesystem_cache()
    yield server
    server.stop()
    clear_filesystem_cache()
    assert {path for _, path in server.unknown} <= _INCIDENTAL, server.unknown


def _samples(n: int) -> list[dict]:
    rng = np.random.default_rng(5)
    return [{"id": i, "text": f"sample {i} " + "x" * int(rng.integers(0, 300)),
             "tokens": rng.integers(0, 1 << 30, 64).astype(np.int64)} for i in range(n)]


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_stream_dataset_from_hf_repo(hub: HubStandIn, tmp_path: pathlib.Path,
                                     compression: str | None) -> None:
    from streaming import MDSWriter, StreamingDataset

    samples = _samples(400)
    with MDSWriter(out=os.path.join(hub.root, "train"), compression=compression,
                   columns={"id": "int", "text": "str", "tokens": "ndarray:int64:64"},
                   size_limit=16_000, hashes=["sha1"]) as writer:
        for sample in samples:
            writer.write(sample)
    num_shards = sum(name.startswith("shard.") for name in os.listdir(hub.root + "/train"))
    assert num_shards > 4
    dataset = StreamingDataset(remote="hf://datasets/user/repo", split="train",
                               local=str(tmp_path / "cache"), batch_size=8,
                               validate_hash="sha1")
    got = list(dataset)
    assert len(got) == len(samples)
    for want, have in zip(samples, got):
        assert have["id"] == want["id"] and have["text"] == want["text"]
        np.testing.assert_array_equal(have["tokens"], want["tokens"])
    fetched = {p.rsplit("/", 1)[-1] for m, p in hub.requests if "/resolve/" in p and m == "GET"}
    assert "index.json" in fetched and len(fetched) == num_shards + 1


def test_hf_download_ranged_missing_and_bad_url(hub: HubStandIn, tmp_path: pathlib.Path) -> None:
    from streaming.storage.download import download

    data = os.urandom(300_001)
    pathlib.Path(hub.root, "blob.bin").write_bytes(data)
    dest = tmp_path / "blob.bin"
    # Small chunks: the object arrives as parallel ranged GETs through HfFileSystem.
    assert download("hf://datasets/user/repo/blob.bin", str(dest), chunk_size=64_000,
                    max_concurrency=3) == len(data)
    assert dest.read_bytes() == data
    ranged = [p for m, p in hub.requests if p.endswith("/blob.bin") and m == "GET"]
    assert len(ranged) >= 5
    with pytest.raises(FileNotFoundError, match="nothing.bin"):
        download("hf://datasets/user/repo/nothing.bin", str(tmp_path / "x"), retry=3)
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="datasets/ORG/NAME"):
        download("hf://user/repo/blob.bin", str(tmp_path / "y"))
