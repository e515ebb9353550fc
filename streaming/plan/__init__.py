"""Epoch planning: pure functions from shard sizes, streams, world and epoch to sample ids.

``PlanSpec`` holds what planning needs to know about a dataset; ``epoch_work`` turns it, a world
and a position into every worker's sample ids, exactly as the reference ``StreamingDataset``.
"""

from streaming.plan.batching import generate_work
from streaming.plan.epoch import epoch_work, worker_plan, worker_plan_head, worker_work
from streaming.plan.partition import get_partitions
from streaming.plan.sampling import (
    StreamWeights,
    get_sampling,
    resample_streams,
    resolve_stream_weights,
)
from streaming.plan.shuffle import get_shuffle
from streaming.plan.spec import (
    PlanSpec,
    default_num_canonical_nodes,
    default_predownload,
    default_shuffle_block_size,
    parallel_world_shape,
)

__all__ = [
    "PlanSpec",
    "StreamWeights",
    "default_num_canonical_nodes",
    "default_predownload",
    "default_shuffle_block_size",
    "epoch_work",
    "generate_work",
    "get_partitions",
    "get_sampling",
    "get_shuffle",
    "parallel_world_shape",
    "resample_streams",
    "resolve_stream_weights",
    "worker_plan",
    "worker_plan_head",
    "worker_work",
]
