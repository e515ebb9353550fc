"""The ``index.json`` model (version 2): parse, validate and write dataset indexes.

An index is ``{"shards": [shard, ...], "version": 2}``. Each shard is a dict holding the writer's
config (``version``, ``format``, ``compression``, ``hashes``, ``size_limit`` and per-format keys
such as MDS's ``column_encodings``/``column_names``/``column_sizes``), its sample count
(``samples``) and its files: ``raw_data`` (and ``raw_meta`` for split formats) describe the
decompressed files, ``zip_data``/``zip_meta`` the compressed ones (``null`` without
compression). A file entry is ``{"basename": str, "bytes": int, "hashes": {algo: hexdigest}}``.

An index is untrusted input (it usually comes from the network): :func:`validate_index` checks
types, sizes and that no basename can escape the dataset directory, raising ``ValueError`` naming
the index file. :func:`dumps_index` serializes exactly like the reference writer, so indexes are
byte-identical.
"""

from __future__ import annotations

import json
import os
import posixpath
from typing import Any, TypedDict

__all__ = [
    "FileInfoDict",
    "dumps_index",
    "get_index_basename",
    "load_index",
    "parse_index",
    "validate_basename",
    "validate_index",
    "validate_shard",
    "write_index",
]

# Sizes beyond this can't be real files and would overflow int64 arithmetic downstream.
_MAX_BYTES = 1 << 62
# MDS/JSON/XSV shards store sample counts and offsets as uint32.
_MAX_SAMPLES = (1 << 32) - 1
# The file objects a shard entry may have.
SHARD_FILE_KEYS = ("raw_data", "zip_data", "raw_meta", "zip_meta")
# Per built-in format, the raw file that starts with the shard's sample count and offset table:
# ``[count: u32] [offsets: (count + 1) x u32]``, so at least 4 * (samples + 2) bytes.
_OFFSET_TABLE_FILE = {
    "mds": "raw_data", "json": "raw_meta", "csv": "raw_meta", "tsv": "raw_meta", "xsv": "raw_meta",
}
_REQUIRED = ("compression", "format", "hashes", "raw_data", "samples", "size_limit", "version")


class FileInfoDict(TypedDict):
    """One file of a shard, as stored in ``index.json``."""

    basename: str
    bytes: int
    hashes: dict[str, str]


def get_index_basename() -> str:
    """Get the canonical index file basename.

    Returns:
        str: Index basename (``index.json``).
    """
    return "index.json"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_basename(basename: Any, where: str) -> str:
    """Check that a shard file name stays inside the dataset directory.

    Args:
        basename (Any): The name from the index.
        where (str): What to name in the error (index file and shard).

    Returns:
        str: The basename.

    Raises:
        ValueError: Not a non-empty relative path without ``..`` components.
    """
    if not isinstance(basename, str) or not basename:
        raise ValueError(f"{where}: basename must be a non-empty string, got {basename!r}")
    if "\x00" in basename or "\\" in basename:
        raise ValueError(f"{where}: invalid characters in basename {basename!r}")
    if posixpath.isabs(basename) or os.path.isabs(basename) or basename.startswith("~"):
        raise ValueError(f"{where}: basename {basename!r} must be relative to the dataset dir")
    parts = basename.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{where}: basename {basename!r} must not contain '.', '..' or '//'")
    return basename


def _validate_file(obj: Any, where: str) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a file object, got {type(obj).__name__}")
    for key in ("basename", "bytes", "hashes"):
        if key not in obj:
            raise ValueError(f"{where}: missing field {key!r}")
    validate_basename(obj["basename"], where)
    size = obj["bytes"]
    if not _is_int(size) or not 0 <= size < _MAX_BYTES:
        raise ValueError(f"{where}: invalid byte size {size!r}")
    hashes = obj["hashes"]
    if not isinstance(hashes, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in hashes.items()
    ):
        raise ValueError(f"{where}: hashes must map algorithm names to hex digest strings")


def validate_shard(obj: Any, where: str) -> None:
    """Validate one shard entry of an index.

    Args:
        obj (Any): The shard's JSON object.
        where (str): What to name in errors (e.g. ``"/data/index.json: shard 3"``).

    Raises:
        ValueError: The entry is malformed.
    """
    from streaming.format.compression import is_compression

    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected an object, got {type(obj).__name__}")
    for key in _REQUIRED:
        if key not in obj:
            raise ValueError(f"{where}: missing field {key!r}")
    if obj["version"] != 2:
        raise ValueError(
            f"{where}: unsupported streaming data version {obj['version']!r}; expected 2"
        )
    if not isinstance(obj["format"], str):
        raise ValueError(f"{where}: invalid format {obj['format']!r}")
    samples = obj["samples"]
    if not _is_int(samples) or not 0 <= samples <= _MAX_SAMPLES:
        raise ValueError(f"{where}: invalid sample count {samples!r}")
    compression = obj["compression"]
    if compression is not None and not is_compression(compression):
        raise ValueError(f"{where}: unknown compression {compression!r}")
    hashes = obj["hashes"]
    if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
        raise ValueError(f"{where}: hashes must be a list of algorithm names")
    size_limit = obj["size_limit"]
    if size_limit is not None and (not _is_int(size_limit) or size_limit < 0):
        raise ValueError(f"{where}: invalid size_limit {size_limit!r}")
    for key in SHARD_FILE_KEYS:
        info = obj.get(key)
        if key.startswith("raw_") and key in obj and info is None:
            raise ValueError(f"{where}: {key} must not be null")
        if info is not None:
            _validate_file(info, f"{where}: {key}")
    # A sample count the shard cannot hold would size per-sample arrays (partitions, sample
    # ids) before any shard is fetched and checked.
    table = obj.get(_OFFSET_TABLE_FILE.get(obj["format"], ""))
    if table is not None and 4 * (samples + 2) > table["bytes"]:
        raise ValueError(
            f"{where}: {samples} samples cannot fit in {table['basename']} ({table['bytes']} "
            f"bytes; their offset table alone needs {4 * (samples + 2)}); the index is corrupt"
        )
    if compression is None and (obj.get("zip_data") or obj.get("zip_meta")):
        raise ValueError(f"{where}: has compressed files but no compression")


def validate_index(obj: Any, filename: str) -> dict[str, Any]:
    """Validate a parsed index.

    Args:
        obj (Any): The parsed JSON.
        filename (str): Index path, named in errors.

    Returns:
        Dict[str, Any]: ``obj``, unchanged.

    Raises:
        ValueError: The index is malformed, names an unknown format, or has a basename that
            escapes the dataset directory.
    """
    from streaming.format import known_formats

    if not isinstance(obj, dict):
        raise ValueError(f"{filename}: index must be a JSON object")
    if obj.get("version") != 2:
        raise ValueError(
            f"{filename}: unsupported streaming data version {obj.get('version')!r}; expected 2"
        )
    shards = obj.get("shards")
    if not isinstance(shards, list):
        raise ValueError(f"{filename}: 'shards' must be a list")
    for i, shard in enumerate(shards):
        where = f"{filename}: shard {i}"
        validate_shard(shard, where)
        if shard["format"] not in known_formats():
            raise ValueError(
                f"{where}: unknown format {shard['format']!r} (known: {sorted(known_formats())})"
            )
    return obj


def parse_index(text: str | bytes, filename: str) -> dict[str, Any]:
    """Parse and validate index text.

    Args:
        text (str | bytes): The file's contents.
        filename (str): Index path, named in errors.

    Returns:
        Dict[str, Any]: The validated index.

    Raises:
        ValueError: Not JSON, or not a valid index.
    """
    try:
        obj = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{filename}: not a valid JSON index: {err}") from err
    return validate_index(obj, filename)


def load_index(filename: str) -> dict[str, Any]:
    """Read, parse and validate an ``index.json`` file.

    Args:
        filename (str): Path to the index.

    Returns:
        Dict[str, Any]: The validated index.

    Raises:
        FileNotFoundError: No such file.
        ValueError: Not a valid index.
    """
    with open(filename, "rb") as fp:
        return parse_index(fp.read(), filename)


def dumps_index(shards: list[dict[str, Any]]) -> str:
    """Serialize an index exactly as the reference writer does.

    Args:
        shards (List[Dict[str, Any]]): Shard entries.

    Returns:
        str: The ``index.json`` text.
    """
    return json.dumps({"version": 2, "shards": shards}, sort_keys=True)


def write_index(dirname: str, shards: list[dict[str, Any]], basename: str | None = None) -> str:
    """Write ``index.json`` atomically (temp file, fsync, rename).

    Args:
        dirname (str): Dataset directory.
        shards (List[Dict[str, Any]]): Shard entries.
        basename (str, optional): File name. Defaults to ``index.json``.

    Returns:
        str: The path written.
    """
    from streaming.storage.atomic import atomic_file

    path = os.path.join(dirname, basename or get_index_basename())
    data = dumps_index(shards).encode("utf-8")
    with atomic_file(path) as (fd, _):
        _write_all(fd, [data])
    return path


def _write_all(fd: int, chunks: list[Any]) -> None:
    """Write every buffer in ``chunks`` to ``fd`` in order, batching them through ``writev``."""
    views = [memoryview(chunk).cast("B") for chunk in chunks]
    views = [view for view in views if view.nbytes]
    i = 0
    while i < len(views):
        written = os.writev(fd, views[i : i + _IOV_MAX])
        # Skip what was written; a partial write resumes mid-buffer.
        while i < len(views) and written >= views[i].nbytes:
            written -= views[i].nbytes
            i += 1
        if written:
            views[i] = views[i][written:]


_IOV_MAX = 1024
