"""CloudUploader and friends: the reference's `out` forms, dispatch, listing, uploads to S3."""

from __future__ import annotations

import errno
import os
import pathlib
import pickle
import sys
import types
from concurrent.futures import ThreadPoolExecutor

import pytest
from loopback_stores import Cloud, random_payload  # this directory is on sys.path

from streaming.base.storage import upload as base_upload
from streaming.storage.filesystem import resolve
from streaming.storage.upload import (
    AlipanUploader,
    AzureUploader,
    CloudUploader,
    GCSAuthentication,
    GCSUploader,
    LocalUploader,
    S3Uploader,
    list_files,
    upload,
)

# The uploader each loopback store's URLs get.
UPLOADERS = {"s3": S3Uploader, "gs": GCSUploader, "az": AzureUploader}


def _get(url: str) -> bytes:
    fs, path = resolve(url)
    fs.invalidate_cache()
    return fs.cat_file(path)


def test_base_module_reexports_the_same_classes() -> None:
    assert base_upload.CloudUploader is CloudUploader
    assert base_upload.S3Uploader is S3Uploader
    from streaming.base.storage import LocalUploader as BaseLocal

    assert BaseLocal is LocalUploader


def test_local_out_has_no_remote(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "ds"
    uploader = CloudUploader.get(str(out))
    assert isinstance(uploader, LocalUploader)
    assert uploader.local == str(out) and uploader.remote is None
    assert out.is_dir()
    (out / "a").write_bytes(b"a")
    uploader.upload_file("a")  # nothing to upload to: the file stays
    assert (out / "a").read_bytes() == b"a"


def test_local_out_must_be_empty_unless_exist_ok(tmp_path: pathlib.Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(FileExistsError, match=str(tmp_path)):
        CloudUploader.get(str(tmp_path))
    assert CloudUploader.get(str(tmp_path), exist_ok=True).local == str(tmp_path)


def test_local_to_local_tuple_copies_and_clears(tmp_path: pathlib.Path) -> None:
    local, remote = tmp_path / "l", tmp_path / "r"
    uploader = CloudUploader.get((str(local), str(remote)))
    assert isinstance(uploader, LocalUploader) and remote.is_dir()
    (local / "shard.00000.mds").write_bytes(b"payload")
    uploader.upload_file("shard.00000.mds")
    assert (remote / "shard.00000.mds").read_bytes() == b"payload"
    assert not (local / "shard.00000.mds").exists()  # keep_local=False


def test_file_url_remote_with_keep_local(tmp_path: pathlib.Path) -> None:
    local, remote = tmp_path / "l", tmp_path / "r"
    uploader = CloudUploader.get((str(local), f"file://{remote}"), keep_local=True)
    (local / "sub").mkdir()
    (local / "sub" / "x.bin").write_bytes(b"xx")
    uploader.upload_file(os.path.join("sub", "x.bin"))
    assert (remote / "sub" / "x.bin").read_bytes() == b"xx"
    assert (local / "sub" / "x.bin").exists()
    assert uploader.list_objects() == [str(local / "sub" / "x.bin")]
    assert uploader.list_objects("nomatch") == []


def test_bad_out_arguments(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="Invalid `out` argument"):
        CloudUploader.get((str(tmp_path), "s3://b/x", "extra"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Invalid Cloud provider prefix: ftp"):
        CloudUploader.get("ftp://host/path")
    with pytest.raises(ValueError, match="alipan"):
        AlipanUploader("alipan:///data")
    # A missing remote is named as such (was a TypeError from deep inside).
    for out in ((str(tmp_path / "l"), None), (str(tmp_path / "l"), 7)):
        with pytest.raises(ValueError, match=r"Invalid Cloud provider prefix: the remote of "
                                             r"`out` must be a path or URL string, not (None|7)"):
            CloudUploader.get(out)  # type: ignore[arg-type]
    assert not (tmp_path / "l").exists()


def test_gcs_uploader_says_how_it_authenticates(tmp_path: pathlib.Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(GCSUploader, "check_bucket_exists", lambda self, remote: None)
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("GCS_KEY", "key")
    monkeypatch.setenv("GCS_SECRET", "secret")
    uploader = GCSUploader((str(tmp_path / "a"), "gs://bucket/ds"))
    assert uploader.authentication is GCSAuthentication.HMAC
    assert uploader.remote == "gs://bucket/ds"
    monkeypatch.delenv("GCS_KEY")
    # Without HMAC keys: Application Default Credentials, through google-auth (which gcsfs
    # brings; a stand-in module here, as this venv has neither).
    auth, exceptions = types.ModuleType("google.auth"), types.ModuleType("google.auth.exceptions")

    class DefaultCredentialsError(Exception):
        pass

    found: list[bool] = [True]

    def default() -> tuple[object, str]:
        if not found[0]:
            raise DefaultCredentialsError("none")
        return object(), "project"

    auth.default, auth.exceptions = default, exceptions  # type: ignore[attr-defined]
    exceptions.DefaultCredentialsError = DefaultCredentialsError  # type: ignore[attr-defined]
    google = types.ModuleType("google")
    google.auth = auth  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.auth", auth)
    monkeypatch.setitem(sys.modules, "google.auth.exceptions", exceptions)
    uploader = GCSUploader((str(tmp_path / "b"), "gs://bucket/ds"))
    assert uploader.authentication is GCSAuthentication.SERVICE_ACCOUNT
    found[0] = False
    with pytest.raises(ValueError, match="Either set the environment variables `GCS_KEY` and "
                                         "`GCS_SECRET` or use any of the methods") as caught:
        GCSUploader((str(tmp_path / "c"), "gs://bucket/ds"))
    assert isinstance(caught.value.__cause__, DefaultCredentialsError)
    # An emulator (STORAGE_EMULATOR_HOST) takes no credentials: none are asked for.
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")
    uploader = GCSUploader((str(tmp_path / "d"), "gs://bucket/ds"))
    assert uploader.authentication is GCSAuthentication.SERVICE_ACCOUNT


def test_remote_only_stages_in_temp_dir(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    uploader = CloudUploader.get(f"{cloud.root}/dataset")
    assert type(uploader) is UPLOADERS[cloud.root.split(":")[0]]
    assert uploader.remote == f"{cloud.root}/dataset"
    assert os.path.isdir(uploader.local) and os.listdir(uploader.local) == []
    pathlib.Path(uploader.local, "index.json").write_bytes(b"{}")
    uploader.upload_file("index.json")
    assert _get(f"{cloud.root}/dataset/index.json") == b"{}"
    assert not os.path.exists(os.path.join(uploader.local, "index.json"))
    # A bare uploader leaves its staging directory to its owner (the reference's does too; the
    # writers remove theirs): this test is that owner.
    os.rmdir(uploader.local)


def test_missing_bucket_is_reported(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    scheme = cloud.root.split(":")[0]
    url = f"{scheme}://no-such-bucket-abc/ds"
    # "bucket" for an Azure container too, as the reference says.
    with pytest.raises(FileNotFoundError, match="bucket `no-such-bucket-abc` does not exist") \
            as caught:
        CloudUploader.get((str(tmp_path / "l"), url))
    error = caught.value
    assert error.errno == errno.ENOENT and error.filename == url
    # ... and it pickles (a DataLoader worker's error crosses processes) as the builtin.
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is FileNotFoundError and again.filename == error.filename
    if scheme == "s3":
        # Also what the reference raises there: HeadBucket's ClientError (404).
        from botocore.exceptions import ClientError

        assert isinstance(error, ClientError)
        assert error.response["Error"]["Code"] == "404"
        assert error.operation_name == "HeadBucket"


def test_concurrent_uploads_and_listing(cloud: Cloud, tmp_path: pathlib.Path) -> None:
    """upload_file is thread-safe: the writer calls it from a pool, index last."""
    local = tmp_path / "l"
    uploader = CloudUploader.get((str(local), f"{cloud.root}/ds"), keep_local=True,
                                 progress_bar=True)
    payloads = {f"shard.{i:05}.mds": random_payload(1000 + i) for i in range(12)}
    for name, data in payloads.items():
        (local / name).write_bytes(data)
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(uploader.upload_file, payloads))
    (local / "index.json").write_bytes(b'{"shards": []}')
    uploader.upload_file("index.json")
    for name, data in payloads.items():
        assert _get(f"{cloud.root}/ds/{name}") == data
    expected = sorted(f"ds/{name}" for name in [*payloads, "index.json"])
    assert uploader.list_objects() == expected  # bucket-relative keys, as the reference
    assert uploader.list_objects("shard.0000") == [f"ds/shard.{i:05}.mds" for i in range(10)]
    assert list_files(f"{cloud.root}/ds", "index") == [f"{cloud.root}/ds/index.json"]


def test_upload_missing_local_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError, match="No such file or directory: '.*nope'") as caught:
        upload(str(tmp_path / "nope"), str(tmp_path / "dest"))
    assert caught.value.errno == errno.ENOENT
    assert (caught.value.filename, caught.value.filename2) == (str(tmp_path / "nope"),
                                                               str(tmp_path / "dest"))
    assert not (tmp_path / "dest").exists()


def test_upload_to_local_is_atomic_and_makes_dirs(tmp_path: pathlib.Path) -> None:
    src = tmp_path / "src"
    src.write_bytes(b"z" * 10_000)
    dest = tmp_path / "a" / "b" / "c.bin"
    upload(str(src), str(dest))
    assert dest.read_bytes() == b"z" * 10_000
    assert sorted(p.name for p in dest.parent.iterdir()) == ["c.bin"]


def test_list_files_local_and_missing(tmp_path: pathlib.Path) -> None:
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "index.json").write_text("{}")
    (tmp_path / "d" / "x.mds").write_text("")
    assert list_files(str(tmp_path / "d")) == [
        str(tmp_path / "d" / "e" / "index.json"), str(tmp_path / "d" / "x.mds")]
    assert list_files(str(tmp_path / "d"), "e/") == [str(tmp_path / "d" / "e" / "index.json")]
    assert list_files(str(tmp_path / "nothing")) == []
