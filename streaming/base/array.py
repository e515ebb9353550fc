"""Reference path ``streaming.base.array``: re-exports of :mod:`streaming.array`."""

from streaming.array import Array

__all__ = ["Array"]
