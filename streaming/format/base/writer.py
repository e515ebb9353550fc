"""Format-agnostic dataset writers: shard rollover, compression, hashing, index, upload.

:class:`Writer` takes samples one at a time, groups them into shards no bigger than
``size_limit`` (rolling over at exactly the sample the reference rolls over at), and writes each
shard file atomically (temp name, fsync, rename). Hashing, compression and writing into the page
cache happen on one background thread and fsync + rename on another, so that encoding the next
shard, copying this one and flushing the previous one to disk all overlap (at most two shards
wait for writing, which bounds memory; a failure surfaces on the next ``write``/``finish``).
``index.json`` is written last, atomically, once every shard is durable under its final name. When ``out`` names a remote location, each file is
uploaded through ``streaming.storage.upload.CloudUploader`` (imported only then); a purely local
``out`` never touches the storage layer.

Subclasses: :class:`JointWriter` (one data file per shard, e.g. MDS) implements
``encode_joint_shard``; :class:`SplitWriter` (data + meta file, e.g. JSON/XSV) implements
``encode_split_shard``. Both implement ``encode_sample``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import urllib.parse
from concurrent.futures import Future, ThreadPoolExecutor
from threading import Event
from types import TracebackType
from typing import Any, Callable, Sequence, Union

from streaming.format.compression import compress, get_compression_extension, is_compression
from streaming.format.hashing import hash_chunks, is_hash
from streaming.format.index import _write_all, get_index_basename, write_index
from streaming.util import bytes_to_int

__all__ = ["JointWriter", "SplitWriter", "Writer"]

logger = logging.getLogger(__name__)

_KWARGS = ("progress_bar", "max_workers", "retry", "exist_ok")
# Shards being hashed/compressed/written in the background at once (bounds memory use).
_MAX_PENDING_SHARDS = 2
# Shards written but not yet fsynced and renamed at once (bounds open file descriptors).
_MAX_PENDING_SYNCS = 4

Chunks = Sequence[Any]  # buffers whose concatenation is a file's contents


def _split_out(out: Union[str, Sequence[str | None]]) -> tuple[str, str | None]:
    """Split ``out`` into (local dir or None for a temp dir, remote or None)."""
    if isinstance(out, str):
        if urllib.parse.urlparse(out).scheme:
            return "", out
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ValueError(
            "Invalid `out` argument. It is either a string of local/remote directory or a "
            "list of two strings with [local, remote]."
        )
    local, remote = out
    return local, remote or None


class Writer:
    """Writes a streaming dataset.

    Args:
        out (str | Tuple[str, str]): Output dataset directory to save shard files.

            1. If ``out`` is a local directory, shard files are saved locally.
            2. If ``out`` is a remote directory, a local temporary directory is created to
               cache the shard files and then the shard files are uploaded to a remote
               location. At the end, the temp directory is deleted once shards are uploaded.
            3. If ``out`` is a tuple of ``(local_dir, remote_dir)``, shard files are saved in the
               `local_dir` and also uploaded to a remote location.
        keep_local (bool): If the dataset is uploaded, whether to keep the local dataset directory
            or remove it after uploading. Defaults to ``False``.
        compression (str, optional): Optional compression or compression:level. Defaults to
            ``None``.
        hashes (List[str], optional): Optional list of hash algorithms to apply to shard files.
            Defaults to ``None``.
        size_limit (Union[int, str], optional): Optional shard size limit, after which point
            to start a new shard. If ``None``, puts everything in one shard. Can specify bytes
            human-readable format as well, for example ``"100kb"`` for 100 kilobyte
            (100*1024) and so on. Defaults to ``1 << 26``.
        extra_bytes_per_shard (int): Extra bytes per serialized shard (for computing shard size
            while writing). Defaults to ``0``.
        extra_bytes_per_sample (int): Extra bytes per serialized sample (for computing shard size
            while writing). Defaults to ``0``.
        **kwargs (Any): Additional settings for the Writer.

            progress_bar (bool): Display TQDM progress bars for uploading output dataset files to
                a remote location. Default to ``False``.
            max_workers (int): Maximum number of threads used to upload output dataset files in
                parallel to a remote location. Default to ``min(32, (os.cpu_count() or 1) + 4)``.
            retry (int): Number of times to retry uploading a file to a remote location.
                Default to ``2``.
            exist_ok (bool): If the local directory exists and is not empty, whether to overwrite
                the content or raise an error. `False` raises an error. `True` deletes the
                content and starts fresh. Defaults to `False`.

    Raises:
        ValueError: Invalid compression, hashes (must be sorted and known), size_limit or keyword
            argument.
        FileExistsError: The local directory exists, is not empty, and ``exist_ok`` is False.
    """

    format: str = ""  # Name of the format (like "mds", "csv", "json", etc).

    def __init__(
        self,
        *,
        out: Union[str, tuple[str, str]],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: Union[int, str] | None = 1 << 26,
        extra_bytes_per_shard: int = 0,
        extra_bytes_per_sample: int = 0,
        **kwargs: Any,
    ) -> None:
        compression = compression or None
        if compression and not is_compression(compression):
            raise ValueError(f"Invalid compression: {compression}.")

        hashes = hashes or []
        if list(hashes) != sorted(hashes):
            raise ValueError("Hashes must be unique and in sorted order.")
        for algo in hashes:
            if not is_hash(algo):
                raise ValueError(f"Invalid hash: {algo}.")

        size_limit_value = None
        if size_limit:
            size_limit_value = bytes_to_int(size_limit)
            if size_limit_value < 0:
                raise ValueError(
                    f"`size_limit` must be greater than zero, instead, found as {size_limit_value}."
                )
            if size_limit_value >= 2**32:
                raise ValueError(
                    f"`size_limit` must be less than 2**32, instead, found as {size_limit_value}. "
                    f"This is because sample byte offsets are stored with uint32."
                )

        invalid_kwargs = [arg for arg in kwargs if arg not in _KWARGS]
        if invalid_kwargs:
            raise ValueError(f"Invalid Writer argument(s): {invalid_kwargs} ")

        self.keep_local = keep_local
        self.compression = compression
        self.hashes = hashes
        self.size_limit = size_limit_value
        self.extra_bytes_per_shard = extra_bytes_per_shard
        self.extra_bytes_per_sample = extra_bytes_per_sample
        self.new_samples: list[bytes]
        self.new_shard_size: int
        self.shards: list[dict[str, Any]] = []

        exist_ok = bool(kwargs.get("exist_ok", False))
        local, remote = _split_out(out)
        if local:
            local = os.path.expanduser(local)
            if os.path.exists(local) and exist_ok:
                logger.warning(
                    f"Directory {local} exists and is not empty; exist_ok is set to True so will "
                    f"remove contents."
                )
                shutil.rmtree(local)
        if remote is None:
            if os.path.isdir(local) and os.listdir(local):
                raise FileExistsError(f"Directory is not empty: {local}")
            os.makedirs(local, exist_ok=True)
            self.cloud_writer = None
            self.local = local
            self.remote = None
        else:
            from streaming.storage.upload import CloudUploader

            self.cloud_writer = CloudUploader.get(
                out if isinstance(out, str) else (local, remote),
                keep_local=keep_local,
                progress_bar=kwargs.get("progress_bar", False),
                retry=kwargs.get("retry", 2),
                exist_ok=exist_ok,
            )
            self.local = self.cloud_writer.local
            self.remote = self.cloud_writer.remote

        # Uploads run on `executor` (max_workers threads, as the reference); shard files are
        # hashed, compressed and written on one background thread so that they land in order.
        self.executor = ThreadPoolExecutor(max_workers=kwargs.get("max_workers", None))
        self._file_executor: ThreadPoolExecutor | None = None
        self._file_futures: list[Future] = []
        # Written shard files are fsynced and renamed on another thread, so the disk flushes
        # one shard while the next is copied into the page cache.
        self._sync_executor: ThreadPoolExecutor | None = None
        self._sync_futures: list[Future] = []
        self._upload_futures: list[Future] = []
        self._failure: BaseException | None = None
        self._finished = False
        # Set when a background task fails (reference attribute).
        self.event = Event()

        self._reset_cache()

    # ---- sample path -----------------------------------------------------------------------

    def _reset_cache(self) -> None:
        """Reset the shard being built (on init and after each shard)."""
        self.new_samples = []
        self.new_shard_size = self.extra_bytes_per_shard

    def _num_pending(self) -> int:
        """Get the number of samples written but not yet flushed into a shard."""
        return len(self.new_samples)

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Encode a sample dict to bytes.

        Args:
            sample (Dict[str, Any]): Sample dict.

        Returns:
            bytes: Sample encoded as bytes.
        """
        raise NotImplementedError

    def write(self, sample: dict[str, Any]) -> None:
        """Write a sample.

        May flush an entire new shard, then caches the sample.

        Args:
            sample (Dict[str, Any]): Sample dict.

        Raises:
            RuntimeError: A background write or upload failed earlier.
        """
        self._raise_if_failed()
        new_sample = self.encode_sample(sample)
        new_sample_size = len(new_sample) + self.extra_bytes_per_sample
        if self.size_limit and self.size_limit < self.new_shard_size + new_sample_size:
            self.flush_shard()
            self._reset_cache()
        self.new_samples.append(new_sample)
        self.new_shard_size += new_sample_size

    # ---- shard files ------------------------------------------------------------------------

    def _name_next_shard(self, extension: str | None = None) -> tuple[str, str | None]:
        """Get the filenames of the next shard to be created.

        Args:
            extension (str): Optional additional extension (eg, meta files).

        Returns:
            Tuple[str, str]: Pair of (decompressed, compressed) filenames.
        """
        parts = ["shard", f"{len(self.shards):05}", self.format]
        if extension:
            parts.append(extension)
        raw_basename = ".".join(parts)
        zip_basename = None
        if self.compression:
            zip_basename = f"{raw_basename}.{get_compression_extension(self.compression)}"
        return raw_basename, zip_basename

    def _hash(self, data: bytes, basename: str) -> dict[str, Any]:
        """Generate file metadata.

        Args:
            data (bytes): The file data.
            basename (str): The file's basename.

        Returns:
            Dict[str, Any]: File metadata.
        """
        return self._hash_chunks([data], basename)

    def _hash_chunks(self, chunks: Chunks, basename: str) -> dict[str, Any]:
        hashes = {algo: hash_chunks(algo, chunks) for algo in self.hashes}
        size = sum(memoryview(chunk).nbytes for chunk in chunks)
        return {"basename": basename, "bytes": size, "hashes": hashes}

    def _process_chunks(
        self,
        chunks: Chunks,
        raw_basename: str,
        zip_basename: str | None,
        stack: contextlib.ExitStack | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Hash, maybe compress, hash, and atomically write one shard file.

        With ``stack``, the file's temp name is entered on it, so that it is fsynced and renamed
        when the stack closes (after the caller has released the buffers behind ``chunks``).
        """
        from streaming.storage.atomic import atomic_file

        raw_info = self._hash_chunks(chunks, raw_basename)
        zip_info = None
        basename = raw_basename
        if zip_basename:
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            chunks = [compress(self.compression, data)]
            zip_info = self._hash_chunks(chunks, zip_basename)
            basename = zip_basename
        with contextlib.ExitStack() as own:
            fd, _ = (stack or own).enter_context(atomic_file(os.path.join(self.local, basename)))
            _write_all(fd, list(chunks))
        return raw_info, zip_info

    def _process_file(
        self, raw_data: bytes, raw_basename: str, zip_basename: str | None
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Process and save a shard file (hash, compress, hash, write), synchronously.

        Args:
            raw_data (bytes): Uncompressed data.
            raw_basename (str): Uncompressed basename.
            zip_basename (str): Compressed basename.

        Returns:
            Tuple[Dict[str, Any], Optional[Dict[str, Any]]]: Raw and zip file metadata.
        """
        return self._process_chunks([raw_data], raw_basename, zip_basename)

    def _submit_shard(
        self,
        obj: dict[str, Any],
        files: list[tuple[str, Chunks, str, Any]],
        on_done: Callable[[], None] | None = None,
    ) -> None:
        """Append a shard entry now and fill in its file infos in the background.

        Args:
            obj (Dict[str, Any]): The shard's index entry (without file infos yet).
            files (list): ``(raw_key, chunks, raw_basename, zip_basename)`` per file; the infos
                land in ``obj[raw_key]`` and ``obj['zip' + raw_key[3:]]``.
            on_done (Callable, optional): Called once the buffers behind ``chunks`` are no longer
                needed (the files are written, maybe not yet fsynced; or writing failed), e.g. to
                recycle them.
        """
        self.shards.append(obj)
        self._start_threads()
        # Bound the memory held by shards queued for writing.
        while len(self._file_futures) >= _MAX_PENDING_SHARDS:
            self._file_futures.pop(0).exception()
            self._raise_if_failed()
        future = self._file_executor.submit(self._write_shard_files, obj, files, on_done)
        future.add_done_callback(self._record_failure)
        self._file_futures.append(future)

    def _start_threads(self) -> None:
        if self._file_executor is None:
            self._file_executor = ThreadPoolExecutor(1, thread_name_prefix="shard-writer")
            self._sync_executor = ThreadPoolExecutor(1, thread_name_prefix="shard-sync")

    def _write_shard_files(
        self, obj: dict[str, Any], files: list, on_done: Callable[[], None] | None
    ) -> None:
        names = [zip_basename or raw_basename for _, _, raw_basename, zip_basename in files]
        try:
            # Every file is written, then the buffers are released (so the next shard can reuse
            # them), then the files are handed to the sync thread to be fsynced and renamed.
            with contextlib.ExitStack() as stack:
                for raw_key, chunks, raw_basename, zip_basename in files:
                    raw_info, zip_info = self._process_chunks(
                        chunks, raw_basename, zip_basename, stack
                    )
                    obj[raw_key] = raw_info
                    obj["zip" + raw_key[3:]] = zip_info
                files.clear()
                if on_done is not None:
                    on_done, done = None, on_done
                    done()
                written = stack.pop_all()
        finally:
            files.clear()  # drop our references to the buffers before recycling them
            if on_done is not None:
                on_done()
        while len(self._sync_futures) >= _MAX_PENDING_SYNCS:
            self._sync_futures.pop(0).exception()
        try:
            future = self._sync_executor.submit(self._sync_files, written, names)  # type: ignore[union-attr]
        except RuntimeError:  # the sync thread is shut down (writing failed): finish here
            self._sync_files(written, names)
            return
        future.add_done_callback(self._record_failure)
        self._sync_futures.append(future)

    def _sync_files(self, written: contextlib.ExitStack, names: list[str]) -> None:
        """Fsync and rename a shard's written files into place, then upload them."""
        written.close()
        for name in names:
            self._upload(name)

    def _upload(self, basename: str) -> None:
        if self.cloud_writer is None:
            return
        future = self.executor.submit(self.cloud_writer.upload_file, basename)
        future.add_done_callback(self._record_failure)
        self._upload_futures.append(future)

    def get_config(self) -> dict[str, Any]:
        """Get object describing shard-writing configuration.

        Returns:
            Dict[str, Any]: JSON object.
        """
        return {
            "version": 2,
            "format": self.format,
            "compression": self.compression,
            "hashes": self.hashes,
            "size_limit": self.size_limit,
        }

    def flush_shard(self) -> None:
        """Flush cached samples to storage, creating a new shard."""
        raise NotImplementedError

    # ---- finishing --------------------------------------------------------------------------

    def _wait_for_files(self) -> None:
        while self._file_futures:
            self._file_futures.pop(0).exception()
        # Every write has finished, so no more syncs get queued.
        while self._sync_futures:
            self._sync_futures.pop(0).exception()
        self._raise_if_failed()

    def _write_index(self) -> None:
        """Write the index, having written all the shards."""
        if self._num_pending():
            raise RuntimeError("Internal error: not all samples have been written.")
        self._wait_for_files()
        write_index(self.local, self.shards)
        if self.cloud_writer is not None:
            # The index goes up last, once every shard is uploaded.
            for future in list(self._upload_futures):
                future.exception()
            self._raise_if_failed()
            self._upload(get_index_basename())

    def finish(self) -> None:
        """Finish writing samples: flush the last shard, write the index, wait for uploads.

        Raises:
            RuntimeError: A background write or upload failed.
        """
        if self._finished:
            return
        self._finished = True
        try:
            if self._failure is None:
                if self._num_pending():
                    self.flush_shard()
                    self._reset_cache()
                self._write_index()
                self.executor.shutdown(wait=True)
        finally:
            if self._failure is not None:
                self.cancel_future_jobs()
            if self._file_executor is not None:
                self._file_executor.shutdown(wait=True)
            if self._sync_executor is not None:
                self._sync_executor.shutdown(wait=True)
            if self.remote and not self.keep_local:
                shutil.rmtree(self.local, ignore_errors=True)
        self._raise_if_failed()

    def cancel_future_jobs(self) -> None:
        """Shut down the upload executor and cancel all pending jobs."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self._file_executor is not None:
            self._file_executor.shutdown(wait=False, cancel_futures=True)
        if self._sync_executor is not None:
            # Not cancelled: queued syncs only complete files already fully written (and a
            # cancelled one would leave its temp file behind).
            self._sync_executor.shutdown(wait=False)

    def _record_failure(self, future: Future) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None and self._failure is None:
            self._failure = exc
            self.event.set()
            logger.error(f"Exception in writer thread: {exc!r}")

    def exception_callback(self, future: Future) -> None:
        """Record an exception raised by a background task (reference hook).

        Args:
            future (Future): The finished task.
        """
        self._record_failure(future)

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            self.cancel_future_jobs()
            failure = self._failure
            # str, not repr: an OSError's repr leaves out the file it names.
            raise RuntimeError(
                f"Writing the dataset to {self.local} failed in a background thread: "
                f"{type(failure).__name__}: {failure}"
            ) from failure

    def __enter__(self) -> Writer:
        """Enter context manager.

        Returns:
            Self: This object.
        """
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Exit context manager: finish writing (as the reference, even after an exception).

        Args:
            exc_type (Type[BaseException], optional): Exc type.
            exc (BaseException, optional): Exc.
            traceback (TracebackType, optional): Traceback.
        """
        self.finish()


class JointWriter(Writer):
    """Writes a streaming dataset with joint shards (one data file per shard).

    Takes the same arguments as :class:`Writer`.
    """

    def encode_joint_shard(self) -> bytes:
        """Encode a joint shard out of the cached samples (single file).

        Returns:
            bytes: File data.
        """
        raise NotImplementedError

    def _joint_shard_chunks(self) -> Chunks:
        """Get the shard file as buffers to concatenate (subclasses avoid a copy here)."""
        return [self.encode_joint_shard()]

    def flush_shard(self) -> None:
        """Flush cached samples to storage, creating a new shard."""
        raw_basename, zip_basename = self._name_next_shard()
        chunks = self._joint_shard_chunks()
        obj: dict[str, Any] = {"samples": self._num_pending(), "raw_data": None, "zip_data": None}
        obj.update(self.get_config())
        self._submit_shard(obj, [("raw_data", chunks, raw_basename, zip_basename)])


class SplitWriter(Writer):
    """Writes a streaming dataset with split shards (data file + meta file per shard).

    Split shards refer to raw data (csv, json, etc.) paired with an index into it. Takes the
    same arguments as :class:`Writer` except the ``extra_bytes_*`` ones, which are class
    attributes here.
    """

    extra_bytes_per_shard = 0
    extra_bytes_per_sample = 0

    def __init__(
        self,
        *,
        out: Union[str, tuple[str, str]],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: Union[int, str] | None = 1 << 26,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            out=out,
            keep_local=keep_local,
            compression=compression,
            hashes=hashes,
            size_limit=size_limit,
            extra_bytes_per_shard=self.extra_bytes_per_shard,
            extra_bytes_per_sample=self.extra_bytes_per_sample,
            **kwargs,
        )

    def encode_split_shard(self) -> tuple[bytes, bytes]:
        """Encode a split shard out of the cached samples (data, meta files).

        Returns:
            Tuple[bytes, bytes]: Data file, meta file.
        """
        raise NotImplementedError

    def flush_shard(self) -> None:
        """Flush cached samples to storage, creating a new shard."""
        raw_data_basename, zip_data_basename = self._name_next_shard()
        raw_meta_basename, zip_meta_basename = self._name_next_shard("meta")
        raw_data, raw_meta = self.encode_split_shard()
        obj: dict[str, Any] = {
            "samples": self._num_pending(),
            "raw_data": None,
            "zip_data": None,
            "raw_meta": None,
            "zip_meta": None,
        }
        obj.update(self.get_config())
        self._submit_shard(
            obj,
            [
                ("raw_data", [raw_data], raw_data_basename, zip_data_basename),
                ("raw_meta", [raw_meta], raw_meta_basename, zip_meta_basename),
            ],
        )
