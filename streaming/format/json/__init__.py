"""The JSON shard format: :class:`JSONWriter`, :class:`JSONReader` and their column types."""

from streaming.format.json.reader import JSONReader
from streaming.format.json.writer import JSONWriter

__all__ = ["JSONReader", "JSONWriter"]
