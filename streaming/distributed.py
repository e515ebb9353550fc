"""Who am I in a distributed run: rank and world size from the environment, and thin collectives.

The reference's environment variables keep their meaning: ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` (defaults 0, 1, 0, 1). The collectives are no-ops unless
``torch.distributed`` has been initialised.
"""

from __future__ import annotations

import os
from typing import TypeVar, cast

TObj = TypeVar("TObj")

__all__ = [
    "all_gather", "barrier", "broadcast", "get_rank", "get_local_rank", "get_local_world_size",
    "get_world_size", "all_gather_object", "maybe_init_dist",
]


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"Environment variable {name}={value!r} must be an integer") from None


def get_rank() -> int:
    """Returns the rank of the current process, which is on ``[0; WORLD_SIZE - 1]``.

    Returns:
        int: The rank.
    """
    return _env_int("RANK", 0)


def get_world_size() -> int:
    """Returns the world size, which is the number of processes participating in this training run.

    Returns:
        int: The world size.
    """
    return _env_int("WORLD_SIZE", 1)


def get_local_rank() -> int:
    """Returns the local rank for the current process, which is on ``[0; LOCAL_WORLD_SIZE - 1]``.

    Returns:
        int: The local rank.
    """
    return _env_int("LOCAL_RANK", 0)


def get_local_world_size() -> int:
    """Returns the local world size, which is the number of processes for the current node.

    Returns:
        int: The local world size.
    """
    return _env_int("LOCAL_WORLD_SIZE", 1)


def _dist():
    """torch.distributed if it is available and initialised, else None."""
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


def barrier() -> None:
    """Synchronizes all processes (no-op unless torch.distributed is initialised)."""
    dist = _dist()
    if dist is not None:
        dist.barrier()


def broadcast(tensor, src: int) -> None:
    """Broadcasts the tensor to the whole group.

    Args:
        tensor (Tensor): Data to be sent if src is the rank of current process, and tensor to be
            used to save received data otherwise.
        src (int): Source rank.
    """
    dist = _dist()
    if dist is not None:
        dist.broadcast(tensor, src)


def all_gather(tensor_list: list, tensor) -> None:
    """Gathers tensors from the whole group in a list.

    Args:
        tensor_list (list[Tensor]): Output list of correctly-sized tensors.
        tensor (Tensor): Tensor to be broadcast from current process.
    """
    dist = _dist()
    if dist is not None:
        dist.all_gather(tensor_list, tensor)


def all_gather_object(obj: TObj) -> list[TObj]:
    """Collect a pickle-able object from each rank and return a list of these objects.

    Args:
        obj (TObj): Object to be gathered.

    Returns:
        List[TObj]: A list of objects indexed by rank.

    Raises:
        RuntimeError: ``WORLD_SIZE`` > 1 but torch.distributed is not initialised.
    """
    dist = _dist()
    if dist is not None:
        gathered = [None] * get_world_size()
        dist.all_gather_object(gathered, obj)
        return cast(list[TObj], gathered)
    world_size = get_world_size()
    if world_size == 1:
        return [obj]
    raise RuntimeError(
        f"The world_size({world_size}) > 1, but the distributed package is not available or has "
        "not been initialized. Please check you have initialized the distributed runtime and "
        "that PyTorch has been built with distributed support.")


def maybe_init_dist() -> bool:
    """Initialize torch.distributed ourselves, if necessary.

    StreamingDataset itself never needs this (it coordinates through the cache directory), but the
    reference exposes it and user code calls it.

    Returns:
        bool: Whether we initialized dist ourselves.
    """
    import torch
    import torch.distributed as dist

    if get_world_size() == 1 or not dist.is_available() or dist.is_initialized():
        return False
    backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    dist.init_process_group(backend=backend, rank=get_rank(), world_size=get_world_size())
    return True
