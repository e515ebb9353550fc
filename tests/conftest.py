"""Shared pytest fixtures."""

from __future__ import annotations

import functools
import os
import pathlib
from typing import Callable

import pytest

# gcsfs 2026.x (by default) first asks each bucket's type over gRPC, which the GCS emulator the
# storage tests use does not serve: 25-30 s of retries a bucket. Set before gcsfs is imported.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

ORACLES = pathlib.Path(__file__).resolve().parent.parent / "oracles" / "fixtures"


@pytest.fixture(scope="session")
def oracles() -> pathlib.Path:
    """The directory of oracle fixtures written by ``oracles/generate.py``."""
    return ORACLES


# ---- S3: a moto server on 127.0.0.1, shared by every test directory that needs S3 ----------


@pytest.fixture(scope="session")
def s3_endpoint() -> str:
    """The ``http://127.0.0.1:PORT`` URL of a moto S3 server running for this test session."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def s3_environment(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """Point S3 clients at ``endpoint`` with fake credentials, never at a real AWS service."""
    monkeypatch.setenv("S3_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "S3_CANNED_ACL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def point_s3_at(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """:func:`s3_environment` for fixtures in other directories (conftests can't import it)."""
    return functools.partial(s3_environment, monkeypatch)


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, empty bucket on the moto server, as ``s3://NAME``; the S3 env vars point there."""
    import uuid

    import boto3

    s3_environment(monkeypatch, s3_endpoint)
    name = f"test-{uuid.uuid4().hex[:16]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return f"s3://{name}"


# ---- Untrusted shards --------------------------------------------------------------------------


def _zstd_bomb(zip_path: str, extra: int) -> int:
    """Rewrite a zstd shard file as its payload plus ``extra`` zero bytes, in a frame that does
    not declare its size (so only a bounded decompressor notices in time); returns its size."""
    import zstandard

    with open(zip_path, "rb") as f:
        raw = zstandard.ZstdDecompressor().decompress(f.read())
    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    bomb = cobj.compress(raw + bytes(extra)) + cobj.flush()
    with open(zip_path, "wb") as f:
        f.write(bomb)
    return len(bomb)


@pytest.fixture
def zstd_bomb() -> Callable[[str, int], int]:
    """:func:`_zstd_bomb`: turn a zstd shard file into a decompression bomb."""
    return _zstd_bomb

