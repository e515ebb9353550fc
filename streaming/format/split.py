"""The meta file of the split (data + meta) shard formats JSON, CSV, TSV and XSV.

A meta file is ``uint32 count``, ``count + 1`` uint32 byte offsets of the samples in the data
file (little-endian), then the writer config as JSON text. Sample ``i`` is
``data[offsets[i]:offsets[i + 1]]``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["encode_meta", "read_offsets"]


def encode_meta(samples: list[bytes], start: int, config: dict[str, Any]) -> bytes:
    """Build a meta file for encoded samples laid out back to back from byte ``start``.

    Args:
        samples (List[bytes]): Encoded samples, in order.
        start (int): Offset of the first sample in the data file (the header's size).
        config (Dict[str, Any]): Writer config, stored as JSON after the offsets.

    Returns:
        bytes: The meta file.

    Raises:
        ValueError: The data file would be too large for uint32 offsets.
    """
    offsets = np.empty(len(samples) + 1, np.int64)
    offsets[0] = start
    np.cumsum([len(s) for s in samples], out=offsets[1:])
    offsets[1:] += start
    if offsets[-1] >= 1 << 32:
        raise ValueError(
            f"shard data is {int(offsets[-1])} bytes, over the 4 GiB that uint32 offsets address; "
            f"use a smaller size_limit"
        )
    head = np.array([len(samples)], "<u4").tobytes() + offsets.astype("<u4").tobytes()
    return head + json.dumps(config, sort_keys=True).encode("utf-8")


def read_offsets(meta_filename: str, data_filename: str, samples: int) -> NDArray[np.int64]:
    """Read and check the sample offsets of a split shard.

    Args:
        meta_filename (str): The meta file.
        data_filename (str): The data file the offsets point into (for its size).
        samples (int): Sample count the index declares for the shard.

    Returns:
        NDArray[np.int64]: ``samples + 1`` offsets.

    Raises:
        ValueError: The meta file is truncated, disagrees with the index, or its offsets are
            not increasing or run past the end of the data file.
    """
    need = 4 * (samples + 2)
    head = b""
    with open(meta_filename, "rb") as fp:
        # The sample count comes from the index: check it against the file before allocating.
        found = os.fstat(fp.fileno()).st_size
        if need <= found:
            head = fp.read(need)
            found = len(head)  # less, if the file shrank meanwhile
    if found < need:
        raise ValueError(
            f"{meta_filename}: meta file is truncated (expected at least {need} bytes for "
            f"{samples} samples, found {found}); delete it or re-download it"
        )
    words = np.frombuffer(head, "<u4").astype(np.int64)
    if words[0] != samples:
        raise ValueError(
            f"{meta_filename}: meta file holds {int(words[0])} samples but the index says "
            f"{samples}"
        )
    offsets = words[1:]
    size = os.path.getsize(data_filename)
    if samples and (np.any(np.diff(offsets) < 0) or offsets[-1] > size):
        raise ValueError(
            f"{meta_filename}: sample offsets are not increasing or run past the end of "
            f"{data_filename} ({size} bytes); the shard is corrupt"
        )
    return offsets
