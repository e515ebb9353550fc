"""Reference path ``streaming.base.format.mds.writer``: re-exports."""

from streaming.format.mds.writer import MDSWriter

__all__ = ["MDSWriter"]
