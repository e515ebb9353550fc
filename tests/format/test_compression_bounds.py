"""Decompression is bounded by the size the index declares: a bomb stops after ``max_size + 1``
bytes of output, whatever the codec and whether or not the data declares its size; every error
about a shard file's compressed data names the file."""

from __future__ import annotations

import bz2
import gzip
import os
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.format.compression import compress, decompress, is_compression
from streaming.format.shard_files import decompress_shard, decompress_shard_data

BOMB = 64 << 20  # bytes of zeros a bomb expands to
CAP = 1 << 16


def _zstd_undeclared(data: bytes) -> bytes:
    """A zstd frame that does not declare its decompressed size."""
    import zstandard

    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return cobj.compress(data) + cobj.flush()


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    import brotli
    import zstandard

    zeros = bytes(BOMB)
    return {
        "gz": gzip.compress(zeros, 1),
        "bz2": bz2.compress(zeros, 1),
        "br": brotli.compress(zeros, quality=1),
        "zstd": zstandard.ZstdCompressor(level=1).compress(zeros),
        "zstd (size not declared)": _zstd_undeclared(zeros),
        "zstd (second frame)": compress("zstd", b"x") + _zstd_undeclared(zeros),
    }


@pytest.mark.parametrize("kind", ["gz", "bz2", "br", "zstd", "zstd (size not declared)",
                                  "zstd (second frame)"])
def test_bomb_stops_at_the_cap(bombs, kind) -> None:
    """Memory allocated while refusing a 64 MiB bomb stays near the cap (it used to be the whole
    output for gz, br and undeclared zstd frames, refused only once complete)."""
    algo = kind.split()[0]
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=f"beyond {CAP} bytes|more than {CAP}"):
            decompress(algo, bombs[kind], max_size=CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"{kind}: {peak} bytes allocated"


def test_snappy_refuses_a_declared_size_over_the_cap() -> None:
    """Snappy allocates the size its preamble declares: a forged 4 GiB preamble is refused
    before the codec runs."""
    forged = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00" * 16  # varint 2**32 - 1
    with pytest.raises(ValueError, match=f"declares {(1 << 32) - 1} bytes, more than {CAP}"):
        decompress("snappy", forged, max_size=CAP)


@settings(max_examples=60, deadline=None)
@given(algo=st.sampled_from(["br:1", "bz2:1", "gz:1", "snappy", "zstd:1"]),
       data=st.binary(max_size=3000) | st.builds(bytes, st.integers(0, 200_000)),
       frames=st.integers(1, 3))
def test_cap_is_exact(algo, data, frames) -> None:
    """Data that decompresses to exactly ``max_size`` bytes passes; one byte less is refused.
    Concatenated gzip members, bzip2 streams and zstd frames are read as one."""
    packed = compress(algo, data)
    if algo.split(":")[0] in ("gz", "bz2", "zstd"):
        packed *= frames
    else:
        frames = 1
    whole = data * frames
    assert decompress(algo, packed, max_size=len(whole)) == whole
    assert decompress(algo, packed) == whole
    if whole:
        with pytest.raises(ValueError):
            decompress(algo, packed, max_size=len(whole) - 1)


def test_only_strings_name_codecs() -> None:
    assert not is_compression(["zstd"]) and not is_compression({"a": 1})
    assert is_compression("zstd") and not is_compression(None)


@pytest.mark.parametrize("written, said", [("zstd", "gz"), ("gz", "bz2"), ("zstd", "bz2"),
                                           ("gz", "zstd"), ("zstd", "br"), ("gz", "snappy")])
def test_wrong_codec_names_the_file(tmp_path, written, said) -> None:
    data = os.urandom(100) * 50
    path = str(tmp_path / "shard.00000.mds.zip")
    with open(path, "wb") as f:
        f.write(compress(written, data))
    with pytest.raises(ValueError, match=f"{path}: corrupt {said} data"):
        decompress_shard(path, str(tmp_path / "raw"), said, raw_info={"bytes": len(data),
                                                                       "hashes": {}})
    assert not os.path.exists(tmp_path / "raw")


def test_truncated_data_names_the_file(tmp_path) -> None:
    data = os.urandom(100) * 50
    for algo in ("gz", "bz2", "zstd", "br", "snappy"):
        packed = compress(algo, data)[:-7]
        with pytest.raises(ValueError, match=f"^{tmp_path}/z: "):
            decompress_shard_data(f"{tmp_path}/z", algo, packed, len(data))


@pytest.mark.parametrize("algo", ["br", "bz2", "gz", "snappy", "zstd"])
@pytest.mark.parametrize("data", [100, 1.2, "bigdata"])
def test_only_bytes_like_data_is_compressed(algo, data) -> None:
    """Not bytes-like is a TypeError for every codec, as in the reference (``bytes(100)`` would
    otherwise compress 100 zero bytes)."""
    with pytest.raises(TypeError, match="bytes-like"):
        compress(algo, data)
    with pytest.raises(TypeError, match="bytes-like"):
        decompress(algo, data)
    assert decompress(algo, compress(algo, bytearray(b"abc"))) == b"abc"
    assert decompress(algo, compress(algo, memoryview(b"abc"))) == b"abc"
