"""Re-export of ``get_partitions_relaxed`` at the reference's module path."""

from streaming.plan.partition import get_partitions_relaxed

__all__ = ["get_partitions_relaxed"]
