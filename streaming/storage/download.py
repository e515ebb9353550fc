"""Downloading from any storage URL: one download path, and the reference's downloader classes.

:func:`download` fetches one whole file atomically: the bytes go to a temp file beside the
destination, which is fsynced and renamed only once complete and of the advertised size. Large
objects are fetched as parallel ranged GETs written in place with ``os.pwrite``, so one big
shard arrives at the speed of many connections. Each request has its own timeout and is retried
with exponential backoff and jitter; a missing object fails at once with ``FileNotFoundError``.

The reference's classes (``CloudDownloader``, ``S3Downloader``, ...) keep their names and
methods (``get``, ``direct_download``, ``download``, ``clean_up``, ``_download_file_impl``) so
code that patches or subclasses them keeps working; every one moves bytes through
:func:`download`.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import os
import pathlib
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable

from streaming.storage.atomic import atomic_file, start_writeback
from streaming.storage.filesystem import (
    for_this_thread,
    is_local,
    is_unity_catalog,
    one_request_options,
    protocols,
    resolve,
    resolve_options,
    split_scheme,
)
from streaming.storage.partial import publishing
from streaming.storage.retry import backoff_delay, call_with_retry, is_retryable, remote_missing

if TYPE_CHECKING:  # pragma: no cover
    from fsspec import AbstractFileSystem

logger = logging.getLogger(__name__)

__all__ = [
    "BOTOCORE_CLIENT_ERROR_CODES",
    "DEFAULT_TIMEOUT",
    "DOWNLOADER_MAPPINGS",
    "GCS_ERROR_NO_AUTHENTICATION",
    "AlipanDownloader",
    "AzureDataLakeDownloader",
    "AzureDownloader",
    "CloudDownloader",
    "DBFSDownloader",
    "DatabricksUnityCatalogDownloader",
    "DownloadError",
    "GCSDownloader",
    "HFDownloader",
    "LocalDownloader",
    "OCIDownloader",
    "S3Downloader",
    "SFTPDownloader",
    "download",
    "download_file",
    "publishes_head",
]

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRY = 3
DEFAULT_BACKOFF = 0.5
# Objects larger than this are fetched as parallel ranged GETs of this size.
DEFAULT_CHUNK_SIZE = 64 << 20
DEFAULT_MAX_CONCURRENCY = 8
# Bytes per read from an S3 response body into the destination file: small enough that the
# block is still in the CPU cache when it is written out (500 MB over loopback, 2 streams:
# 0.33-0.39 s of client CPU with 1 MiB blocks, 0.32-0.89 s with 8 MiB, 0.39-0.43 s with 256 KiB).
S3_READ_BLOCK = 1 << 20
# The first block read of a download whose head readers may watch (see partial.py).
EARLY_BLOCK = 64 << 10
# Bytes written to a download's temp file between hand-offs to the disk (see start_writeback).
WRITEBACK_EVERY = 8 << 20

# Kept for code that imports them from the reference's module.
BOTOCORE_CLIENT_ERROR_CODES = {"403", "404", "NoSuchKey"}
GCS_ERROR_NO_AUTHENTICATION = (
    "Either set the environment variables `GCS_KEY` and `GCS_SECRET` or use any of the methods "
    "in https://cloud.google.com/docs/authentication/external/set-up-adc to set up Application "
    "Default Credentials. See also "
    "https://docs.mosaicml.com/projects/mcli/en/latest/resources/secrets/gcp.html.\n"
)


class DownloadError(OSError):
    """A download failed after its last attempt; the message names the URL."""


class IncompleteReadError(OSError):
    """A response carried fewer (or more) bytes than the object's size: retried."""


_buffers = threading.local()


def _read_buffer() -> memoryview:
    """This thread's reusable block buffer for response bodies."""
    buffer = getattr(_buffers, "block", None)
    if buffer is None or len(buffer) != S3_READ_BLOCK:
        buffer = _buffers.block = memoryview(bytearray(S3_READ_BLOCK))
    return buffer


def download(
    remote_url: str,
    local_path: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    retry: int = DEFAULT_RETRY,
    backoff: float = DEFAULT_BACKOFF,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
) -> int:
    """Download one whole file from ``remote_url`` to ``local_path``, atomically.

    ``local_path`` appears only when the download is complete (temp file in the same
    directory, fsync, rename); after any failure it does not exist (or keeps its old content).
    An existing ``local_path`` is replaced.

    Args:
        remote_url (str): Any URL :func:`streaming.storage.filesystem.resolve` accepts.
        local_path (str): Destination file; parent directories are created.
        timeout (float): Seconds each request (a small file, or one chunk of a large one) may
            take before it is abandoned and retried. Defaults to ``60``.
        retry (int): Total attempts per request. Defaults to ``3``.
        backoff (float): Seconds before the first retry, doubled after each, with jitter.
        chunk_size (int): Objects larger than this are fetched as parallel ranged GETs of this
            many bytes. Defaults to 8 MiB.
        max_concurrency (int): Ranged GETs in flight at once for one file. Defaults to ``8``.

    Returns:
        int: The number of bytes downloaded.

    Raises:
        FileNotFoundError: The remote file does not exist (not retried).
        DownloadError: A request still failed after ``retry`` attempts (or timed out each
            time); the message names the URL and the last error.
    """
    if chunk_size <= 0 or max_concurrency <= 0:
        raise ValueError(f"chunk_size ({chunk_size}) and max_concurrency ({max_concurrency}) "
                         f"must be positive")
    protocol, options, path = resolve_options(remote_url)
    if protocol == "s3":
        # Not through s3fs: botocore is twice as fast per byte here (see s3client.py).
        job = _Job(remote_url, None, path, timeout, retry, backoff, chunk_size, max_concurrency)
        return job.fetch_s3(local_path, options)
    fs, path = resolve(remote_url)
    job = _Job(remote_url, fs, path, timeout, retry, backoff, chunk_size, max_concurrency)
    if is_local(remote_url):
        return job.copy_local(local_path)
    if _is_async(fs):
        return job.fetch_async(local_path)
    return job.fetch_threads(local_path)


def publishes_head(remote_url: str) -> bool:
    """Whether :func:`download` of ``remote_url`` writes the file front to back and publishes
    its head as it grows (:func:`streaming.storage.partial.read_head` can follow it).

    Args:
        remote_url (str): A storage URL or a local path.

    Returns:
        bool: ``True`` for URLs read through the S3 API.
    """
    try:
        return resolve_options(remote_url)[0] == "s3"
    except ValueError:
        return False


def download_file(remote: str | None, local: str, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Download ``remote`` to ``local`` unless ``local`` already exists (the 0.x-era helper).

    Args:
        remote (str | None): Remote URL; may be ``None`` only if ``local`` exists.
        local (str): Local path.
        timeout (float): Seconds each request may take. Defaults to ``60``.

    Raises:
        ValueError: ``remote`` is empty and ``local`` does not exist.
        FileNotFoundError: The remote file does not exist.
        DownloadError: The download failed after its retries.
    """
    CloudDownloader.direct_download(remote, local, timeout)


def _is_async(fs: AbstractFileSystem) -> bool:
    from fsspec.asyn import AsyncFileSystem

    return isinstance(fs, AsyncFileSystem) and getattr(fs, "async_impl", False)


def _may_ignore_ranges(fs: AbstractFileSystem) -> bool:
    """Whether ``fs`` may answer a ranged read with the whole object: web servers may (Python's
    ``http.server``, many static file servers); object stores honour ranges."""
    return bool({"http", "https"} & set(protocols(fs)))


class _Job:
    """One download: the URL, its filesystem, and the retry/timeout policy."""

    def __init__(self, url: str, fs: AbstractFileSystem, path: str, timeout: float, retry: int,
                 backoff: float, chunk_size: int, max_concurrency: int) -> None:
        self.url = url
        self.fs = fs
        self.path = path
        self.timeout = timeout
        self.attempts = max(1, int(retry))
        self.backoff = backoff
        self.chunk_size = chunk_size
        self.max_concurrency = max_concurrency

    def _failed(self, error: BaseException, what: str) -> BaseException:
        if isinstance(error, (FileNotFoundError, PermissionError)) and error.filename == self.url:
            return error  # already names this URL (s3client.py's translations)
        if isinstance(error, FileNotFoundError):
            return remote_missing(self.url)
        if isinstance(error, PermissionError):
            return PermissionError(f"{self.url}: access denied (check credentials): {error}")
        if not is_retryable(error):
            return error
        kind = "timed out" if isinstance(error, (TimeoutError, asyncio.TimeoutError)) else "failed"
        return DownloadError(
            f"{self.url}: download {kind} after {self.attempts} attempt(s) ({what}, timeout "
            f"{self.timeout:g}s each): {error!r}"
        )

    def _ranges(self, size: int) -> list[tuple[int, int]]:
        return [(start, min(start + self.chunk_size, size))
                for start in range(0, size, self.chunk_size)]

    # ---- local files: a plain atomic copy -------------------------------------------------

    def copy_local(self, local_path: str) -> int:
        src = self.path
        if not os.path.isfile(src):
            if os.path.isdir(src):
                raise IsADirectoryError(f"{self.url}: is a directory, not a file")
            raise remote_missing(self.url)
        if os.path.abspath(src) == os.path.abspath(local_path):
            return os.path.getsize(src)
        with atomic_file(local_path) as (fd, _):
            with open(src, "rb") as fin, os.fdopen(os.dup(fd), "wb") as fout:
                shutil.copyfileobj(fin, fout, 4 << 20)
            return os.fstat(fd).st_size

    # ---- async filesystems (s3, http, gcs, azure): one coroutine on the fs's loop ---------

    def fetch_async(self, local_path: str) -> int:
        from fsspec.asyn import sync

        with atomic_file(local_path) as (fd, tmp):
            return sync(self.fs.loop, self._fetch_async, fd, tmp)

    async def _retrying(self, what: str, make: Callable[[], Any]) -> Any:
        for attempt in range(1, self.attempts + 1):
            try:
                return await asyncio.wait_for(make(), self.timeout)
            except Exception as error:
                if not is_retryable(error) or attempt == self.attempts:
                    raise self._failed(error, what) from error
                logger.debug("%s: %s failed (attempt %d): %r", self.url, what, attempt, error)
                await asyncio.sleep(backoff_delay(attempt, self.backoff))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _get_streamed(self, fd: int, tmp: str, expected: int | None) -> int:
        """One GET streamed straight into the temp file (cheapest per byte: no range, no
        buffering of the whole body), then checked against the advertised size."""
        os.ftruncate(fd, 0)
        # s3fs would split a big object into its own parallel parts; we already chose not to.
        await self.fs._get_file(self.path, tmp, **one_request_options(self.fs, "_get_file"))
        got = os.fstat(fd).st_size
        if expected is not None and got != expected:
            raise IncompleteReadError(f"{self.url}: got {got} bytes, expected {expected}")
        return got

    async def _fetch_async(self, fd: int, tmp: str) -> int:
        fs = self.fs
        info = await self._retrying("info", lambda: fs._info(self.path))
        if info.get("type") == "directory":
            raise IsADirectoryError(f"{self.url}: is a directory, not a file")
        size = info.get("size")
        if size == 0:
            return 0
        # (fsspec's HTTP info says partial=False when the server sends "Accept-Ranges: none".)
        if size is None or size <= self.chunk_size or info.get("partial") is False:
            return await self._retrying("get", lambda: self._get_streamed(fd, tmp, size))
        os.ftruncate(fd, size)
        ranges = self._ranges(size)
        if _may_ignore_ranges(fs):
            # A web server may answer a range with the whole object (a plain 200): ask for the
            # first chunk alone, so that such an answer is the download, made once.
            start, end = ranges.pop(0)
            data = await self._retrying(f"bytes {start}-{end - 1}",
                                        lambda: self._cat_checked(start, end, whole=size))
            os.pwrite(fd, data, 0)
            if len(data) == size:
                return size
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(start: int, end: int) -> None:
            async with gate:
                data = await self._retrying(f"bytes {start}-{end - 1}",
                                            lambda: self._cat_checked(start, end))
                os.pwrite(fd, data, start)

        tasks = [asyncio.ensure_future(one(s, e)) for s, e in ranges]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return size

    async def _cat_checked(self, start: int, end: int, whole: int | None = None) -> bytes:
        """Bytes ``[start, end)``, or (with ``whole``, the object's size) all of them if the
        server sent the whole object instead."""
        data = await self.fs._cat_file(self.path, start=start, end=end)
        if len(data) != end - start and len(data) != whole:
            raise IncompleteReadError(f"{self.url}: got {len(data)} bytes, expected "
                                      f"{end - start} (range {start}-{end})")
        return data

    # ---- s3 (and gs:// with HMAC keys): botocore, ranged GETs from a thread pool ------------

    def fetch_s3(self, local_path: str, options: dict[str, Any]) -> int:
        """Fetch through a shared botocore client: the first request asks for the first chunk
        (learning the size from its ``Content-Range``, so small objects take one request and no
        HEAD); the rest of a larger object follows as parallel ranged GETs."""
        client = self._s3_client(options)
        bucket, key, extra = self._s3_target(options)
        with atomic_file(local_path) as (fd, tmp), publishing(local_path, tmp) as advance:
            # The first request writes from byte 0 on: readers may see that head grow.
            size, whole = self._retry_sync("get", lambda: self._s3_get(
                client, bucket, key, extra, fd, first=True, advance=advance))
            if not whole:
                os.ftruncate(fd, size)

                def one(rng: tuple[int, int]) -> None:
                    start, end = rng
                    _, whole = self._retry_sync(f"bytes {start}-{end - 1}", lambda: self._s3_get(
                        client, bucket, key, extra, fd, start=start, end=end))
                    if whole and start:
                        raise DownloadError(f"{self.url}: the server ignores Range requests; "
                                            f"download with a larger chunk_size")

                with ThreadPoolExecutor(self.max_concurrency) as pool:
                    for _ in pool.map(one, self._ranges(size)[1:]):
                        pass
            return size

    def _s3_get(self, client: Any, bucket: str, key: str, extra: dict[str, str], fd: int,
                start: int = 0, end: int | None = None, first: bool = False,
                advance: Callable[[int], None] | None = None) -> tuple[int, bool]:
        """GET bytes ``[start, end)`` (or, if ``first``, the first chunk) into ``fd`` at their
        offset; returns the object's size and whether the whole object is now written.
        ``advance(n)`` is told after each block that the first ``n`` bytes are written (when
        ``start`` is 0). botocore errors become builtins (see s3client.py)."""
        from streaming.storage.s3client import error_code, translate_s3_error

        if first:
            end = self.chunk_size
        buffer = _read_buffer()
        if advance is not None and start == 0:
            advance(0)  # a retry starts over

        try:
            try:
                resp = client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}",
                                         **extra)
            except Exception as error:
                code = error_code(error)
                if first and code in ("InvalidRange", "416"):  # empty: no byte 0 to range over
                    resp = client.get_object(Bucket=bucket, Key=key, **extra)
                elif first and code in ("NoSuchKey", "404") and self._s3_is_dir(client, bucket,
                                                                               key, extra):
                    raise IsADirectoryError(f"{self.url}: is a directory, not a file") from error
                else:
                    raise
            content_range = resp.get("ContentRange")
            if content_range:  # "bytes START-END/SIZE"
                size = int(content_range.rpartition("/")[2])
            else:  # a 200: the server ignored the range and sends the whole object
                size = int(resp["ContentLength"])
                start, end = 0, size
            expected = min(end, size) - start
            got = flushed = 0
            body = resp["Body"]
            try:
                readinto = getattr(body, "readinto", None)
                # A read returns only when its block is full: while readers may be watching
                # the head grow, start small and double up to the full block size.
                step = EARLY_BLOCK if advance is not None else len(buffer)
                while got < expected:
                    want = min(step, expected - got)
                    step = min(2 * step, len(buffer))
                    if readinto is not None:  # into one reused buffer: no new bytes per block
                        n = readinto(buffer[:want])
                        block = buffer[:n]
                    else:
                        block = body.read(want)
                        n = len(block)
                    if not n:
                        break
                    os.pwrite(fd, block, start + got)
                    got += n
                    if advance is not None and start == 0:
                        advance(got)
                    if got - flushed >= WRITEBACK_EVERY or got == expected:
                        start_writeback(fd, start + flushed, got - flushed)
                        flushed = got
            finally:
                body.close()
        except Exception as error:
            translated = translate_s3_error(error, self.url)
            if translated is None:
                raise
            raise translated from error
        if got != expected:
            raise IncompleteReadError(f"{self.url}: got {got} bytes, expected {expected} "
                                      f"(range {start}-{start + expected})")
        return size, start == 0 and expected == size

    def _s3_client(self, options: dict[str, Any]) -> Any:
        try:
            from streaming.storage.s3client import s3_client
            return s3_client(options, self.timeout)
        except ImportError as e:
            raise ImportError(f"{self.url}: reading this URL needs the `boto3` package; install "
                              f"it with `pip install 'shardstream[s3]'`") from e

    def _s3_target(self, options: dict[str, Any]) -> tuple[str, str, dict[str, str]]:
        bucket, _, key = self.path.partition("/")
        if not key or key.endswith("/"):
            raise IsADirectoryError(f"{self.url}: is a directory, not a file")
        extra = {"RequestPayer": "requester"} if options.get("requester_pays") else {}
        return bucket, key, extra

    @staticmethod
    def _s3_is_dir(client: Any, bucket: str, key: str, extra: dict[str, str]) -> bool:
        try:
            resp = client.list_objects_v2(Bucket=bucket, Prefix=key.rstrip("/") + "/",
                                          MaxKeys=1, **extra)
        except Exception:  # the GET's own error says it best
            return False
        return bool(resp.get("KeyCount") or resp.get("Contents"))

    # ---- sync filesystems (hf, sftp, dbfs, oci): ranged reads from a thread pool ----------

    def _retry_sync(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return call_with_retry(fn, attempts=self.attempts, backoff=self.backoff)
        except Exception as error:
            raise self._failed(error, what) from error

    def _cat_sync(self, expected: int | None, start: int | None = None,
                  end: int | None = None) -> bytes:
        fs = for_this_thread(self.fs, self.url)  # (a pool thread may need its own)
        data = fs.cat_file(self.path, start=start, end=end)
        if expected is not None and len(data) != expected:
            raise IncompleteReadError(f"{self.url}: got {len(data)} bytes, expected {expected}")
        return data

    def fetch_threads(self, local_path: str) -> int:
        info = self._retry_sync("info", lambda: self.fs.info(self.path))
        if info.get("type") == "directory":
            raise IsADirectoryError(f"{self.url}: is a directory, not a file")
        size = info.get("size")
        with atomic_file(local_path) as (fd, _):
            if size == 0:
                return 0
            if size is None or size <= self.chunk_size:
                data = self._retry_sync("get", lambda: self._cat_sync(size))
                os.pwrite(fd, data, 0)
                return len(data)
            os.ftruncate(fd, size)

            def one(rng: tuple[int, int]) -> None:
                start, end = rng
                data = self._retry_sync(f"bytes {start}-{end - 1}",
                                        lambda: self._cat_sync(end - start, start, end))
                os.pwrite(fd, data, start)

            with ThreadPoolExecutor(self.max_concurrency) as pool:
                for _ in pool.map(one, self._ranges(size)):
                    pass
            return size


# ---- the reference's downloader classes -----------------------------------------------------


class CloudDownloader(abc.ABC):
    """Download files from remote storage to a local filesystem."""

    @classmethod
    def get(cls, remote_dir: str | None = None) -> CloudDownloader:
        """Get the downloader for the remote path.

        Args:
            remote_dir (str | None): Remote path.

        Returns:
            CloudDownloader: Downloader for the remote path.

        Raises:
            ValueError: If the remote path is not supported.
        """
        if remote_dir is None:
            return _LOCAL_DOWNLOADER()
        prefix = _client_prefix(remote_dir)
        if prefix not in DOWNLOADER_MAPPINGS:
            raise ValueError(f"Unsupported remote path: {remote_dir}")
        return DOWNLOADER_MAPPINGS[prefix]()

    @classmethod
    def direct_download(cls, remote: str | None, local: str,
                        timeout: float = DEFAULT_TIMEOUT) -> None:
        """Directly download a file from remote storage to local filesystem.

        Args:
            remote (str | None): Remote path.
            local (str): Local path.
            timeout (float): How long to wait for file to download before raising an exception.
                Defaults to ``60`` seconds.

        Raises:
            ValueError: If the remote path is not provided while local does not exist or remote
                path is not supported.
        """
        downloader = cls.get(remote)
        downloader.download(remote, local, timeout)
        downloader.clean_up()

    def download(self, remote: str | None, local: str,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        """Download a file from remote storage to local filesystem (no-op if ``local`` exists).

        Args:
            remote (str | None): Remote path.
            local (str): Local path.
            timeout (float): How long each request may take before it is retried. Defaults to
                ``60`` seconds.

        Raises:
            ValueError: If the remote path does not have this downloader's prefix, or remote is
                not provided while local does not exist.
        """
        if os.path.exists(local):
            return
        if not remote:
            raise ValueError(
                "In the absence of local dataset, path to remote dataset must be provided")
        if sys.platform == "win32":
            remote = pathlib.PureWindowsPath(remote).as_posix()
            local = pathlib.PureWindowsPath(local).as_posix()
        local_dir = os.path.dirname(local)
        if local_dir:
            os.makedirs(local_dir, exist_ok=True)
        self._validate_remote_path(remote)
        self._download_file_impl(remote, local, timeout)

    @staticmethod
    @abc.abstractmethod
    def _client_identifier() -> str:
        """Return the client identifier (URL scheme or prefix) the downloader serves."""

    def clean_up(self) -> None:
        """Clean up the downloader when it is done being used (filesystems are shared)."""
        return None

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        """Download ``remote`` to ``local`` through :func:`download`.

        Args:
            remote (str): Remote path.
            local (str): Local path.
            timeout (float): How long each request may take before it is retried.
        """
        download(remote, local, timeout=timeout)

    def _validate_remote_path(self, remote: str) -> None:
        """Validate the remote path.

        Args:
            remote (str): Remote path.

        Raises:
            ValueError: If the remote path does not contain the expected prefix.
        """
        scheme = _client_prefix(remote)
        if scheme != self._client_identifier() and scheme not in _ALIASES.get(self._client_identifier(), ()):
            raise ValueError(
                f"Expected remote path to start with url scheme of `{scheme}`, got {remote}.")


def _client_prefix(remote: str) -> str:
    scheme = split_scheme(remote)[0]
    if is_unity_catalog(remote):
        return "dbfs-uc"
    return scheme


class S3Downloader(CloudDownloader):
    """Download files from AWS S3 (or any S3-compatible store) to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "s3"


class SFTPDownloader(CloudDownloader):
    """Download files from SFTP to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "sftp"


class GCSDownloader(CloudDownloader):
    """Download files from Google Cloud Storage to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "gs"


class OCIDownloader(CloudDownloader):
    """Download files from Oracle Cloud Infrastructure to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "oci"


class HFDownloader(CloudDownloader):
    """Download files from Hugging Face to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "hf"


class AzureDownloader(CloudDownloader):
    """Download files from Azure to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "azure"


class AzureDataLakeDownloader(CloudDownloader):
    """Download files from Azure Data Lake to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "azure-dl"


class DatabricksUnityCatalogDownloader(CloudDownloader):
    """Download files from Databricks Unity Catalog to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "dbfs-uc"

    def _validate_remote_path(self, remote: str) -> None:
        """Validate the remote path (the reference's message: it names the volume prefix).

        Args:
            remote (str): Remote path.

        Raises:
            ValueError: If the remote path is not in a ``dbfs:/Volumes`` volume.
        """
        if not is_unity_catalog(remote):
            prefix = "/".join(remote.split("/", 2)[:2])
            raise ValueError(
                "Expected path prefix to be `dbfs:/Volumes` if it is a Databricks Unity "
                f"Catalog, instead, got {prefix} for remote={remote}.")


class DBFSDownloader(CloudDownloader):
    """Download files from Databricks File System to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return "dbfs"


class AlipanDownloader(CloudDownloader):
    """The reference's Alipan downloader: not supported by shardstream."""

    @staticmethod
    def _client_identifier() -> str:
        return "alipan"

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        raise ValueError(f"{remote}: alipan:// storage is not supported by shardstream")


class LocalDownloader(CloudDownloader):
    """Download files from local filesystem to local filesystem."""

    @staticmethod
    def _client_identifier() -> str:
        return ""


class HTTPDownloader(CloudDownloader):
    """Download files over HTTP(S) (an fsspec backend the reference lacks)."""

    @staticmethod
    def _client_identifier() -> str:
        return "https"


# Schemes served by a downloader besides its own identifier.
_ALIASES: dict[str, tuple[str, ...]] = {
    "s3": ("s3a",),
    "gs": ("gcs",),
    "azure": ("az", "abfs", "abfss"),
    "": ("file",),
    "https": ("http",),
}


def _register_cloud_downloader_subclasses() -> dict[str, type[CloudDownloader]]:
    mappings: dict[str, type[CloudDownloader]] = {}
    for sub in CloudDownloader.__subclasses__():
        ident = sub._client_identifier()
        mappings[ident] = sub
        for alias in _ALIASES.get(ident, ()):
            mappings[alias] = sub
    return mappings


DOWNLOADER_MAPPINGS = _register_cloud_downloader_subclasses()
_LOCAL_DOWNLOADER = LocalDownloader
