"""merge_index against the reference's merged indexes, both call forms, local and on S3 (moto)."""

from __future__ import annotations

import base64
import json
import os
import pathlib

import pytest

from streaming.base.util import merge_index
from streaming.format.merge import merge_index as merge_index_impl


def _materialize(files: dict[str, str], root: pathlib.Path) -> None:
    for rel, b64 in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(b64))


@pytest.fixture(scope="module")
def cases(oracles: pathlib.Path) -> list[dict]:
    return json.loads((oracles / "json_xsv" / "merge.json").read_text())


def test_reexport_is_the_implementation() -> None:
    assert merge_index is merge_index_impl


@pytest.mark.parametrize("which", [0, 1], ids=["mds", "json"])
def test_merge_from_list_matches_reference(cases, which, tmp_path) -> None:
    case = cases[which]
    _materialize(case["subdatasets"], tmp_path)
    urls = [str(tmp_path / p / "index.json") for p in case["list_order"]]
    merge_index(urls, str(tmp_path))
    assert (tmp_path / "index.json").read_text() == case["merged_from_list"]


@pytest.mark.parametrize("which", [0, 1], ids=["mds", "json"])
def test_merge_from_pairs_with_local_present(cases, which, tmp_path) -> None:
    case = cases[which]
    _materialize(case["subdatasets"], tmp_path)
    urls = [
        (str(tmp_path / p / "index.json"), f"s3://nowhere/{p}/index.json")
        for p in case["pairs_order"]
    ]
    merge_index(urls, str(tmp_path), keep_local=True, download_timeout=5)
    assert (tmp_path / "index.json").read_text() == case["merged_from_pairs"]


def test_merge_from_root_matches_reference(cases, tmp_path) -> None:
    case = cases[0]
    _materialize(case["subdatasets"], tmp_path)
    merge_index(str(tmp_path))
    assert (tmp_path / "index.json").read_text() == case["merged_from_root"]
    # Merging again ignores the root's own (merged) index.
    merge_index(str(tmp_path), keep_local=True)
    assert (tmp_path / "index.json").read_text() == case["merged_from_root"]


def test_merge_from_root_json_shards_only_reads_indexes(cases, tmp_path) -> None:
    # The reference takes shard.*.json files for indexes here and fails; we merge the indexes.
    case = cases[1]
    _materialize(case["subdatasets"], tmp_path)
    merge_index(out=str(tmp_path))
    merged = json.loads((tmp_path / "index.json").read_text())
    parts = sorted({s["raw_data"]["basename"].split("/")[0] for s in merged["shards"]})
    assert parts == sorted(set(case["list_order"]))
    # Same shards as the list form in the root form's (sorted path) order.
    expected = json.loads(case["merged_from_list"])["shards"]
    key = lambda s: s["raw_data"]["basename"]  # noqa: E731
    assert sorted(merged["shards"], key=key) == sorted(expected, key=key)


def test_keep_local_false_never_deletes_a_local_only_dataset(cases, tmp_path) -> None:
    case = cases[0]
    _materialize(case["subdatasets"], tmp_path)
    merge_index([str(tmp_path / "0" / "index.json")], str(tmp_path), False, 60)
    assert (tmp_path / "index.json").exists()
    assert (tmp_path / "0" / "index.json").exists()


def test_bad_arguments_and_missing_files(tmp_path) -> None:
    with pytest.raises(ValueError, match="Invalid arguments"):
        merge_index(3)
    # A missing index is the reference's RuntimeError (it copies local indexes as it downloads
    # remote ones), caused by the missing file; a pair with neither copy, its FileNotFoundError.
    missing = str(tmp_path / "nope" / "index.json")
    with pytest.raises(RuntimeError, match="Failed to download index.json") as caught:
        merge_index([missing], str(tmp_path))
    assert isinstance(caught.value.__cause__, FileNotFoundError)
    assert caught.value.__cause__.filename == missing
    with pytest.raises(FileNotFoundError, match="Check data availability"):
        merge_index([(missing, "")], str(tmp_path))
    assert not (tmp_path / "index.json").exists()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "index.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a valid JSON index"):
        merge_index([str(bad / "index.json")], str(tmp_path))
    assert not (tmp_path / "index.json").exists()
    # Nothing to merge: no index is written.
    merge_index([], str(tmp_path))
    assert not (tmp_path / "index.json").exists()


@pytest.fixture(scope="module")
def s3_endpoint():
    """A moto S3 server on loopback, with S3_ENDPOINT_URL pointing at it."""
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in ("S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                                            "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(
        S3_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    from streaming.storage.filesystem import clear_filesystem_cache

    clear_filesystem_cache()
    import boto3

    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="merge")
    yield endpoint
    server.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    clear_filesystem_cache()


def _upload_tree(local: pathlib.Path, remote: str) -> None:
    from streaming.storage.upload import upload

    for path in sorted(local.rglob("*")):
        if path.is_file():
            upload(str(path), f"{remote}/{path.relative_to(local).as_posix()}")


def _read_remote(url: str) -> str:
    from streaming.storage.filesystem import resolve

    fs, path = resolve(url)
    with fs.open(path, "rb") as fp:
        return fp.read().decode()


def test_merge_remote_list_and_root(cases, tmp_path, s3_endpoint) -> None:
    case = cases[0]
    src = tmp_path / "src"
    _materialize(case["subdatasets"], src)
    remote = "s3://merge/ds"
    _upload_tree(src, remote)

    # Remote index URLs only: downloaded, merged, uploaded; local copy removed on request.
    local = tmp_path / "local"
    urls = [f"{remote}/{p}/index.json" for p in case["list_order"]]
    merge_index(urls, (str(local), remote), keep_local=False)
    assert _read_remote(f"{remote}/index.json") == case["merged_from_list"]
    assert not local.exists()

    # Root form on a (local, remote) pair whose local side is empty: lists the remote.
    local2 = tmp_path / "local2"
    merge_index((str(local2), remote))
    assert (local2 / "index.json").read_text() == case["merged_from_root"]
    assert _read_remote(f"{remote}/index.json") == case["merged_from_root"]
