"""Random access to the samples of a split (data + meta) shard: the JSON and XSV readers' base."""

from __future__ import annotations

import inspect
import os
from copy import deepcopy
from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

from streaming.format.base.reader import FileInfo, SplitReader
from streaming.format.index import SHARD_FILE_KEYS, get_index_basename, validate_shard
from streaming.format.split import read_offsets

__all__ = ["SplitTextReader"]

# Entry fields that ``from_json`` consumes itself, and constructor arguments that come from its
# caller rather than from the entry.
_ENTRY_ONLY = frozenset({"version", "format"})
_FROM_CALLER = frozenset({"self", "dirname", "split"})
# Files that may be absent from an entry (no compression).
_OPTIONAL = frozenset({"zip_data", "zip_meta"})
# The fields of a file object (``FileInfo``'s).
_FILE_FIELDS = frozenset({"basename", "bytes", "hashes"})


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_columns(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


# Shapes of the per-format fields of JSON/XSV shard entries (the common fields, files and sizes
# are validate_shard's): field -> (check, what it must be).
_FIELD_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "columns": (_is_columns, "an object mapping column names to encoding names"),
    "column_names": (_is_str_list, "a list of strings"),
    "column_encodings": (_is_str_list, "a list of strings"),
    "newline": (lambda v: isinstance(v, str), "a string"),
    "separator": (lambda v: isinstance(v, str), "a string"),
}

# Reader class -> (fields its entries may have, or None for any; fields they must have).
_entry_fields: dict[type, tuple[frozenset[str] | None, frozenset[str]]] = {}
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _fields_of(cls: type) -> tuple[frozenset[str] | None, frozenset[str]]:
    """The fields a shard entry of ``cls`` may (``None``: any) and must have: its constructor's
    arguments, which is what the reference accepts (it passes the entry to the constructor as
    keywords). A subclass whose constructor takes ``**kwargs`` accepts any field."""
    fields = _entry_fields.get(cls)
    if fields is None:
        params = inspect.signature(cls.__init__).parameters.values()
        named = [p for p in params if p.kind in _NAMED and p.name not in _FROM_CALLER]
        required = frozenset(p.name for p in named if p.default is p.empty) - _OPTIONAL
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        allowed = None if takes_any else frozenset(p.name for p in named) | _ENTRY_ONLY
        fields = _entry_fields[cls] = allowed, required | _ENTRY_ONLY
    return fields


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
            ValueError: Wrong version or format, or a malformed entry: unknown or missing
                fields, fields of the wrong type, a bad size or sample count, or a basename
                that escapes ``dirname`` (naming the index file and the shard).
        """
        if not isinstance(obj, dict):
            raise ValueError(f"Unsupported shard entry: {obj!r}. Expected a JSON object.")
        version = obj.get("version")
        if version != 2:
            raise ValueError(f"Unsupported streaming data version: {version}. Expected version 2.")
        fmt = obj.get("format")
        if fmt != cls.format:
            raise ValueError(f"Unsupported data format: {fmt}. Expected to be `{cls.format}`.")
        where = cls._entry_name(dirname, split, obj)
        validate_shard(obj, where)
        allowed, required = _fields_of(cls)
        unknown = sorted(set(obj) - allowed) if allowed is not None else []
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {unknown} for a {fmt} shard")
        missing = sorted(required - set(obj))
        if missing:
            raise ValueError(f"{where}: missing field(s) {missing}")
        for key, (check, what) in _FIELD_CHECKS.items():
            if key in obj and not check(obj[key]):
                raise ValueError(f"{where}: {key} must be {what}, got {obj[key]!r}")
        for key in SHARD_FILE_KEYS:
            unknown = sorted(set(obj.get(key) or ()) - _FILE_FIELDS)
            if unknown:
                raise ValueError(f"{where}: {key}: unknown field(s) {unknown}")
        problem = cls._fields_problem(obj)
        if problem:
            raise ValueError(f"{where}: {problem}")
        args = deepcopy(obj)
        del args["version"], args["format"]
        args["dirname"] = dirname
        args["split"] = split
        for key in SHARD_FILE_KEYS:
            info = args.get(key)
            args[key] = FileInfo(**info) if info else None
        return cls(**args)

    @classmethod
    def _entry_name(cls, dirname: str, split: str | None, obj: dict[str, Any]) -> str:
        """Name a shard entry in errors: the index file it comes from and its data file."""
        index = os.path.join(dirname, split or "", get_index_basename())
        raw = obj.get("raw_data")
        basename = raw.get("basename") if isinstance(raw, dict) else None
        shard = f" {basename!r}" if isinstance(basename, str) else ""
        return f"{index}: {cls.format} shard{shard}"

    @classmethod
    def _fields_problem(cls, obj: dict[str, Any]) -> str | None:
        """What is wrong with the (well-typed) per-format fields of a shard entry, if anything.

        Args:
            obj (Dict[str, Any]): The shard entry.

        Returns:
            str | None: The problem, or ``None``.
        """
        return None

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
