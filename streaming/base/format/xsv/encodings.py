"""The reference's ``streaming.base.format.xsv.encodings``. Re-exports only."""

from streaming.format.xsv.encodings import (
    Encoding,
    EncodingTypeError,
    Float,
    Int,
    Str,
    _encodings,
    is_xsv_encoding,
    xsv_decode,
    xsv_encode,
)

__all__ = ["is_xsv_encoding", "xsv_decode", "xsv_encode"]
_REEXPORTED = (Encoding, EncodingTypeError, Float, Int, Str, _encodings)
