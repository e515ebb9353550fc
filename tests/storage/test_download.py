"""download(): whole-file, atomic, chunked, retried; local paths, file://, and object stores on
127.0.0.1 (s3:// on moto, gs:// on gcp-storage-emulator, az:// on Azurite)."""

from __future__ import annotations

import errno
import os
import pathlib
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopback_stores import Cloud, random_payload  # this directory is on sys.path

from streaming.storage.download import DownloadError, download
from streaming.storage.filesystem import resolve


def _put(bucket_url: str, key: str, data: bytes) -> str:
    url = f"{bucket_url}/{key}"
    fs, path = resolve(url)
    fs.pipe_file(path, data)
    return url


def _leftovers(directory: pathlib.Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ---- local sources --------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["plain", "file"])
def test_local_round_trip(tmp_path: pathlib.Path, form: str) -> None:
    data = os.urandom(100_003)
    src = tmp_path / "src" / "shard.00000.mds"
    src.parent.mkdir()
    src.write_bytes(data)
    url = str(src) if form == "plain" else f"file://{src}"
    dest = tmp_path / "out" / "nested" / "shard.00000.mds"
    assert download(url, str(dest)) == len(data)
    assert dest.read_bytes() == data
    assert _leftovers(dest.parent) == ["shard.00000.mds"]


def test_local_missing_names_url(tmp_path: pathlib.Path) -> None:
    url = f"file://{tmp_path}/nope.bin"
    with pytest.raises(FileNotFoundError, match="nope.bin") as caught:
        download(url, str(tmp_path / "out" / "nope.bin"))
    assert not (tmp_path / "out" / "nope.bin").exists()
    # Shaped as the reference's: "[Errno 2] No such file or directory: ..." naming the URL.
    assert caught.value.errno == errno.ENOENT and caught.value.filename == url
    assert str(caught.value).startswith("[Errno 2] No such file or directory (remote")


def test_local_directory_is_an_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(IsADirectoryError, match=str(tmp_path)):
        download(str(tmp_path), str(tmp_path / "x"))


def test_existing_destination_is_replaced_atomically(tmp_path: pathlib.Path) -> None:
    src = tmp_path / "a"
    src.write_bytes(b"new content")
    dest = tmp_path / "b"
    dest.write_bytes(b"old")
    download(str(src), str(dest))
    assert dest.read_bytes() == b"new content"
    assert oct(dest.stat().st_mode & 0o777) == oct(0o644)


def test_bad_arguments(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="chunk_size"):
        download(str(tmp_path), str(tmp_path / "x"), chunk_size=0)
    with pytest.raises(ValueError, match="unsupported URL scheme 'nosuch'"):
        download("nosuch://a/b", str(tmp_path / "x"))


# ---- s3:// through moto ---------------------------------------------------------------------


def test_small_round_trip(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    url = _put(cloud.root, "dir/index.json", b'{"version": 2, "shards": []}')
    dest = tmp_path / "index.json"
    assert download(url, str(dest)) == 28
    assert dest.read_bytes() == b'{"version": 2, "shards": []}'
    assert _leftovers(tmp_path) == ["index.json"]


def test_empty_object(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    url = _put(cloud.root, "empty", b"")
    assert download(url, str(tmp_path / "empty")) == 0
    assert (tmp_path / "empty").read_bytes() == b""


def test_large_object_parallel_ranges(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    data = random_payload(3 * 1024 * 1024 + 12345)
    url = _put(cloud.root, "big.bin", data)
    dest = tmp_path / "big.bin"
    assert download(url, str(dest), chunk_size=256 * 1024, max_concurrency=5) == len(data)
    assert dest.read_bytes() == data
    assert _leftovers(tmp_path) == ["big.bin"]


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(0, 5000), pieces=st.integers(1, 12), slack=st.integers(0, 50),
       conc=st.integers(1, 6))
def test_s3_chunked_assembly_property(s3_bucket: str, tmp_path: pathlib.Path, size: int,
                                      pieces: int, slack: int, conc: int) -> None:
    """Any object size, chunk size and concurrency reassembles the exact bytes."""
    chunk = max(1, -(-size // pieces) - slack)  # ~pieces ranges, often a ragged last one
    data = bytes((i * 7 + size) % 251 for i in range(size))
    url = _put(s3_bucket, f"prop/{size}", data)
    dest = tmp_path / f"prop-{size}-{chunk}-{conc}"
    assert download(url, str(dest), chunk_size=chunk, max_concurrency=conc) == size
    assert dest.read_bytes() == data


def test_missing_object_fails_fast_naming_url(
    cloud: Cloud, tmp_path: pathlib.Path, cloud_fault_proxy
) -> None:
    proxy = cloud_fault_proxy()
    url = f"{cloud.root}/missing/shard.mds"
    # What one lookup of a missing object costs on this store (gcsfs: the object, then a
    # listing, then the object again), to tell the download's lookups from retries.
    fs, other = resolve(f"{cloud.root}/other/shard.mds")
    with pytest.raises(FileNotFoundError):
        fs.info(other)
    lookup = proxy.count("HEAD") + proxy.count("GET")
    with pytest.raises(FileNotFoundError, match="missing/shard.mds") as caught:
        download(url, str(tmp_path / "shard.mds"), retry=5, backoff=0.01)
    assert caught.value.errno == errno.ENOENT and caught.value.filename == url
    assert "No such file or directory" in str(caught.value)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is FileNotFoundError and copy.filename == url
    assert not (tmp_path / "shard.mds").exists()
    assert _leftovers(tmp_path) == []
    if url.startswith("s3://"):
        # Also the botocore ClientError the reference lets through, with S3's response.
        from botocore.exceptions import ClientError

        assert isinstance(caught.value, ClientError)
        assert caught.value.response["Error"]["Code"] in ("NoSuchKey", "404")
        # Not retried: s3fs looks the key up once (HEAD, then a listing to rule out a
        # directory).
        assert proxy.count("HEAD") <= 2 and proxy.count("GET") <= 4
        assert proxy.count("HEAD") + proxy.count("GET") == 2 * lookup
    else:
        assert proxy.count("HEAD") + proxy.count("GET") == 2 * lookup  # not retried


def test_s3_missing_bucket(s3_bucket: str, tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-bucket-xyz"):
        download("s3://no-such-bucket-xyz/a", str(tmp_path / "a"), retry=2, backoff=0.01)


def test_directory_is_an_error(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    _put(cloud.root, "d/file", b"x")
    with pytest.raises(IsADirectoryError, match="/d"):
        download(f"{cloud.root}/d", str(tmp_path / "d"))


def test_failed_download_leaves_no_final_file(
    cloud: Cloud, tmp_path: pathlib.Path, cloud_fault_proxy
) -> None:
    data = random_payload(600_000)
    url = _put(cloud.root, "doomed.bin", data)
    proxy = cloud_fault_proxy(rate=1.0, kinds=("drop",), limit=1000)
    dest = tmp_path / "doomed.bin"
    with pytest.raises(DownloadError, match="doomed.bin"):
        download(url, str(dest), retry=2, backoff=0.01, chunk_size=100_000, timeout=2)
    assert not dest.exists()
    assert _leftovers(tmp_path) == []
    # An old copy under the final name survives a failed refresh untouched.
    dest.write_bytes(b"previous")
    with pytest.raises(DownloadError):
        download(url, str(dest), retry=1, backoff=0.01, timeout=2)
    assert dest.read_bytes() == b"previous"
    assert _leftovers(tmp_path) == ["doomed.bin"]
    assert proxy.injected  # the failures really came from the proxy


# ---- http(s): web servers may answer a range with the whole file -------------------------


@pytest.mark.parametrize("ranges", [False, True])
def test_http_large_object(tmp_path: pathlib.Path, static_server, ranges: bool) -> None:
    (tmp_path / "site").mkdir()
    data = os.urandom(1_000_000 + 17)
    (tmp_path / "site" / "big.bin").write_bytes(data)
    server = static_server(str(tmp_path / "site"), ranges=ranges)
    dest = tmp_path / "big.bin"
    assert download(f"{server.url}/big.bin", str(dest), chunk_size=100_000) == len(data)
    assert dest.read_bytes() == data
    assert _leftovers(tmp_path) == ["big.bin", "site"]
    wanted = [rng for path, rng in server.gets if path == "/big.bin"]
    if ranges:  # 11 ranged GETs, the first alone, the rest in parallel
        assert sorted(wanted) == sorted(f"bytes={s}-{min(s + 100_000, len(data)) - 1}"
                                        for s in range(0, len(data), 100_000))
    else:  # the answer to the first range was the whole file: nothing more was asked
        assert wanted == ["bytes=0-99999"]


def test_http_server_refusing_ranges_gets_one_request(tmp_path: pathlib.Path,
                                                      static_server) -> None:
    (tmp_path / "site").mkdir()
    data = os.urandom(300_000)
    (tmp_path / "site" / "big.bin").write_bytes(data)
    server = static_server(str(tmp_path / "site"), refuse_ranges=True)
    dest = tmp_path / "big.bin"
    assert download(f"{server.url}/big.bin", str(dest), chunk_size=100_000) == len(data)
    assert dest.read_bytes() == data
    assert [rng for path, rng in server.gets if path == "/big.bin"] == [None]


def test_sftp_large_object_parallel_ranges(tmp_path: pathlib.Path, sftp_server) -> None:
    data = os.urandom(1_000_000 + 17)
    (pathlib.Path(sftp_server.root) / "big.bin").write_bytes(data)
    dest = tmp_path / "big.bin"
    assert download(sftp_server.url("big.bin"), str(dest), chunk_size=100_000,
                    max_concurrency=4) == len(data)
    assert dest.read_bytes() == data
    assert _leftovers(tmp_path) == ["big.bin"]
    with pytest.raises(FileNotFoundError, match="nothing.bin") as caught:
        download(sftp_server.url("nothing.bin"), str(tmp_path / "x"), retry=3)
    assert caught.value.filename == sftp_server.url("nothing.bin")


# ---- synchronous filesystems (hf, sftp, dbfs): the thread-pool path -------------------------


@pytest.mark.parametrize(("size", "chunk"), [(0, 10), (5, 10), (1000, 10), (1001, 64)])
def test_sync_filesystem_thread_path(tmp_path: pathlib.Path, size: int, chunk: int) -> None:
    """Sync backends go through ranged reads in a thread pool; memory:// stands in for them."""
    from fsspec.implementations.memory import MemoryFileSystem

    from streaming.storage.download import _Job

    fs = MemoryFileSystem(skip_instance_cache=True)
    fs.store.clear()
    data = os.urandom(size)
    fs.pipe_file("/bucket/obj", data)
    job = _Job("memory://bucket/obj", fs, "/bucket/obj", timeout=5, retry=2, backoff=0.01,
               chunk_size=chunk, max_concurrency=3)
    assert job.fetch_threads(str(tmp_path / "obj")) == size
    assert (tmp_path / "obj").read_bytes() == data
    missing = _Job("memory://bucket/none", fs, "/bucket/none", timeout=5, retry=3,
                   backoff=0.01, chunk_size=chunk, max_concurrency=3)
    with pytest.raises(FileNotFoundError, match="memory://bucket/none"):
        missing.fetch_threads(str(tmp_path / "none"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["obj"]


def test_sync_filesystem_flaky_reads_are_retried(tmp_path: pathlib.Path) -> None:
    from fsspec.implementations.memory import MemoryFileSystem

    from streaming.storage.download import _Job

    class Flaky(MemoryFileSystem):
        failures = 3

        def cat_file(self, path, start=None, end=None, **kwargs):
            data = super().cat_file(path, start=start, end=end, **kwargs)
            if Flaky.failures > 0:
                Flaky.failures -= 1
                return data[: len(data) // 2]  # a short read
            return data

    fs = Flaky(skip_instance_cache=True)
    data = os.urandom(4000)
    fs.pipe_file("/b/flaky", data)
    job = _Job("memory://b/flaky", fs, "/b/flaky", timeout=5, retry=3, backoff=0.01,
               chunk_size=1000, max_concurrency=2)
    assert job.fetch_threads(str(tmp_path / "flaky")) == 4000
    assert (tmp_path / "flaky").read_bytes() == data
    assert Flaky.failures == 0
    Flaky.failures = 100
    with pytest.raises(DownloadError, match=r"memory://b/flaky.*after 3 attempt"):
        job.fetch_threads(str(tmp_path / "flaky2"))
    assert not (tmp_path / "flaky2").exists()


@pytest.mark.parametrize("chunk", [64 << 20, 700_000])
def test_s3_written_stretches_go_to_disk_as_they_complete(
        s3_bucket: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        chunk: int) -> None:
    """Every byte written is handed to the disk once, in stretches, before the final fsync."""
    import streaming.storage.download as dl

    handed: list[tuple[int, int]] = []
    real = dl.start_writeback

    def record(fd: int, offset: int, length: int) -> None:
        handed.append((offset, length))
        real(fd, offset, length)  # the real call must leave the bytes intact

    monkeypatch.setattr(dl, "start_writeback", record)
    monkeypatch.setattr(dl, "WRITEBACK_EVERY", 1 << 20)
    data = os.urandom(3 * 1024 * 1024 + 777)
    url = _put(s3_bucket, "wb.bin", data)
    assert download(url, str(tmp_path / "wb"), chunk_size=chunk, max_concurrency=3) == len(data)
    assert (tmp_path / "wb").read_bytes() == data
    covered = sorted(handed)
    assert covered[0][0] == 0 and all(length > 0 for _, length in covered)
    assert all(a + n == b for (a, n), (b, _) in zip(covered, covered[1:]))  # no gap, no overlap
    assert covered[-1][0] + covered[-1][1] == len(data)
    if chunk > len(data):  # one GET: stretches of about WRITEBACK_EVERY
        assert 3 <= len(covered) <= 5


def test_s3_full_local_disk_fails_at_once_naming_the_file(
        s3_bucket: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from streaming.storage import download as download_mod

    url = _put(s3_bucket, "full/shard.00000.mds", os.urandom(300_000))
    writes = []

    def pwrite(fd, data, offset):
        writes.append(offset)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(download_mod.os, "pwrite", pwrite)
    dest = tmp_path / "cache" / "shard.00000.mds"
    with pytest.raises(OSError) as info:
        download(url, str(dest), retry=4, backoff=0.01, chunk_size=100_000)
    # The disk's error, naming the local file; not a DownloadError after 4 attempts.
    assert type(info.value) is OSError and info.value.errno == errno.ENOSPC
    assert info.value.filename == str(dest)
    assert len(writes) == 1  # not retried
    assert _leftovers(dest.parent) == []
