"""Re-export of ``get_shuffle_naive`` at the reference's module path."""

from streaming.plan.shuffle import get_shuffle_naive

__all__ = ["get_shuffle_naive"]
