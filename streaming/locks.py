"""File locks between processes that notice a release within about a millisecond.

``filelock`` retries a busy lock every 50 ms. The project's locks are mostly held briefly (a
run's JSON state, a shard's ledger row while it is checked or prepared), so that interval was the
cost of nearly every contended acquire: two DataLoader workers starting an epoch together made one
of them wait ~50 ms for the other's sub-millisecond update, a third of the time to first batch.
Here a busy lock is retried after 0.5 ms, then at doubling intervals up to filelock's 50 ms, so a
long wait (a shard being downloaded by another process) costs no more polling than before.
"""

from __future__ import annotations

import time
from typing import Any

import filelock

__all__ = ["FileLock"]

FIRST_RETRY_SECONDS = 0.0005
LAST_RETRY_SECONDS = 0.05


class FileLock(filelock.FileLock):
    """``filelock.FileLock`` whose waits retry soon, then less and less often (see the module's
    docstring). Same arguments and behaviour otherwise."""

    def acquire(self, timeout: float | None = None, poll_interval: float | None = None,
                **kwargs: Any) -> Any:
        """Acquire the lock (as ``filelock.FileLock.acquire``).

        Args:
            timeout (float, optional): Seconds to wait; negative waits indefinitely. Defaults to
                ``None``: the lock's own ``timeout``.
            poll_interval (float, optional): A fixed retry interval instead of the growing
                one. Defaults to ``None``.
            **kwargs: As ``filelock.FileLock.acquire`` (``blocking`` and others).

        Returns:
            Any: What ``filelock.FileLock.acquire`` returns (a context manager releasing it).

        Raises:
            filelock.Timeout: If the lock stayed busy for ``timeout`` seconds.
        """
        wait = self.timeout if timeout is None else timeout
        blocking = kwargs.get("blocking", getattr(self, "blocking", True))
        if poll_interval is not None or wait == 0 or blocking is False:
            return super().acquire(timeout, poll_interval, **kwargs)
        deadline = None if wait < 0 else time.monotonic() + wait
        delay = FIRST_RETRY_SECONDS
        while True:
            try:
                return super().acquire(0, **kwargs)
            except filelock.Timeout:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise
                time.sleep(delay if left is None else min(delay, left))
                delay = min(2 * delay, LAST_RETRY_SECONDS)
