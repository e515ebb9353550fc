"""The reference's ``streaming.base.format.json``. Re-exports only."""

from streaming.format.json.reader import JSONReader
from streaming.format.json.writer import JSONWriter

__all__ = ["JSONReader", "JSONWriter"]
