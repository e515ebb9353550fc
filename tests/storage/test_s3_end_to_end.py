"""Write a dataset to s3:// (moto on 127.0.0.1) with MDSWriter, stream it back with
StreamingDataset, through a clean endpoint and through the fault-injecting proxy."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from streaming import MDSWriter, StreamingDataset

COLUMNS = {"id": "int", "text": "str", "vec": "ndarray:float32:8"}


def _samples(n: int) -> list[dict]:
    rng = np.random.default_rng(0)
    return [{"id": i, "text": f"sample {i} " + "x" * (i % 37),
             "vec": rng.standard_normal(8).astype(np.float32)} for i in range(n)]


def _write(out, samples: list[dict], **kwargs) -> None:
    with MDSWriter(out=out, columns=COLUMNS, size_limit=4096, **kwargs) as writer:
        for sample in samples:
            writer.write(sample)


def _check(dataset: StreamingDataset, samples: list[dict]) -> None:
    assert len(dataset) == len(samples)
    got = sorted(dataset, key=lambda s: s["id"])
    for want, have in zip(samples, got):
        assert have["id"] == want["id"] and have["text"] == want["text"]
        np.testing.assert_array_equal(have["vec"], want["vec"])
    assert [dataset[i]["id"] for i in (0, len(samples) - 1)] == [0, len(samples) - 1]


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_write_to_s3_then_stream_back(s3_bucket: str, tmp_path: pathlib.Path,
                                      compression: str | None) -> None:
    samples = _samples(300)
    remote = f"{s3_bucket}/ds-{compression}"
    _write(remote, samples, compression=compression, max_workers=4)
    from streaming.storage.upload import list_files

    names = [url.rsplit("/", 1)[1] for url in list_files(remote)]
    assert "index.json" in names and len(names) > 3  # several shards, index last
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                               batch_size=10)
    _check(dataset, samples)


def test_local_and_remote_tuple_keeps_local(s3_bucket: str, tmp_path: pathlib.Path) -> None:
    samples = _samples(120)
    local = tmp_path / "written"
    _write((str(local), f"{s3_bucket}/tuple"), samples, keep_local=True)
    assert (local / "index.json").exists()
    dataset = StreamingDataset(remote=f"{s3_bucket}/tuple", local=str(tmp_path / "cache"),
                               shuffle=True, shuffle_seed=3, batch_size=8)
    _check(dataset, samples)


def test_stream_back_through_faults(s3_bucket: str, tmp_path: pathlib.Path,
                                    fault_proxy) -> None:
    samples = _samples(200)
    remote = f"{s3_bucket}/faulty"
    _write(remote, samples)
    proxy = fault_proxy(rate=0.3, kinds=("drop", "truncate", "error503"), limit=8, seed=1)
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                               batch_size=10, download_retry=5)
    _check(dataset, samples)
    assert proxy.injected


def test_stream_from_s3_through_loader_workers(s3_bucket: str, tmp_path: pathlib.Path) -> None:
    # Workers download the shards (a fresh cache) and send their batches through their rings.
    import torch

    from streaming import StreamingDataLoader

    samples = _samples(300)
    remote = f"{s3_bucket}/loader"
    _write(remote, samples, compression="zstd")
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=True,
                               batch_size=16)
    loader = StreamingDataLoader(dataset, batch_size=16, num_workers=2)
    assert loader._batches_in_chunks()
    seen = {}
    for batch in loader:
        for k, i in enumerate(batch["id"].tolist()):
            seen[i] = (batch["text"][k], batch["vec"][k])
    assert sorted(seen) == list(range(300))
    for want in samples:
        text, vec = seen[want["id"]]
        assert text == want["text"]
        assert torch.equal(vec, torch.from_numpy(want["vec"]))
    assert loader.num_samples_yielded == 300
