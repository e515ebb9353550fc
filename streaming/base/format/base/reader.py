"""Reference path ``streaming.base.format.base.reader``: re-exports."""

from streaming.format.base.reader import FileInfo, JointReader, Reader, SplitReader

__all__ = ["FileInfo", "Reader", "JointReader", "SplitReader"]
