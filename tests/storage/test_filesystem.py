"""URL -> fsspec filesystem: the scheme registry, options from the environment, caching, fork."""

from __future__ import annotations

import multiprocessing
import os
import pathlib
import sys

import boto3
import pytest
from fsspec.implementations.local import LocalFileSystem

from streaming.storage import filesystem
from streaming.storage.filesystem import (
    SCHEMES,
    clear_filesystem_cache,
    is_local,
    is_unity_catalog,
    join_url,
    one_request_options,
    resolve,
    split_scheme,
)
from streaming.storage.upload import _provider


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_filesystem_cache()
    yield
    clear_filesystem_cache()


def _options(url: str) -> tuple[str, dict, str]:
    import urllib.parse

    return SCHEMES[split_scheme(url)[0]].options(urllib.parse.urlsplit(url))


@pytest.mark.parametrize(
    ("url", "scheme"),
    [("/data/x", ""), ("rel/x", ""), ("C:\\data\\x", ""), ("c:/data", ""),
     ("file:///a/b", "file"), ("S3://B/k", "s3"), ("dbfs:/Volumes/a", "dbfs"),
     ("hf://datasets/o/n", "hf"), ("azure-dl://c/p", "azure-dl")],
)
def test_split_scheme(url: str, scheme: str) -> None:
    assert split_scheme(url)[0] == scheme
    assert is_local(url) == (scheme in ("", "file"))


def test_join_url() -> None:
    assert join_url("s3://b/ds", "shard.mds") == "s3://b/ds/shard.mds"
    assert join_url("s3://b/ds/", "a\\b.mds") == "s3://b/ds/a/b.mds"
    assert join_url("/tmp/ds", "x") == os.path.join("/tmp/ds", "x")


def test_local_paths(tmp_path: pathlib.Path) -> None:
    fs, path = resolve(str(tmp_path / "a"))
    # fsspec 2023.6 (llm-foundry's pin) spells its protocol "file", later ones ("file", "local").
    assert isinstance(fs, LocalFileSystem) and path == str(tmp_path / "a")
    fs2, path2 = resolve(f"file://{tmp_path}/a%20b")
    assert fs2 is fs and path2 == f"{tmp_path}/a b"


def test_unknown_scheme_lists_supported() -> None:
    with pytest.raises(ValueError, match=r"ftp://x/y: unsupported URL scheme 'ftp'.*s3://"):
        resolve("ftp://x/y")


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [("gs://bucket/x", "gcsfs", "gcs"), ("az://c/x", "adlfs", "azure"),
     ("oci://b@ns/x", "ocifs", "oci"), ("sftp://h/x", "paramiko", "sftp"),
     ("https://h/x", "aiohttp", "http"), ("s3://b/x", "s3fs", "s3"),
     ("hf://datasets/o/n/x", "huggingface_hub", "hf")],
)
def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, url: str, module: str,
                                         extra: str) -> None:
    # None in sys.modules makes `import module` raise ImportError, as if it were not installed.
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=rf"pip install 'shardstream\[{extra}\]'") as info:
        resolve(url)
    assert url in str(info.value)


def test_s3_options_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setenv("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "other, paid-bucket")
    monkeypatch.setenv("S3_CANNED_ACL", "bucket-owner-full-control")
    protocol, options, path = _options("s3://paid-bucket/a/b.mds")
    assert protocol == "s3" and path == "paid-bucket/a/b.mds"
    assert options["client_kwargs"]["endpoint_url"] == "http://127.0.0.1:9"
    assert options["requester_pays"] is True
    assert options["s3_additional_kwargs"] == {"ACL": "bucket-owner-full-control"}
    assert "anon" not in options
    _, options, _ = _options("s3://free-bucket/a")
    assert "requester_pays" not in options
    with pytest.raises(ValueError, match="has no bucket"):
        _options("s3:///key")


def test_s3_without_credentials_is_anonymous(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: pathlib.Path) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never ask a metadata service
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    _, options, _ = _options("s3://public-bucket/x")
    assert options["anon"] is True


def test_s3_profile_is_honoured(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    creds = tmp_path / "credentials"
    creds.write_text("[myprof]\naws_access_key_id = A\naws_secret_access_key = B\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_PROFILE", "myprof")
    _, options, _ = _options("s3://b/x")
    assert "anon" not in options  # the profile's keys sign requests


def test_gcs_hmac_goes_through_s3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GCS_KEY", "gk")
    monkeypatch.setenv("GCS_SECRET", "gs")
    protocol, options, path = _options("gs://bucket/ds/x")
    assert protocol == "s3" and path == "bucket/ds/x"
    assert options["client_kwargs"]["endpoint_url"] == "https://storage.googleapis.com"
    assert (options["key"], options["secret"]) == ("gk", "gs")
    monkeypatch.delenv("GCS_KEY")
    assert _options("gs://bucket/ds/x")[:1] == ("gcs",)


def test_gcs_emulator_goes_anonymous(monkeypatch: pytest.MonkeyPatch) -> None:
    # Application Default Credentials otherwise (gcsfs looks for them; nothing here says which).
    for unset in ("", "default"):
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", unset)
        assert _options("gs://bucket/ds/x") == ("gcs", {}, "bucket/ds/x")
    # An emulator takes no credentials: none are looked for (google-auth would first probe the
    # metadata server's link-local address).
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")
    assert _options("gs://bucket/ds/x") == ("gcs", {"token": "anon"}, "bucket/ds/x")
    # HMAC keys still win: the reference's S3-compatible route.
    monkeypatch.setenv("GCS_KEY", "gk")
    monkeypatch.setenv("GCS_SECRET", "gs")
    assert _options("gs://bucket/ds/x")[0] == "s3"


@pytest.mark.parametrize(
    ("url", "account", "path"),
    [("az://container/a/b", None, "container/a/b"),
     ("azure://acct.blob.core.windows.net/container/a", "acct", "container/a"),
     ("abfs://container@acct.dfs.core.windows.net/a", "acct", "container/a")],
)
def test_azure_url_forms(monkeypatch: pytest.MonkeyPatch, url: str, account: str | None,
                         path: str) -> None:
    monkeypatch.delenv("AZURE_ACCOUNT_NAME", raising=False)
    monkeypatch.setenv("AZURE_ACCOUNT_ACCESS_KEY", "secret")
    protocol, options, got = _options(url)
    assert protocol == "abfs" and got == path
    assert options.get("account_name") == account
    assert options["account_key"] == "secret"
    monkeypatch.setenv("AZURE_ACCOUNT_NAME", "envacct")
    assert _options(url)[1]["account_name"] == "envacct"


def test_hf_url_and_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:1/")
    protocol, options, path = _options("hf://datasets/org/name/sub/index.json")
    assert protocol == "hf" and path == "datasets/org/name/sub/index.json"
    assert options == {"token": "hf_secret", "endpoint": "http://127.0.0.1:1"}
    monkeypatch.delenv("HF_TOKEN")
    assert _options("hf://datasets/org/name")[1]["token"] is None
    with pytest.raises(ValueError, match="hf://datasets/ORG/NAME"):
        _options("hf://org/name")
    fs, path = resolve("hf://datasets/org/name/x")
    assert type(fs).__name__ == "HfFileSystem" and path == "datasets/org/name/x"
    assert fs.endpoint == "http://127.0.0.1:1"
    assert fs.token is None  # HF_TOKEN was unset above: anonymous (public datasets)
    monkeypatch.setenv("HF_TOKEN", "hf_other")
    assert resolve("hf://datasets/org/name/x")[0].token == "hf_other"


def test_sftp_and_dbfs_and_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPOSER_SFTP_KEY_FILE", "/keys/id")
    protocol, options, path = _options("sftp://me:p%40ss@host:2222/data/ds")
    assert protocol == "sftp" and path == "/data/ds"
    assert options == {"host": "host", "port": 2222, "username": "me", "password": "p@ss",
                       "key_filename": "/keys/id"}
    with pytest.raises(ValueError, match="hostname"):
        _options("sftp:///x")
    with pytest.raises(ValueError, match="query"):
        _options("sftp://h/x?y=1")
    monkeypatch.delenv("DATABRICKS_HOST", raising=False)
    with pytest.raises(ValueError, match="DATABRICKS_HOST"):
        _options("dbfs:/tmp/ds")
    monkeypatch.setenv("DATABRICKS_HOST", "https://my.cloud.databricks.com")
    monkeypatch.setenv("DATABRICKS_TOKEN", "t")
    assert _options("dbfs:/tmp/ds") == (
        "dbfs", {"instance": "my.cloud.databricks.com", "token": "t"}, "/tmp/ds")
    assert _options("https://h.example/a/b?c=1") == ("http", {}, "https://h.example/a/b?c=1")


def test_instances_are_cached_per_options(s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fs1, _ = resolve(f"{s3_bucket}/a")
    fs2, _ = resolve(f"{s3_bucket}/b")
    assert fs1 is fs2
    monkeypatch.setenv("S3_ENDPOINT_URL", "http://127.0.0.1:9")
    fs3, _ = resolve(f"{s3_bucket}/a")
    assert fs3 is not fs1


def _child_download(url: str, dest: str, queue) -> None:
    try:
        from streaming.storage.download import download

        fs, _ = filesystem.resolve(url)
        download(url, dest, retry=1, timeout=10)
        # Every cached instance now belongs to this process: the parent's were dropped.
        queue.put(("ok", sorted({key[0] == os.getpid() for key in filesystem._cache})))
    except BaseException as e:  # report anything to the parent
        queue.put(("error", repr(e)))


def test_forked_child_gets_its_own_filesystem(
    s3_bucket: str, s3_endpoint: str, tmp_path: pathlib.Path
) -> None:
    """s3fs's event loop does not survive fork: the child must build a fresh instance."""
    from streaming.storage.download import download

    boto3.client("s3", endpoint_url=s3_endpoint).put_object(
        Bucket=s3_bucket[5:], Key="k", Body=b"forked bytes")
    download(f"{s3_bucket}/k", str(tmp_path / "parent"))  # parent's fs + loop now in use
    parent_fs, _ = resolve(f"{s3_bucket}/k")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child_download,
                       args=(f"{s3_bucket}/k", str(tmp_path / "child"), queue))
    proc.start()
    status, value = queue.get(timeout=60)
    proc.join(timeout=30)
    assert status == "ok", value
    assert value == [True]
    assert (tmp_path / "child").read_bytes() == b"forked bytes"
    assert resolve(f"{s3_bucket}/k")[0] is parent_fs  # the parent's cache is untouched


@pytest.mark.parametrize(("url", "volume"), [
    ("dbfs:/Volumes/cat/schema/vol/x", True), ("dbfs:/Volumes", True), ("DBFS:/Volumes/x", True),
    ("dbfs:/Volumess/x", False), ("dbfs:/Content/Volumes/x", False), ("dbfs:/tmp", False),
    ("s3://Volumes/x", False), ("/Volumes/x", False),
])
def test_unity_catalog_is_the_volumes_part_not_a_prefix(url: str, volume: bool) -> None:
    assert is_unity_catalog(url) is volume
    # Uploads and downloads dispatch on it alike.
    assert (_provider(url) == "dbfs:/Volumes") is volume


def _s3fs_signatures(max_concurrency: bool) -> type:
    """An S3FileSystem whose fetch methods have s3fs 2026.2's signatures (``max_concurrency``)
    or those of the s3fs releases before it (llm-foundry pins 2023.6), which reject it."""
    from s3fs import S3FileSystem

    # The installed methods, taken now: a test may patch S3FileSystem with these very methods.
    cat, get = S3FileSystem._cat_file, S3FileSystem._get_file
    if max_concurrency:
        class S3(S3FileSystem):
            async def _cat_file(self, path, version_id=None, start=None, end=None,
                                max_concurrency=None):
                return await cat(self, path, version_id, start, end)

            async def _get_file(self, rpath, lpath, callback=None, version_id=None,
                                chunksize=None, max_concurrency=None, **kwargs):
                return await get(self, rpath, lpath, version_id=version_id)
    else:
        class S3(S3FileSystem):
            async def _cat_file(self, path, version_id=None, start=None, end=None):
                return await cat(self, path, version_id, start, end)

            async def _get_file(self, rpath, lpath, callback=None, version_id=None, **kwargs):
                return await get(self, rpath, lpath, version_id=version_id)
    return S3


def test_one_request_options_only_where_the_method_accepts_them(tmp_path: pathlib.Path) -> None:
    new = _s3fs_signatures(True)(anon=True, skip_instance_cache=True)
    old = _s3fs_signatures(False)(anon=True, skip_instance_cache=True)
    for method in ("cat_file", "_cat_file", "_get_file"):
        assert one_request_options(new, method) == {"max_concurrency": 1}
        assert one_request_options(old, method) == {}  # **kwargs alone is not acceptance
    assert one_request_options(resolve(str(tmp_path))[0], "cat_file") == {}


def test_index_json_over_an_s3fs_without_max_concurrency(
        s3_bucket: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from s3fs import S3FileSystem

    from streaming.explore.index import read_index_json

    boto3.client("s3", endpoint_url=s3_endpoint).put_object(
        Bucket=s3_bucket[5:], Key="ds/index.json", Body=b'{"version": 2, "shards": []}')
    monkeypatch.setattr(S3FileSystem, "_cat_file", _s3fs_signatures(False)._cat_file)
    filesystem._accepts.cache_clear()
    try:
        # s3fs before 2026.2 raised TypeError on an unexpected max_concurrency here.
        assert read_index_json(f"{s3_bucket}/ds/index.json") == {"version": 2, "shards": []}
    finally:
        filesystem._accepts.cache_clear()
