"""Small helpers the reference exposes from ``streaming.base.util``.

Parsing human-readable sizes and counts, retrying with backoff, waiting for a file, and the
no-op :func:`clean_stale_shared_memory` (this package keeps no POSIX shared memory, so a crashed
run leaves nothing behind to clean).
"""

from __future__ import annotations

import collections.abc
import functools
import logging
import os
import random
import time
from typing import Any, Callable, Sequence, TypeVar, Union, cast

logger = logging.getLogger(__name__)

TCallable = TypeVar("TCallable", bound=Callable)

__all__ = [
    "get_list_arg", "wait_for_file_to_exist", "bytes_to_int", "number_abbrev_to_int",
    "clean_stale_shared_memory", "get_import_exception_message", "retry",
]

# Binary multiples, as the reference: "kb" is 1024 bytes.
_BYTE_UNITS = {f"{p}b": 1024**(i + 1) for i, p in enumerate("kmgtpezy")}
# Decimal multiples for counts: "64M" is 64 million samples, "77b" 77 billion.
_COUNT_UNITS = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}


def get_list_arg(text: str) -> list[str]:
    """Pass a list as a command-line flag.

    Args:
        text (str): Text to split.

    Returns:
        List[str]: Splits, if any.
    """
    return text.split(",") if text else []


def wait_for_file_to_exist(filename: str, poll_interval: float, timeout: float,
                           err_msg: str) -> None:
    """Wait for the file to exist till timeout seconds. Raise an Exception after that.

    Args:
        filename (str): A file name
        poll_interval (float): Number of seconds to wait before next polling
        timeout (float): Number of seconds to wait for a file to exist before raising an exception
        err_msg (str): Error message description for an exception

    Raises:
        RuntimeError: Raise an Exception if file does not exist after timeout
    """
    start = time.time()
    while True:
        time.sleep(poll_interval)
        if os.path.exists(filename):
            time.sleep(poll_interval)
            return
        elapsed = time.time() - start
        if elapsed > timeout:
            raise RuntimeError(f"{err_msg}{timeout:.3f} < {elapsed:.3f} secs.")


def _parse_with_units(text: str, units: dict[str, int], plain_suffix: str | None) -> int:
    """Parse ``<number><unit>`` (or a bare integer) into an int, as the reference does."""
    text = text.lower().strip()
    for suffix, scale in units.items():
        if text.endswith(suffix):
            try:
                return int(float(text[:-len(suffix)]) * scale)
            except ValueError:
                break
    else:
        if plain_suffix and text.endswith(plain_suffix) and text[:-1].isdigit():
            return int(text[:-1])
        if text.isdigit():
            return int(text)
    supported = ([plain_suffix] if plain_suffix else []) + list(units)
    raise ValueError(f"Unsupported value/suffix {text}. Supported suffix are {supported}.")


def bytes_to_int(bytes_str: Union[int, str]) -> int:
    """Convert human readable byte format to an integer.

    Args:
        bytes_str (Union[int, str]): Value to convert, e.g. ``100``, ``"100b"``, ``"64kb"``,
            ``"1.5gb"`` (binary multiples).

    Raises:
        ValueError: Invalid byte suffix.

    Returns:
        int: Integer value of bytes.
    """
    if isinstance(bytes_str, (int, float)):
        return int(bytes_str)
    return _parse_with_units(bytes_str, _BYTE_UNITS, "b")


def number_abbrev_to_int(abbrev_str: Union[int, str]) -> int:
    """Convert human readable number abbreviations to an integer.

    Args:
        abbrev_str (Union[int, str]): Value to convert, e.g. ``"100k"``, ``"64M"``, ``"77b"``.

    Raises:
        ValueError: Invalid number suffix.

    Returns:
        int: Integer value of number abbreviation.
    """
    if isinstance(abbrev_str, (int, float)):
        return int(abbrev_str)
    return _parse_with_units(abbrev_str, _COUNT_UNITS, None)


def clean_stale_shared_memory() -> None:
    """Clean up leaked shared memory (compatibility no-op).

    The reference keeps its coordination state in POSIX shared memory, which a crashed run can
    leak. This package coordinates through lock files and memory-mapped files in the cache
    directory instead, which the kernel releases when a process dies, so there is nothing to
    clean. Kept so that scripts calling it keep working.
    """


def get_import_exception_message(package_name: str, extra_deps: str) -> str:
    """Get import exception message.

    Args:
        package_name (str): Package name.
        extra_deps (str): The extra that provides it.

    Returns:
        str: Exception message.
    """
    return (f"Streaming was installed without {package_name} support. To use {package_name} "
            f"related packages with Streaming, run `pip install 'shardstream[{extra_deps}]'`.")


def retry(  # type: ignore[misc]
    exc_class: Union[TCallable, type[Exception], Sequence[type[Exception]]] = Exception,
    clean_up_fn: Callable[[], None] | None = None,
    num_attempts: int = 3,
    initial_backoff: float = 1.0,
    max_jitter: float = 0.5,
):
    """Decorator to retry a function with backoff and jitter.

    Attempt ``i`` (from 0) that fails is followed by a sleep of
    ``initial_backoff * 2**i + random.random() * max_jitter`` seconds. Usable bare (``@retry``)
    or called (``@retry(OSError, num_attempts=5)``).

    Args:
        exc_class (Type[Exception] | Sequence[Type[Exception]]], optional): The exception class or
            classes to retry. Defaults to Exception.
        clean_up_fn (Callable[[], None], optional): A function to call after each failed attempt
            before retrying. Defaults to None.
        num_attempts (int, optional): The total number of attempts to make. Defaults to 3.
        initial_backoff (float, optional): The initial backoff, in seconds. Defaults to 1.0.
        max_jitter (float, optional): The maximum amount of random jitter to add. Defaults to 0.5.

    Raises:
        ValueError: ``num_attempts`` is less than 1.
    """
    if num_attempts < 1:
        raise ValueError("num_attempts must be at-least 1")

    bare = not isinstance(exc_class, collections.abc.Sequence) and not (
        isinstance(exc_class, type) and issubclass(exc_class, Exception))
    catch = Exception if bare else exc_class
    if isinstance(catch, collections.abc.Sequence):
        catch = tuple(catch)

    def wrap(func: TCallable) -> TCallable:

        @functools.wraps(func)
        def attempt(*args: Any, **kwargs: Any):
            for i in range(num_attempts):
                try:
                    return func(*args, **kwargs)
                except catch as e:  # type: ignore[misc]
                    if clean_up_fn is not None:
                        clean_up_fn()
                    logger.debug(f"Attempt {i + 1}/{num_attempts} failed with: {e}")
                    if i + 1 == num_attempts:
                        raise
                    time.sleep(initial_backoff * 2**i + random.random() * max_jitter)

        return cast(TCallable, attempt)

    if bare:
        return wrap(cast(TCallable, exc_class))
    return wrap
