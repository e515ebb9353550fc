"""The reference's downloader classes (CloudDownloader.get, direct_download, ...) over download()."""

from __future__ import annotations

import pathlib

import boto3
import pytest

import streaming.base.storage as base_storage
from streaming.base.storage import download as base_download
from streaming.storage import download as core


def test_reference_names_are_reexported() -> None:
    for name in base_storage.__all__:
        assert getattr(base_storage, name) is getattr(
            base_download if name.endswith("Downloader") else base_storage.upload, name)
    assert base_download.CloudDownloader is core.CloudDownloader
    assert base_download.download_file is core.download_file


@pytest.mark.parametrize(
    ("remote", "cls"),
    [(None, "LocalDownloader"), ("/data", "LocalDownloader"), ("file:///d", "LocalDownloader"),
     ("s3://b/k", "S3Downloader"), ("gs://b/k", "GCSDownloader"), ("oci://b@n/k", "OCIDownloader"),
     ("hf://datasets/o/n", "HFDownloader"), ("azure://a/c", "AzureDownloader"),
     ("azure-dl://c/p", "AzureDataLakeDownloader"), ("sftp://h/p", "SFTPDownloader"),
     ("dbfs:/Volumes/x/y", "DatabricksUnityCatalogDownloader"), ("dbfs:/tmp", "DBFSDownloader"),
     ("dbfs:/Volumess/x", "DBFSDownloader")],
)
def test_get_dispatches_on_scheme(remote: str | None, cls: str) -> None:
    assert type(core.CloudDownloader.get(remote)).__name__ == cls


def test_get_rejects_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="Unsupported remote path: ftp://x"):
        core.CloudDownloader.get("ftp://x")


def test_download_skips_existing_and_needs_remote(tmp_path: pathlib.Path) -> None:
    downloader = core.CloudDownloader.get(None)
    existing = tmp_path / "have"
    existing.write_bytes(b"cached")
    downloader.download(None, str(existing))  # exists: nothing to do, no remote needed
    assert existing.read_bytes() == b"cached"
    with pytest.raises(ValueError, match="path to remote dataset must be provided"):
        downloader.download(None, str(tmp_path / "missing"))


def test_wrong_scheme_for_downloader(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="Expected remote path to start with url scheme"):
        core.S3Downloader().download("gs://b/k", str(tmp_path / "k"))


@pytest.mark.parametrize("prefix", ["dbfs:/Volumess", "dbfs:/Content"])
def test_unity_catalog_downloader_wants_a_volume(tmp_path: pathlib.Path, prefix: str) -> None:
    # The reference's message, naming what it found (a "dbfs:/Volumess" path is not a volume:
    # it went on to the network before).
    with pytest.raises(ValueError, match=f"Expected path prefix to be `dbfs:/Volumes` if it is "
                                         f"a Databricks Unity Catalog, instead, got {prefix} "
                                         f"for remote={prefix}/b/f.txt"):
        core.DatabricksUnityCatalogDownloader().download(f"{prefix}/b/f.txt",
                                                         str(tmp_path / "f.txt"))
    assert not (tmp_path / "f.txt").exists()


def test_direct_download_local(tmp_path: pathlib.Path) -> None:
    src = tmp_path / "src.json"
    src.write_text('{"a": 1}')
    dest = tmp_path / "deep" / "dir" / "index.json"
    core.CloudDownloader.direct_download(str(src), str(dest))
    assert dest.read_text() == '{"a": 1}'
    core.download_file(f"file://{src}", str(tmp_path / "legacy.json"), 10)
    assert (tmp_path / "legacy.json").read_text() == '{"a": 1}'


def test_s3_downloader_round_trip(s3_bucket: str, s3_endpoint: str,
                                  tmp_path: pathlib.Path) -> None:
    boto3.client("s3", endpoint_url=s3_endpoint).put_object(
        Bucket=s3_bucket[5:], Key="ds/shard.00000.mds", Body=b"\x00\x01shard")
    downloader = core.CloudDownloader.get(f"{s3_bucket}/ds")
    assert isinstance(downloader, core.S3Downloader)
    dest = tmp_path / "shard.00000.mds"
    downloader.download(f"{s3_bucket}/ds/shard.00000.mds", str(dest), 30)
    downloader.clean_up()
    assert dest.read_bytes() == b"\x00\x01shard"
    with pytest.raises(FileNotFoundError, match="ds/none.mds"):
        downloader.download(f"{s3_bucket}/ds/none.mds", str(tmp_path / "none.mds"))


def test_subclass_override_is_used(tmp_path: pathlib.Path) -> None:
    """Users patch _download_file_impl; download() must go through it."""
    calls = []

    class Recording(core.LocalDownloader):
        def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
            calls.append((remote, local, timeout))
            pathlib.Path(local).write_bytes(b"fake")

    Recording().download(str(tmp_path / "src"), str(tmp_path / "out"), 7)
    assert calls == [(str(tmp_path / "src"), str(tmp_path / "out"), 7)]
    assert (tmp_path / "out").read_bytes() == b"fake"


def test_alipan_is_refused_clearly(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="alipan:// storage is not supported"):
        core.CloudDownloader.get("alipan:///x").download("alipan:///x", str(tmp_path / "x"))
