"""ADE20K: scene parsing, images and their per-pixel annotations."""

from __future__ import annotations

from typing import Any, Callable

from streaming.dataset import StreamingDataset
from streaming.dataset_classes import standard_args

__all__ = ["StreamingADE20K"]


class StreamingADE20K(StreamingDataset):
    """ADE20K streamed: samples ``x`` (an image) and ``y`` (its annotation image).

    Takes the reference's older keyword set of :class:`~streaming.StreamingDataset` (see it for
    those arguments), with these defaults: ``partition_algo='orig'``, ``shuffle_algo='py1s'``,
    ``shuffle_block_size=1 << 18``.

    Args:
        joint_transform (Callable, optional): Takes ``(x, y)`` and returns both transformed;
            applied first. Defaults to ``None``.
        transform (Callable, optional): Transforms ``x``. Defaults to ``None``.
        target_transform (Callable, optional): Transforms ``y``. Defaults to ``None``.
    """

    def __init__(self,
                 *,
                 remote: str | None = None,
                 local: str | None = None,
                 split: str | None = None,
                 download_retry: int = 2,
                 download_timeout: float = 60,
                 validate_hash: str | None = None,
                 keep_zip: bool = False,
                 epoch_size: int | None = None,
                 predownload: int | None = None,
                 partition_algo: str = "orig",
                 cache_limit: int | None = None,
                 num_canonical_nodes: int | None = None,
                 batch_size: int | None = None,
                 shuffle: bool = False,
                 shuffle_algo: str = "py1s",
                 shuffle_seed: int = 9176,
                 shuffle_block_size: int = 1 << 18,
                 joint_transform: Callable | None = None,
                 transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        super().__init__(**standard_args(locals()))
        self.joint_transform = joint_transform
        self.transform = transform
        self.target_transform = target_transform

    def get_item(self, idx: int) -> tuple[Any, Any]:
        """Get sample by global index, blocking to load its shard if missing.

        Args:
            idx (int): Sample index.

        Returns:
            Tuple[Any, Any]: The image and its annotation, transformed.
        """
        obj = super().get_item(idx)
        x, y = obj["x"], obj["y"]
        if self.joint_transform:
            x, y = self.joint_transform((x, y))
        if self.transform:
            x = self.transform(x)
        if self.target_transform:
            y = self.target_transform(y)
        return x, y
