"""Check a local dataset against its index (files, sizes, hashes, sample counts) and sum it up."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

from streaming.format.index import get_index_basename

__all__ = ["format_summary", "summarize_dataset", "verify_dataset"]

_CHUNK = 1 << 22


def _load(root: str, split: str | None) -> tuple[str, dict[str, Any]]:
    from streaming.format.index import load_index

    dirname = os.path.join(root, split or "")
    path = os.path.join(dirname, get_index_basename())
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such index (is {dirname} a dataset directory?)")
    return dirname, load_index(path)


def _read_chunks(path: str):
    with open(path, "rb") as fp:
        while chunk := fp.read(_CHUNK):
            yield chunk


def _check_file(dirname: str, info: dict[str, Any], problems: list[str]) -> str | None:
    """Check one file's size and hashes; return its path if present and sound."""
    from streaming.format.hashing import hash_chunks, is_hash

    path = os.path.join(dirname, info["basename"])
    if not os.path.isfile(path):
        return None
    size = os.path.getsize(path)
    if size != info["bytes"]:
        problems.append(f"{path}: size is {size} bytes, index says {info['bytes']}")
        return None
    for algo, expected in sorted(info.get("hashes", {}).items()):
        if not is_hash(algo):
            problems.append(f"{path}: unknown hash algorithm {algo!r} in the index")
            continue
        got = hash_chunks(algo, _read_chunks(path))
        if got != expected:
            problems.append(f"{path}: {algo} is {got}, index says {expected}")
            return None
    return path


def _count_of(data_head: bytes) -> int:
    return struct.unpack("<I", data_head[:4])[0]


def verify_dataset(
    root: str, split: str | None = None, progress: bool | None = False
) -> tuple[list[str], dict[str, int]]:
    """Check every shard of a local dataset against its ``index.json``.

    For each shard: its files exist (raw or compressed form), have the sizes and hashes the index
    records, and the sample count stored in the shard (the MDS data file's or the JSON/XSV meta
    file's first word) equals the index's. A compressed file holding the count must decompress
    to the raw size the index records.

    Args:
        root (str): Dataset directory.
        split (str, optional): Sub-directory of ``root`` holding the split.
        progress (bool, optional): Show a progress bar over the shards (``None``: where bars
            show, see :func:`streaming.explore.progress.progress_bar`). Defaults to ``False``.

    Returns:
        Tuple[List[str], Dict[str, int]]: One line per problem found (empty when sound), and
        counts: ``shards``, ``samples``, ``files`` checked, ``hashes`` checked.

    Raises:
        FileNotFoundError: No index.
        ValueError: The index is malformed.
    """
    from streaming.format.shard_files import decompress_shard_data

    dirname, index = _load(root, split)
    problems: list[str] = []
    counts = {"shards": 0, "samples": 0, "files": 0, "hashes": 0}
    from streaming.explore.progress import progress_bar

    shards = progress_bar(index["shards"], desc="verifying", unit="shard",
                          disable=None if progress is None else not progress)
    for i, shard in enumerate(shards):
        counts["shards"] += 1
        counts["samples"] += shard["samples"]
        # Where the sample count lives: MDS in the data file, split formats in the meta file.
        count_key = "meta" if shard.get("raw_meta") else "data"
        for part in ("data", "meta"):
            raw, zipped = shard.get(f"raw_{part}"), shard.get(f"zip_{part}")
            if raw is None:
                continue
            found = []
            before = len(problems)
            for info in (raw, zipped):
                if info is None:
                    continue
                path = _check_file(dirname, info, problems)
                if path is not None:
                    counts["files"] += 1
                    counts["hashes"] += len(info.get("hashes", {}))
                found.append((info, path))
            present = [(info, path) for info, path in found if path is not None]
            if not present:
                if len(problems) == before:  # absent, rather than present but wrong
                    names = " or ".join(info["basename"] for info, _ in found)
                    problems.append(f"{dirname}: shard {i}: missing {names}")
                continue
            if part != count_key:
                continue
            info, path = present[0]
            if info is raw:
                with open(path, "rb") as fp:
                    head = fp.read(4)
            else:
                with open(path, "rb") as fp:
                    data = fp.read()
                try:
                    head = decompress_shard_data(path, shard["compression"], data,
                                                 raw["bytes"])[:4]
                except ValueError as err:  # corrupt: a problem to report, not a crash
                    problems.append(str(err))
                    continue
            if len(head) < 4:
                problems.append(f"{path}: too short to hold a sample count")
            elif _count_of(head) != shard["samples"]:
                problems.append(
                    f"{path}: holds {_count_of(head)} samples, index says {shard['samples']}"
                )
    return problems, counts


def summarize_dataset(root: str, split: str | None = None) -> dict[str, Any]:
    """Sum up a local dataset from its index.

    Args:
        root (str): Dataset directory.
        split (str, optional): Sub-directory of ``root`` holding the split.

    Returns:
        Dict[str, Any]: ``index``, ``shards``, ``samples``, ``formats``, ``compressions``,
        ``hashes``, ``columns`` (name -> encoding, per distinct schema), ``raw_bytes``,
        ``zip_bytes``, ``min_samples_per_shard``, ``max_samples_per_shard``.

    Raises:
        FileNotFoundError: No index.
        ValueError: The index is malformed.
    """
    dirname, index = _load(root, split)
    shards = index["shards"]
    schemas: list[dict[str, str]] = []
    for shard in shards:
        if "column_names" in shard:
            cols = dict(zip(shard["column_names"], shard["column_encodings"]))
        else:
            cols = dict(shard.get("columns", {}))
        if cols not in schemas:
            schemas.append(cols)

    def total(key: str) -> int:
        return sum(s[key]["bytes"] for s in shards if s.get(key))

    counts = [s["samples"] for s in shards]
    return {
        "index": os.path.join(dirname, get_index_basename()),
        "shards": len(shards),
        "samples": sum(counts),
        "formats": sorted({s["format"] for s in shards}),
        "compressions": sorted({str(s["compression"]) for s in shards}),
        "hashes": sorted({h for s in shards for h in s["hashes"]}),
        "columns": schemas,
        "raw_bytes": total("raw_data") + total("raw_meta"),
        "zip_bytes": total("zip_data") + total("zip_meta"),
        "min_samples_per_shard": min(counts) if counts else 0,
        "max_samples_per_shard": max(counts) if counts else 0,
    }


def format_summary(summary: dict[str, Any]) -> str:
    """Render :func:`summarize_dataset`'s result as a few lines of text.

    Args:
        summary (Dict[str, Any]): The summary.

    Returns:
        str: Human-readable text.
    """
    lines = [
        f"index:        {summary['index']}",
        f"format:       {', '.join(summary['formats']) or '-'}",
        f"shards:       {summary['shards']} "
        f"({summary['min_samples_per_shard']}-{summary['max_samples_per_shard']} samples each)",
        f"samples:      {summary['samples']}",
        f"compression:  {', '.join(summary['compressions']) or '-'}",
        f"hashes:       {', '.join(summary['hashes']) or '-'}",
        f"raw bytes:    {summary['raw_bytes']}",
        f"zip bytes:    {summary['zip_bytes']}",
    ]
    for cols in summary["columns"]:
        lines.append("columns:      " + json.dumps(cols))
    return "\n".join(lines)
