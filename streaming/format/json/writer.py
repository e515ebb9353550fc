""":class:`JSONWriter`: samples as JSON lines (``shard.NNNNN.json``) plus a ``.json.meta`` index."""

from __future__ import annotations

import json
from typing import Any, Union

from streaming.format.base.writer import SplitWriter
from streaming.format.json.encodings import is_json_encoded, is_json_encoding
from streaming.format.split import encode_meta

__all__ = ["JSONWriter"]


class JSONWriter(SplitWriter):
    r"""Writes a streaming JSON dataset.

    Each sample is one ``json.dumps(sample, sort_keys=True)`` line; the meta file holds the
    sample count, the byte offsets of the lines (uint32) and the writer config as JSON.

    Args:
        columns (Dict[str, str]): Sample columns: name -> ``str``, ``int`` or ``float``.
        newline (str): Newline character inserted between samples. Defaults to ``\\n``.
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

    Raises:
        ValueError: A column's encoding is not a JSON encoding.
    """

    format = "json"

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
        for name, encoding in columns.items():
            if not is_json_encoding(encoding):
                raise ValueError(
                    f"column {name!r}: {encoding!r} is not a JSON encoding "
                    f"(choose from 'str', 'int', 'float')"
                )
        super().__init__(
            out=out,
            keep_local=keep_local,
            compression=compression,
            hashes=hashes,
            size_limit=size_limit,
            **kwargs,
        )
        self.columns = columns
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
        """
        obj = {}
        for key, encoding in self.columns.items():
            value = sample[key]
            is_json_encoded(encoding, value)
            obj[key] = value
        return (json.dumps(obj, sort_keys=True) + self.newline).encode("utf-8")

    def get_config(self) -> dict[str, Any]:
        """Get object describing shard-writing configuration.

        Returns:
            Dict[str, Any]: JSON object.
        """
        obj = super().get_config()
        obj.update({"columns": self.columns, "newline": self.newline})
        return obj

    def encode_split_shard(self) -> tuple[bytes, bytes]:
        """Encode a split shard out of the cached samples (data, meta files).

        Returns:
            Tuple[bytes, bytes]: Data file, meta file.
        """
        data = b"".join(self.new_samples)
        return data, encode_meta(self.new_samples, 0, self.get_config())
