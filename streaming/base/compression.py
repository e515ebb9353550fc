"""Reference path ``streaming.base.compression``: re-exports of :mod:`streaming.format.compression`."""

from streaming.format.compression import (
    Brotli,
    Bzip2,
    Compression,
    Gzip,
    LevelledCompression,
    Snappy,
    Zstandard,
    _algorithms,
    _families,
    compress,
    decompress,
    get_compression_extension,
    get_compressions,
    is_compression,
)

__all__ = [
    "compress",
    "decompress",
    "get_compression_extension",
    "get_compressions",
    "is_compression",
]

_reexported = (Brotli, Bzip2, Compression, Gzip, LevelledCompression, Snappy, Zstandard, _algorithms, _families)
