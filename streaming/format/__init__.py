"""On-disk formats: index.json model, MDS/JSON/XSV shards, encodings, compression, hashes.

:func:`reader_from_json` turns one shard entry of an ``index.json`` into a :class:`Reader` of its
format, through the ``_readers`` registry (format name -> Reader class). Formats register there;
the built-in ones are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from streaming._lazy import lazy_getattr
from streaming.format.base.reader import FileInfo, Reader
from streaming.format.index import get_index_basename
from streaming.format.shard_files import decompress_shard, verify_hash

__all__ = [
    "CSVWriter",
    "FileInfo",
    "JSONWriter",
    "MDSWriter",
    "Reader",
    "TSVWriter",
    "XSVWriter",
    "decompress_shard",
    "get_index_basename",
    "get_reader_class",
    "reader_from_json",
    "verify_hash",
]

# Format name -> Reader class. Users and format modules may add entries.
_readers: dict[str, type[Reader]] = {}

# Built-in formats, imported when first needed: format name -> (module, class).
_builtin_readers = {
    "mds": ("streaming.format.mds.reader", "MDSReader"),
    "json": ("streaming.format.json.reader", "JSONReader"),
    "csv": ("streaming.format.xsv.reader", "CSVReader"),
    "tsv": ("streaming.format.xsv.reader", "TSVReader"),
    "xsv": ("streaming.format.xsv.reader", "XSVReader"),
}

# Lazily imported public names: name -> module.
_lazy = {
    "MDSReader": "streaming.format.mds.reader",
    "MDSWriter": "streaming.format.mds.writer",
    "JSONReader": "streaming.format.json.reader",
    "JSONWriter": "streaming.format.json.writer",
    "CSVReader": "streaming.format.xsv.reader",
    "CSVWriter": "streaming.format.xsv.writer",
    "TSVReader": "streaming.format.xsv.reader",
    "TSVWriter": "streaming.format.xsv.writer",
    "XSVReader": "streaming.format.xsv.reader",
    "XSVWriter": "streaming.format.xsv.writer",
}


__getattr__ = lazy_getattr(__name__, _lazy, globals())


def known_formats() -> set[str]:
    """List the shard formats that readers exist for.

    Returns:
        Set[str]: Format names (``mds``, ``json``, ``csv``, ``tsv``, ``xsv``, and any registered).
    """
    return set(_readers) | set(_builtin_readers)


def get_reader_class(fmt: str) -> type[Reader]:
    """Get the Reader class for a shard format.

    Args:
        fmt (str): Format name from the index (``mds``, ``json``, ``csv``, ...).

    Returns:
        Type[Reader]: The reader class.

    Raises:
        ValueError: Unknown format.
    """
    cls = _readers.get(fmt)
    if cls is None:
        spec = _builtin_readers.get(fmt) if isinstance(fmt, str) else None
        if spec is None:
            raise ValueError(f"Unsupported shard format {fmt!r}; known: {sorted(known_formats())}")
        cls = getattr(importlib.import_module(spec[0]), spec[1])
        _readers[fmt] = cls
    return cls


def reader_from_json(dirname: str, split: str | None, obj: dict[str, Any]) -> Reader:
    """Initialize the reader from JSON object.

    Args:
        dirname (str): Local directory containing shards.
        split (str, optional): Which dataset split to use, if any.
        obj (Dict[str, Any]): JSON object to load (one shard entry of ``index.json``).

    Returns:
        Reader: Loaded Reader of `format` type.

    Raises:
        ValueError: Unsupported version or format, or a malformed entry.
    """
    if not isinstance(obj, dict) or obj.get("version") != 2:
        version = obj.get("version") if isinstance(obj, dict) else None
        raise ValueError(f"Unsupported streaming data version: {version}. Expected version 2.")
    return get_reader_class(obj.get("format")).from_json(dirname, split, obj)
