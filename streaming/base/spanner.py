"""Re-export of :mod:`streaming.spanner` at the reference's path."""

from streaming.spanner import Spanner

__all__ = ["Spanner"]
