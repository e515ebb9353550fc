"""Downloads and uploads through a loopback proxy that drops, stalls, truncates and throttles."""

from __future__ import annotations

import os
import pathlib
import time

import boto3
import pytest

from streaming.storage.download import DownloadError, download
from streaming.storage.upload import CloudUploader, UploadError, upload


def _put(bucket_url: str, key: str, data: bytes, endpoint: str) -> str:
    boto3.client("s3", endpoint_url=endpoint).put_object(
        Bucket=bucket_url[len("s3://") :], Key=key, Body=data
    )
    return f"{bucket_url}/{key}"


@pytest.mark.parametrize("client", ["signed", "botocore"])
@pytest.mark.parametrize("fault", ["drop", "truncate", "error503", "stall"])
def test_each_fault_is_survived(
    s3_bucket: str, s3_endpoint: str, tmp_path: pathlib.Path, fault_proxy, fault: str,
    client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = os.urandom(300_000)
    url = _put(s3_bucket, f"f/{fault}.bin", data, s3_endpoint)
    if client == "botocore":  # a proxy setting sends downloads through botocore's own client
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    # The first GET is sabotaged; the retry must succeed with identical bytes.
    proxy = fault_proxy(script=[fault], stall_seconds=30.0)
    dest = tmp_path / "out.bin"
    start = time.monotonic()
    assert download(url, str(dest), timeout=1.0, retry=3, backoff=0.01) == len(data)
    assert dest.read_bytes() == data
    assert proxy.injected == [fault]
    assert proxy.count("GET") == 2  # exactly one retry
    if fault == "stall":
        assert 0.9 < time.monotonic() - start < 10  # the 1 s timeout cut the 30 s stall short


def test_random_faults_on_chunked_download(
    s3_bucket: str, s3_endpoint: str, tmp_path: pathlib.Path, fault_proxy
) -> None:
    """A third of the ranged GETs fail in assorted ways; the file still arrives intact."""
    data = os.urandom(2 * 1024 * 1024 + 999)
    url = _put(s3_bucket, "chunky.bin", data, s3_endpoint)
    proxy = fault_proxy(rate=0.35, kinds=("drop", "truncate", "error503"), limit=12, seed=7)
    dest = tmp_path / "chunky.bin"
    chunks = -(-len(data) // (128 * 1024))
    assert download(url, str(dest), chunk_size=128 * 1024, max_concurrency=4, retry=6,
                    backoff=0.01, timeout=5) == len(data)
    assert dest.read_bytes() == data
    assert proxy.injected, "the proxy should have injected faults"
    # Retries are bounded: one extra GET per injected fault, no more.
    assert proxy.count("GET") == chunks + len(proxy.injected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunky.bin"]


def test_persistent_faults_exhaust_retries_naming_url(
    s3_bucket: str, s3_endpoint: str, tmp_path: pathlib.Path, fault_proxy
) -> None:
    url = _put(s3_bucket, "never.bin", b"x" * 1000, s3_endpoint)
    proxy = fault_proxy(rate=1.0, kinds=("truncate",), limit=100)
    with pytest.raises(DownloadError, match=r"never\.bin.*after 3 attempt"):
        download(url, str(tmp_path / "never.bin"), retry=3, backoff=0.01, timeout=5)
    assert proxy.count("GET") == 3
    assert not (tmp_path / "never.bin").exists()


def test_dead_endpoint_fails_within_budget(dead_endpoint: str, tmp_path: pathlib.Path) -> None:
    url = "s3://some-bucket/some/shard.00000.mds"
    start = time.monotonic()
    with pytest.raises(DownloadError) as info:
        download(url, str(tmp_path / "shard"), timeout=2, retry=3, backoff=0.05)
    elapsed = time.monotonic() - start
    assert url in str(info.value)
    assert elapsed < 2 * 3 + 1, elapsed  # within the budget: timeout x attempts (+ backoff)
    assert list(tmp_path.iterdir()) == []


def test_stalled_endpoint_times_out_naming_url(
    s3_bucket: str, s3_endpoint: str, tmp_path: pathlib.Path, fault_proxy
) -> None:
    url = _put(s3_bucket, "slow.bin", b"y" * 5000, s3_endpoint)
    fault_proxy(rate=1.0, kinds=("stall",), limit=10, stall_seconds=30)
    start = time.monotonic()
    with pytest.raises(DownloadError, match=r"slow\.bin: download timed out after 2 attempt"):
        download(url, str(tmp_path / "slow.bin"), timeout=0.5, retry=2, backoff=0.01)
    assert time.monotonic() - start < 10  # 2 x 0.5 s timeouts, not the 30 s stall


def test_upload_retries_through_faults(
    s3_bucket: str, s3_endpoint: str, tmp_path: pathlib.Path, fault_proxy
) -> None:
    data = os.urandom(200_000)
    src = tmp_path / "up.bin"
    src.write_bytes(data)
    proxy = fault_proxy(script=["drop", "error503"], methods=("PUT",))
    upload(str(src), f"{s3_bucket}/up/up.bin", retry=3, backoff=0.01)
    assert proxy.injected == ["drop", "error503"]
    body = boto3.client("s3", endpoint_url=s3_endpoint).get_object(
        Bucket=s3_bucket[5:], Key="up/up.bin")["Body"].read()
    assert body == data


def test_uploader_gives_up_after_retry_attempts(
    s3_bucket: str, tmp_path: pathlib.Path, fault_proxy
) -> None:
    proxy = fault_proxy(rate=1.0, kinds=("error503",), limit=100, methods=("PUT",))
    uploader = CloudUploader.get((str(tmp_path / "local"), f"{s3_bucket}/ds"), retry=2)
    (tmp_path / "local" / "shard.00000.mds").write_bytes(b"abc")
    with pytest.raises(UploadError, match=r"ds/shard\.00000\.mds.*after 2 attempt"):
        uploader.upload_file("shard.00000.mds")
    assert proxy.count("PUT") == 2
    # The local file is kept when its upload failed.
    assert (tmp_path / "local" / "shard.00000.mds").exists()
