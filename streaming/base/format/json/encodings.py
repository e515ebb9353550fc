"""The reference's ``streaming.base.format.json.encodings``. Re-exports only."""

from streaming.format.json.encodings import (
    Encoding,
    EncodingTypeError,
    Float,
    Int,
    Str,
    _encodings,
    is_json_encoded,
    is_json_encoding,
)

__all__ = ["is_json_encoded", "is_json_encoding"]
_REEXPORTED = (Encoding, EncodingTypeError, Float, Int, Str, _encodings)
