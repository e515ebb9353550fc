"""The reference's ``streaming.base.format.json.reader``. Re-exports only."""

from streaming.format.json.reader import JSONReader

__all__ = ["JSONReader"]
