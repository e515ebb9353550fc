"""The reference's ready-made vision datasets: ADE20K, CIFAR-10, COCO, ImageNet.

``StreamingCIFAR10`` and ``StreamingImageNet`` are torchvision ``VisionDataset`` s (through
:class:`~streaming.vision.base.StreamingVisionDataset`) and need ``torchvision``, which this
project does not depend on; ``StreamingADE20K`` and ``StreamingCOCO`` do not.
"""

from __future__ import annotations

from streaming.vision.ade20k import StreamingADE20K
from streaming.vision.cifar10 import StreamingCIFAR10
from streaming.vision.coco import StreamingCOCO
from streaming.vision.imagenet import StreamingImageNet

__all__ = ["StreamingADE20K", "StreamingCIFAR10", "StreamingCOCO", "StreamingImageNet"]
