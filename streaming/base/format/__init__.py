"""Reference path ``streaming.base.format``: re-exports of :mod:`streaming.format`."""

from __future__ import annotations

from typing import Any

from streaming.format import FileInfo, Reader, _readers, get_index_basename, reader_from_json

__all__ = [
    "CSVWriter",
    "FileInfo",
    "get_index_basename",
    "JSONWriter",
    "MDSWriter",
    "Reader",
    "reader_from_json",
    "TSVWriter",
    "XSVWriter",
]

_ = _readers  # re-exported: users register their own formats here


def __getattr__(name: str) -> Any:
    import streaming.format

    return getattr(streaming.format, name)
