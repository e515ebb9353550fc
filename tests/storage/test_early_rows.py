"""The first rows of an epoch from the head of a shard still downloading: the download publishes
what it has written (``storage.partial``), the dataset decodes its first block from it, and
every sample is still exactly the original. moto on 127.0.0.1, behind a proxy that holds the
second half of a shard's body until told."""

from __future__ import annotations

import os
import pathlib
import threading
import time

import numpy as np

from streaming import MDSWriter, StreamingDataset
from streaming.storage.partial import publishing, read_head

COLUMNS = {"id": "int", "blob": "bytes"}


def _samples(n: int) -> list[dict]:
    rng = np.random.default_rng(1)
    return [{"id": i, "blob": rng.bytes(900 + i % 200)} for i in range(n)]


def _write(remote: str, samples: list[dict], **kwargs: object) -> None:
    with MDSWriter(out=remote, columns=COLUMNS, size_limit=1 << 20, **kwargs) as writer:
        for sample in samples:
            writer.write(sample)


def _shard0(cache: pathlib.Path) -> pathlib.Path:
    return cache / "shard.00000.mds"


def test_first_rows_arrive_before_their_shard(s3_bucket: str, fault_proxy,
                                              tmp_path: pathlib.Path) -> None:
    samples = _samples(3000)  # ~1 MB shards of ~1,000 rows: the first block is 256 rows
    remote = f"{s3_bucket}/early"
    _write(remote, samples)
    proxy = fault_proxy(script=["ok", "pause"], stall_seconds=8.0)  # index.json, shard 0
    cache = tmp_path / "cache"
    dataset = StreamingDataset(remote=remote, local=str(cache), shuffle=False, batch_size=8)
    it = iter(dataset)
    first = next(it)
    # Shard 0 is still half-sent: the first sample came from the head of its temp file.
    assert proxy.paused.is_set() and not _shard0(cache).exists()
    assert first["id"] == 0 and first["blob"] == samples[0]["blob"]
    proxy.resume()
    got = [first, *it]
    assert [s["id"] for s in got] == list(range(len(samples)))
    assert all(s["blob"] == want["blob"] for s, want in zip(got, samples))
    assert _shard0(cache).exists()


def test_validate_hash_waits_for_the_whole_shard(s3_bucket: str, fault_proxy,
                                                 tmp_path: pathlib.Path) -> None:
    samples = _samples(1500)
    remote = f"{s3_bucket}/hashed"
    _write(remote, samples, hashes=["xxh64"])
    proxy = fault_proxy(script=["ok", "pause"], stall_seconds=8.0)
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                               batch_size=8, validate_hash="xxh64")
    got: list[dict] = []
    reader = threading.Thread(target=lambda: got.extend(dataset))
    reader.start()
    assert proxy.paused.wait(10)
    time.sleep(0.3)
    assert not got  # nothing may be used before the whole shard is hashed
    proxy.resume()
    reader.join(30)
    assert [s["id"] for s in got] == list(range(len(samples)))


def test_compressed_shards_are_not_read_early(s3_bucket: str, tmp_path: pathlib.Path) -> None:
    remote = f"{s3_bucket}/zstd"
    _write(remote, _samples(500), compression="zstd")
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                               batch_size=8)
    stream = dataset.streams[0]
    assert stream.read_rows_early(dataset.shards[0], np.arange(4)) is None
    assert [s["id"] for s in dataset] == list(range(500))


def test_read_head_follows_a_download(tmp_path: pathlib.Path) -> None:
    path, tmp = str(tmp_path / "file"), str(tmp_path / ".file.part")
    data = os.urandom(10_000)
    started, step = threading.Event(), threading.Event()
    results: list[bytes | None] = []

    def download() -> None:
        with open(tmp, "wb") as f, publishing(path, tmp) as advance:
            started.set()
            f.write(data[:4000])
            f.flush()
            advance(4000)
            step.wait(10)
            f.write(data[4000:])
            f.flush()
            advance(10_000)
        os.replace(tmp, path)

    def wait_for(size: int) -> None:
        results.append(read_head(path, size, start_within=5, timeout=10))

    writer = threading.Thread(target=download)
    writer.start()
    started.wait(10)
    assert read_head(path, 4000, start_within=5, timeout=10) == data[:4000]
    late = threading.Thread(target=wait_for, args=(9000,))  # needs more than is written
    late.start()
    time.sleep(0.1)
    assert late.is_alive()
    step.set()
    late.join(10)
    writer.join(10)
    assert results == [data[:9000]]
    # Done and renamed: nothing is in progress, the caller reads the file itself.
    assert read_head(path, 10, start_within=5, timeout=10) is None


def test_read_head_gives_up(tmp_path: pathlib.Path) -> None:
    path, tmp = str(tmp_path / "file"), str(tmp_path / ".file.part")
    t0 = time.monotonic()
    assert read_head(path, 10, start_within=0.05, timeout=10) is None  # no download began
    assert time.monotonic() - t0 < 2
    # A download that ends (fails) before the wanted bytes are written.
    ready = threading.Event()

    def failing() -> None:
        with open(tmp, "wb") as f, publishing(path, tmp) as advance:
            f.write(b"x" * 100)
            f.flush()
            advance(100)
            ready.set()
            time.sleep(0.1)
        os.unlink(tmp)

    thread = threading.Thread(target=failing)
    thread.start()
    ready.wait(10)
    assert read_head(path, 1000, start_within=5, timeout=10) is None
    thread.join(10)
    # Still downloading, but out of time.
    with open(tmp, "wb"), publishing(path, tmp) as advance:
        advance(0)
        assert read_head(path, 10, start_within=5, timeout=0.05) is None


def test_a_truncated_first_response_is_retried_under_the_reader(s3_bucket: str, fault_proxy,
                                                                tmp_path: pathlib.Path) -> None:
    samples = _samples(2000)
    remote = f"{s3_bucket}/retried"
    _write(remote, samples)
    proxy = fault_proxy(script=["ok", "truncate"])  # shard 0's first response is cut short
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), shuffle=False,
                               batch_size=8)
    got = list(dataset)
    assert proxy.injected == ["truncate"]
    assert [s["id"] for s in got] == list(range(len(samples)))
    assert all(s["blob"] == want["blob"] for s, want in zip(got, samples))


def test_local_remotes_do_not_wait(tmp_path: pathlib.Path) -> None:
    """A copy from a local remote publishes no head: nothing to wait for, the rows come from
    the copied shard as usual."""
    samples = _samples(300)
    _write(str(tmp_path / "remote"), samples)
    dataset = StreamingDataset(remote=str(tmp_path / "remote"), local=str(tmp_path / "cache"),
                               shuffle=False, batch_size=8)
    t0 = time.monotonic()
    assert dataset.streams[0].read_rows_early(dataset.shards[0], np.arange(4)) is None
    assert time.monotonic() - t0 < 0.1
    assert [s["blob"] for s in dataset] == [s["blob"] for s in samples]
