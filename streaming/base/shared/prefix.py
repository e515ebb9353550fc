"""Re-export of the reference's shared-resource naming helper."""

from streaming.constant import (  # noqa: F401
    BARRIER_FILELOCK,
    CACHE_FILELOCK,
    LOCALS,
    SHM_TO_CLEAN,
    TICK,
)
from streaming.shared_memory import _get_path

__all__ = ["_get_path"]
