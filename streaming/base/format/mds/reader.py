"""Reference path ``streaming.base.format.mds.reader``: re-exports."""

from streaming.format.mds.reader import MDSReader

__all__ = ["MDSReader"]
