"""Synchronous botocore S3 clients for downloads: one shared client per (process, options).

Why not s3fs for reading s3:// shards, when fsspec serves every other scheme: measured on a
loopback moto server (2 cores, ``benchmarks`` ``s3`` case), one 64 MB GET through botocore
streams at 390-610 MB/s where s3fs's ``_get_file`` (aiobotocore + aiohttp, 64 KiB reads on one
event-loop thread that every caller funnels into) reaches 200-220 MB/s, and the first request
of a cold process costs 0.43 s (import + client) against 0.65-0.9 s for s3fs (its import, an
aiohttp SSL context, an aiobotocore session). Parallel shard downloads from several threads
also scale on botocore, whose urllib3 sockets read outside the GIL, while s3fs serialises them
on its loop. Uploads, listings and ``exists`` still go through s3fs (see ``upload.py``).

The client is built from exactly the options :func:`streaming.storage.filesystem.resolve`
gives s3fs (endpoint from ``S3_ENDPOINT_URL``, credentials or unsigned access, requester pays,
botocore retries off so that ours in ``retry.py`` are the only layer), so both paths honour the
same environment.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

__all__ = ["clear_s3_clients", "s3_client", "translate_s3_error"]

_clients: dict[tuple[int, str, float], Any] = {}
_clients_lock = threading.Lock()

# Error codes meaning the object (or its bucket) does not exist: never retried.
_MISSING = {"NoSuchKey", "NoSuchBucket", "404", "NotFound"}
# Error codes meaning our credentials may not read it: never retried.
_DENIED = {"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch",
           "AllAccessDisabled", "InvalidToken", "ExpiredToken"}


def s3_client(options: dict[str, Any], timeout: float) -> Any:
    """The shared S3 client for s3fs-style ``options`` and a per-request ``timeout``.

    A lightweight :class:`~streaming.storage.s3http.S3HTTPClient` when the options name an
    endpoint and static (or no) credentials, which saves a cold process botocore's import and
    client construction; otherwise a botocore client.

    Args:
        options (Dict[str, Any]): Options as built for s3fs (``client_kwargs``,
            ``config_kwargs``, ``key``/``secret``, ``anon``).
        timeout (float): Seconds a connection attempt or a single socket read may take.

    Returns:
        Any: A thread-safe client with botocore's ``get_object``/``list_objects_v2`` (cached
        per process, options and timeout).
    """
    key = (os.getpid(), json.dumps(options, sort_keys=True, default=repr), float(timeout))
    client = _clients.get(key)
    if client is not None:
        return client
    with _clients_lock:  # botocore sessions are not thread-safe; their clients are
        client = _clients.get(key)
        if client is None:
            client = _light_client(options, timeout)
        if client is None:
            import botocore.config
            import botocore.session
            from botocore import UNSIGNED

            config = dict(options.get("config_kwargs", {}))
            config["read_timeout"] = timeout
            config["connect_timeout"] = min(float(config.get("connect_timeout", timeout)),
                                            timeout)
            if options.get("anon"):
                config["signature_version"] = UNSIGNED
            kwargs = dict(options.get("client_kwargs", {}))
            if options.get("key") is not None:
                kwargs["aws_access_key_id"] = options["key"]
                kwargs["aws_secret_access_key"] = options.get("secret")
            session = botocore.session.Session()
            client = session.create_client("s3", config=botocore.config.Config(**config),
                                           **kwargs)
        for stale in [k for k in _clients if k[0] != key[0]]:
            del _clients[stale]  # inherited across fork: their sockets are not ours
        _clients[key] = client
    return client


# config_kwargs that change nothing about how a plain GET is addressed or signed.
_PLAIN_CONFIG = {"connect_timeout", "read_timeout", "retries", "max_pool_connections"}


def _light_client(options: dict[str, Any], timeout: float) -> Any:
    """An :class:`~streaming.storage.s3http.S3HTTPClient` when it would send exactly what
    botocore sends (explicit endpoint, static or no credentials, known region), else ``None``.

    botocore's credential chain looks at the environment first, so static keys there are what
    it would use too; the region comes from the client options or ``AWS_DEFAULT_REGION``, and
    without either only when no AWS config file could name one (botocore then signs for
    ``us-east-1``).
    """
    kwargs = options.get("client_kwargs", {})
    endpoint = kwargs.get("endpoint_url")
    if not endpoint or set(kwargs) - {"endpoint_url", "region_name"} or \
            set(options.get("config_kwargs", {})) - _PLAIN_CONFIG or \
            not endpoint.startswith(("http://", "https://")):
        return None
    if options.get("anon"):
        credentials = None
    elif options.get("key") is not None and options.get("secret") is not None:
        credentials = (options["key"], options["secret"], options.get("token"))
    elif os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        credentials = (os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"],
                       os.environ.get("AWS_SESSION_TOKEN") or
                       os.environ.get("AWS_SECURITY_TOKEN") or None)
    else:
        return None
    region = kwargs.get("region_name") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        config = os.environ.get("AWS_CONFIG_FILE") or os.path.expanduser("~/.aws/config")
        if os.path.exists(config):
            return None
        region = "us-east-1"
    from streaming.storage.s3http import S3HTTPClient

    try:
        return S3HTTPClient(endpoint, region, credentials, timeout)
    except ValueError:
        return None


def clear_s3_clients() -> None:
    """Forget every cached client (e.g. after changing credentials in the environment)."""
    with _clients_lock:
        _clients.clear()


def error_code(error: BaseException) -> str | None:
    """The S3 error code of a botocore ``ClientError`` (``None`` for any other error)."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    if code is None:
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = None if status is None else str(status)
    return None if code is None else str(code)


def translate_s3_error(error: BaseException, url: str) -> BaseException | None:
    """Map a botocore error to the builtin our retry policy understands, or ``None`` to keep it.

    Args:
        error (BaseException): What a botocore call raised.
        url (str): The URL, for messages.

    Returns:
        BaseException | None: ``FileNotFoundError`` (missing key or bucket), ``PermissionError``
        (denied), ``TimeoutError`` (connect or read timeout), or ``None``: the error is kept
        (and, not being permanent, retried).
    """
    if isinstance(error, TimeoutError):
        return TimeoutError(f"{url}: {error}")
    if "botocore.exceptions" in sys.modules:  # not imported: the error is not botocore's
        from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

        if isinstance(error, (ReadTimeoutError, ConnectTimeoutError)):
            return TimeoutError(f"{url}: {error}")
    code = error_code(error)
    if code in _MISSING:
        return FileNotFoundError(f"{url}: remote file not found ({code})")
    if code in _DENIED:
        return PermissionError(f"{url}: access denied ({code})")
    return None
