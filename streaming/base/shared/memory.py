"""Re-export of :mod:`streaming.shared_memory` at the reference's path."""

from streaming.shared_memory import SharedMemory

__all__ = ["SharedMemory"]
