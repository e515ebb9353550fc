""":class:`JSONReader`: random access to the samples of a JSON shard."""

from __future__ import annotations

import json
from typing import Any, Union

from streaming.format.base.reader import FileInfo
from streaming.format.split_reader import SplitTextReader

__all__ = ["JSONReader"]


class JSONReader(SplitTextReader):
    """Provides random access to the samples of a JSON shard.

    Args:
        dirname (str): Local dataset directory.
        split (str, optional): Which dataset split to use, if any.
        columns (Dict[str, str]): Column names and encodings.
        compression (str, optional): Optional compression or compression:level.
        hashes (List[str]): Optional list of hash algorithms to apply to shard files.
        newline (str): Newline character(s).
        raw_data (FileInfo): Uncompressed data file info.
        raw_meta (FileInfo): Uncompressed meta file info.
        samples (int): Number of samples in this shard.
        size_limit (Union[int, str], optional): Optional shard size limit.
        zip_data (FileInfo, optional): Compressed data file info.
        zip_meta (FileInfo, optional): Compressed meta file info.
    """

    format = "json"

    def __init__(
        self,
        dirname: str,
        split: str | None,
        columns: dict[str, str],
        compression: str | None,
        hashes: list[str],
        newline: str,
        raw_data: FileInfo,
        raw_meta: FileInfo,
        samples: int,
        size_limit: Union[int, str] | None,
        zip_data: FileInfo | None,
        zip_meta: FileInfo | None,
    ) -> None:
        super().__init__(
            dirname, split, compression, hashes, raw_data, raw_meta, samples, size_limit,
            zip_data, zip_meta,
        )
        self.columns = columns
        self.newline = newline

    def decode_sample(self, data: bytes) -> dict[str, Any]:
        """Decode a sample dict from bytes.

        Args:
            data (bytes): The sample encoded as bytes.

        Returns:
            Dict[str, Any]: Sample dict.
        """
        return json.loads(data.decode("utf-8"))
