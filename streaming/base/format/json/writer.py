"""The reference's ``streaming.base.format.json.writer``. Re-exports only."""

from streaming.format.json.writer import JSONWriter

__all__ = ["JSONWriter"]
