"""Re-export of :mod:`streaming.stream` at the reference's path."""

from streaming.constant import TICK  # noqa: F401
from streaming.stream import Stream, streams_registry

__all__ = ["Stream", "streams_registry"]
