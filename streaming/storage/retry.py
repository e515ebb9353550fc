"""Retrying storage requests: which errors are worth another try, and how long to wait."""

from __future__ import annotations

import errno
import random
import time
from typing import Callable, TypeVar

from streaming.storage.atomic import STORAGE_ERRNOS

__all__ = [
    "PERMANENT_ERRORS", "backoff_delay", "call_with_retry", "is_retryable", "remote_missing",
]

T = TypeVar("T")

# Errors that another attempt cannot fix: a missing object, a refused permission, a bad
# argument, a missing package (and a full disk: STORAGE_ERRNOS). Everything else (dropped
# connections, timeouts, throttling, truncated bodies, 5xx) is transient.
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (
    FileNotFoundError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
    ValueError,
    TypeError,
    ImportError,
    NotImplementedError,
)


def is_retryable(error: BaseException) -> bool:
    """Whether another attempt might succeed after ``error``.

    Args:
        error (BaseException): The error an attempt raised.

    Returns:
        bool: ``False`` for permanent errors (missing object, permission, bad input, no space
        or quota left), ``True`` for transient ones.
    """
    if isinstance(error, PERMANENT_ERRORS):
        return False
    if isinstance(error, OSError) and error.errno in STORAGE_ERRNOS:
        return False  # (the local disk full, say: retrying in a second would not help)
    return isinstance(error, Exception)


def remote_missing(url: str, detail: str = "") -> FileNotFoundError:
    """The error for a remote file that does not exist.

    Shaped as the reference's (an ``ENOENT`` ``FileNotFoundError``: ``[Errno 2] No such file or
    directory: '<url>'``, with ``errno`` and ``filename`` set), saying that the remote is missing.

    Args:
        url (str): The remote file.
        detail (str): What the storage said (an error code), if anything.

    Returns:
        FileNotFoundError: The error to raise.
    """
    what = f"No such file or directory (remote file not found{', ' + detail if detail else ''})"
    return FileNotFoundError(errno.ENOENT, what, url)


def backoff_delay(attempt: int, initial: float, maximum: float = 10.0) -> float:
    """Seconds to sleep before retry number ``attempt`` (1-based): exponential with jitter.

    Full jitter spreads the retries of many workers hitting one throttled endpoint.

    Args:
        attempt (int): Which retry this is (1 for the first retry).
        initial (float): Backoff before the first retry, in seconds.
        maximum (float): Upper bound of the exponential part, in seconds.

    Returns:
        float: The delay in seconds.
    """
    base = min(maximum, initial * 2 ** (attempt - 1))
    return base / 2 + random.random() * base / 2


def call_with_retry(
    fn: Callable[[], T],
    *,
    attempts: int,
    backoff: float,
    describe: Callable[[BaseException, int], BaseException] | None = None,
) -> T:
    """Call ``fn`` until it succeeds, a permanent error occurs, or ``attempts`` are spent.

    Args:
        fn (Callable[[], T]): The operation.
        attempts (int): Total number of attempts (at least 1).
        backoff (float): Initial backoff in seconds, doubled after each failure, with jitter.
        describe (Callable, optional): Turns the last transient error and the number of
            attempts made into the exception to raise (chained from the error).

    Returns:
        T: What ``fn`` returned.

    Raises:
        Exception: A permanent error at once, or (after the last attempt) ``describe``'s
            exception, or the last error itself.
    """
    attempts = max(1, int(attempts))
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as error:
            if not is_retryable(error):
                raise
            if attempt == attempts:
                if describe is None:
                    raise
                raise describe(error, attempt) from error
            time.sleep(backoff_delay(attempt, backoff))
    raise AssertionError("unreachable")  # pragma: no cover
