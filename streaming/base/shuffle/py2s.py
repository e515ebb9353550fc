"""Re-export of ``get_shuffle_py2s`` at the reference's module path."""

from streaming.plan.shuffle import get_shuffle_py2s

__all__ = ["get_shuffle_py2s"]
