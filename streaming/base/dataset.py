"""Re-export of :mod:`streaming.dataset` at the reference's path."""

from streaming.constant import (  # noqa: F401 - the reference's module exposes these names
    BARRIER,
    BARRIER_FILELOCK,
    CACHE_FILELOCK,
    CACHE_USAGE,
    DEFAULT_TIMEOUT,
    EPOCH_DATA,
    EPOCH_SHAPE,
    NEVER,
    NEXT_EPOCH,
    RESUME,
    SHARD_ACCESS_TIMES,
    SHARD_STATES,
    TICK,
)
from streaming.dataset import StreamingDataset

__all__ = ["StreamingDataset"]
