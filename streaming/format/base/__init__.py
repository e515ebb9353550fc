"""Format-agnostic shard readers and writers."""

from streaming.format.base.reader import FileInfo, JointReader, Reader, SplitReader
from streaming.format.base.writer import JointWriter, SplitWriter, Writer

__all__ = [
    "FileInfo",
    "JointReader",
    "JointWriter",
    "Reader",
    "SplitReader",
    "SplitWriter",
    "Writer",
]
