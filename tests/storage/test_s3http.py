"""The lightweight S3 GET client: its SigV4 signatures match botocore's, it is chosen only where
it sends what botocore would, and downloads behave the same through it and through botocore."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.storage import s3client
from streaming.storage.download import download
from streaming.storage.filesystem import clear_filesystem_cache
from streaming.storage.s3http import EMPTY_SHA256, S3HTTPClient, sign_v4


def _botocore_signature(url: str, headers: dict[str, str], key: str, secret: str,
                        token: str | None, region: str, amz_date: str) -> str:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method="GET", url=url, headers=dict(headers))
    request.context["timestamp"] = amz_date
    auth = S3SigV4Auth(Credentials(key, secret, token), "s3", region)
    canonical = auth.canonical_request(request)
    to_sign = auth.string_to_sign(request, canonical)
    scope = f"{amz_date[:8]}/{region}/s3/aws4_request"
    names = ";".join(sorted(auth.headers_to_sign(request)))
    return (f"AWS4-HMAC-SHA256 Credential={key}/{scope}, SignedHeaders={names}, "
            f"Signature={auth.signature(to_sign, request)}")


_key_text = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF,
                                  blacklist_characters="?#\\"), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(key=_key_text, start=st.integers(0, 1 << 40), length=st.integers(1, 1 << 30),
       token=st.none() | st.text("abcXYZ019+/=", min_size=1, max_size=40),
       region=st.sampled_from(["us-east-1", "eu-west-3", "auto"]),
       host=st.sampled_from(["127.0.0.1:9000", "minio.example.com", "[::1]:8080"]))
def test_signature_matches_botocore(key: str, start: int, length: int, token: str | None,
                                    region: str, host: str) -> None:
    import urllib.parse

    amz_date = "20240229T235959Z"
    path = f"/my-bucket/{key.lstrip('/')}"
    headers = {"range": f"bytes={start}-{start + length - 1}", "x-amz-date": amz_date,
               "x-amz-content-sha256": EMPTY_SHA256}
    if token:
        headers["x-amz-security-token"] = token
    ours = sign_v4("GET", host, path, {}, headers, "AKIDEXAMPLE", "secret/key+", region,
                   amz_date)
    url = f"http://{host}{urllib.parse.quote(path, safe='/~')}"
    assert ours == _botocore_signature(url, headers, "AKIDEXAMPLE", "secret/key+", token,
                                       region, amz_date)


def test_signature_with_query_matches_botocore() -> None:
    amz_date = "20250101T000000Z"
    query = {"list-type": "2", "prefix": "dir with space/ü", "max-keys": "1"}
    headers = {"x-amz-date": amz_date, "x-amz-content-sha256": EMPTY_SHA256}
    ours = sign_v4("GET", "127.0.0.1:9000", "/bkt/", query, headers, "AK", "SK", "us-east-1",
                   amz_date)
    import urllib.parse

    qs = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                  for k, v in sorted(query.items()))
    url = f"http://127.0.0.1:9000/bkt/?{qs}"
    assert ours == _botocore_signature(url, headers, "AK", "SK", None, "us-east-1", amz_date)


def _options(**extra: object) -> dict:
    return {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"},
            "config_kwargs": {"read_timeout": 5}, **extra}


def test_light_client_chosen_only_when_equivalent(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AK")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SK")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "TOK")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    client = s3client._light_client(_options(), 5.0)
    assert isinstance(client, S3HTTPClient)
    assert client.credentials == ("AK", "SK", "TOK") and client.region == "eu-west-3"
    assert s3client._light_client(_options(anon=True), 5.0).credentials is None
    # No explicit endpoint: AWS's own endpoints, regions and redirects are botocore's job.
    assert s3client._light_client({"client_kwargs": {}, "config_kwargs": {}}, 5.0) is None
    # Addressing or signing options we do not implement.
    assert s3client._light_client(_options(config_kwargs={"s3": {"addressing_style":
                                                                  "virtual"}}), 5.0) is None
    # No region anywhere but a config file that may name one: botocore reads it.
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    config = tmp_path / "config"
    config.write_text("[default]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    assert s3client._light_client(_options(), 5.0) is None
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "absent"))
    assert s3client._light_client(_options(), 5.0).region == "us-east-1"
    # Credentials only botocore's chain can find (profiles, instance roles).
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    assert s3client._light_client(_options(), 5.0) is None


def _put(bucket_url: str, key: str, data: bytes) -> None:
    import boto3

    boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"]).put_object(
        Bucket=bucket_url[len("s3://"):], Key=key, Body=data)


@pytest.fixture(params=["light", "botocore"])
def client_kind(request: pytest.FixtureRequest, s3_bucket: str,
                monkeypatch: pytest.MonkeyPatch) -> str:
    clear_filesystem_cache()
    if request.param == "botocore":
        monkeypatch.setattr(s3client, "_light_client", lambda options, timeout: None)
    yield request.param
    clear_filesystem_cache()


def test_both_clients_download_the_same(client_kind: str, s3_bucket: str,
                                        tmp_path: pathlib.Path) -> None:
    data = os.urandom(300_001)
    _put(s3_bucket, "dir/odd name+ü.bin", data)
    _put(s3_bucket, "empty.bin", b"")
    url = f"{s3_bucket}/dir/odd name+ü.bin"
    assert download(url, str(tmp_path / "a"), chunk_size=65_536, max_concurrency=3) == len(data)
    assert (tmp_path / "a").read_bytes() == data
    assert download(url, str(tmp_path / "b")) == len(data)  # one request, whole object
    assert (tmp_path / "b").read_bytes() == data
    assert download(f"{s3_bucket}/empty.bin", str(tmp_path / "e")) == 0
    assert (tmp_path / "e").read_bytes() == b""
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        download(f"{s3_bucket}/missing.bin", str(tmp_path / "m"))
    with pytest.raises(IsADirectoryError, match="is a directory"):
        download(f"{s3_bucket}/dir", str(tmp_path / "d"))
    assert not (tmp_path / "m").exists() and not (tmp_path / "d").exists()
    kind = type(s3client.s3_client(_s3_opts(), 60.0)).__name__
    assert (kind == "S3HTTPClient") == (client_kind == "light")


def _s3_opts() -> dict:
    from streaming.storage.filesystem import resolve_options

    return resolve_options("s3://any/key")[1]


def test_missing_bucket_is_not_found(client_kind: str, s3_bucket: str,
                                     tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError):
        download("s3://no-such-bucket-here/x", str(tmp_path / "x"))


def test_cold_download_does_not_import_botocore(s3_bucket: str, tmp_path: pathlib.Path) -> None:
    _put(s3_bucket, "k.bin", b"payload")
    code = ("import sys; from streaming.storage.download import download; "
            f"download({s3_bucket + '/k.bin'!r}, {str(tmp_path / 'k')!r}); "
            "print('botocore' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ), check=True)
    assert out.stdout.strip() == "False"
    assert (tmp_path / "k").read_bytes() == b"payload"
