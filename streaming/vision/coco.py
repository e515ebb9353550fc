"""COCO object detection: images, their bounding boxes and labels."""

from __future__ import annotations

from typing import Any, Callable

from streaming.dataset import StreamingDataset
from streaming.dataset_classes import standard_args

__all__ = ["StreamingCOCO"]


class StreamingCOCO(StreamingDataset):
    """COCO streamed: each sample an RGB image with its id, size, boxes and box labels.

    Takes the reference's older keyword set of :class:`~streaming.StreamingDataset` (see it for
    those arguments), with these defaults: ``partition_algo='orig'``, ``shuffle_algo='py1s'``,
    ``shuffle_block_size=1 << 18``.

    Args:
        transform (Callable, optional): Takes ``(img, (htot, wtot), bbox_sizes, bbox_labels)``
            and returns them transformed, in that shape. Defaults to ``None``.
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
                 transform: Callable | None = None) -> None:
        super().__init__(**standard_args(locals()))
        self.transform = transform

    def get_item(self, idx: int) -> Any:
        """Get sample by global index, blocking to load its shard if missing.

        Args:
            idx (int): Sample index.

        Returns:
            Tuple: ``(img, img_id, (htot, wtot), bbox_sizes, bbox_labels)``, ``img`` in RGB.
        """
        obj = super().get_item(idx)
        img = obj["img"].convert("RGB")
        size = (obj["htot"], obj["wtot"])
        bbox_sizes, bbox_labels = obj["bbox_sizes"], obj["bbox_labels"]
        if self.transform:
            img, size, bbox_sizes, bbox_labels = self.transform(img, size, bbox_sizes, bbox_labels)
        return img, obj["img_id"], size, bbox_sizes, bbox_labels
