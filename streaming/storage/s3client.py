"""Synchronous botocore S3 clients for downloads: one shared client per (process, options).

Why not s3fs for reading s3:// shards, when fsspec serves every other scheme: measured on a
loopback moto server (2 cores, ``benchmarks`` ``s3`` case), one 64 MB GET through botocore
streams at 390-610 MB/s where s3fs's ``_get_file`` (aiobotocore + aiohttp, 64 KiB reads on one
event-loop thread that every caller funnels into) reaches 200-220 MB/s, and the first request
of a cold process costs 0.43 s (import + client) against 0.65-0.9 s for s3fs (its import, an
aiohttp SSL context, an aiobotocore session). Parallel shard downloads from several threads
also scale on botocore, whose urllib3 sockets read outside the GIL, while s3fs serialises them
on its loop. Uploads, listings and ``exists`` still go through s3fs (see ``upload.py``).

A cold process pays ~0.2 s for botocore's import and its S3 client (service model, endpoint
rules) before ``index.json`` can be fetched; :func:`prewarm`, called when a ``Stream`` with an
``s3://`` remote is constructed, starts that work on a background thread so that it overlaps
whatever the caller does next, and :func:`s3_client` waits for it rather than doing it twice.

The client is built from exactly the options :func:`streaming.storage.filesystem.resolve`
gives s3fs (endpoint from ``S3_ENDPOINT_URL``, credentials or unsigned access, requester pays,
botocore retries off so that ours in ``retry.py`` are the only layer), so both paths honour the
same environment.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["clear_s3_clients", "prewarm", "s3_client", "translate_s3_error", "wait_prewarm"]

# Every cache below is keyed by (or belongs to) one process: a forked child starts afresh.
_clients: dict[tuple[int, str, float], Any] = {}
_sessions: dict[int, Any] = {}  # one botocore session per process: later clients build faster
_clients_lock = threading.Lock()  # botocore sessions are not thread-safe; their clients are
_prewarms: list[threading.Thread] = []
_prewarms_lock = threading.Lock()

# Seconds a fork waits for a running prewarm to finish (see _before_fork).
_FORK_WAIT = 30.0
# Schemes that may be downloaded through the S3 API (gs:// only with HMAC keys).
_S3_SCHEMES = ("s3://", "s3a://", "gs://", "gcs://")

# Error codes meaning the object (or its bucket) does not exist: never retried.
_MISSING = {"NoSuchKey", "NoSuchBucket", "404", "NotFound"}
# Error codes meaning our credentials may not read it: never retried.
_DENIED = {"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch",
           "AllAccessDisabled", "InvalidToken", "ExpiredToken"}


def s3_client(options: dict[str, Any], timeout: float) -> Any:
    """The shared botocore S3 client for s3fs-style ``options`` and a per-request ``timeout``.

    Waits for a :func:`prewarm` in progress (which is most likely building this very client)
    instead of importing botocore beside it.

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
    wait_prewarm()
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            import botocore.config
            import botocore.session
            from botocore import UNSIGNED

            for stale in [k for k in _clients if k[0] != key[0]]:
                del _clients[stale]  # inherited across fork: their sockets are not ours
            for stale in [pid for pid in _sessions if pid != key[0]]:
                del _sessions[stale]
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
            session = _sessions.get(key[0])
            if session is None:
                session = _sessions[key[0]] = botocore.session.Session()
            client = session.create_client("s3", config=botocore.config.Config(**config),
                                           **kwargs)
            _clients[key] = client
    return client


def prewarm(url: str | None, timeout: float = 60.0) -> None:
    """Start building the shared client for ``url`` on a background thread; return at once.

    A no-op unless ``url`` may be downloaded through the S3 API. Errors are only logged: the
    first real request meets (and reports) them again.

    Args:
        url (str | None): A remote URL (e.g. a ``Stream``'s ``remote``).
        timeout (float): The download timeout the client will most likely be asked for.
            Defaults to ``60``; another timeout later costs a client, not botocore's import.
    """
    if not url or not str(url).lower().startswith(_S3_SCHEMES):
        return
    pid = os.getpid()
    if any(k[0] == pid for k in list(_clients)):
        return  # botocore and this process's session are ready already
    thread = threading.Thread(target=_prewarm, args=(str(url), float(timeout)), daemon=True,
                              name="shardstream-s3-prewarm")
    with _prewarms_lock:
        if any(t.is_alive() for t in _prewarms):
            return  # one at a time: the next client costs little once botocore is loaded
        _prewarms.append(thread)
        thread.start()


def _prewarm(url: str, timeout: float) -> None:
    from streaming.storage.filesystem import resolve_options

    try:
        protocol, options, _ = resolve_options(url)
        if protocol == "s3":
            s3_client(options, timeout)
    except Exception as error:  # noqa: BLE001 - reported by the first real request
        logger.debug("%s: prewarming the S3 client failed: %r", url, error)


def wait_prewarm(timeout: float | None = None) -> None:
    """Wait for this process's running :func:`prewarm` (if any, and not the caller) to end.

    Code about to import botocore calls this first: two threads importing the same package at
    once can meet half-initialised modules.

    Args:
        timeout (float, optional): Seconds to wait at most. Defaults to no limit.
    """
    if not _prewarms:
        return
    me = threading.current_thread()
    with _prewarms_lock:
        pending = [t for t in _prewarms if t is not me]
    for thread in pending:
        thread.join(timeout)
    with _prewarms_lock:
        _prewarms[:] = [t for t in _prewarms if t.is_alive()]


def _before_fork() -> None:
    # A child must not inherit a half-done import or a lock held by a thread it will not have.
    wait_prewarm(_FORK_WAIT)


def _after_fork_in_child() -> None:
    global _clients_lock, _prewarms_lock
    _clients_lock = threading.Lock()
    _prewarms_lock = threading.Lock()
    _prewarms.clear()  # their threads do not exist here


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def clear_s3_clients() -> None:
    """Forget every cached client and session (e.g. after changing credentials)."""
    with _clients_lock:
        _clients.clear()
        _sessions.clear()


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
