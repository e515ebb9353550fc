"""Convert JSONL, Parquet, CSV and TSV files to an MDS dataset.

Parquet/CSV/TSV are read as Arrow record batches (pyarrow parses on its own threads, beside the
encoding) and encoded column by column (:mod:`streaming.converters.arrow`); JSONL goes through
the compiled scanner with a general fallback (:mod:`streaming.converters.jsonl`), which is
several times faster than pyarrow's JSON reader on token lists. Encoded rows go to an
:class:`~streaming.MDSWriter`. The dataset is built in a temporary directory beside ``out`` and
renamed to ``out`` only once complete, so ``out`` never holds a partial dataset.
"""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
from typing import Any, Callable, Iterator, Sequence, Union

__all__ = ["convert_files", "input_kind", "iter_batches", "read_schema"]

_KINDS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
}

_BATCH_ROWS = 65536


def input_kind(path: str, kind: str | None = None) -> str:
    """The input format of a file: ``jsonl``, ``parquet``, ``csv`` or ``tsv``.

    Args:
        path (str): The file.
        kind (str, optional): Format given by the user; overrides the extension.

    Returns:
        str: The format.

    Raises:
        ValueError: Unknown format or extension.
    """
    if kind:
        if kind not in set(_KINDS.values()):
            raise ValueError(f"unknown input format {kind!r} (choose from jsonl, parquet, csv, tsv)")
        return kind
    ext = os.path.splitext(path)[1].lower()
    if ext not in _KINDS:
        raise ValueError(
            f"{path}: cannot tell the input format from the extension {ext!r}; pass --format"
        )
    return _KINDS[ext]


def iter_batches(path: str, kind: str) -> Iterator[Any]:
    """Read a Parquet, CSV or TSV file as Arrow record batches.

    Args:
        path (str): The file.
        kind (str): Its format: ``parquet``, ``csv`` or ``tsv``.

    Yields:
        pyarrow.RecordBatch: Consecutive batches of rows.

    Raises:
        FileNotFoundError: No such file.
        ValueError: The file does not parse (the message names it).
    """
    import pyarrow as pa

    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            yield from pq.ParquetFile(path).iter_batches(batch_size=_BATCH_ROWS)
        elif kind in ("csv", "tsv"):
            import pyarrow.csv as pc

            parse = pc.ParseOptions(delimiter="\t" if kind == "tsv" else ",")
            yield from pc.open_csv(path, parse_options=parse)
        else:
            raise ValueError(f"{path}: read {kind} files with streaming.converters.jsonl")
    except pa.ArrowInvalid as err:
        raise ValueError(f"{path}: cannot read as {kind}: {err}") from err


def read_schema(path: str, kind: str) -> Any:
    """The Arrow schema of a file (of its first batch, for text formats).

    Args:
        path (str): The file.
        kind (str): Its format.

    Returns:
        pyarrow.Schema: The schema.
    """
    if kind == "parquet":
        import pyarrow.parquet as pq

        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file")
        return pq.ParquetFile(path).schema_arrow
    for batch in iter_batches(path, kind):
        return batch.schema
    raise ValueError(f"{path}: no rows to infer columns from; pass --columns")


def _prefetch(it: Iterator[Any], depth: int = 2) -> Iterator[Any]:
    """Run ``it`` on a thread, ``depth`` items ahead (pyarrow parsing releases the GIL)."""
    q: queue.Queue = queue.Queue(depth)
    done = object()
    stop = threading.Event()

    def work() -> None:
        try:
            for item in it:
                if stop.is_set():
                    return
                q.put((item, None))
        except BaseException as err:  # noqa: BLE001 - handed to the consumer
            q.put((None, err))
            return
        q.put((done, None))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        while True:
            item, err = q.get()
            if err is not None:
                raise err
            if item is done:
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(0.05)


def _encode_checked(path: str, batch: Any, names: list[str], encodings: list[str],
                    sizes: list[int | None], first: int) -> list[bytes]:
    from streaming.converters.arrow import encode_batch

    try:
        return encode_batch(batch, names, encodings, sizes)
    except ValueError as err:
        raise ValueError(f"{path}: rows {first}+: {err}") from None


def convert_files(
    inputs: Sequence[str],
    out: str,
    *,
    columns: dict[str, str] | None = None,
    kind: str | None = None,
    compression: str | None = None,
    hashes: list[str] | None = None,
    size_limit: Union[int, str] | None = 1 << 26,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Convert files to one MDS dataset at ``out`` (a local directory), atomically.

    Args:
        inputs (Sequence[str]): Input files, written in this order.
        out (str): Output directory; must not exist or be empty unless ``overwrite``.
        columns (Dict[str, str], optional): MDS columns (name -> encoding). Defaults to
            inferring them from the first input's schema.
        kind (str, optional): Input format for every file; defaults to each file's extension.
        compression (str, optional): Shard compression, e.g. ``zstd:7``.
        hashes (List[str], optional): Hash algorithms recorded in the index.
        size_limit (int | str, optional): Shard size limit. Defaults to ``1 << 26``.
        overwrite (bool): Replace a non-empty ``out``. Defaults to ``False``.
        progress (Callable[[int], None], optional): Called with the row count of each batch.

    Returns:
        Dict[str, Any]: ``{"samples": int, "shards": int, "columns": dict}``.

    Raises:
        FileNotFoundError: An input is missing.
        FileExistsError: ``out`` exists, is not empty and ``overwrite`` is not set.
        ValueError: An input does not parse, or a value does not fit its column's encoding.
    """
    from streaming.converters.arrow import infer_mds_columns
    from streaming.converters.jsonl import infer_json_columns, iter_encoded_jsonl

    if not inputs:
        raise ValueError("no input files given")
    kinds = [input_kind(p, kind) for p in inputs]
    for path in inputs:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such file")
    out = os.path.abspath(os.path.expanduser(out))
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)) and not overwrite:
        raise FileExistsError(f"{out}: already exists and is not empty (pass --overwrite)")
    if columns is None:
        if kinds[0] == "jsonl":
            columns = infer_json_columns(inputs[0])
        else:
            columns = infer_mds_columns(read_schema(inputs[0], kinds[0]))

    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(out)}.", suffix=".partial")
    samples = 0
    try:
        from streaming.format.mds.writer import MDSWriter

        writer = MDSWriter(
            out=os.path.join(tmp, "data"),
            columns=columns,
            compression=compression,
            hashes=sorted(hashes) if hashes else None,
            size_limit=size_limit,
        )
        try:
            names, encodings, sizes = (
                writer.column_names, writer.column_encodings, writer.column_sizes
            )
            for path, k in zip(inputs, kinds):
                if k == "jsonl":
                    # Our scanner is several times faster than pyarrow's JSON reader on token
                    # lists, and the general path takes JSON columns whose values mix kinds.
                    chunks = _prefetch(iter_encoded_jsonl(path, names, encodings, sizes))
                else:
                    chunks = (
                        _encode_checked(path, batch, names, encodings, sizes, samples)
                        for batch in _prefetch(iter_batches(path, k))
                    )
                for rows in chunks:
                    write = writer.write_encoded
                    for row in rows:
                        write(row)
                    samples += len(rows)
                    if progress:
                        progress(len(rows))
            writer.finish()
        except BaseException:
            writer.cancel_future_jobs()
            # Let running shard writes end before the temp directory is removed.
            for executor in (writer.executor, writer._file_executor, writer._sync_executor):
                if executor is not None:
                    executor.shutdown(wait=True)
            raise
        shards = len(writer.shards)
        if os.path.exists(out):
            # Only reached when overwriting (or out is an empty directory).
            shutil.rmtree(out) if os.path.isdir(out) else os.remove(out)
        os.rename(os.path.join(tmp, "data"), out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"samples": samples, "shards": shards, "columns": dict(columns)}
