"""Re-exports of ``streaming.plan.batching`` at the reference's module path.

As in the reference, they take a ``StreamingDataset`` and a ``World`` (the parallel world); a
``streaming.plan.PlanSpec`` and a ``(nodes, ranks per node, workers per rank)`` tuple work too.
"""

from streaming.plan.batching import (
    batching_methods,
    generate_work,
    generate_work_device_per_stream_batching,
    generate_work_per_stream_batching,
    generate_work_random_batching,
    generate_work_stratified_batching,
)
from streaming.world import World  # noqa: F401

__all__ = [
    "batching_methods",
    "generate_work",
    "generate_work_device_per_stream_batching",
    "generate_work_per_stream_batching",
    "generate_work_random_batching",
    "generate_work_stratified_batching",
]
