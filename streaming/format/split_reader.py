"""Random access to the samples of a split (data + meta) shard: the JSON and XSV readers' base."""

from __future__ import annotations

import os
from copy import deepcopy
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.format.base.reader import FileInfo, SplitReader
from streaming.format.split import read_offsets

__all__ = ["SplitTextReader"]


class SplitTextReader(SplitReader):
    """A split shard of text lines, located through the uint32 offsets of its meta file.

    Offsets are read (and checked) once, on first access; each sample is then one ``pread``
    of its bytes.
    """

    format: str = ""

    # The checked sample offsets, read from the meta file on first access.
    _offsets: NDArray[np.int64] | None = None

    @classmethod
    def from_json(cls, dirname: str, split: str | None, obj: dict[str, Any]) -> SplitTextReader:
        """Initialize from JSON object.

        Args:
            dirname (str): Local directory containing shards.
            split (str, optional): Which dataset split to use, if any.
            obj (Dict[str, Any]): JSON object to load.

        Returns:
            Self: Loaded reader of the calling class.

        Raises:
            ValueError: Wrong version or format.
        """
        args = deepcopy(obj)
        version = args.pop("version")
        if version != 2:
            raise ValueError(f"Unsupported streaming data version: {version}. Expected version 2.")
        fmt = args.pop("format")
        if fmt != cls.format:
            raise ValueError(f"Unsupported data format: {fmt}. Expected to be `{cls.format}`.")
        args["dirname"] = dirname
        args["split"] = split
        for key in ("raw_data", "raw_meta", "zip_data", "zip_meta"):
            info = args.get(key)
            args[key] = FileInfo(**info) if info else None
        return cls(**args)

    def _get_offsets(self) -> NDArray[np.int64]:
        if self._offsets is None:
            self._offsets = read_offsets(
                self._path(self.raw_meta), self._path(self.raw_data), self.samples
            )
        return self._offsets

    def get_sample_data(self, idx: int) -> bytes:
        """Get the raw sample data at the index.

        Args:
            idx (int): Sample index.

        Returns:
            bytes: Sample data.

        Raises:
            IndexError: ``idx`` is out of range.
            ValueError: The shard's files are truncated or corrupt.
        """
        if not 0 <= idx < self.samples:
            raise IndexError(f"sample {idx} out of range for a shard of {self.samples} samples")
        offsets = self._get_offsets()
        begin, end = int(offsets[idx]), int(offsets[idx + 1])
        filename = self._path(self.raw_data)
        fd = os.open(filename, os.O_RDONLY)
        try:
            data = os.pread(fd, end - begin, begin)
        finally:
            os.close(fd)
        if len(data) != end - begin:
            raise ValueError(f"{filename}: shard is truncated; delete it or re-download it")
        return data
