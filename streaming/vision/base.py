"""A StreamingDataset that is also a torchvision ``VisionDataset``: samples ``x`` (an image) and
``y`` (its label), through the torchvision-style ``transform``/``target_transform``/``transforms``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from streaming.dataset import StreamingDataset
from streaming.dataset_classes import require_package, standard_args

__all__ = ["StandardTransform", "StreamingVisionDataset"]

try:  # A base class when installed (isinstance checks, torchvision's repr); not a dependency.
    from torchvision.datasets import VisionDataset
except Exception:  # noqa: BLE001 - also a broken install (a torchvision built for another torch
    # fails with RuntimeError): ADE20K and COCO, and classes given their own transform, need none
    _BASES: tuple[type, ...] = (StreamingDataset,)
else:
    _BASES = (StreamingDataset, VisionDataset)


@functools.cache
def _to_tensor() -> Callable[[Any], Any]:
    """torchvision's ``to_tensor``, looked up once (not per sample)."""
    return require_package("torchvision.transforms.functional", "StandardTransform").to_tensor


class StandardTransform:
    """An input and an output transform called jointly, after torchvision's.

    Unlike torchvision's, an input with no ``transform`` still becomes a tensor
    (``torchvision.transforms.functional.to_tensor``), as in the reference.

    Args:
        transform (Callable, optional): Input transform. Defaults to ``None``.
        target_transform (Callable, optional): Output transform. Defaults to ``None``.
    """

    def __init__(self,
                 transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, x: Any, y: Any) -> tuple[Any, Any]:
        """Apply the transforms to input and output.

        Args:
            x (Any): Input.
            y (Any): Output.

        Returns:
            Tuple[Any, Any]: Transformed input and output.
        """
        x = self.transform(x) if self.transform else _to_tensor()(x)
        if self.target_transform:
            y = self.target_transform(y)
        return x, y

    def __repr__(self) -> str:
        # (torchvision's layout, which VisionDataset's repr indents under the dataset's)
        lines = [type(self).__name__]
        for label, func in (("Transform", self.transform),
                            ("Target transform", self.target_transform)):
            if func is not None:
                head, *rest = repr(func).splitlines() or [""]
                lines += [f"{label}: {head}", *(" " * (len(label) + 2) + r for r in rest)]
        return "\n".join(lines)


class StreamingVisionDataset(*_BASES):  # type: ignore[misc]
    """A streaming torchvision ``VisionDataset``: samples ``x`` and ``y``, transformed.

    Takes the reference's older keyword set of :class:`~streaming.StreamingDataset` (see it for
    those arguments), with these defaults: ``partition_algo='orig'``, ``shuffle_algo='py1s'``,
    ``shuffle_block_size=1 << 18``; ``batch_size`` is required.

    Args:
        transforms (Callable, optional): Takes an image and a label and returns both transformed.
            Defaults to ``None``.
        transform (Callable, optional): Takes an image and returns it transformed. Defaults to
            ``None``: the image becomes a tensor (torchvision's ``to_tensor``).
        target_transform (Callable, optional): Takes a label and returns it transformed.
            Defaults to ``None``.

    Raises:
        ValueError: Both ``transforms`` and ``transform``/``target_transform`` are given.
        ImportError: Neither ``transforms`` nor ``transform`` is given and ``torchvision`` (for
            the default ``to_tensor``) is not installed.
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
                 cache_limit: int | None = None,
                 partition_algo: str = "orig",
                 num_canonical_nodes: int | None = None,
                 batch_size: int,
                 shuffle: bool = False,
                 shuffle_algo: str = "py1s",
                 shuffle_seed: int = 9176,
                 shuffle_block_size: int = 1 << 18,
                 transforms: Callable | None = None,
                 transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        if transforms is None and transform is None:  # fail before any storage is touched
            require_package("torchvision.transforms.functional", type(self).__name__)
        StreamingDataset.__init__(self, **standard_args(locals()))
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError(
                "Only transforms or transform/target_transform can be passed as an argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = transforms if transforms is not None else \
            StandardTransform(transform, target_transform)
        # VisionDataset's repr reads it (its __init__, which sets it, is not called).
        self.root = None

    def get_item(self, idx: int) -> Any:
        """Get sample by global index, blocking to load its shard if missing.

        Args:
            idx (int): Sample index.

        Returns:
            Tuple[Any, Any]: The sample's ``x`` and ``y``, transformed.
        """
        obj = super().get_item(idx)
        return self.transforms(obj["x"], obj["y"])
