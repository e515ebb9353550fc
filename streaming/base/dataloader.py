"""Re-export of :mod:`streaming.dataloader` at the reference's path."""

from streaming.dataloader import StreamingDataLoader

__all__ = ["StreamingDataLoader"]
