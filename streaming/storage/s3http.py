"""A minimal S3 reader over ``http.client``: SigV4-signed GETs (and one-key listings) only.

Why beside botocore: a cold process pays 0.15-0.25 s to import botocore and build its S3 client
(service model, endpoint rules) before the first byte moves, which on a loopback or LAN
endpoint is longer than the first 64 MB shard takes to arrive. For the common S3-compatible
setup (an explicit endpoint URL, static credentials or anonymous access) the requests we make
are simple enough to sign ourselves, so :func:`streaming.storage.s3client.s3_client` hands out
this client then, and botocore for everything else (credential chains, profiles, AWS regional
endpoints and their redirects).

Requests use path-style addressing (``ENDPOINT/BUCKET/KEY``), which every S3-compatible store
serves. The client duck-types the two botocore methods the downloader calls (``get_object``,
``list_objects_v2``) and raises :class:`S3HTTPError` with a botocore-shaped ``response`` so the
same error mapping applies.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import http.client
import re
import threading
import urllib.parse
from typing import Any

__all__ = ["S3HTTPClient", "S3HTTPError", "sign_v4"]

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_CODE = re.compile(rb"<Code>([^<]+)</Code>")
_KEY_COUNT = re.compile(rb"<KeyCount>(\d+)</KeyCount>")


class S3HTTPError(OSError):
    """An S3 error response; ``response`` is shaped like botocore's ``ClientError.response``."""

    def __init__(self, status: int, code: str, url: str) -> None:
        super().__init__(f"{url}: HTTP {status} ({code})")
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}


def _quote(text: str, safe: str) -> str:
    return urllib.parse.quote(text, safe=safe)


def sign_v4(method: str, host: str, path: str, query: dict[str, str], headers: dict[str, str],
            key: str, secret: str, region: str, amz_date: str,
            payload_hash: str = EMPTY_SHA256) -> str:
    """The ``Authorization`` header value of an AWS Signature Version 4 request to S3.

    Args:
        method (str): HTTP method.
        host (str): The ``Host`` header value.
        path (str): The unencoded request path (``/BUCKET/KEY``); encoded here as S3 expects.
        query (Dict[str, str]): Unencoded query parameters.
        headers (Dict[str, str]): Further headers to sign (e.g. ``range``), besides ``host``.
        key (str): Access key id.
        secret (str): Secret access key.
        region (str): Signing region.
        amz_date (str): ``YYYYMMDDTHHMMSSZ``, also sent as ``x-amz-date``.
        payload_hash (str): Hex SHA-256 of the body, as sent in ``x-amz-content-sha256``.

    Returns:
        str: The header value.
    """
    signed = {name.lower(): " ".join(str(value).split()) for name, value in headers.items()}
    signed["host"] = host
    names = sorted(signed)
    canonical = "\n".join([
        method,
        _quote(path, "/~"),
        "&".join(f"{_quote(k, '-_.~')}={_quote(v, '-_.~')}" for k, v in sorted(query.items())),
        "".join(f"{name}:{signed[name]}\n" for name in names),
        ";".join(names),
        payload_hash,
    ])
    scope = f"{amz_date[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    signing_key = ("AWS4" + secret).encode()
    for part in (amz_date[:8], region, "s3", "aws4_request"):
        signing_key = hmac.new(signing_key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
    return (f"AWS4-HMAC-SHA256 Credential={key}/{scope}, SignedHeaders={';'.join(names)}, "
            f"Signature={signature}")


class _Body:
    """A response body: ``read(n)`` and ``close()``; an unfinished body drops its connection
    (its unread bytes would otherwise be taken for the next response)."""

    def __init__(self, owner: S3HTTPClient, conn: http.client.HTTPConnection,
                 resp: http.client.HTTPResponse) -> None:
        self._owner = owner
        self._conn = conn
        self._resp = resp

    def read(self, amt: int | None = None) -> bytes:
        return self._resp.read(amt)

    def readinto(self, buffer: memoryview) -> int:
        return self._resp.readinto(buffer)

    def close(self) -> None:
        if self._resp.isclosed():
            self._owner._release(self._conn)
        else:
            self._resp.close()
            self._conn.close()


class S3HTTPClient:
    """Signed (or anonymous) path-style GETs against one S3-compatible endpoint.

    Thread-safe: each thread keeps its own keep-alive connection.

    Args:
        endpoint (str): ``http(s)://HOST[:PORT][/PREFIX]``.
        region (str): Signing region.
        credentials (Tuple[str, str, str | None] | None): ``(key, secret, session_token)``, or
            ``None`` to send unsigned requests.
        timeout (float): Seconds a connection attempt or one socket read may take.
    """

    def __init__(self, endpoint: str, region: str,
                 credentials: tuple[str, str, str | None] | None, timeout: float) -> None:
        parts = urllib.parse.urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"S3 endpoint {endpoint!r}: expected http(s)://HOST[:PORT]")
        self.endpoint = endpoint
        self._https = parts.scheme == "https"
        default_port = 443 if self._https else 80
        self._port = parts.port or default_port
        self._hostname = parts.hostname
        host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        self._host = host if self._port == default_port else f"{host}:{self._port}"
        self._prefix = parts.path.rstrip("/")
        self.region = region
        self.credentials = credentials
        self.timeout = timeout
        self._local = threading.local()

    # -- connections --------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            return conn
        if self._https:
            return http.client.HTTPSConnection(self._hostname, self._port, timeout=self.timeout)
        return http.client.HTTPConnection(self._hostname, self._port, timeout=self.timeout)

    def _release(self, conn: http.client.HTTPConnection) -> None:
        if getattr(self._local, "conn", None) is None:
            self._local.conn = conn
        else:
            conn.close()

    def _request(self, bucket: str, key: str, query: dict[str, str],
                 headers: dict[str, str]) -> tuple[http.client.HTTPConnection,
                                                   http.client.HTTPResponse]:
        path = f"{self._prefix}/{bucket}" + (f"/{key}" if key else "/")
        target = _quote(path, "/~")
        if query:
            target += "?" + "&".join(f"{_quote(k, '-_.~')}={_quote(v, '-_.~')}"
                                     for k, v in sorted(query.items()))
        headers = dict(headers)
        if self.credentials is not None:
            access, secret, token = self.credentials
            headers["x-amz-date"] = datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y%m%dT%H%M%SZ")
            headers["x-amz-content-sha256"] = EMPTY_SHA256
            if token:
                headers["x-amz-security-token"] = token
            headers["Authorization"] = sign_v4("GET", self._host, path, query, headers, access,
                                               secret, self.region, headers["x-amz-date"])
        headers["Host"] = self._host
        for fresh in (False, True):
            conn = self._connection()
            reused = conn.sock is not None
            try:
                conn.request("GET", target, headers=headers)
                return conn, conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                # An idle keep-alive connection the server has closed: one more try, afresh.
                if fresh or not reused:
                    raise
            except BaseException:
                conn.close()
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse,
              url: str) -> S3HTTPError:
        try:
            data = resp.read()
            self._release(conn)
        except Exception:
            conn.close()
            data = b""
        match = _CODE.search(data)
        code = match.group(1).decode() if match else str(resp.status)
        return S3HTTPError(resp.status, code, url)

    # -- the botocore methods the downloader uses ---------------------------------------------

    def get_object(self, Bucket: str, Key: str, Range: str | None = None,  # noqa: N803
                   RequestPayer: str | None = None) -> dict[str, Any]:
        """GET an object (or a byte range of it).

        Returns:
            Dict[str, Any]: ``ContentLength``, ``ContentRange`` (ranged answers) and ``Body``
            (``read(n)``/``close()``).

        Raises:
            S3HTTPError: The server answered with an error status.
        """
        headers = {}
        if Range is not None:
            headers["range"] = Range
        if RequestPayer is not None:
            headers["x-amz-request-payer"] = RequestPayer
        conn, resp = self._request(Bucket, Key, {}, headers)
        if resp.status not in (200, 206):
            raise self._fail(conn, resp, f"s3://{Bucket}/{Key}")
        out: dict[str, Any] = {"ContentLength": int(resp.getheader("Content-Length") or 0),
                               "Body": _Body(self, conn, resp)}
        content_range = resp.getheader("Content-Range")
        if content_range:
            out["ContentRange"] = content_range
        return out

    def list_objects_v2(self, Bucket: str, Prefix: str, MaxKeys: int,  # noqa: N803
                        RequestPayer: str | None = None) -> dict[str, Any]:
        """List keys under a prefix; only ``KeyCount`` is parsed from the answer.

        Raises:
            S3HTTPError: The server answered with an error status.
        """
        headers = {} if RequestPayer is None else {"x-amz-request-payer": RequestPayer}
        query = {"list-type": "2", "prefix": Prefix, "max-keys": str(MaxKeys)}
        conn, resp = self._request(Bucket, "", query, headers)
        if resp.status != 200:
            raise self._fail(conn, resp, f"s3://{Bucket}/{Prefix}")
        data = resp.read()
        self._release(conn)
        match = _KEY_COUNT.search(data)
        return {"KeyCount": int(match.group(1)) if match else int(b"<Contents>" in data)}
