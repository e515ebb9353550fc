"""Hash algorithms for shard files: every ``hashlib`` constructor plus the ``xxhash`` family.

The set of names is the reference's: each ``hashlib.algorithms_available`` name that ``hashlib``
exposes as an attribute, except the variable-length ``shake_*``, plus ``xxhash``'s algorithms.
Digests are lowercase hex strings, as stored in ``index.json``.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable

import xxhash

__all__ = ["get_hash", "get_hashes", "is_hash", "hash_chunks"]


def _collect() -> dict[str, Callable[..., Any]]:
    algos: dict[str, Callable[..., Any]] = {}
    for name in hashlib.algorithms_available:
        if hasattr(hashlib, name) and not name.startswith("shake_"):
            algos[name] = getattr(hashlib, name)
    for name in xxhash.algorithms_available:
        algos[name] = getattr(xxhash, name)
    return algos


# Hash algorithms (name -> constructor taking optional initial data).
_hashes: dict[str, Callable[..., Any]] = _collect()


def get_hashes() -> set[str]:
    """List supported hash algorithms.

    Returns:
        Set[str]: Hash algorithm names.
    """
    return set(_hashes)


def is_hash(algo: str) -> bool:
    """Get whether this is a supported hash algorithm.

    Args:
        algo (str): Hash algorithm.

    Returns:
        bool: Whether supported.
    """
    return algo in _hashes


def _constructor(algo: str) -> Callable[..., Any]:
    func = _hashes.get(algo)
    if func is None:
        raise ValueError(f"{algo} is not a supported hash algorithm.")
    return func


def get_hash(algo: str, data: bytes) -> str:
    """Apply the hash algorithm to the data.

    Args:
        algo (str): Hash algorithm.
        data (bytes): Data to hash (any buffer).

    Returns:
        str: Hex digest.

    Raises:
        ValueError: Unknown algorithm.
    """
    return _constructor(algo)(data).hexdigest()


def hash_chunks(algo: str, chunks: Iterable[bytes]) -> str:
    """Hash the concatenation of ``chunks`` without concatenating them.

    Args:
        algo (str): Hash algorithm.
        chunks (Iterable[bytes]): Buffers, hashed in order.

    Returns:
        str: Hex digest, equal to ``get_hash(algo, b''.join(chunks))``.

    Raises:
        ValueError: Unknown algorithm.
    """
    obj = _constructor(algo)()
    for chunk in chunks:
        obj.update(chunk)
    return obj.hexdigest()
