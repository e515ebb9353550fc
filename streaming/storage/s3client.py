"""S3 clients for downloads: one shared client per (process, options, timeout).

Why not s3fs for reading s3:// shards, when fsspec serves every other scheme: measured on a
loopback moto server (2 cores, ``benchmarks`` ``s3`` case), one 64 MB GET through botocore
streams at 390-610 MB/s where s3fs's ``_get_file`` (aiobotocore + aiohttp, 64 KiB reads on one
event-loop thread that every caller funnels into) reaches 200-220 MB/s, and the first request
of a cold process costs 0.43 s (import + client) against 0.65-0.9 s for s3fs. Parallel shard
downloads from several threads also scale on urllib3, whose sockets read outside the GIL, while
s3fs serialises them on its loop. Uploads, listings and ``exists`` still go through s3fs.

Two clients, one interface (the ``get_object`` / ``list_objects_v2`` subset downloads use):

- :class:`SignedS3Client`, for an explicit endpoint (``S3_ENDPOINT_URL``, GCS HMAC): botocore's
  own ``S3SigV4Auth`` signs an ``AWSRequest`` with botocore's credential objects, and urllib3
  (botocore's HTTP library) sends it, path-style as botocore addresses custom endpoints. No
  botocore client is built: measured in a cold process with torch loaded, session and client
  (service model, endpoint rules) take ~0.12 s with the collector paused (~0.19 s without),
  against ~0.03 s (~0.12 s) for importing the signer -- all before ``index.json`` can be
  fetched. Response bodies
  are read straight into the caller's buffer (no intermediate ``bytes`` per block).
- botocore's generated client otherwise (AWS itself: region redirects, FIPS/dual-stack/ARN
  endpoints, proxies, profiles that set a region) -- everything it resolves, it still resolves.

Both are built from exactly the options :func:`streaming.storage.filesystem.resolve` gives s3fs
(endpoint from ``S3_ENDPOINT_URL``, credentials or unsigned access, requester pays, retries off
so that ours in ``retry.py`` are the only layer), so every path honours the same environment.

A cold process pays for imports before ``index.json`` can be fetched; :func:`prewarm`, called
when a ``Stream`` with an ``s3://`` remote is constructed, does that work on a background thread
so that it overlaps whatever the caller does next, and :func:`s3_client` waits for it rather
than doing it twice. The prewarm pauses the cyclic garbage collector while it imports: with
torch loaded a full collection walks ~170k objects (~80 ms here), and an import of this size
triggers one, which is most of the import's cost.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import json
import logging
import os
import sys
import threading
import urllib.parse
from typing import Any, Iterator

logger = logging.getLogger(__name__)

__all__ = ["SignedS3Client", "also_client_error", "clear_s3_clients", "prewarm", "s3_client",
           "translate_s3_error", "wait_prewarm"]

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
    """The shared S3 client for s3fs-style ``options`` and a per-request ``timeout``.

    Waits for a :func:`prewarm` in progress (which is most likely building this very client)
    instead of importing botocore beside it.

    Args:
        options (Dict[str, Any]): Options as built for s3fs (``client_kwargs``,
            ``config_kwargs``, ``key``/``secret``, ``anon``).
        timeout (float): Seconds a connection attempt or a single socket read may take.

    Returns:
        SignedS3Client | botocore.client.S3: A thread-safe client (cached per process, options
        and timeout) with botocore's ``get_object`` / ``list_objects_v2`` call and result shapes.
    """
    key = (os.getpid(), json.dumps(options, sort_keys=True, default=repr), float(timeout))
    client = _clients.get(key)
    if client is not None:
        return client
    wait_prewarm()
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            for stale in [k for k in _clients if k[0] != key[0]]:
                del _clients[stale]  # inherited across fork: their sockets are not ours
            for stale in [pid for pid in _sessions if pid != key[0]]:
                del _sessions[stale]
            if _signed_client_fits(options):
                client = SignedS3Client(options, timeout)
            else:
                client = _botocore_client(options, timeout, key[0])
            _clients[key] = client
    return client


def _botocore_client(options: dict[str, Any], timeout: float, pid: int) -> Any:
    import botocore.config
    import botocore.session
    from botocore import UNSIGNED

    config = dict(options.get("config_kwargs", {}))
    config["read_timeout"] = timeout
    config["connect_timeout"] = min(float(config.get("connect_timeout", timeout)), timeout)
    if options.get("anon"):
        config["signature_version"] = UNSIGNED
    kwargs = dict(options.get("client_kwargs", {}))
    if options.get("key") is not None:
        kwargs["aws_access_key_id"] = options["key"]
        kwargs["aws_secret_access_key"] = options.get("secret")
    # No CRC over every byte unless S3 demands it: shards are hashed when `validate_hash` asks.
    config.setdefault("response_checksum_validation", "when_required")
    try:
        client_config = botocore.config.Config(**config)
    except TypeError:  # a botocore from before flexible checksums: it does not validate either
        del config["response_checksum_validation"]
        client_config = botocore.config.Config(**config)
    session = _sessions.get(pid)
    if session is None:
        session = _sessions[pid] = botocore.session.Session()
    return session.create_client("s3", config=client_config, **kwargs)


# Environment variables that make botocore choose endpoints, regions or transports the signed
# client does not model: with any of them set, the generated client is used.
_BOTOCORE_ONLY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                      "all_proxy", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT",
                      "AWS_S3_DISABLE_MULTIREGION_ACCESS_POINTS", "AWS_CONFIG_FILE",
                      "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")


def _signed_client_fits(options: dict[str, Any]) -> bool:
    """Whether :class:`SignedS3Client` addresses and signs requests as botocore's client would
    for these options: an explicit endpoint (which botocore addresses path-style), a region
    known without reading the AWS config file, no proxy, only the options we build ourselves."""
    endpoint = options.get("client_kwargs", {}).get("endpoint_url")
    if not endpoint or not str(endpoint).lower().startswith(("http://", "https://")):
        return False
    if set(options.get("client_kwargs", {})) - {"endpoint_url", "region_name"}:
        return False
    if any(os.environ.get(name) for name in _BOTOCORE_ONLY_ENV):
        return False
    if not (options.get("client_kwargs", {}).get("region_name")
            or os.environ.get("AWS_DEFAULT_REGION")) and os.path.exists(
            os.path.expanduser(os.path.join("~", ".aws", "config"))):
        return False  # a profile may name the signing region: botocore reads it
    return True


class _Body:
    """A GET's response body: ``readinto`` a caller's buffer, ``read``, ``close``.

    ``readinto`` reads through the standard library's ``http.client`` response under urllib3's
    when there is one (urllib3's own ``readinto`` reads into a new ``bytes`` and copies that).
    Bodies are never decoded: the bytes are the object's, as botocore returns them.
    """

    def __init__(self, response: Any, length: int) -> None:
        self._response = response
        self._left = length
        raw = getattr(response, "_fp", None)
        self._readinto = raw.readinto if hasattr(raw, "readinto") else response.readinto

    def readinto(self, buffer: Any) -> int:
        n = self._readinto(buffer)
        self._left -= n
        return n

    def read(self, amt: int | None = None) -> bytes:
        data = self._response.read(amt, decode_content=False)
        self._left -= len(data)
        return data

    def close(self) -> None:
        if self._left == 0:
            self._response.release_conn()  # fully read: the connection is reusable
        else:
            self._response.close()  # unread bytes would confuse the next request on it


class SignedS3Client:
    """S3 GETs to an explicit endpoint: botocore's SigV4 signer, urllib3's connection pool.

    Thread-safe. Offers the subset of botocore's S3 client that downloads use, with the same
    argument names, result keys and errors (``botocore.exceptions.ClientError`` carrying the
    S3 error code; urllib3's timeout errors).

    Args:
        options (Dict[str, Any]): s3fs-style options (see :func:`s3_client`); their
            ``client_kwargs["endpoint_url"]`` is required.
        timeout (float): Seconds a connection attempt or a single socket read may take.
    """

    def __init__(self, options: dict[str, Any], timeout: float) -> None:
        import botocore.auth
        import botocore.awsrequest
        import botocore.credentials
        import urllib3

        client_kwargs = options.get("client_kwargs", {})
        self.endpoint = str(client_kwargs["endpoint_url"]).rstrip("/")
        self.region = (client_kwargs.get("region_name") or os.environ.get("AWS_DEFAULT_REGION")
                       or "us-east-1")
        config = options.get("config_kwargs", {})
        self.timeout = float(timeout)
        self._credentials = self._find_credentials(options, botocore.credentials)
        self._signer_class = botocore.auth.S3SigV4Auth
        self._request_class = botocore.awsrequest.AWSRequest
        pool_kwargs: dict[str, Any] = {}
        if self.endpoint.lower().startswith("https://"):
            ca_bundle = os.environ.get("AWS_CA_BUNDLE")
            if not ca_bundle:
                try:
                    import certifi  # what botocore verifies with, when installed

                    ca_bundle = certifi.where()
                except ImportError:
                    ca_bundle = None
            if ca_bundle:
                pool_kwargs["ca_certs"] = ca_bundle
        connect = min(float(config.get("connect_timeout", timeout)), self.timeout)
        self._http = urllib3.PoolManager(
            maxsize=int(config.get("max_pool_connections", 10)),
            retries=False,
            timeout=urllib3.Timeout(connect=connect, read=self.timeout),
            **pool_kwargs,
        )
        self._user_agent = f"shardstream botocore/{botocore.__version__}"

    @staticmethod
    def _find_credentials(options: dict[str, Any], module: Any) -> Any:
        """What botocore would sign with: ``None`` for unsigned access."""
        if options.get("anon"):
            return None
        if options.get("key") is not None:
            return module.Credentials(options["key"], options.get("secret"),
                                      options.get("token"))
        found = module.EnvProvider().load()  # the first link of botocore's chain
        if found is None:
            import botocore.session

            found = botocore.session.Session().get_credentials()
        return found

    def _url(self, bucket: str, key: str) -> str:
        # Path-style, quoted as botocore quotes keys (``/`` and ``~`` kept).
        return f"{self.endpoint}/{bucket}/{urllib.parse.quote(key, safe='/~')}" if key else \
            f"{self.endpoint}/{bucket}"

    def _send(self, operation: str, bucket: str, key: str, headers: dict[str, str],
              params: dict[str, str] | None = None) -> Any:
        request = self._request_class(method="GET", url=self._url(bucket, key),
                                      headers={"User-Agent": self._user_agent, **headers},
                                      params=params or {})
        if self._credentials is not None:
            frozen = self._credentials.get_frozen_credentials()
            self._signer_class(frozen, "s3", self.region).add_auth(request)
        prepared = request.prepare()
        response = self._http.request("GET", prepared.url, headers=dict(prepared.headers),
                                      preload_content=False, decode_content=False,
                                      redirect=False)
        if response.status >= 300:
            try:
                body = response.read(1 << 20, decode_content=True)
            finally:
                response.close()
            raise _client_error(operation, response.status, response.headers, body)
        return response

    def get_object(self, Bucket: str, Key: str, Range: str | None = None,  # noqa: N803
                   RequestPayer: str | None = None) -> dict[str, Any]:
        """GET an object (or a byte range of it), its body left to stream.

        Returns:
            Dict[str, Any]: ``ContentLength``, ``ContentRange`` (ranged responses only) and
            ``Body`` (``readinto``/``read``/``close``), as botocore names them.
        """
        headers = {}
        if Range:
            headers["Range"] = Range
        if RequestPayer:
            headers["x-amz-request-payer"] = RequestPayer
        response = self._send("GetObject", Bucket, Key, headers)
        length = int(response.headers.get("Content-Length", 0))
        result: dict[str, Any] = {"ContentLength": length, "Body": _Body(response, length)}
        content_range = response.headers.get("Content-Range")
        if content_range:
            result["ContentRange"] = content_range
        return result

    def list_objects_v2(self, Bucket: str, Prefix: str = "", MaxKeys: int = 1000,  # noqa: N803
                        RequestPayer: str | None = None) -> dict[str, Any]:
        """List keys under ``Prefix`` (one page).

        Returns:
            Dict[str, Any]: ``KeyCount`` and ``Contents`` (``Key`` and ``Size`` of each).
        """
        headers = {"x-amz-request-payer": RequestPayer} if RequestPayer else {}
        params = {"list-type": "2", "prefix": Prefix, "max-keys": str(int(MaxKeys))}
        response = self._send("ListObjectsV2", Bucket, "", headers, params)
        try:
            body = response.read(decode_content=True)
        finally:
            response.release_conn()
        root = _xml(body)
        contents = [{"Key": _text(item, "Key"), "Size": int(_text(item, "Size") or 0)}
                    for item in root.iter() if _local_name(item.tag) == "Contents"]
        count = _text(root, "KeyCount")
        return {"KeyCount": int(count) if count else len(contents), "Contents": contents}


def _xml(body: bytes) -> Any:
    from xml.etree import ElementTree

    try:
        return ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return ElementTree.Element("Error")


def _local_name(tag: str) -> str:
    return tag.rpartition("}")[2]


def _text(root: Any, name: str) -> str | None:
    for child in root:
        if _local_name(child.tag) == name:
            return child.text
    return None


def _client_error(operation: str, status: int, headers: Any, body: bytes) -> BaseException:
    """botocore's ``ClientError`` for an S3 error response (code from the XML body, else the
    HTTP status, as botocore reports bodiless errors)."""
    from botocore.exceptions import ClientError

    root = _xml(body) if body else None
    code = (_text(root, "Code") if root is not None else None) or str(status)
    message = (_text(root, "Message") if root is not None else None) or ""
    response = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status,
                             "HTTPHeaders": {k.lower(): v for k, v in headers.items()}},
    }
    return ClientError(response, operation)


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
        with _gc_paused():
            protocol, options, _ = resolve_options(url)
            if protocol == "s3":
                s3_client(options, timeout)
    except Exception as error:  # noqa: BLE001 - reported by the first real request
        logger.debug("%s: prewarming the S3 client failed: %r", url, error)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (unless someone else re-enables it).

    Importing botocore creates enough objects to trigger a full collection, whose cost grows
    with everything the process holds (~80 ms with torch loaded) and buys nothing here: the
    imported modules live on. Collection resumes (and catches up) after the block.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
    if "urllib3.exceptions" in sys.modules:  # the signed client's transport
        from urllib3.exceptions import TimeoutError as Urllib3Timeout

        if isinstance(error, Urllib3Timeout):
            return TimeoutError(f"{url}: {error}")
    code = error_code(error)
    if code in _MISSING:
        from streaming.storage.retry import remote_missing

        return also_client_error(remote_missing(url, code), error)
    if code in _DENIED:
        denied = PermissionError(errno.EACCES, f"access denied ({code})", url)
        return also_client_error(denied, error)
    return None


def also_client_error(translated: OSError, error: BaseException) -> OSError:
    """``translated``, made also a botocore ``ClientError`` with ``error``'s response when
    ``error`` is one: the reference lets S3's ``ClientError`` through for a missing or refused
    object, so code written for it catches that, and code written for the builtin catches this.
    """
    if "botocore.exceptions" not in sys.modules:  # not imported: the error is not botocore's
        return translated
    from botocore.exceptions import ClientError

    if not isinstance(error, ClientError):
        return translated
    out = _client_error_kind(type(translated))(translated.errno, translated.strerror,
                                               translated.filename)
    out.response, out.operation_name = error.response, error.operation_name
    return out


@functools.cache
def _client_error_kind(kind: type[OSError]) -> type[OSError]:
    """A subclass of both ``kind`` and botocore's ``ClientError`` (built on first use, so that
    importing this module does not import botocore). It pickles as a plain ``kind``."""
    from botocore.exceptions import ClientError

    def __reduce__(self: OSError) -> tuple[type[OSError], tuple[Any, ...]]:
        return kind, (self.errno, self.strerror, self.filename)

    return type(kind.__name__, (kind, ClientError), {"__reduce__": __reduce__,
                                                      "__module__": __name__})
