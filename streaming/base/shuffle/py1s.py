"""Re-export of ``get_shuffle_py1s`` at the reference's module path."""

from streaming.plan.shuffle import divide_spans, get_shuffle_py1s

__all__ = ["divide_spans", "get_shuffle_py1s"]
