""":class:`XSVWriter`, :class:`CSVWriter`, :class:`TSVWriter`: samples as separated text lines."""

from __future__ import annotations

from typing import Any, Union

from streaming.format.base.writer import SplitWriter
from streaming.format.split import encode_meta
from streaming.format.xsv.encodings import is_xsv_encoding, xsv_encode

__all__ = ["XSVWriter", "CSVWriter", "TSVWriter"]

_WRITER_ARGS_DOC = r"""
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
        size_limit (Union[int, str], optional): Optional shard size limit, after which point to
            start a new shard. If None, puts everything in one shard. Can specify bytes
            human-readable format as well, for example ``"100kb"`` for 100 kilobyte
            (100*1024) and so on. Defaults to ``1 << 26``.
        **kwargs (Any): Additional settings for the Writer (``progress_bar``, ``max_workers``,
            ``retry``, ``exist_ok``).
"""


class XSVWriter(SplitWriter):
    r"""Writes a streaming XSV dataset: one line per sample, columns joined by ``separator``.

    Columns are stored in sorted name order; the data file starts with a header line of the
    column names. Values must contain neither the separator nor the newline.

    Args:
        columns (Dict[str, str]): Sample columns: name -> ``str``, ``int`` or ``float``.
        separator (str): String used to separate columns.
        newline (str): Newline character inserted between samples. Defaults to ``\\n``.
    """

    format = "xsv"

    def __init__(
        self,
        *,
        columns: dict[str, str],
        separator: str,
        newline: str = "\n",
        out: Union[str, tuple[str, str]],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: Union[int, str] | None = 1 << 26,
        **kwargs: Any,
    ) -> None:
        if not separator or not newline:
            raise ValueError("separator and newline must be non-empty strings")
        self.column_names: list[str] = []
        self.column_encodings: list[str] = []
        for name in sorted(columns):
            encoding = columns[name]
            if newline in name or separator in name:
                raise ValueError(
                    f"column name {name!r} contains the separator {separator!r} or the "
                    f"newline {newline!r}"
                )
            if not is_xsv_encoding(encoding):
                raise ValueError(
                    f"column {name!r}: {encoding!r} is not an XSV encoding "
                    f"(choose from 'str', 'int', 'float')"
                )
            self.column_names.append(name)
            self.column_encodings.append(encoding)
        super().__init__(
            out=out,
            keep_local=keep_local,
            compression=compression,
            hashes=hashes,
            size_limit=size_limit,
            **kwargs,
        )
        self.columns = columns
        self.separator = separator
        self.newline = newline

    def encode_sample(self, sample: dict[str, Any]) -> bytes:
        """Encode a sample dict to bytes.

        Args:
            sample (Dict[str, Any]): Sample dict.

        Returns:
            bytes: Sample encoded as bytes.

        Raises:
            KeyError: A column is missing from the sample.
            EncodingTypeError: A value does not have its column's type (a ``ValueError``).
            ValueError: A value contains the separator or the newline.
        """
        values = []
        for name, encoding in zip(self.column_names, self.column_encodings):
            value = xsv_encode(encoding, sample[name])
            if self.newline in value or self.separator in value:
                raise ValueError(
                    f"column {name!r}: value {value!r} contains the separator "
                    f"{self.separator!r} or the newline {self.newline!r}"
                )
            values.append(value)
        return (self.separator.join(values) + self.newline).encode("utf-8")

    def get_config(self) -> dict[str, Any]:
        """Get object describing shard-writing configuration.

        Returns:
            Dict[str, Any]: JSON object.
        """
        obj = super().get_config()
        obj.update(
            {
                "column_names": self.column_names,
                "column_encodings": self.column_encodings,
                "separator": self.separator,
                "newline": self.newline,
            }
        )
        return obj

    def encode_split_shard(self) -> tuple[bytes, bytes]:
        """Encode a split shard out of the cached samples (data, meta files).

        Returns:
            Tuple[bytes, bytes]: Data file, meta file.
        """
        header = (self.separator.join(self.column_names) + self.newline).encode("utf-8")
        data = b"".join([header, *self.new_samples])
        return data, encode_meta(self.new_samples, len(header), self.get_config())


class _FixedSeparatorWriter(XSVWriter):
    """An XSV writer whose separator is fixed by its format (CSV, TSV)."""

    separator: str

    def __init__(
        self,
        *,
        columns: dict[str, str],
        newline: str = "\n",
        out: Union[str, tuple[str, str]],
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: Union[int, str] | None = 1 << 26,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            columns=columns,
            separator=type(self).separator,
            newline=newline,
            out=out,
            keep_local=keep_local,
            compression=compression,
            hashes=hashes,
            size_limit=size_limit,
            **kwargs,
        )

    def get_config(self) -> dict[str, Any]:
        """Get object describing shard-writing configuration (the separator is implied).

        Returns:
            Dict[str, Any]: JSON object.
        """
        obj = super().get_config()
        del obj["separator"]
        return obj


class CSVWriter(_FixedSeparatorWriter):
    r"""Writes a streaming CSV dataset (separator ``,``).

    Args:
        columns (Dict[str, str]): Sample columns: name -> ``str``, ``int`` or ``float``.
        newline (str): Newline character inserted between samples. Defaults to ``\\n``.
    """

    format = "csv"
    separator = ","


class TSVWriter(_FixedSeparatorWriter):
    r"""Writes a streaming TSV dataset (separator tab).

    Args:
        columns (Dict[str, str]): Sample columns: name -> ``str``, ``int`` or ``float``.
        newline (str): Newline character inserted between samples. Defaults to ``\\n``.
    """

    format = "tsv"
    separator = "\t"


for _cls in (XSVWriter, CSVWriter, TSVWriter):
    _cls.__doc__ = (_cls.__doc__ or "").rstrip() + "\n" + _WRITER_ARGS_DOC
