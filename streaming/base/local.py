"""Reference path ``streaming.base.local``: re-exports of :mod:`streaming.local`."""

from streaming.local import LocalDataset

__all__ = ["LocalDataset"]
