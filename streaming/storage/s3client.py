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
    """The shared botocore S3 client for s3fs-style ``options`` and a per-request ``timeout``.

    Args:
        options (Dict[str, Any]): Options as built for s3fs (``client_kwargs``,
            ``config_kwargs``, ``key``/``secret``, ``anon``).
        timeout (float): Seconds a connection attempt or a single socket read may take.

    Returns:
        botocore.client.S3: A thread-safe client (cached per process, options and timeout).
    """
    key = (os.getpid(), json.dumps(options, sort_keys=True, default=repr), float(timeout))
    client = _clients.get(key)
    if client is not None:
        return client
    with _clients_lock:  # botocore sessions are not thread-safe; their clients are
        client = _clients.get(key)
        if client is None:
            import botocore.config
            import botocore.session
            from botocore import UNSIGNED

            for stale in [k for k in _clients if k[0] != key[0]]:
                del _clients[stale]  # inherited across fork: their sockets are not ours
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
            _clients[key] = client
    return client


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
    from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

    if isinstance(error, (ReadTimeoutError, ConnectTimeoutError)):
        return TimeoutError(f"{url}: {error}")
    code = error_code(error)
    if code in _MISSING:
        return FileNotFoundError(f"{url}: remote file not found ({code})")
    if code in _DENIED:
        return PermissionError(f"{url}: access denied ({code})")
    return None
