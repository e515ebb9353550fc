"""Re-export of :mod:`streaming.shared_memory` at the reference's path."""

from streaming.constant import TICK  # noqa: F401
from streaming.shared_memory import SharedMemory

__all__ = ["SharedMemory"]
