"""Reference path ``streaming.base.format.base``: re-exports of :mod:`streaming.format.base`."""

from streaming.format.base.reader import FileInfo, Reader

__all__ = ["FileInfo", "Reader"]
