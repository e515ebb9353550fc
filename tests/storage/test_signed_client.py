"""The botocore-signed urllib3 client (``SignedS3Client``): moto checking every signature,
which client each environment gets, and S3 errors as the download path expects them."""

from __future__ import annotations

import os
import pathlib
import urllib.request
from typing import Iterator

import pytest

from streaming.storage import s3client
from streaming.storage.download import download
from streaming.storage.filesystem import clear_filesystem_cache, resolve_options


def _reset_auth(endpoint: str, count: str) -> None:
    """Make moto check signatures and IAM permissions after ``count`` more requests."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=count.encode(),
                                     method="POST", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request, timeout=10).read()


@pytest.fixture
def checked_keys(s3_bucket: str, s3_endpoint: str) -> Iterator[tuple[str, str, str]]:
    """An object in a fresh bucket, an IAM user allowed to read it, and moto verifying every
    request's SigV4 signature against that user's secret key."""
    import boto3

    iam = boto3.client("iam", endpoint_url=s3_endpoint)
    user = f"reader-{os.urandom(4).hex()}"
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="read", PolicyDocument=(
        '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", '
        '"Resource": "*"}]}'))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    bucket = s3_bucket[len("s3://"):]
    boto3.client("s3", endpoint_url=s3_endpoint).put_object(
        Bucket=bucket, Key="dir/a b+c~ü.bin", Body=b"signed bytes " * 1000)
    _reset_auth(s3_endpoint, "0")
    try:
        yield s3_bucket, key["AccessKeyId"], key["SecretAccessKey"]
    finally:
        _reset_auth(s3_endpoint, "inf")
        clear_filesystem_cache()


def test_moto_accepts_the_signatures(checked_keys: tuple[str, str, str],
                                     tmp_path: pathlib.Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    bucket, key_id, secret = checked_keys
    url = f"{bucket}/dir/a b+c~ü.bin"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    clear_filesystem_cache()
    assert type(s3client.s3_client(resolve_options(url)[1], 60.0)).__name__ == "SignedS3Client"
    # Whole object, then ranged GETs (3 parts) with an odd key: every one signed and checked.
    assert download(url, str(tmp_path / "whole")) == 13_000
    assert download(url, str(tmp_path / "parts"), chunk_size=5000, max_concurrency=2) == 13_000
    for name in ("whole", "parts"):
        assert (tmp_path / name).read_bytes() == b"signed bytes " * 1000
    # The same key with another secret: moto rejects the signature; not retried, not written.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-" + secret)
    clear_filesystem_cache()
    with pytest.raises(PermissionError, match="access denied") as caught:
        download(url, str(tmp_path / "bad"))
    assert not (tmp_path / "bad").exists()
    assert str(caught.value).count(url) == 1  # (the URL was once said twice)
    from botocore.exceptions import ClientError

    assert isinstance(caught.value, ClientError)  # as the reference lets through


def test_session_token_is_sent_and_signed(s3_bucket: str, tmp_path: pathlib.Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT_URL"]).put_object(
        Bucket=s3_bucket[len("s3://"):], Key="k", Body=b"v")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "token-123")
    clear_filesystem_cache()
    client = s3client.s3_client(resolve_options(f"{s3_bucket}/k")[1], 60.0)
    sent: list[dict] = []
    real = client._http.request

    def spy(method: str, url: str, headers: dict, **kwargs: object) -> object:
        sent.append(headers)
        return real(method, url, headers=headers, **kwargs)

    monkeypatch.setattr(client._http, "request", spy)
    assert download(f"{s3_bucket}/k", str(tmp_path / "k")) == 1
    assert sent[0]["X-Amz-Security-Token"] == "token-123"
    assert "x-amz-security-token" in sent[0]["Authorization"]  # among the signed headers


def test_unsigned_for_anonymous_access(s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    options = resolve_options(f"{s3_bucket}/k")[1]
    client = s3client.SignedS3Client({**options, "anon": True}, 5.0)
    assert client._credentials is None
    with pytest.raises(Exception) as info:
        client.get_object(Bucket=s3_bucket[len("s3://"):], Key="missing")
    assert s3client.error_code(info.value) == "NoSuchKey"


@pytest.mark.parametrize(("env", "endpoint", "fits"), [
    ({}, "http://127.0.0.1:1", True),
    ({}, None, False),  # AWS itself: region redirects and endpoint rules are botocore's
    ({"HTTPS_PROXY": "http://127.0.0.1:9"}, "http://127.0.0.1:1", False),
    ({"AWS_USE_FIPS_ENDPOINT": "true"}, "http://127.0.0.1:1", False),
    ({"AWS_CONFIG_FILE": "/nonexistent"}, "http://127.0.0.1:1", False),
])
def test_which_client(env: dict[str, str], endpoint: str | None, fits: bool,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in s3client._BOTOCORE_ONLY_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    options = {"client_kwargs": {"endpoint_url": endpoint} if endpoint else {}}
    assert s3client._signed_client_fits(options) is fits


def test_profile_region_needs_botocore(monkeypatch: pytest.MonkeyPatch,
                                       tmp_path: pathlib.Path) -> None:
    options = {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}}
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    assert s3client._signed_client_fits(options)
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text("[default]\nregion = eu-west-1\n")
    assert not s3client._signed_client_fits(options)  # the profile's region: botocore reads it
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert s3client._signed_client_fits(options)
