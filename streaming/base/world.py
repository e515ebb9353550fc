"""Re-export of :mod:`streaming.world` at the reference's path."""

from streaming.world import World

__all__ = ["World"]
