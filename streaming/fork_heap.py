"""Keep the main process's garbage collections off the pages it shares with forked workers.

A forked DataLoader worker shares the main process's memory copy-on-write, both ways: whichever
process first writes a shared page gets its own copy (a page fault and 4 KB copied). A full
collection in the main process writes into the header of every object it tracks, so one during
an epoch with fresh workers copied the whole heap: with text rows and 2 workers, ~10k faults
and ~70 ms of a ~0.24 s epoch, against none without workers. Python's advice for forking
processes is to ``gc.freeze()`` before the fork: collections then skip what is frozen. Here
the objects that exist when the workers are forked are frozen while an epoch with forked
workers runs, and unfrozen when the last such epoch ends (cyclic garbage among them waits until
then; garbage made during the epoch is collected as usual). A process whose own code froze
objects is left alone: it manages its heap itself. As many frozen objects as when this module
was imported count as no one's: CPython 3.12 keeps its immortal objects (a few hundred tuples of
its built-in types) in the frozen generation, where each full collection puts them back after an
unfreeze; 3.11 and 3.13 have none there.
"""

from __future__ import annotations

import gc
import multiprocessing
import threading
from typing import Any

__all__ = ["HeapFreeze"]

_lock = threading.Lock()
_epochs = 0  # epochs with forked workers running that hold the freeze
_frozen = False  # whether the objects frozen are ours to unfreeze
_baseline = gc.get_freeze_count()  # up to this count, no one else's freeze holds


class HeapFreeze:
    """Freezes the main process's objects for one epoch with forked workers (see the module's
    docstring); :meth:`release` ends it. Nothing happens without workers, for workers that are
    not forked, or with the collector disabled.

    Args:
        num_workers (int): The loader's worker processes.
        context (Any): The loader's ``multiprocessing_context`` (``None``: the default), a
            context or a start method's name.
    """

    def __init__(self, num_workers: int, context: Any) -> None:
        global _epochs, _frozen
        self.held = False
        if num_workers <= 0 or not gc.isenabled() or _start_method(context) != "fork":
            return
        with _lock:
            if _epochs == 0:
                # Someone else's freeze (or objects left frozen): theirs to manage.
                _frozen = gc.get_freeze_count() <= _baseline
                if _frozen:
                    gc.freeze()
            _epochs += 1
            self.held = True

    def release(self) -> None:
        """End this epoch's hold (again: no effect); the last one unfreezes."""
        global _epochs, _frozen
        if not self.held:
            return
        with _lock:
            self.held = False
            _epochs -= 1
            if _epochs == 0 and _frozen:
                gc.unfreeze()
                _frozen = False


def _start_method(context: Any) -> str:
    """The start method a DataLoader's workers will use."""
    if context is None:
        return multiprocessing.get_start_method()
    if isinstance(context, str):
        return context
    return context.get_start_method()
