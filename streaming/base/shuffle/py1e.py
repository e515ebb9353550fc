"""Re-export of ``get_shuffle_py1e`` at the reference's module path."""

from streaming.plan.shuffle import get_shuffle_py1e

__all__ = ["get_shuffle_py1e"]
