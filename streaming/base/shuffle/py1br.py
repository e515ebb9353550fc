"""Re-export of ``get_shuffle_py1br`` at the reference's module path."""

from streaming.plan.shuffle import get_shuffle_py1br

__all__ = ["get_shuffle_py1br"]
