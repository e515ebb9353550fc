"""Uploading to any storage URL: one upload path, and the reference's uploader classes over it.

:func:`upload` copies one local file to a URL with retries. The reference's classes
(``CloudUploader``, ``S3Uploader``, ...) keep their names, constructor signature and sanity
checks so that code that subclasses or patches them keeps working, but all move bytes through
:func:`upload`. Writers call ``CloudUploader.get(out, ...)``, write shards into
``uploader.local`` and call ``uploader.upload_file(basename)`` for each, from worker threads:
``upload_file`` is synchronous and thread-safe.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sys
import urllib.parse
from enum import Enum
from tempfile import mkdtemp
from typing import Any, Union

from streaming.storage.atomic import atomic_file
from streaming.storage.download import GCS_ERROR_NO_AUTHENTICATION
from streaming.storage.filesystem import (
    gcs_emulator,
    gcs_hmac,
    is_local,
    is_unity_catalog,
    join_url,
    protocols,
    resolve,
    split_scheme,
)
from streaming.storage.retry import call_with_retry
from streaming.storage.s3client import also_client_error

__all__ = [
    "UPLOADERS",
    "UploadError",
    "list_files",
    "upload",
    "AlipanUploader",
    "AzureDataLakeUploader",
    "AzureUploader",
    "CloudUploader",
    "DBFSUploader",
    "DatabricksUnityCatalogUploader",
    "DatabricksUploader",
    "GCSUploader",
    "HFUploader",
    "LocalUploader",
    "OCIUploader",
    "S3Uploader",
    "SFTPUploader",
]

logger = logging.getLogger(__name__)

DEFAULT_UPLOAD_BACKOFF = 1.0


class UploadError(OSError):
    """An upload failed after its last attempt; the message names the URL."""


def upload(
    local_path: str,
    remote_url: str,
    *,
    retry: int = 3,
    backoff: float = DEFAULT_UPLOAD_BACKOFF,
    callback: object | None = None,
) -> None:
    """Copy a local file to ``remote_url``, retrying transient failures.

    A local destination (plain path or ``file://``) is written atomically (temp file in the
    same directory, fsync, rename). Object stores make a PUT visible only when complete.

    Args:
        local_path (str): The file to upload.
        remote_url (str): Destination URL or path (parent directories are created as needed).
        retry (int): Total number of attempts. Defaults to ``3``.
        backoff (float): Seconds before the first retry, doubled each time, with jitter.
        callback (fsspec.callbacks.Callback, optional): Progress callback for remote uploads.

    Raises:
        FileNotFoundError: ``local_path`` does not exist.
        UploadError: The upload failed after ``retry`` attempts; names the URL.
    """
    if not os.path.isfile(local_path):
        # "[Errno 2] No such file or directory: '<local>' -> '<remote>'", as the reference's
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", local_path, None,
                                remote_url)
    fs, path = resolve(remote_url)

    def attempt() -> None:
        if is_local(remote_url):
            if os.path.abspath(path) == os.path.abspath(local_path):
                return
            with atomic_file(path) as (fd, _):
                with open(local_path, "rb") as src, os.fdopen(os.dup(fd), "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        else:
            kwargs = {} if callback is None else {"callback": callback}
            fs.put_file(local_path, path, **kwargs)

    def describe(error: BaseException, attempts: int) -> BaseException:
        return UploadError(
            f"{remote_url}: upload of {local_path} failed after {attempts} attempt(s): {error!r}"
        )

    call_with_retry(attempt, attempts=retry, backoff=backoff, describe=describe)


def list_files(url: str, prefix: str = "") -> list[str]:
    """List every file stored under ``url`` whose path (relative to ``url``) starts with ``prefix``.

    Args:
        url (str): A directory URL or local directory.
        prefix (str): Relative path prefix to filter on. Defaults to ``''`` (everything).

    Returns:
        List[str]: Sorted full URLs (or local paths, for local directories) of the files.
    """
    fs, root = resolve(url)
    root = fs._strip_protocol(root).rstrip("/")
    scheme = split_scheme(url)[0]
    if not fs.exists(root):
        return []
    found = fs.find(root)
    out = []
    for path in found:
        rel = path[len(root) :].lstrip("/") if path.startswith(root) else path
        if not rel.startswith(prefix):
            continue
        if scheme == "":
            out.append(os.path.join(url, rel))
        else:
            out.append(url.rstrip("/") + "/" + rel)
    return sorted(out)


# URL scheme -> uploader class name (the reference's table, plus the schemes fsspec adds).
UPLOADERS = {
    "s3": "S3Uploader",
    "s3a": "S3Uploader",
    "gs": "GCSUploader",
    "gcs": "GCSUploader",
    "oci": "OCIUploader",
    "hf": "HFUploader",
    "azure": "AzureUploader",
    "az": "AzureUploader",
    "azure-dl": "AzureDataLakeUploader",
    "abfs": "AzureDataLakeUploader",
    "abfss": "AzureDataLakeUploader",
    "dbfs:/Volumes": "DatabricksUnityCatalogUploader",
    "dbfs": "DBFSUploader",
    "alipan": "AlipanUploader",
    "sftp": "SFTPUploader",
    "file": "LocalUploader",
    "": "LocalUploader",
}

Out = Union[str, tuple[str, str]]


def _provider(out: Out) -> str:
    remote = out if isinstance(out, str) else out[1]
    scheme = split_scheme(remote)[0]
    if is_unity_catalog(remote):
        return "dbfs:/Volumes"
    return scheme


class GCSAuthentication(Enum):
    """How a ``gs://`` uploader authenticated (HMAC keys via the S3 protocol, or a service account)."""

    HMAC = 1
    SERVICE_ACCOUNT = 2


class CloudUploader:
    """Upload local files to a cloud storage (or copy them to another local directory)."""

    @classmethod
    def get(
        cls,
        out: Out,
        keep_local: bool = False,
        progress_bar: bool = False,
        retry: int = 2,
        exist_ok: bool = False,
    ) -> Any:
        """Instantiate a cloud provider uploader or a local uploader based on remote path.

        Args:
            out (str | Tuple[str, str]): Output dataset directory to save shard files.

                1. If ``out`` is a local directory, shard files are saved locally.
                2. If ``out`` is a remote directory, a local temporary directory is created to
                   cache the shard files and then the shard files are uploaded to a remote
                   location. At the end, the temp directory is deleted once shards are uploaded.
                3. If ``out`` is a tuple of ``(local_dir, remote_dir)``, shard files are saved in
                   the `local_dir` and also uploaded to a remote location.
            keep_local (bool): If the dataset is uploaded, whether to keep the local dataset
                shard file or remove it after uploading. Defaults to ``False``.
            progress_bar (bool): Display TQDM progress bars for uploading output dataset files to
                a remote location. Default to ``False``.
            retry (int): Number of times to retry uploading a file. Defaults to ``2``.
            exist_ok (bool): When exist_ok = False, raise error if the local part of ``out``
                already exists and has contents. Defaults to ``False``.

        Returns:
            CloudUploader: An instance of sub-class.

        Raises:
            ValueError: ``out`` is malformed or its scheme has no uploader.
        """
        cls._validate(cls, out)  # type: ignore[arg-type]  # the reference calls it unbound
        name = UPLOADERS[_provider(out)]
        return getattr(sys.modules[__name__], name)(out, keep_local, progress_bar, retry, exist_ok)

    def _validate(self, out: Out) -> None:
        """Validate the ``out`` argument.

        Args:
            out (str | Tuple[str, str]): Output dataset directory (see :meth:`get`).

        Raises:
            ValueError: Invalid number of ``out`` arguments or an unknown provider prefix.
        """
        if not isinstance(out, str):
            if len(out) != 2:
                raise ValueError(
                    "Invalid `out` argument. It is either a string of local/remote directory "
                    "or a list of two strings with [local, remote]."
                )
        remote = out if isinstance(out, str) else out[1]
        if not isinstance(remote, (str, os.PathLike)):
            raise ValueError(f"Invalid Cloud provider prefix: the remote of `out` must be a "
                             f"path or URL string, not {remote!r}.")
        if _provider(out) not in UPLOADERS:
            raise ValueError(f"Invalid Cloud provider prefix: {split_scheme(remote)[0]}.")

    def __init__(
        self,
        out: Out,
        keep_local: bool = False,
        progress_bar: bool = False,
        retry: int = 2,
        exist_ok: bool = False,
    ) -> None:
        """Initialize and validate local and remote path.

        Args:
            out (str | Tuple[str, str]): Output dataset directory (see :meth:`get`).
            keep_local (bool): Whether to keep local shard files after uploading them.
                Defaults to ``False``.
            progress_bar (bool): Display TQDM progress bars while uploading. Defaults to
                ``False``.
            retry (int): Number of attempts to upload each file. Defaults to ``2``.
            exist_ok (bool): If ``False``, raise if the local directory exists and is not
                empty. Defaults to ``False``.

        Raises:
            FileExistsError: Local directory must be empty.
        """
        self._validate(out)
        self.keep_local = keep_local
        self.progress_bar = progress_bar
        self.retry = retry

        self.local: str
        self.remote: str | None
        if isinstance(out, str):
            if split_scheme(out)[0]:  # a remote directory: stage shards in a temp dir
                self.local = mkdtemp()
                self.remote = out
            else:
                self.local = out
                self.remote = None
        else:
            self.local = out[0]
            self.remote = out[1]

        if os.path.exists(self.local) and len(os.listdir(self.local)) != 0:
            if not exist_ok:
                raise FileExistsError(f"Directory is not empty: {self.local}")
            logger.warning(
                f"Directory {self.local} exists and not empty. But continue to mkdir since "
                f"exist_ok is set to be True."
            )
        os.makedirs(self.local, exist_ok=True)

    def upload_file(self, filename: str) -> None:
        """Upload ``filename`` (relative to ``self.local``) to the same place under the remote.

        Synchronous and thread-safe: writers call it from a pool of upload threads.

        Args:
            filename (str): File to upload, relative to the local directory.

        Raises:
            UploadError: The upload failed after ``retry`` attempts.
        """
        if not self.remote:
            return
        local_filename = os.path.join(self.local, filename)
        remote_filename = join_url(self.remote, filename)
        logger.debug(f"Uploading to {remote_filename}")
        callback = None
        if self.progress_bar:
            from fsspec.callbacks import TqdmCallback

            from streaming.explore.progress import progress_bar

            # The shared bar helper: a widget in Jupyter, text in a terminal.
            callback = TqdmCallback(
                tqdm_kwargs={"desc": f"Uploading to {remote_filename}", "unit": "B",
                             "unit_scale": True, "disable": False},
                tqdm_cls=progress_bar,
            )
        upload(local_filename, remote_filename, retry=self.retry, callback=callback)
        self.clear_local(local=local_filename)

    def list_objects(self, prefix: str | None = None) -> list[str] | None:
        """List all objects in the object store with the given prefix.

        Args:
            prefix (str, optional): The prefix to search for, relative to the remote
                directory. Defaults to ``None`` (everything).

        Returns:
            List[str]: Object keys relative to the bucket (as the reference returns them).
        """
        if not self.remote:
            return []
        base = _bucket_root(self.remote)
        return [url[len(base) :] for url in list_files(self.remote, prefix or "")]

    def clear_local(self, local: str) -> None:
        """Remove the local file if it is enabled.

        Args:
            local (str): A local file path.
        """
        if not self.keep_local and os.path.isfile(local):
            os.remove(local)

    def _check_root_exists(self, what: str) -> None:
        """Raise FileNotFoundError unless the bucket/container holding ``self.remote`` exists."""
        if not self.remote:
            return
        fs, path = resolve(self.remote)
        root = path.split("/", 1)[0]
        cause: Exception | None = None
        try:
            found = fs.exists(root)
        except Exception as e:  # network or permission trouble: say which bucket
            found, cause = False, e
        if not found:
            missing: OSError = FileNotFoundError(
                errno.ENOENT,
                f"Either {what} `{root}` does not exist! or check the {what} permission",
                self.remote,
            )
            if "s3" in protocols(fs):
                # The reference's S3 (and GCS HMAC) uploaders let HeadBucket's ClientError
                # through: code written for it catches that, code written for ours this.
                missing = _head_bucket_error(missing, cause)
            raise missing from cause


def _head_bucket_error(missing: FileNotFoundError, cause: BaseException | None) -> OSError:
    """``missing``, made also the botocore ``ClientError`` HeadBucket would have raised (403
    when the check was refused, else 404); only for S3 filesystems, which load botocore."""
    from botocore.exceptions import ClientError

    code, message = ("403", "Forbidden") if isinstance(cause, PermissionError) else \
        ("404", "Not Found")
    response = {"Error": {"Code": code, "Message": message}}
    return also_client_error(missing, ClientError(response, "HeadBucket"))  # type: ignore[arg-type]


def _bucket_root(remote: str) -> str:
    """``scheme://netloc/`` of a remote URL: what object keys are relative to."""
    parsed = urllib.parse.urlsplit(remote)
    if parsed.scheme == "dbfs":
        return "dbfs:"
    return f"{parsed.scheme}://{parsed.netloc}/"


class _BucketUploader(CloudUploader):
    """An uploader whose remote lives in a bucket that must exist before anything is written."""

    def __init__(self, out: Out, keep_local: bool = False, progress_bar: bool = False,
                 retry: int = 2, exist_ok: bool = False) -> None:
        super().__init__(out, keep_local, progress_bar, retry, exist_ok)
        self.check_bucket_exists(self.remote)  # type: ignore[arg-type]

    def check_bucket_exists(self, remote: str) -> None:
        """Raise an exception if the bucket does not exist.

        Args:
            remote (str): Bucket URL.

        Raises:
            FileNotFoundError: Bucket does not exist or is not accessible.
        """
        self._check_root_exists("bucket")


class S3Uploader(_BucketUploader):
    """Upload file from local machine to AWS S3 bucket (or any S3 compatible object store).

    Honours ``S3_ENDPOINT_URL``, the standard AWS environment variables and profiles,
    ``S3_CANNED_ACL`` and ``MOSAICML_STREAMING_AWS_REQUESTER_PAYS``.

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """


class GCSUploader(_BucketUploader):
    """Upload file from local machine to Google Cloud Storage bucket.

    With ``GCS_KEY``/``GCS_SECRET`` set, talks HMAC through GCS's S3-compatible API (as the
    reference does); otherwise uses gcsfs with Application Default Credentials. Which one is
    :attr:`authentication`.

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.

    Raises:
        ValueError: Neither HMAC keys nor Application Default Credentials are set up (checked
            when ``google-auth``, which gcsfs brings, is installed; not with
            ``STORAGE_EMULATOR_HOST`` set, as an emulator takes none).
    """

    def __init__(self, out: Out, keep_local: bool = False, progress_bar: bool = False,
                 retry: int = 2, exist_ok: bool = False) -> None:
        if gcs_hmac():
            self.authentication = GCSAuthentication.HMAC
        else:
            if not gcs_emulator():  # (an emulator takes no credentials)
                _require_default_credentials()
            self.authentication = GCSAuthentication.SERVICE_ACCOUNT
        super().__init__(out, keep_local, progress_bar, retry, exist_ok)


def _require_default_credentials() -> None:
    """Raise the reference's ``ValueError`` if Google's Application Default Credentials are not
    set up (when google-auth is not installed, gcsfs's absence is reported on first use)."""
    try:
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError:
        return
    try:
        google.auth.default()
    except (DefaultCredentialsError, OSError) as e:
        raise ValueError(GCS_ERROR_NO_AUTHENTICATION) from e


class OCIUploader(_BucketUploader):
    """Upload file from local machine to Oracle Cloud Infrastructure (OCI) Cloud Storage.

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """


class AzureUploader(_BucketUploader):
    """Upload file from local machine to Microsoft Azure Blob Storage.

    The account comes from ``AZURE_ACCOUNT_NAME`` (or the URL's host) and the key from
    ``AZURE_ACCOUNT_ACCESS_KEY``; without a key, Azure's default credential chain is used.

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """


class AzureDataLakeUploader(CloudUploader):
    """Upload file from local machine to Microsoft Azure Data Lake.

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """

    def __init__(self, out: Out, keep_local: bool = False, progress_bar: bool = False,
                 retry: int = 2, exist_ok: bool = False) -> None:
        super().__init__(out, keep_local, progress_bar, retry, exist_ok)
        self.check_container_exists(self.remote)  # type: ignore[arg-type]

    def check_container_exists(self, remote: str) -> None:
        """Raise an exception if the container does not exist.

        Args:
            remote (str): Container URL.

        Raises:
            FileNotFoundError: Container does not exist or is not accessible.
        """
        self._check_root_exists("container")


class HFUploader(CloudUploader):
    """Upload file from local machine to a Hugging Face dataset repository.

    ``out`` is ``hf://datasets/ORG/NAME[/PATH]``; the token comes from ``HF_TOKEN``. Files land
    under ``PATH`` (the reference drops ``PATH``; see docs/compatibility.md).

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """

    def __init__(self, out: Out, keep_local: bool = False, progress_bar: bool = False,
                 retry: int = 2, exist_ok: bool = False) -> None:
        super().__init__(out, keep_local, progress_bar, retry, exist_ok)
        remote = self.remote or ""
        if split_scheme(remote)[0] != "hf":
            raise ValueError(f"Expected remote path to start with `hf://`, got {remote}.")
        parts = remote.split("/", 5)
        if len(parts) < 5 or parts[2] != "datasets":
            raise ValueError(f"{remote}: expected hf://datasets/ORG/NAME[/PATH]")
        self.repo_org, self.repo_name = parts[3], parts[4]
        self.path = parts[5] if len(parts) > 5 else ""
        self.dataset_id = f"{self.repo_org}/{self.repo_name}"
        self.check_dataset_exists()

    def check_dataset_exists(self) -> None:
        """Raise an exception if the dataset does not exist.

        Raises:
            FileNotFoundError: Dataset does not exist or is not accessible.
        """
        fs, _ = resolve(self.remote or "")
        try:
            found = fs.exists(f"datasets/{self.dataset_id}")
        except Exception:
            found = False
        if not found:
            raise FileNotFoundError(
                f"The HF dataset {self.dataset_id} could not be found. Please make sure that "
                f"the dataset exists and you have the correct access permissions."
            )


class DatabricksUploader(CloudUploader):
    """Parent class for uploading files from local machine to a Databricks workspace.

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """


class DatabricksUnityCatalogUploader(DatabricksUploader):
    """Upload file from local machine to a Databricks Unity Catalog volume (``dbfs:/Volumes``).

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """


class DBFSUploader(DatabricksUploader):
    """Upload file from local machine to Databricks File System (DBFS).

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """

    def __init__(self, out: Out, keep_local: bool = False, progress_bar: bool = False,
                 retry: int = 2, exist_ok: bool = False) -> None:
        super().__init__(out, keep_local, progress_bar, retry, exist_ok)
        self.dbfs_path = resolve(self.remote or "")[1]
        self.check_folder_exists()

    def check_folder_exists(self) -> None:
        """Raise an exception if the DBFS folder does not exist.

        Raises:
            FileNotFoundError: Folder does not exist.
        """
        fs, path = resolve(self.remote or "")
        if not fs.exists(path):
            raise FileNotFoundError(f"Databricks File System path {path} not found")


class SFTPUploader(CloudUploader):
    """Upload file from local machine to an SFTP server (``sftp://user@host:port/path``).

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after uploading. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to upload each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """


class AlipanUploader(CloudUploader):
    """The reference's Alipan uploader: not supported by shardstream.

    Raises:
        ValueError: Always, naming the URL.
    """

    def __init__(self, out: Out, keep_local: bool = False, progress_bar: bool = False,
                 retry: int = 2, exist_ok: bool = False) -> None:
        remote = out if isinstance(out, str) else out[1]
        raise ValueError(f"{remote}: alipan:// storage is not supported by shardstream")


class LocalUploader(CloudUploader):
    """Copy file from one local directory to another local directory.

    Args:
        out (str | Tuple[str, str]): Output dataset directory (see :meth:`CloudUploader.get`).
        keep_local (bool): Keep local shard files after copying. Defaults to ``False``.
        progress_bar (bool): Display TQDM progress bars. Defaults to ``False``.
        retry (int): Number of attempts to copy each file. Defaults to ``2``.
        exist_ok (bool): Allow a non-empty local directory. Defaults to ``False``.
    """

    def __init__(self, out: Out, keep_local: bool = False, progress_bar: bool = False,
                 retry: int = 2, exist_ok: bool = False) -> None:
        super().__init__(out, keep_local, progress_bar, retry, exist_ok)
        if self.remote:
            os.makedirs(resolve(self.remote)[1], exist_ok=True)

    def list_objects(self, prefix: str | None = None) -> list[str]:
        """List all files under the local directory whose path starts with the prefix.

        Args:
            prefix (str, optional): The prefix to search for, relative to the local
                directory. Defaults to ``None`` (everything).

        Returns:
            List[str]: Sorted local file paths (joined onto the local directory).
        """
        full_prefix = os.path.join(self.local, prefix or "")
        found = []
        for dirpath, _, files in os.walk(self.local):
            for file in files:
                path = os.path.join(dirpath, file)
                if path.startswith(full_prefix):
                    found.append(path)
        return sorted(found)
