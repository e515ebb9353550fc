"""Re-exports of ``streaming.plan.partition`` at the reference's module path."""

from streaming.plan.partition import (
    algos,
    get_partitions,
    get_partitions_orig,
    get_partitions_relaxed,
)

__all__ = ["algos", "get_partitions", "get_partitions_orig", "get_partitions_relaxed"]
