"""Re-export of the reference's shared-resource naming helper."""

from streaming.shared_memory import _get_path

__all__ = ["_get_path"]
