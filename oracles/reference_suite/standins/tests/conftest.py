"""Stand-in for the reference's unpublished ``tests/conftest.py``: its fixtures, as its tests use
them (fake cloud credentials, S3/R2/GCS clients under moto's in-process ``mock_aws``,
temporary local/remote directories) and the hook that runs ``DistributedTest`` classes in
processes."""

from __future__ import annotations

import os
import socket
from typing import Any, Iterator
from unittest.mock import patch

import pytest

from tests.common.utils import compressed_local_remote_dir, local_remote_dir  # noqa: F401

MY_BUCKET = "streaming-test-bucket"
R2_URL = "https://r2.cloudflarestorage.com"
GCS_URL = "https://storage.googleapis.com"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: Any) -> None:
    """Run a ``DistributedTest`` method in its world's processes instead of in pytest's."""
    if getattr(item.cls, "is_dist_test", False):
        item.cls()._run_test(item._request)
        item.runtest = lambda: True


_LOOPBACK = {None, "localhost", "127.0.0.1", "::1", b"localhost", b"127.0.0.1"}


@pytest.fixture(scope="session", autouse=True)
def loopback_only() -> Iterator[None]:
    """Refuse to resolve any host but the loopback: moto's in-process mock answers only calls
    made through botocore in this process, and a request that it does not catch must fail here,
    never reach a real service."""
    resolve = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in _LOOPBACK:
            raise socket.gaierror(socket.EAI_NONAME,
                                  f"reference-suite harness: {host!r} is not the loopback")
        return resolve(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patches:
        patches.setattr(socket, "getaddrinfo", getaddrinfo)
        yield


@pytest.fixture(scope="session", autouse=True)
def aws_credentials() -> None:
    """Fake AWS credentials, so that no test can reach a real account, and none for GCS (its
    tests that want them say so: ``gcs_hmac_credentials``)."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SECURITY_TOKEN",
                "AWS_SESSION_TOKEN"):
        os.environ[key] = "testing"
    for key in ("GCS_KEY", "GCS_SECRET", "GOOGLE_APPLICATION_CREDENTIALS"):
        os.environ.pop(key, None)


@pytest.fixture(scope="class", autouse=True)
def azure_credentials() -> None:
    """A fake Azure account (its uploaders read it at construction)."""
    os.environ.update(AZURE_ACCOUNT_NAME="testing", AZURE_ACCOUNT_ACCESS_KEY="testing")


@pytest.fixture(scope="class", autouse=True)
def hf_credentials() -> None:
    """A fake Hugging Face token."""
    os.environ["HF_TOKEN"] = "testing"


@pytest.fixture()
def bucket_name() -> str:
    return MY_BUCKET


def _set_for_the_test(**values: str) -> Iterator[None]:
    with patch.dict(os.environ, values):
        yield


@pytest.fixture()
def gcs_hmac_credentials() -> Iterator[None]:
    yield from _set_for_the_test(GCS_KEY="hmac_key_testing", GCS_SECRET="hmac_secret_testing")


@pytest.fixture()
def gcs_service_account_credentials() -> Iterator[None]:
    yield from _set_for_the_test(GOOGLE_APPLICATION_CREDENTIALS="service_account_testing")


@pytest.fixture()
def alipan_credentials() -> Iterator[None]:
    yield from _set_for_the_test(ALIPAN_WEB_REFRESH_TOKEN="testing")


def _mocked_client(endpoint_url: str | None = None, **keys: str) -> Iterator[Any]:
    """A boto3 S3 client under moto's in-process mock, which also answers at ``endpoint_url``."""
    import boto3
    from moto import mock_aws

    custom = {"MOTO_S3_CUSTOM_ENDPOINTS": endpoint_url} if endpoint_url else {}
    with patch.dict(os.environ, custom), mock_aws():  # (moto reads the variable as it starts)
        yield boto3.client("s3", region_name="us-east-1", endpoint_url=endpoint_url, **keys)


@pytest.fixture()
def s3_client() -> Iterator[Any]:
    yield from _mocked_client()


@pytest.fixture()
def s3_test(s3_client: Any) -> None:
    s3_client.create_bucket(Bucket=MY_BUCKET)


@pytest.fixture()
def r2_credentials() -> Iterator[None]:
    os.environ["S3_ENDPOINT_URL"] = R2_URL
    yield
    del os.environ["S3_ENDPOINT_URL"]


@pytest.fixture()
def r2_client(r2_credentials: None) -> Iterator[Any]:
    yield from _mocked_client(R2_URL)


@pytest.fixture()
def r2_test(r2_client: Any) -> None:
    r2_client.create_bucket(Bucket=MY_BUCKET)


@pytest.fixture()
def gcs_hmac_client(gcs_hmac_credentials: None) -> Iterator[Any]:
    yield from _mocked_client(GCS_URL, aws_access_key_id=os.environ["GCS_KEY"],
                              aws_secret_access_key=os.environ["GCS_SECRET"])


@pytest.fixture()
def gcs_test(gcs_hmac_client: Any) -> None:
    gcs_hmac_client.create_bucket(Bucket=MY_BUCKET)
