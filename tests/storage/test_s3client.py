"""The shared client for s3:// downloads (the botocore-signed urllib3 client for an explicit
endpoint, botocore's generated client otherwise): what each downloads from moto on 127.0.0.1,
which one is chosen, and the background prewarm (one client per process and options, waited
for, dropped across fork)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import pytest

from streaming.storage import s3client
from streaming.storage.download import download
from streaming.storage.filesystem import clear_filesystem_cache, resolve_options


def _put(bucket_url: str, key: str, data: bytes) -> None:
    import boto3

    boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"]).put_object(
        Bucket=bucket_url[len("s3://"):], Key=key, Body=data)


@pytest.fixture
def fresh_clients(s3_bucket: str) -> str:
    clear_filesystem_cache()
    yield s3_bucket
    s3client.wait_prewarm()
    clear_filesystem_cache()


def _use_botocore_client(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy setting is one thing only botocore's client honours: it is chosen instead (and,
    # told to bypass the proxy for loopback, still reaches moto directly).
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    clear_filesystem_cache()


@pytest.mark.parametrize("kind", ["SignedS3Client", "S3"])
def test_downloads_ranged_whole_empty_and_odd_names(kind: str, fresh_clients: str,
                                                    tmp_path: pathlib.Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = fresh_clients
    if kind == "S3":  # botocore's generated client class
        _use_botocore_client(monkeypatch)
    data = os.urandom(300_001)
    _put(bucket, "dir/odd name+ü~(1).bin", data)
    _put(bucket, "empty.bin", b"")
    url = f"{bucket}/dir/odd name+ü~(1).bin"
    # Ranged: 5 parts of 64 KiB (the last one short) from 3 threads.
    assert download(url, str(tmp_path / "a"), chunk_size=65_536, max_concurrency=3) == len(data)
    assert (tmp_path / "a").read_bytes() == data
    assert download(url, str(tmp_path / "b")) == len(data)  # one request, whole object
    assert (tmp_path / "b").read_bytes() == data
    assert download(f"{bucket}/empty.bin", str(tmp_path / "e")) == 0
    assert (tmp_path / "e").read_bytes() == b""
    assert type(s3client.s3_client(resolve_options(url)[1], 60.0)).__name__ == kind


def test_missing_key_and_directory(fresh_clients: str, tmp_path: pathlib.Path) -> None:
    bucket = fresh_clients
    _put(bucket, "dir/inside.bin", b"x")
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        download(f"{bucket}/missing.bin", str(tmp_path / "m"))
    with pytest.raises(IsADirectoryError, match="is a directory"):
        download(f"{bucket}/dir", str(tmp_path / "d"))
    with pytest.raises(IsADirectoryError, match="is a directory"):
        download(f"{bucket}/dir/", str(tmp_path / "d"))
    assert not (tmp_path / "m").exists() and not (tmp_path / "d").exists()


def test_missing_bucket_is_not_found(fresh_clients: str, tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-bucket-here"):
        download("s3://no-such-bucket-here/x", str(tmp_path / "x"))
    assert not (tmp_path / "x").exists()


def test_prewarm_builds_the_client_downloads_use(fresh_clients: str,
                                                 tmp_path: pathlib.Path) -> None:
    bucket = fresh_clients
    _put(bucket, "k.bin", b"payload")
    s3client.prewarm(f"{bucket}/some/prefix", 60.0)
    # Many threads asking at once, while the prewarm may still be running: one client.
    options = resolve_options(f"{bucket}/k.bin")[1]
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(s3client.s3_client(options, 60.0)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    s3client.wait_prewarm()
    assert len(got) == 4 and all(client is got[0] for client in got)
    assert list(s3client._clients.values()) == [got[0]]  # the prewarm built no second one
    assert download(f"{bucket}/k.bin", str(tmp_path / "k"), timeout=60.0) == 7
    assert list(s3client._clients.values()) == [got[0]]
    # Another timeout is another client (its read timeout differs).
    other = s3client.s3_client(options, 5.0)
    assert other is not got[0] and other.timeout == 5.0
    assert got[0].timeout == 60.0


def test_prewarm_ignores_other_schemes_and_bad_urls(fresh_clients: str) -> None:
    for url in (None, "", "/local/dir", "file:///x", "hf://datasets/a/b", "https://h/x"):
        s3client.prewarm(url)
        assert not s3client._prewarms and not s3client._clients
    s3client.prewarm("s3://")  # no bucket: resolve_options raises in the thread, only logged
    s3client.wait_prewarm()
    assert not s3client._prewarms and not s3client._clients


_FORK_SCRIPT = textwrap.dedent("""
    import os, sys
    from streaming.stream import Stream
    from streaming.storage import s3client
    from streaming.storage.download import download

    url, out = sys.argv[1], sys.argv[2]
    Stream(remote=url.rsplit("/", 1)[0], local=out + "-local")  # starts the prewarm
    pid = os.fork()  # at once: the fork waits for the prewarm, the child starts afresh
    if pid == 0:
        ok = not s3client._prewarms
        ok &= download(url, out + "-child") == 7
        ok &= {k[0] for k in s3client._clients} == {os.getpid()}
        os._exit(0 if ok else 3)
    assert download(url, out + "-parent") == 7
    assert {k[0] for k in s3client._clients} == {os.getpid()}
    _, status = os.waitpid(pid, 0)
    print("botocore" in sys.modules, os.waitstatus_to_exitcode(status))
""")


def test_fresh_process_prewarm_then_fork(fresh_clients: str, tmp_path: pathlib.Path) -> None:
    bucket = fresh_clients
    _put(bucket, "data/k.bin", b"payload")
    out = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, f"{bucket}/data/k.bin",
                          str(tmp_path / "k")], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "0"]
    for name in ("k-parent", "k-child"):
        assert (tmp_path / name).read_bytes() == b"payload"


def test_prewarm_pauses_the_collector_only_while_it_runs(fresh_clients: str) -> None:
    import gc

    seen: list[bool] = []
    real = s3client.s3_client

    def spy(options: dict, timeout: float) -> object:
        seen.append(gc.isenabled())
        return real(options, timeout)

    s3client.s3_client = spy  # type: ignore[assignment]
    try:
        assert gc.isenabled()
        s3client.prewarm(f"{fresh_clients}/x", 60.0)
        s3client.wait_prewarm()
        assert seen == [False] and gc.isenabled()
        gc.disable()  # someone else's choice is kept
        try:
            with s3client._gc_paused():
                pass
            assert not gc.isenabled()
        finally:
            gc.enable()
    finally:
        s3client.s3_client = real  # type: ignore[assignment]
