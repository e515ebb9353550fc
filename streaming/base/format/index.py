"""Reference path ``streaming.base.format.index``: re-exports of :mod:`streaming.format.index`."""

from streaming.format.index import get_index_basename

__all__ = ["get_index_basename"]
