"""Re-export of :mod:`streaming.constant` at the reference's path."""

from streaming.constant import (
    BARRIER,
    BARRIER_FILELOCK,
    CACHE_FILELOCK,
    CACHE_USAGE,
    DEFAULT_TIMEOUT,
    EPOCH_DATA,
    EPOCH_SHAPE,
    LOCALS,
    NEXT_EPOCH,
    RESUME,
    SHARD_ACCESS_TIMES,
    SHARD_STATES,
    SHM_TO_CLEAN,
    TICK,
)

__all__ = [
    "BARRIER", "BARRIER_FILELOCK", "CACHE_FILELOCK", "CACHE_USAGE", "DEFAULT_TIMEOUT",
    "EPOCH_DATA", "EPOCH_SHAPE", "LOCALS", "NEXT_EPOCH", "RESUME", "SHARD_ACCESS_TIMES",
    "SHARD_STATES", "SHM_TO_CLEAN", "TICK",
]
