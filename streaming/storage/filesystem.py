"""The one place that maps a storage URL to an fsspec filesystem and the path it understands.

Every byte that shardstream moves to or from storage goes through :func:`resolve`. Schemes are
a small registry (:data:`SCHEMES`), in the manner of fsspec's ``known_implementations``: each
entry names the fsspec protocol, the module that must be importable, the pyproject extra that
installs it, and a function that turns the URL plus the environment into constructor options
and a filesystem path. Adding a backend is adding one entry.

Filesystem instances are cached per (process, protocol, options). The process id is part of
the key because the event loops that s3fs/aiohttp filesystems run on do not survive ``fork``:
a child process builds its own instances on first use instead of touching its parent's. An SFTP
connection serves one thread at a time, so each thread has its own (see :data:`PER_THREAD`).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import posixpath
import threading
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from streaming.optional import import_optional

if TYPE_CHECKING:  # pragma: no cover
    from fsspec import AbstractFileSystem

__all__ = [
    "SCHEMES",
    "Scheme",
    "clear_filesystem_cache",
    "gcs_emulator",
    "gcs_hmac",
    "get_filesystem",
    "is_local",
    "is_unity_catalog",
    "join_url",
    "resolve",
    "resolve_options",
    "split_scheme",
]

# Seconds to wait for a TCP connection to a storage endpoint before the attempt fails.
CONNECT_TIMEOUT = 10.0
# Seconds a single read from a storage endpoint may stall before the attempt fails.
READ_TIMEOUT = 60.0


@dataclass(frozen=True)
class Scheme:
    """How to reach one URL scheme through fsspec.

    Attributes:
        protocol (str): The fsspec protocol to instantiate.
        module (str | None): Module that must be importable for the protocol to work.
        extra (str | None): The ``pip install 'shardstream[EXTRA]'`` extra that provides it.
        options (Callable): ``(parsed URL) -> (protocol, constructor options, fs path)``. It may
            change the protocol (e.g. ``gs://`` with HMAC keys goes through the S3 protocol).
    """

    protocol: str
    module: str | None
    extra: str | None
    options: Callable[[urllib.parse.SplitResult], tuple[str, dict[str, Any], str]]


def split_scheme(url: str) -> tuple[str, str]:
    """Split a URL into its lower-cased scheme and the rest; plain paths have scheme ``''``.

    Args:
        url (str): A URL or a local path.

    Returns:
        Tuple[str, str]: ``(scheme, rest)``.
    """
    url = os.fspath(url)
    # A Windows drive letter (C:\data) is a path, not a one-letter scheme.
    if len(url) >= 2 and url[1] == ":" and url[0].isalpha() and url[2:3] in ("", "/", "\\"):
        return "", url
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if not scheme:
        return "", url
    return scheme, url[len(scheme) + 1 :]


def is_unity_catalog(url: str) -> bool:
    """Whether ``url`` is in a Databricks Unity Catalog volume: its first two path parts are
    ``dbfs:/Volumes`` (``dbfs:/Volumess/x`` is not).

    Args:
        url (str): A URL or a local path.

    Returns:
        bool: Whether it starts with the ``dbfs:/Volumes`` part.
    """
    scheme, rest = split_scheme(url)
    return scheme == "dbfs" and rest.lstrip("/").split("/", 1)[0] == "Volumes"


def is_local(url: str | None) -> bool:
    """Whether ``url`` names a path on the local filesystem (a plain path or ``file://``).

    Args:
        url (str | None): A URL or a local path.

    Returns:
        bool: ``True`` for plain paths and ``file://`` URLs.
    """
    if url is None:
        return True
    return split_scheme(url)[0] in ("", "file")


def join_url(base: str, *parts: str) -> str:
    """Join path parts onto a URL (or local path) the way ``os.path.join`` joins paths.

    Args:
        base (str): A URL or a local path.
        *parts (str): Relative parts to append.

    Returns:
        str: The joined URL; a plain path stays a plain path.
    """
    if not split_scheme(base)[0]:
        return os.path.join(base, *parts)
    return posixpath.join(base, *(p.replace("\\", "/") for p in parts))


# ---- per-scheme options: each returns (protocol, options, path) ---------------------------


def _local(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    if url.scheme == "file":
        path = urllib.parse.unquote(url.path)
        if url.netloc and url.netloc != "localhost":
            # file://relative/dir is a common slip; honour it as the path it looks like.
            path = url.netloc + path
        return "file", {}, path
    return "file", {}, url.path


def _bucket_path(url: urllib.parse.SplitResult) -> str:
    if not url.netloc:
        raise ValueError(f"{url.geturl()}: URL has no bucket (expected {url.scheme}://BUCKET/PATH)")
    return url.netloc + "/" + url.path.lstrip("/") if url.path.strip("/") else url.netloc


# AWS_PROFILE -> whether botocore found no credentials. Walking its chain (config files,
# container, instance metadata) costs ~6 ms, or seconds where the metadata endpoint is
# unreachable, and s3:// downloads resolve their options once per file.
_credentials_missing: dict[str | None, bool] = {}


def _s3_credentials_missing() -> bool:
    """Whether botocore finds no credentials (then public buckets are read unsigned)."""
    if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        return False  # the first link of botocore's chain: no need to import it to know
    profile = os.environ.get("AWS_PROFILE")
    missing = _credentials_missing.get(profile)
    if missing is not None:
        return missing
    from streaming.storage.s3client import wait_prewarm

    wait_prewarm()  # not two threads importing botocore at once
    import botocore.session

    try:
        missing = botocore.session.Session().get_credentials() is None
    except Exception:  # a broken profile is reported by the real request, not here
        missing = False
    _credentials_missing[profile] = missing
    return missing


def _s3_options(
    url: urllib.parse.SplitResult,
    *,
    endpoint_url: str | None = None,
    key: str | None = None,
    secret: str | None = None,
) -> tuple[str, dict[str, Any], str]:
    client_kwargs: dict[str, Any] = {}
    endpoint_url = endpoint_url or os.environ.get("S3_ENDPOINT_URL") or None
    if endpoint_url:
        client_kwargs["endpoint_url"] = endpoint_url
    options: dict[str, Any] = {
        "client_kwargs": client_kwargs,
        # One retry layer only (ours, in retry.py): botocore and s3fs each try once.
        "config_kwargs": {
            "connect_timeout": CONNECT_TIMEOUT,
            "read_timeout": READ_TIMEOUT,
            "retries": {"total_max_attempts": 1, "mode": "standard"},
            "max_pool_connections": 64,
        },
    }
    if key is not None:
        options["key"] = key
        options["secret"] = secret
    elif _s3_credentials_missing():
        # As the reference does: without credentials, public buckets are read unsigned.
        options["anon"] = True
    bucket = url.netloc
    requester_pays = {
        name.strip()
        for name in os.environ.get("MOSAICML_STREAMING_AWS_REQUESTER_PAYS", "").split(",")
        if name.strip()
    }
    if bucket in requester_pays:
        options["requester_pays"] = True
    acl = os.environ.get("S3_CANNED_ACL")
    if acl:
        options["s3_additional_kwargs"] = {"ACL": acl}
    return "s3", options, _bucket_path(url)


def gcs_hmac() -> bool:
    """Whether GCS is reached with HMAC keys (``GCS_KEY`` and ``GCS_SECRET`` set) through its
    S3-compatible API, as the reference does; else gcsfs with Application Default Credentials.

    Returns:
        bool: Whether both keys are set.
    """
    return "GCS_KEY" in os.environ and "GCS_SECRET" in os.environ


def gcs_emulator() -> bool:
    """Whether ``STORAGE_EMULATOR_HOST`` points gcsfs (and Google's own clients) at a GCS
    emulator rather than Google Cloud Storage.

    Returns:
        bool: Whether it is set to an emulator's address.
    """
    return os.environ.get("STORAGE_EMULATOR_HOST", "") not in ("", "default")


def _gcs_options(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    if gcs_hmac():
        # HMAC keys: the reference talks to GCS through its S3-compatible XML API.
        return _s3_options(
            url,
            endpoint_url="https://storage.googleapis.com",
            key=os.environ["GCS_KEY"],
            secret=os.environ["GCS_SECRET"],
        )
    if gcs_emulator():
        # An emulator takes no credentials; asking google-auth for some would probe the
        # metadata server's link-local address first (as google-cloud-storage, go anonymous).
        return "gcs", {"token": "anon"}, _bucket_path(url)
    return "gcs", {}, _bucket_path(url)


def _azure_options(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    options: dict[str, Any] = {}
    netloc = url.netloc
    path = url.path.lstrip("/")
    account = os.environ.get("AZURE_ACCOUNT_NAME")
    if "@" in netloc:  # abfs://container@account.dfs.core.windows.net/path
        container, host = netloc.split("@", 1)
        account = account or host.split(".")[0]
    elif "." in netloc:  # azure://account.blob.core.windows.net/container/path
        account = account or netloc.split(".")[0]
        container, _, path = path.partition("/")
    else:  # az://container/path
        container = netloc
    if not container:
        raise ValueError(f"{url.geturl()}: URL has no container")
    if account:
        options["account_name"] = account
    if "AZURE_ACCOUNT_ACCESS_KEY" in os.environ:
        options["account_key"] = os.environ["AZURE_ACCOUNT_ACCESS_KEY"]
    else:
        options["anon"] = False  # adlfs then uses DefaultAzureCredential
    return "abfs", options, container + ("/" + path if path else "")


def _oci_options(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    options: dict[str, Any] = {}
    config = os.environ.get("OCI_CONFIG_FILE")
    if config:
        options["config"] = config
    # ocifs paths are BUCKET@NAMESPACE/PATH, exactly the URL's netloc + path.
    return "oci", options, _bucket_path(url)


def _hf_options(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    parts = (url.netloc + url.path).strip("/").split("/")
    if len(parts) < 3 or parts[0] not in ("datasets", "spaces", "models"):
        raise ValueError(
            f"{url.geturl()}: expected hf://datasets/ORG/NAME[/PATH] (a Hugging Face dataset repo)"
        )
    options: dict[str, Any] = {"token": os.environ.get("HF_TOKEN") or None}
    endpoint = os.environ.get("HF_ENDPOINT")
    if endpoint:
        options["endpoint"] = endpoint.rstrip("/")
    return "hf", options, "/".join(parts)


def _sftp_options(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    if not url.hostname:
        raise ValueError(f"{url.geturl()}: an sftp:// URL must include the hostname")
    if url.query or url.fragment:
        raise ValueError(f"{url.geturl()}: query and fragment are not supported in sftp:// URLs")
    options: dict[str, Any] = {"host": url.hostname, "port": url.port or 22}
    if url.username:
        options["username"] = urllib.parse.unquote(url.username)
    if url.password:
        options["password"] = urllib.parse.unquote(url.password)
    key_file = os.environ.get("COMPOSER_SFTP_KEY_FILE")
    if key_file:
        options["key_filename"] = key_file
    return "sftp", options, url.path or "/"


def _http_options(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    return "http", {}, url.geturl()


def _dbfs_options(url: urllib.parse.SplitResult) -> tuple[str, dict[str, Any], str]:
    host = os.environ.get("DATABRICKS_HOST", "")
    token = os.environ.get("DATABRICKS_TOKEN", "")
    if not host or not token:
        raise ValueError(
            f"{url.geturl()}: set DATABRICKS_HOST and DATABRICKS_TOKEN to reach DBFS"
        )
    instance = urllib.parse.urlsplit(host).netloc or host
    path = "/" + (url.netloc + url.path).lstrip("/")
    return "dbfs", {"instance": instance, "token": token}, path


SCHEMES: dict[str, Scheme] = {
    "": Scheme("file", None, None, _local),
    "file": Scheme("file", None, None, _local),
    "s3": Scheme("s3", "s3fs", "s3", _s3_options),
    "s3a": Scheme("s3", "s3fs", "s3", _s3_options),
    "gs": Scheme("gcs", "gcsfs", "gcs", _gcs_options),
    "gcs": Scheme("gcs", "gcsfs", "gcs", _gcs_options),
    "az": Scheme("abfs", "adlfs", "azure", _azure_options),
    "azure": Scheme("abfs", "adlfs", "azure", _azure_options),
    "azure-dl": Scheme("abfs", "adlfs", "azure", _azure_options),
    "abfs": Scheme("abfs", "adlfs", "azure", _azure_options),
    "abfss": Scheme("abfs", "adlfs", "azure", _azure_options),
    "oci": Scheme("oci", "ocifs", "oci", _oci_options),
    "hf": Scheme("hf", "huggingface_hub", "hf", _hf_options),
    "sftp": Scheme("sftp", "paramiko", "sftp", _sftp_options),
    "http": Scheme("http", "aiohttp", "http", _http_options),
    "https": Scheme("http", "aiohttp", "http", _http_options),
    "dbfs": Scheme("dbfs", "requests", "dbfs", _dbfs_options),
}

# The module each fsspec protocol needs (an override may switch protocol, e.g. gs -> s3).
_PROTOCOL_MODULES = {"s3": ("s3fs", "s3"), "gcs": ("gcsfs", "gcs"), "abfs": ("adlfs", "azure")}

_cache: dict[tuple[int, str, str], AbstractFileSystem] = {}
_cache_lock = threading.Lock()

# Protocols whose filesystem holds one connection that cannot serve two threads at once:
# paramiko's SFTPClient hands each reply to whichever thread reads the channel first, and the
# thread the reply was for then waits forever (a dataset's prefetch threads, a writer's upload
# threads). Each thread gets an instance of its own, whose connection closes when the thread
# ends.
PER_THREAD = frozenset({"sftp"})
_thread = threading.local()
_generation = 0  # bumped by clear_filesystem_cache: threads' instances from before are not used


def _require(module: str | None, extra: str | None, url: str) -> None:
    if module is not None:
        import_optional(module, f"{url}: reading or writing this URL needs the `{module}` "
                                f"package; install it with `pip install 'shardstream[{extra}]'`")


def resolve(url: str) -> tuple[AbstractFileSystem, str]:
    """Map a storage URL (or a local path) to an fsspec filesystem and the path it expects.

    Args:
        url (str): ``s3://bucket/key``, ``hf://datasets/org/name/path``, ``gs://``, ``az://``,
            ``azure://``, ``oci://``, ``sftp://``, ``http(s)://``, ``dbfs:/``, ``file://`` or a
            plain local path.

    Returns:
        Tuple[AbstractFileSystem, str]: The (cached, fork-safe) filesystem and the path to pass
        to its methods.

    Raises:
        ValueError: The scheme is unknown or the URL is malformed for its scheme.
        ImportError: The package that serves the scheme is missing; the message names the
            extra to install.
    """
    url = os.fspath(url)
    scheme = SCHEMES.get(split_scheme(url)[0])
    if scheme is not None:
        _require(scheme.module, scheme.extra, url)
    protocol, options, path = resolve_options(url)
    if scheme is not None and protocol != scheme.protocol and protocol in _PROTOCOL_MODULES:
        _require(*_PROTOCOL_MODULES[protocol], url)
    return _filesystem(protocol, options), path


def resolve_options(url: str) -> tuple[str, dict[str, Any], str]:
    """What :func:`resolve` would build for ``url``, without importing or creating anything.

    Args:
        url (str): A storage URL or a local path.

    Returns:
        Tuple[str, Dict[str, Any], str]: The fsspec protocol, the filesystem's constructor
        options (from the URL and the environment) and the path to pass to its methods.

    Raises:
        ValueError: The scheme is unknown or the URL is malformed for its scheme.
    """
    url = os.fspath(url)
    scheme_name, _ = split_scheme(url)
    scheme = SCHEMES.get(scheme_name)
    if scheme is None:
        known = ", ".join(f"{s}://" for s in sorted(SCHEMES) if s)
        raise ValueError(f"{url}: unsupported URL scheme {scheme_name!r} (supported: {known})")
    if scheme_name == "":
        return "file", {}, url
    return scheme.options(urllib.parse.urlsplit(url))


def get_filesystem(url: str) -> AbstractFileSystem:
    """Return the fsspec filesystem that serves ``url`` (see :func:`resolve`).

    Args:
        url (str): A storage URL or a local path.

    Returns:
        AbstractFileSystem: The filesystem.
    """
    return resolve(url)[0]


class _ThreadsOwn:
    """A thread's own filesystem (see :data:`PER_THREAD`); closes its connection when the
    thread ends (its thread-local storage, which holds this, is dropped then)."""

    def __init__(self, fs: AbstractFileSystem) -> None:
        self.fs = fs
        self.pid = os.getpid()

    def __del__(self) -> None:
        client = getattr(self.fs, "client", None)  # (fsspec's SFTP: a paramiko SSHClient)
        # A forked child must not close the connection it shares with its parent.
        if client is not None and os.getpid() == self.pid:
            try:
                client.close()
            except Exception:  # (at interpreter exit paramiko may be half torn down already)
                pass


def _thread_filesystem(protocol: str, options: dict[str, Any]) -> AbstractFileSystem:
    owned = _thread.__dict__.setdefault("filesystems", {})
    key = (os.getpid(), _generation, protocol, json.dumps(options, sort_keys=True, default=repr))
    if key not in owned:
        import fsspec

        for stale in [k for k in owned if k[:2] != key[:2]]:  # a parent's, or cleared
            del owned[stale]
        owned[key] = _ThreadsOwn(fsspec.get_filesystem_class(protocol)(
            skip_instance_cache=True, **options))
    return owned[key].fs


def _filesystem(protocol: str, options: dict[str, Any]) -> AbstractFileSystem:
    if protocol in PER_THREAD:
        return _thread_filesystem(protocol, options)
    key = (os.getpid(), protocol, json.dumps(options, sort_keys=True, default=repr))
    fs = _cache.get(key)
    if fs is not None:
        return fs
    with _cache_lock:
        fs = _cache.get(key)
        if fs is None:
            import fsspec

            # Drop instances inherited from a parent process: their loops are dead here.
            for stale in [k for k in _cache if k[0] != key[0]]:
                del _cache[stale]
            cls = fsspec.get_filesystem_class(protocol)
            fs = cls(skip_instance_cache=True, **options)
            if protocol == "s3":
                fs.retries = 1  # one retry layer only: ours
            _cache[key] = fs
    return fs


def for_this_thread(fs: AbstractFileSystem, url: str) -> AbstractFileSystem:
    """``fs`` (what :func:`resolve` gave for ``url``, maybe on another thread), or this
    thread's own instance where its protocol needs one (:data:`PER_THREAD`).

    Args:
        fs (AbstractFileSystem): The filesystem serving ``url``.
        url (str): The URL it was resolved for.

    Returns:
        AbstractFileSystem: The filesystem this thread may use.
    """
    return resolve(url)[0] if PER_THREAD.intersection(protocols(fs)) else fs


def protocols(fs: AbstractFileSystem) -> tuple[str, ...]:
    """The protocols ``fs`` serves (fsspec spells one as a string, several as a tuple).

    Args:
        fs (AbstractFileSystem): The filesystem.

    Returns:
        Tuple[str, ...]: Its protocol names (``("s3", "s3a")``, ``("http", "https")``, ...).
    """
    protocol = getattr(fs, "protocol", ())
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def one_request_options(fs: AbstractFileSystem, method: str) -> dict[str, Any]:
    """Keyword arguments that make ``fs``'s ``method`` fetch a whole object in one request.

    s3fs (and the S3-compatible stores it serves) splits a large object into concurrent ranged
    GETs, after a HEAD to plan them, unless told ``max_concurrency=1``; callers that already
    chose a single request say so. s3fs before 2026.2 (2025.9; 2023.6, llm-foundry's pin) makes
    one request anyway and rejects the argument, so it is passed only where the method takes it.

    Args:
        fs (AbstractFileSystem): The filesystem.
        method (str): The name of the fetching method (``"_get_file"``, ``"cat_file"``, ...).

    Returns:
        dict[str, Any]: ``{"max_concurrency": 1}`` or ``{}``.
    """
    if "s3" not in protocols(fs):
        return {}
    return {"max_concurrency": 1} if _accepts(type(fs), method, "max_concurrency") else {}


@functools.cache
def _accepts(cls: type, method: str, argument: str) -> bool:
    # fsspec's sync wrappers (cat_file for _cat_file) hide the signature: look at the coroutine.
    function = getattr(cls, method)
    if not inspect.iscoroutinefunction(function) and hasattr(cls, "_" + method):
        function = getattr(cls, "_" + method)
    try:
        return argument in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def clear_filesystem_cache() -> None:
    """Forget cached filesystems and credential probes (e.g. after changing credentials)."""
    global _generation
    with _cache_lock:
        _cache.clear()
        _generation += 1
        _credentials_missing.clear()
    from streaming.storage.s3client import clear_s3_clients

    clear_s3_clients()
