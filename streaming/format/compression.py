"""Compression codecs for shard files: a registry of ``name[:level]`` -> codec.

The names, default levels and filename extensions are the reference's (``br``, ``bz2``, ``gz``,
``snappy``, ``zstd``, each with ``:level`` variants), and for the same input every codec emits the
reference's bytes:

* ``zstd`` runs libzstd in multithreaded mode (``threads=-1``), which is what the reference's
  ``zstd.compress`` does on any machine with more than one core; zstd's multithreaded output does
  not depend on the number of workers, so it is stable across machines. It does depend on
  libzstd's release: the same bytes as the reference's ``zstd`` package need the same libzstd
  (zstandard 0.24+ and zstd 1.5.7.x both bundle 1.5.7).
* ``gz`` writes the current time into the gzip header, exactly like ``gzip.compress``: two runs
  differ in those four bytes (the reference has the same property). The header's XFL byte is
  the running Python's too: from CPython 3.13, ``gz:0`` writes 4 where 3.10-3.12 wrote 0.

Codecs whose library is an optional extra (``br``: brotli, ``snappy``: python-snappy) stay
registered when the library is missing and raise an ``ImportError`` naming the extra on use.
"""

from __future__ import annotations

import bz2
import gzip
import io
from typing import Any, Iterator

from streaming.optional import import_optional

__all__ = [
    "Compression",
    "LevelledCompression",
    "compress",
    "decompress",
    "get_compression_extension",
    "get_compressions",
    "is_compression",
]


def _import(module: str, extra: str) -> Any:
    return import_optional(module, f"{module!r} is needed for this compression; install it with "
                                   f"`pip install 'shardstream[{extra}]'`")


class Compression:
    """A compression algorithm at one level.

    Args:
        level (int, optional): Compression level, for families that have levels. Defaults to the
            family's default level.
    """

    extension: str = ""  # Filename extension and family name.
    levels: list[int] = []  # Allowed levels; empty if the family has none.
    default_level: int | None = None

    def __init__(self, level: int | None = None) -> None:
        if level is None:
            level = self.default_level
        elif level not in self.levels:
            raise ValueError(f"{self.extension}: invalid compression level {level}")
        self.level = level

    @classmethod
    def each(cls) -> Iterator[tuple[str, Compression]]:
        """Get each named variant of this family.

        Returns:
            Iterator[Tuple[str, Compression]]: ``(name, codec)`` for the default and each level.
        """
        yield cls.extension, cls()
        for level in cls.levels:
            yield f"{cls.extension}:{level}", cls(level)

    def compress(self, data: bytes) -> bytes:
        """Compress arbitrary data.

        Args:
            data (bytes): Uncompressed data.

        Returns:
            bytes: Compressed data.
        """
        raise NotImplementedError

    def decompress(self, data: bytes, max_size: int | None = None) -> bytes:
        """Decompress data compressed by this algorithm.

        Args:
            data (bytes): Compressed data.
            max_size (int, optional): If given, refuse to produce more than this many bytes
                (guards against decompression bombs): the built-in codecs stop after at most
                ``max_size + 1`` bytes of output (brotli before 1.2 only checks the result).

        Returns:
            bytes: Decompressed data.

        Raises:
            ValueError: The output would be larger than ``max_size``.
        """
        raise NotImplementedError


class LevelledCompression(Compression):
    """A compression family with numbered levels (the reference's base class for them)."""


class Brotli(LevelledCompression):
    """Brotli compression (extra ``brotli``)."""

    extension = "br"
    levels = list(range(12))
    default_level = 11

    def compress(self, data: bytes) -> bytes:
        return _import("brotli", "brotli").compress(_as_bytes(data), quality=self.level)

    def decompress(self, data: bytes, max_size: int | None = None) -> bytes:
        brotli = _import("brotli", "brotli")
        if max_size is None:
            return brotli.decompress(_as_bytes(data))
        decompressor = brotli.Decompressor()
        limit = max_size + 1
        try:
            out = [decompressor.process(_as_bytes(data), output_buffer_limit=limit)]
        except TypeError:  # brotli < 1.2 cannot cap its output: check what it made
            return _checked(brotli.decompress(_as_bytes(data)), max_size)
        total = len(out[0])
        # The limit is soft (the output grows in blocks), and a capped call leaves the rest of
        # the output inside the decompressor until it is asked again with no input.
        while (total <= max_size and not decompressor.is_finished()
               and not decompressor.can_accept_more_data()):
            chunk = decompressor.process(b"", output_buffer_limit=limit - total)
            if not chunk:
                break
            out.append(chunk)
            total += len(chunk)
        if total > max_size:
            raise ValueError(f"compressed data expands beyond {max_size} bytes")
        if not decompressor.is_finished():
            raise ValueError("brotli data is truncated")
        return b"".join(out)


class Bzip2(LevelledCompression):
    """Bzip2 compression."""

    extension = "bz2"
    levels = list(range(1, 10))
    default_level = 9

    def compress(self, data: bytes) -> bytes:
        return bz2.compress(data, self.level)

    def decompress(self, data: bytes, max_size: int | None = None) -> bytes:
        if max_size is None:
            return bz2.decompress(data)
        # The file reader reads concatenated streams like bz2.decompress, but stops at the cap.
        with bz2.BZ2File(io.BytesIO(data)) as reader:
            return _read_capped(reader, max_size)


class Gzip(LevelledCompression):
    """Gzip compression."""

    extension = "gz"
    levels = list(range(10))
    default_level = 9

    def compress(self, data: bytes) -> bytes:
        return gzip.compress(data, self.level)

    def decompress(self, data: bytes, max_size: int | None = None) -> bytes:
        if max_size is None:
            return gzip.decompress(data)
        # Reads concatenated members and raises the same errors as gzip.decompress.
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as reader:
            return _read_capped(reader, max_size)


class Snappy(Compression):
    """Snappy compression (extra ``snappy``)."""

    extension = "snappy"

    def compress(self, data: bytes) -> bytes:
        return _import("snappy", "snappy").compress(_as_bytes(data))

    def decompress(self, data: bytes, max_size: int | None = None) -> bytes:
        snappy = _import("snappy", "snappy")
        if max_size is not None:
            # Snappy's output is exactly the length its preamble declares, and the decompressor
            # allocates that much up front (up to 4 GiB): refuse before decompressing.
            declared = _snappy_length(data)
            if declared is not None and declared > max_size:
                raise ValueError(f"snappy data declares {declared} bytes, more than {max_size}")
        return _checked(snappy.decompress(_as_bytes(data)), max_size)


def _as_bytes(data: bytes) -> bytes:
    """``data`` as ``bytes``; a TypeError for what is not bytes-like (``bytes(100)`` would make
    100 zero bytes)."""
    return data if isinstance(data, bytes) else memoryview(data).tobytes()


def _snappy_length(data: bytes) -> int | None:
    """The uncompressed length a raw snappy block declares (its varint preamble), if readable."""
    length = 0
    for i, byte in enumerate(bytes(data[:5])):
        length |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return length
    return None


def _checked(out: bytes, max_size: int | None) -> bytes:
    if max_size is not None and len(out) > max_size:
        raise ValueError(f"compressed data expands to {len(out)} bytes, more than {max_size}")
    return out


def _read_capped(reader: Any, max_size: int) -> bytes:
    """Read a decompressing file object to its end, refusing output beyond ``max_size`` bytes.

    At most ``max_size + 1`` bytes are ever decompressed, so a bomb costs no more than that.
    """
    out = reader.read(max_size + 1)
    if len(out) > max_size:
        raise ValueError(f"compressed data expands beyond {max_size} bytes")
    return out


class Zstandard(LevelledCompression):
    """Zstandard compression."""

    extension = "zstd"
    levels = list(range(1, 23))
    default_level = 3

    def compress(self, data: bytes) -> bytes:
        import zstandard

        # Multithreaded mode: byte-identical to the reference's ``zstd.compress`` (see module doc).
        return zstandard.ZstdCompressor(level=self.level, threads=-1).compress(data)

    def decompress(self, data: bytes, max_size: int | None = None) -> bytes:
        import zstandard

        try:
            declared = zstandard.frame_content_size(data)
        except zstandard.ZstdError as err:
            raise ValueError(f"not zstd data: {err}") from err
        if max_size is None:
            # Handles frames without a declared size and concatenated frames.
            obj = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
            return obj.decompress(data)
        if declared > max_size:
            raise ValueError(f"zstd frame declares {declared} bytes, more than {max_size}")
        # A frame need not declare its size (and later frames are not looked at above): read
        # through a stream reader that stops at the cap. It does not complain about a truncated
        # frame; callers that know the exact size check it.
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        with reader:
            return _read_capped(reader, max_size)


# Compression algorithm families (extension -> class).
_families: dict[str, type[Compression]] = {
    "br": Brotli,
    "bz2": Bzip2,
    "gz": Gzip,
    "snappy": Snappy,
    "zstd": Zstandard,
}


def _collect(families: dict[str, type[Compression]]) -> dict[str, Compression]:
    algos: dict[str, Compression] = {}
    for cls in families.values():
        for name, obj in cls.each():
            algos[name] = obj
    return algos


# Compression algorithms (extension[:level] -> instance).
_algorithms: dict[str, Compression] = _collect(_families)


def get_compressions() -> set[str]:
    """List supported compression algorithms.

    Returns:
        Set[str]: Compression algorithm names (``family`` or ``family:level``).
    """
    return set(_algorithms)


def is_compression(algo: str | None) -> bool:
    """Get whether this compression algorithm is supported.

    Args:
        algo (str, optional): Compression.

    Returns:
        bool: Whether supported.
    """
    # Names come from untrusted indexes: anything but a string (a list, a dict) is no codec.
    return isinstance(algo, str) and algo in _algorithms


def _get(algo: str) -> Compression:
    obj = _algorithms.get(algo) if isinstance(algo, str) else None
    if obj is None:
        raise ValueError(f"{algo} is not a supported compression algorithm.")
    return obj


def get_compression_extension(algo: str) -> str:
    """Get compressed filename extension.

    Args:
        algo (str): Compression.

    Returns:
        str: Filename extension.

    Raises:
        ValueError: Unknown compression.
    """
    return _get(algo).extension


def compress(algo: str | None, data: bytes) -> bytes:
    """Compress arbitrary data.

    Args:
        algo (str, optional): Compression, or ``None`` for none.
        data (bytes): Uncompressed data.

    Returns:
        bytes: Compressed data.

    Raises:
        ValueError: Unknown compression.
        ImportError: The codec's optional library is not installed.
    """
    if algo is None:
        return data
    return _get(algo).compress(data)


def decompress(algo: str | None, data: bytes, max_size: int | None = None) -> bytes:
    """Decompress data compressed by this algorithm.

    Args:
        algo (str, optional): Compression, or ``None`` for none.
        data (bytes): Compressed data.
        max_size (int, optional): Refuse to produce more than this many bytes.

    Returns:
        bytes: Decompressed data.

    Raises:
        ValueError: Unknown compression, or output larger than ``max_size``.
        ImportError: The codec's optional library is not installed.
    """
    if algo is None:
        return data
    return _get(algo).decompress(data, max_size)

