""":class:`XSVReader`, :class:`CSVReader`, :class:`TSVReader`: random access to XSV shards."""

from __future__ import annotations

import os
from typing import Any, Union

from streaming.format.base.reader import FileInfo
from streaming.format.split_reader import SplitTextReader
from streaming.format.xsv.encodings import _encodings

__all__ = ["XSVReader", "CSVReader", "TSVReader"]


def _columns_problem(
    column_names: list[str], column_encodings: list[str], separator: str, newline: str
) -> str | None:
    """What is wrong with an XSV shard's columns and delimiters, if anything."""
    if not separator or not newline:
        return f"separator and newline must be non-empty (got {separator!r}, {newline!r})"
    unknown = [e for e in column_encodings if e not in _encodings]
    if unknown or len(column_names) != len(column_encodings):
        return f"bad columns {column_names} with encodings {column_encodings}"
    if len(set(column_names)) != len(column_names):
        return f"duplicate column names in {column_names}"
    return None


class XSVReader(SplitTextReader):
    """Provides random access to the samples of an XSV shard.

    Args:
        dirname (str): Local dataset directory.
        split (str, optional): Which dataset split to use, if any.
        column_encodings (List[str]): Column encodings.
        column_names (List[str]): Column names.
        compression (str, optional): Optional compression or compression:level.
        hashes (List[str]): Optional list of hash algorithms to apply to shard files.
        newline (str): Newline character(s).
        raw_data (FileInfo): Uncompressed data file info.
        raw_meta (FileInfo): Uncompressed meta file info.
        samples (int): Number of samples in this shard.
        separator (str): Separator character(s).
        size_limit (Union[int, str], optional): Optional shard size limit.
        zip_data (FileInfo, optional): Compressed data file info.
        zip_meta (FileInfo, optional): Compressed meta file info.

    Raises:
        ValueError: An unknown column encoding, or an empty separator/newline.
    """

    format = "xsv"

    def __init__(
        self,
        dirname: str,
        split: str | None,
        column_encodings: list[str],
        column_names: list[str],
        compression: str | None,
        hashes: list[str],
        newline: str,
        raw_data: FileInfo,
        raw_meta: FileInfo,
        samples: int,
        separator: str,
        size_limit: Union[int, str] | None,
        zip_data: FileInfo | None,
        zip_meta: FileInfo | None,
    ) -> None:
        super().__init__(
            dirname, split, compression, hashes, raw_data, raw_meta, samples, size_limit,
            zip_data, zip_meta,
        )
        problem = _columns_problem(column_names, column_encodings, separator, newline)
        if problem:
            raise ValueError(f"{os.path.join(dirname, self.split, raw_data.basename)}: {problem}")
        self.column_encodings = column_encodings
        self.column_names = column_names
        self.newline = newline
        self.separator = separator
        self._decoders = [(n, _encodings[e].decode) for n, e in zip(column_names, column_encodings)]

    @classmethod
    def _fields_problem(cls, obj: dict[str, Any]) -> str | None:
        """What is wrong with the columns and delimiters of a shard entry, if anything.

        Args:
            obj (Dict[str, Any]): The shard entry (fields already of the right types).

        Returns:
            str | None: The problem, or ``None``.
        """
        separator = obj.get("separator", getattr(cls, "separator", ""))
        return _columns_problem(obj["column_names"], obj["column_encodings"], separator,
                                obj["newline"])

    def _get_offsets(self):  # noqa: ANN202 (the base class's)
        if self._offsets is None:
            offsets = super()._get_offsets()
            try:
                self._check_header(int(offsets[0]))
            except BaseException:
                self._offsets = None  # (checked again next time)
                raise
        return self._offsets

    def _check_header(self, size: int) -> None:
        """Refuse a data file whose header line (the bytes before its first sample, as the
        writer puts them) does not name the index's columns: the index would give the values
        other names (or other columns' decoders)."""
        if size <= 0:
            return  # (no header: nothing to compare)
        filename = self._path(self.raw_data)
        want = (self.separator.join(self.column_names) + self.newline).encode("utf-8")
        with open(filename, "rb") as f:
            got = f.read(size)
        if got != want:
            raise ValueError(f"{filename}: the header line {got[:80]!r} does not name the "
                             f"index's columns {self.column_names} (as {want[:80]!r}); the "
                             f"index does not match the data")

    def decode_sample(self, data: bytes) -> dict[str, Any]:
        """Decode a sample dict from bytes.

        Args:
            data (bytes): The sample encoded as bytes.

        Returns:
            Dict[str, Any]: Sample dict.

        Raises:
            ValueError: The sample does not end with the shard's newline or does not have one
                field per column: the index's ``newline``/``separator`` do not match the data
                (the reference would cut it blindly and drop or garble columns).
        """
        text = data.decode("utf-8")
        if not text.endswith(self.newline):
            raise ValueError(
                f"{self._path(self.raw_data)}: sample {text[-40:]!r} does not end with the "
                f"shard's newline {self.newline!r}; the index does not match the data"
            )
        parts = text[: len(text) - len(self.newline)].split(self.separator)
        # A shard without columns holds empty lines.
        if len(parts) != len(self._decoders) and (self._decoders or parts != [""]):
            raise ValueError(
                f"{self._path(self.raw_data)}: sample has {len(parts)} field(s) separated by "
                f"{self.separator!r}, but the shard has {len(self._decoders)} column(s); the "
                f"index does not match the data"
            )
        return {name: decode(part) for (name, decode), part in zip(self._decoders, parts)}


class _FixedSeparatorReader(XSVReader):
    """An XSV reader whose separator is fixed by its format (CSV, TSV)."""

    separator: str

    def __init__(
        self,
        dirname: str,
        split: str | None,
        column_encodings: list[str],
        column_names: list[str],
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
            dirname, split, column_encodings, column_names, compression, hashes, newline,
            raw_data, raw_meta, samples, type(self).separator, size_limit, zip_data, zip_meta,
        )


class CSVReader(_FixedSeparatorReader):
    """Provides random access to the samples of a CSV shard (same arguments, no separator)."""

    format = "csv"
    separator = ","


class TSVReader(_FixedSeparatorReader):
    """Provides random access to the samples of a TSV shard (same arguments, no separator)."""

    format = "tsv"
    separator = "\t"
