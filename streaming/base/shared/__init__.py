"""The reference's ``streaming.base.shared`` path. Re-exports only.

StreamingDataset coordinates through the cache directory, not shared memory; the reference's
``SharedArray``/``SharedBarrier``/``SharedScalar``/``get_shm_prefix`` internals have no
counterpart (see docs/compatibility.md).
"""

from streaming.shared_memory import SharedMemory, _get_path

__all__ = ["SharedMemory", "_get_path"]
