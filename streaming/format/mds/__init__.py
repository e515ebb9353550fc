"""The MDS format: binary shards of typed columns."""

from streaming.format.mds.reader import MDSReader
from streaming.format.mds.writer import MDSWriter

__all__ = ["MDSReader", "MDSWriter"]
