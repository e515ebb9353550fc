"""Reference path ``streaming.base.hashing``: re-exports of :mod:`streaming.format.hashing`."""

from streaming.format.hashing import _hashes, get_hash, get_hashes, is_hash

__all__ = ["get_hash", "get_hashes", "is_hash"]

_reexported = (_hashes,)
