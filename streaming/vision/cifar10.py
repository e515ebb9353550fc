"""CIFAR-10: 60,000 32x32 colour images in 10 classes."""

from __future__ import annotations

from streaming.vision.base import StreamingVisionDataset

__all__ = ["StreamingCIFAR10"]


class StreamingCIFAR10(StreamingVisionDataset):
    """CIFAR-10 streamed: samples ``x`` (a 32x32 RGB image) and ``y`` (its class, 0-9).

    See :class:`~streaming.vision.base.StreamingVisionDataset` for the arguments.
    """
