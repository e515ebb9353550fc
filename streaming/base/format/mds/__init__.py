"""Reference path ``streaming.base.format.mds``: re-exports of :mod:`streaming.format.mds`."""

from streaming.format.mds.reader import MDSReader
from streaming.format.mds.writer import MDSWriter

__all__ = ["MDSReader", "MDSWriter"]
