"""Shard files in the local cache: verify a downloaded file's hash, decompress a shard atomically.

These are what the cache calls after a download; the formats' readers then map the raw files.
Every decompression of a shard file goes through :func:`decompress_shard_data`, which bounds the
output by the raw size the index declares and names the file in every error.
"""

from __future__ import annotations

import os
import zlib
from typing import Any, Mapping, Union

from streaming.format.compression import decompress
from streaming.format.hashing import get_hash

__all__ = ["decompress_shard", "decompress_shard_data", "verify_hash"]


def _hashes_of(info: Any) -> Mapping[str, str]:
    if info is None:
        return {}
    if isinstance(info, Mapping):
        return info.get("hashes", info) if "hashes" in info else info
    return info.hashes


def verify_hash(filename: str, data: Union[bytes, memoryview], algo: str, info: Any) -> None:
    """Check ``data`` against the digest the index recorded with algorithm ``algo``.

    Args:
        filename (str): The file the data came from, named in errors.
        data (bytes): The file's contents.
        algo (str): Hash algorithm (``validate_hash``).
        info (FileInfo | dict): The file's index entry (a ``FileInfo``, its dict, or just its
            ``hashes`` dict).

    Raises:
        ValueError: The index has no digest for ``algo`` (same message as the reference), or the
            digest differs (``Checksum failure: <filename>``).
    """
    hashes = _hashes_of(info)
    if algo not in hashes:
        raise ValueError(
            f"Hash algorithm `{algo}` chosen for data validation does not match with those "
            f"provided during dataset creation `{sorted(hashes)}`. Provide one of those."
        )
    if get_hash(algo, data) != hashes[algo]:
        raise ValueError(f"Checksum failure: {filename}")


def _size_of(info: Any) -> int | None:
    if info is None:
        return None
    return info["bytes"] if isinstance(info, Mapping) else info.bytes


def decompress_shard_data(
    filename: str, compression: str | None, data: Union[bytes, memoryview],
    raw_size: int | None,
) -> bytes:
    """Decompress the contents of a compressed shard file, checking the result's size.

    The codec stops once it has produced more than ``raw_size`` bytes, so a decompression bomb
    costs at most that much memory.

    Args:
        filename (str): The compressed file the data came from, named in errors.
        compression (str, optional): The shard's compression (``zstd``, ``gz:9``...).
        data (bytes): The compressed file's contents.
        raw_size (int, optional): The decompressed size the index declares (``raw_data.bytes``
            or ``raw_meta.bytes``); ``None`` neither bounds nor checks the output.

    Returns:
        bytes: The decompressed data.

    Raises:
        ValueError: The data is corrupt, is not ``compression`` data, or does not decompress to
            ``raw_size`` bytes (each naming the file).
        ImportError: The codec's optional library is not installed.
    """
    try:
        raw = decompress(compression, data, max_size=raw_size)
    except ImportError:
        raise
    except (ValueError, OSError, EOFError, zlib.error, MemoryError) as err:
        raise ValueError(f"{filename}: corrupt {compression} data: {err}") from err
    except Exception as err:  # codec-specific errors (zstd.ZstdError, brotli.error, ...)
        raise ValueError(f"{filename}: corrupt {compression} data: {err!r}") from err
    if raw_size is not None and len(raw) != raw_size:
        raise ValueError(
            f"{filename}: decompressed to {len(raw)} bytes, but the index says {raw_size}; the "
            f"file is corrupt"
        )
    return raw


def decompress_shard(
    zip_path: str,
    raw_path: str,
    compression: str | None,
    *,
    validate_hash: str | None = None,
    zip_info: Any = None,
    raw_info: Any = None,
    keep_zip: bool = True,
) -> int:
    """Decompress one shard file into its raw form, atomically.

    Reads ``zip_path``, optionally checks its hash, decompresses it (refusing to expand beyond
    the raw size the index declares), checks the result's size, writes ``raw_path`` through a
    temp file in the same directory (fsync, rename) and, unless ``keep_zip``, removes
    ``zip_path``.

    Args:
        zip_path (str): The compressed file.
        raw_path (str): Where the decompressed file goes.
        compression (str, optional): The shard's compression (``zstd``, ``gz:9``...).
        validate_hash (str, optional): Hash algorithm to check the compressed file with, as
            ``StreamingDataset(validate_hash=...)``. Needs ``zip_info``.
        zip_info (FileInfo | dict, optional): Index entry of the compressed file.
        raw_info (FileInfo | dict, optional): Index entry of the raw file; its ``bytes`` bounds
            and checks the decompressed size.
        keep_zip (bool): Keep the compressed file afterwards. Defaults to ``True``.

    Returns:
        int: Size of the raw file in bytes.

    Raises:
        ValueError: Hash mismatch, corrupt compressed data, or wrong decompressed size (each
            naming the file).
    """
    from streaming.storage.atomic import atomic_file

    with open(zip_path, "rb") as fp:
        data = fp.read()
    if validate_hash:
        verify_hash(zip_path, data, validate_hash, zip_info)
    raw = decompress_shard_data(zip_path, compression, data, _size_of(raw_info))
    with atomic_file(raw_path) as (fd, _):
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
    if not keep_zip:
        os.remove(zip_path)
    return len(raw)
