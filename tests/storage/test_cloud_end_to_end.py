"""Write a dataset to object storage with MDSWriter, stream it back with StreamingDataset,
through a clean endpoint and through the fault-injecting proxy: on s3:// (moto), gs://
(gcp-storage-emulator, through gcsfs) and az:// (Azurite, through adlfs), all on 127.0.0.1; and
over sftp:// (a paramiko SFTP server) and http:// (a plain web server)."""

from __future__ import annotations

import os
import pathlib
import time

import numpy as np
import pytest
from loopback_stores import Cloud  # this directory is on sys.path (prepend mode)

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
def test_write_then_stream_back(cloud: Cloud, tmp_path: pathlib.Path,
                                compression: str | None) -> None:
    samples = _samples(300)
    remote = f"{cloud.root}/ds-{compression}"
    _write(remote, samples, compression=compression, max_workers=4)
    from streaming.storage.upload import list_files

    names = [url.rsplit("/", 1)[1] for url in list_files(remote)]
    assert "index.json" in names and len(names) > 3  # several shards, index last
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                               batch_size=10)
    _check(dataset, samples)


def test_local_and_remote_tuple_keeps_local(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    samples = _samples(120)
    local = tmp_path / "written"
    _write((str(local), f"{cloud.root}/tuple"), samples, keep_local=True)
    assert (local / "index.json").exists()
    dataset = StreamingDataset(remote=f"{cloud.root}/tuple", local=str(tmp_path / "cache"),
                               shuffle=True, shuffle_seed=3, batch_size=8)
    _check(dataset, samples)


def test_stream_back_through_faults(cloud: Cloud, tmp_path: pathlib.Path,
                                    cloud_fault_proxy) -> None:
    samples = _samples(200)
    remote = f"{cloud.root}/faulty"
    _write(remote, samples)
    proxy = cloud_fault_proxy(rate=0.3, kinds=("drop", "truncate", "error503"), limit=8, seed=1)
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                               batch_size=10, download_retry=5)
    _check(dataset, samples)
    assert proxy.injected


def test_stream_through_loader_workers(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    # Workers download the shards (a fresh cache) and send their batches through their rings.
    import torch

    from streaming import StreamingDataLoader

    samples = _samples(300)
    remote = f"{cloud.root}/loader"
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


@pytest.mark.parametrize("cloud", ["az"], indirect=True)
def test_azure_url_forms_reach_the_same_blobs(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    # The account in the URL's host (the connection string's, here), or none at all.
    samples = _samples(50)
    container = cloud.root[len("az://"):]
    _write(f"{cloud.root}/forms", samples)
    for k, remote in enumerate([
        f"azure://devstoreaccount1.blob.core.windows.net/{container}/forms",
        f"abfs://{container}@devstoreaccount1.dfs.core.windows.net/forms",
        f"azure-dl://{container}/forms",
    ]):
        dataset = StreamingDataset(remote=remote, local=str(tmp_path / str(k)), batch_size=5)
        _check(dataset, samples)


def test_http_remote_reads_back(tmp_path: pathlib.Path, static_server) -> None:
    # A read-only remote: a dataset written locally, served by a plain web server.
    samples = _samples(150)
    _write(str(tmp_path / "site" / "ds"), samples, compression="zstd")
    server = static_server(str(tmp_path / "site"))
    dataset = StreamingDataset(remote=f"{server.url}/ds", local=str(tmp_path / "cache"),
                               shuffle=True, batch_size=8)
    _check(dataset, samples)


def test_sftp_write_then_stream_back(tmp_path: pathlib.Path, sftp_server) -> None:
    # Several threads on one SFTP connection hang (paramiko's client hands each reply to the
    # first thread to read the channel): the writer's upload threads, the dataset's prefetch
    # threads and DataLoader workers must each use connections of their own.
    import gc

    from streaming import StreamingDataLoader

    samples = _samples(400)
    remote = sftp_server.url("data/ds")
    _write(remote, samples, compression="zstd", max_workers=4)
    assert len(os.listdir(os.path.join(sftp_server.root, "data", "ds"))) > 5
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=True,
                               batch_size=8)
    _check(dataset, samples)
    loader = StreamingDataLoader(
        StreamingDataset(remote=remote, local=str(tmp_path / "cache2"), batch_size=16),
        batch_size=16, num_workers=2)
    assert sorted(i for batch in loader for i in batch["id"].tolist()) == list(range(400))
    # The threads' connections closed with their threads: what is left is this thread's.
    del dataset, loader
    gc.collect()
    deadline = time.monotonic() + 10  # (threads end, and connections close, asynchronously)
    while sftp_server.open_connections() > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sftp_server.connections > 3 and sftp_server.open_connections() <= 1
