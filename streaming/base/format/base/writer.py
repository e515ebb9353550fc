"""Reference path ``streaming.base.format.base.writer``: re-exports."""

from streaming.format.base.writer import JointWriter, SplitWriter, Writer

__all__ = ["JointWriter", "SplitWriter", "Writer"]
