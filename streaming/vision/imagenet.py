"""ImageNet (ILSVRC 2012): 1.28M training images in 1,000 classes."""

from __future__ import annotations

from streaming.vision.base import StreamingVisionDataset

__all__ = ["StreamingImageNet"]


class StreamingImageNet(StreamingVisionDataset):
    """ImageNet streamed: samples ``x`` (an RGB image) and ``y`` (its class, 0-999).

    See :class:`~streaming.vision.base.StreamingVisionDataset` for the arguments.
    """
