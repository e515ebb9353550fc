"""Re-export of :mod:`streaming.dataset` at the reference's path."""

from streaming.dataset import StreamingDataset

__all__ = ["StreamingDataset"]
