"""Re-export of ``get_partitions_orig`` at the reference's module path."""

from streaming.plan.partition import get_partitions_orig

__all__ = ["get_partitions_orig"]
