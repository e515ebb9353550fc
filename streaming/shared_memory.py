"""The reference's thin POSIX shared-memory wrapper, for user code that imports it.

StreamingDataset itself uses no shared memory (see ``streaming.run_state`` and
``streaming.storage.cache``); this exists so that ``streaming.base.shared.SharedMemory`` keeps
working for code that used it directly.
"""

from __future__ import annotations

import atexit
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory as _BuiltinSharedMemory

__all__ = ["SharedMemory", "_get_path"]


def _get_path(prefix_int: int, name: str) -> str:
    """Get the name of a shared resource with the reference's naming (``000000_name``).

    Args:
        prefix_int (int): Prefix number.
        name (str): Resource name.

    Returns:
        str: The prefixed name.
    """
    return f"{prefix_int:06}_{name}"


class SharedMemory:
    """A named POSIX shared-memory block (the reference's wrapper of the builtin class).

    Args:
        name (str, optional): Block name; a random one is chosen if ``None``.
        create (bool, optional): Create (``True``), attach (``False``), or create-else-attach
            (``None``). Defaults to ``None``.
        size (int): Size in bytes (when creating). Defaults to ``0``.
        auto_cleanup (bool): Clean up (close, and unlink the block if we created it) when the
            interpreter exits. Defaults to ``True``.
    """

    def __init__(self, name: str | None = None, create: bool | None = None, size: int = 0,
                 auto_cleanup: bool = True) -> None:
        self.created_shms: list[_BuiltinSharedMemory] = []
        self.opened_shms: list[_BuiltinSharedMemory] = []
        self.auto_cleanup = auto_cleanup
        if create is None:
            try:
                self.shm = _BuiltinSharedMemory(name, True, size)
                self.created_shms.append(self.shm)
            except FileExistsError:
                self.shm = _BuiltinSharedMemory(name, False, size)
                self.opened_shms.append(self.shm)
        elif create:
            self.shm = _BuiltinSharedMemory(name, True, size)
            self.created_shms.append(self.shm)
        else:
            self.shm = _BuiltinSharedMemory(name, False, size)
            self.opened_shms.append(self.shm)
        if auto_cleanup:
            # At exit, as in the reference: the registration keeps this object (and so the
            # mapping behind ``buf``) alive until then, even when the caller kept only ``buf``.
            atexit.register(self.cleanup)

    @property
    def buf(self) -> memoryview:
        """The block's bytes."""
        return self.shm.buf  # type: ignore[return-value]

    @property
    def name(self) -> str:
        """The block's name."""
        return self.shm.name

    def cleanup(self) -> None:
        """Close every handle; unlink the blocks we created."""
        for shm in self.opened_shms:
            shm.close()
            try:  # attaching registered it with the tracker; only the creator unlinks
                resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
            except Exception:
                pass
        for shm in self.created_shms:
            shm.close()
            if self.auto_cleanup:
                try:
                    shm.unlink()
                except FileNotFoundError:
                    pass
        self.opened_shms = []
        self.created_shms = []
