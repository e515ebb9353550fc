"""Bad input: corrupt shards, indexes and compressed files raise clear errors naming the file."""

from __future__ import annotations

import json
import os
import struct
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streaming._kernels import _mds
from streaming.format import decompress_shard, reader_from_json, verify_hash
from streaming.format.index import load_index, parse_index, validate_shard
from streaming.format.mds.encodings import Encoding, _encodings
from streaming.format.mds.writer import MDSWriter
from streaming.local import LocalDataset

COLUMNS = {"id": "int", "text": "str", "arr": "ndarray"}


def _write(path, compression=None, count=10, hashes=("sha1", "xxh64")) -> str:
    out = str(path)
    with MDSWriter(out=out, columns=COLUMNS, compression=compression, hashes=list(hashes),
                   size_limit=None) as writer:
        for i in range(count):
            writer.write({"id": i, "text": f"sample {i}", "arr": np.arange(i + 1)})
    return out


def _shard_info(out: str) -> dict:
    return load_index(os.path.join(out, "index.json"))["shards"][0]


def test_truncated_shard(tmp_path) -> None:
    out = _write(tmp_path / "d")
    path = os.path.join(out, "shard.00000.mds")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-30])
    with pytest.raises(ValueError, match=r"shard\.00000\.mds.*past the end"):
        LocalDataset(out)[9]
    open(path, "wb").write(data[:20])
    with pytest.raises(ValueError, match=r"shard\.00000\.mds.*truncated"):
        LocalDataset(out)[0]
    open(path, "wb").write(b"")
    with pytest.raises(ValueError, match=r"shard\.00000\.mds.*truncated"):
        LocalDataset(out)[0]


def test_offsets_past_end_and_out_of_order(tmp_path) -> None:
    out = _write(tmp_path / "d")
    path = os.path.join(out, "shard.00000.mds")
    data = bytearray(open(path, "rb").read())
    bad = data.copy()
    bad[4 + 4 * 3 : 8 + 4 * 3] = struct.pack("<I", len(data) + 1000)
    open(path, "wb").write(bad)
    with pytest.raises(ValueError, match=r"shard\.00000\.mds"):
        LocalDataset(out)[0]
    bad = data.copy()
    bad[4 + 4 * 3 : 8 + 4 * 3] = struct.pack("<I", 0)
    open(path, "wb").write(bad)
    with pytest.raises(ValueError, match=r"shard\.00000\.mds.*(order|header)"):
        LocalDataset(out)[0]


def test_sample_count_mismatch(tmp_path) -> None:
    out = _write(tmp_path / "d")
    index_path = os.path.join(out, "index.json")
    index = json.load(open(index_path))
    index["shards"][0]["samples"] = 11
    json.dump(index, open(index_path, "w"))
    with pytest.raises(ValueError, match=r"shard\.00000\.mds.*10 samples.*11"):
        LocalDataset(out)[0]


def test_column_sizes_inconsistent_with_row(tmp_path) -> None:
    out = _write(tmp_path / "d")
    info = _shard_info(out)
    info["column_sizes"] = [None, None, 40]  # claims a fixed size the rows don't have
    reader = reader_from_json(out, None, info)
    with pytest.raises(ValueError, match=r"shard\.00000\.mds.*runs past the end"):
        reader.get_item(0)
    # So big that no shard of the declared size could hold the rows: refused from the index.
    info["column_sizes"] = [None, None, 4000]
    with pytest.raises(ValueError, match=r"shard\.00000\.mds: 10 samples of at least 4008 bytes"):
        reader_from_json(out, None, info)


def test_corrupt_compressed_data(tmp_path) -> None:
    out = _write(tmp_path / "d", compression="zstd")
    info = _shard_info(out)
    zip_path = os.path.join(out, info["zip_data"]["basename"])
    raw_path = os.path.join(out, info["raw_data"]["basename"])
    data = open(zip_path, "rb").read()
    open(zip_path, "wb").write(data[:8] + b"\xff" * (len(data) - 8))
    with pytest.raises(ValueError, match=r"shard\.00000\.mds\.zstd"):
        decompress_shard(zip_path, raw_path, "zstd", raw_info=info["raw_data"])
    assert not os.path.exists(raw_path)
    assert [f for f in os.listdir(out) if f.endswith(".part")] == []


@pytest.mark.parametrize("algo", ["gz", "bz2", "br", "snappy"])
def test_garbage_for_each_codec(tmp_path, algo) -> None:
    zip_path = tmp_path / "shard.00000.mds.x"
    zip_path.write_bytes(b"this is not compressed data at all" * 3)
    with pytest.raises(ValueError, match="shard.00000.mds.x"):
        decompress_shard(str(zip_path), str(tmp_path / "raw"), algo)


def test_hash_mismatch_with_validate_hash(tmp_path) -> None:
    out = _write(tmp_path / "d", compression="zstd")
    info = _shard_info(out)
    zip_path = os.path.join(out, info["zip_data"]["basename"])
    raw_path = os.path.join(out, info["raw_data"]["basename"])
    info["zip_data"]["hashes"]["sha1"] = "0" * 40
    with pytest.raises(ValueError, match=r"Checksum failure: .*shard\.00000\.mds\.zstd"):
        decompress_shard(zip_path, raw_path, "zstd", validate_hash="sha1",
                         zip_info=info["zip_data"])
    with pytest.raises(ValueError, match="does not match with those provided"):
        decompress_shard(zip_path, raw_path, "zstd", validate_hash="md5",
                         zip_info=info["zip_data"])
    with pytest.raises(ValueError, match="Checksum failure"):
        verify_hash("f", b"abc", "sha1", {"sha1": "0" * 40})


def test_decompressed_size_must_match_index(tmp_path) -> None:
    out = _write(tmp_path / "d", compression="gz")
    info = _shard_info(out)
    zip_path = os.path.join(out, info["zip_data"]["basename"])
    raw_path = os.path.join(out, info["raw_data"]["basename"])
    raw_info = dict(info["raw_data"], bytes=info["raw_data"]["bytes"] - 1)
    with pytest.raises(ValueError, match=r"shard\.00000\.mds\.gz"):
        decompress_shard(zip_path, raw_path, "gz", raw_info=raw_info)
    size = decompress_shard(zip_path, raw_path, "gz", raw_info=info["raw_data"], keep_zip=False)
    assert size == info["raw_data"]["bytes"] == os.path.getsize(raw_path)
    assert not os.path.exists(zip_path)


def _index_with(**changes) -> dict:
    shard = {
        "column_encodings": ["int"], "column_names": ["a"], "column_sizes": [8],
        "compression": None, "format": "mds", "hashes": [],
        "raw_data": {"basename": "shard.00000.mds", "bytes": 100, "hashes": {}},
        "samples": 1, "size_limit": None, "version": 2, "zip_data": None,
    }
    for key, value in changes.items():
        if value is KeyError:
            del shard[key]
        else:
            shard[key] = value
    return {"version": 2, "shards": [shard]}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"raw_data": {"basename": "../x", "bytes": 1, "hashes": {}}}, "'..'"),
        ({"raw_data": {"basename": "a/../../x", "bytes": 1, "hashes": {}}}, "'..'"),
        ({"raw_data": {"basename": "/etc/passwd", "bytes": 1, "hashes": {}}}, "relative"),
        ({"raw_data": {"basename": "", "bytes": 1, "hashes": {}}}, "non-empty"),
        ({"raw_data": {"basename": "x", "bytes": -1, "hashes": {}}}, "byte size"),
        ({"raw_data": {"basename": "x", "bytes": 1 << 70, "hashes": {}}}, "byte size"),
        ({"raw_data": {"basename": "x", "bytes": 1}}, "missing field 'hashes'"),
        ({"samples": -3}, "sample count"),
        ({"samples": 1 << 40}, "sample count"),
        ({"samples": KeyError}, "missing field 'samples'"),
        ({"format": "parquet"}, "unknown format 'parquet'"),
        ({"compression": "lz4"}, "unknown compression"),
        ({"version": 3}, "version"),
        ({"zip_data": {"basename": "x.zstd", "bytes": 1, "hashes": {}}}, "no compression"),
        ({"samples": 1 << 31}, "2147483648 samples cannot fit in shard.00000.mds"),
        ({"samples": 24}, "24 samples cannot fit"),
    ],
)
def test_bad_index_entries(tmp_path, changes, message) -> None:
    path = tmp_path / "index.json"
    path.write_text(json.dumps(_index_with(**changes)))
    with pytest.raises(ValueError, match=message) as info:
        load_index(str(path))
    assert str(path) in str(info.value)


def test_bad_index_files() -> None:
    with pytest.raises(ValueError, match="idx.json.*not a valid JSON"):
        parse_index(b"{not json", "idx.json")
    with pytest.raises(ValueError, match="idx.json.*version"):
        parse_index(b'{"version": 1, "shards": []}', "idx.json")
    with pytest.raises(ValueError, match="idx.json.*'shards' must be a list"):
        parse_index(b'{"version": 2, "shards": {}}', "idx.json")
    assert parse_index(b'{"version": 2, "shards": []}', "idx.json") == {"version": 2, "shards": []}


def test_unknown_encoding_in_index(tmp_path) -> None:
    info = _index_with(column_encodings=["float128"])["shards"][0]
    with pytest.raises(ValueError, match="unsupported encoding 'float128'"):
        reader_from_json(str(tmp_path), None, info)


def test_pickle_columns_refused_unless_allowed(tmp_path) -> None:
    from streaming import StreamingDataset

    out = str(tmp_path / "d")
    with MDSWriter(out=out, columns={"obj": "pkl", "x": "int"}) as writer:
        writer.write({"obj": {"a": 1}, "x": 1})
    reader = reader_from_json(out, None, _shard_info(out))
    # The reference's message, after the shard and the index it is about.
    where = f"{os.path.join(out, 'shard.00000.mds')} (in {os.path.join(out, 'index.json')})"
    with pytest.raises(ValueError) as info:
        reader.validate(allow_unsafe_types=False)
    assert str(info.value).startswith(f"{where}: Column obj contains an unsafe type: pkl. ")
    with pytest.raises(ValueError, match="Column obj contains an unsafe type") as info:
        StreamingDataset(local=out, batch_size=1)
    assert str(info.value).startswith(where)
    reader.validate(allow_unsafe_types=True)
    assert reader[0]["obj"] == {"a": 1}
    # LocalDataset decodes pickle columns, as the reference's does.
    assert LocalDataset(out)[0]["obj"] == {"a": 1}


# ---- sizes in the index that cannot be true ------------------------------------------------


def _edit_index(out: str, **changes) -> None:
    path = os.path.join(out, "index.json")
    index = json.load(open(path))
    index["shards"][0].update(changes)
    json.dump(index, open(path, "w"))


@pytest.mark.parametrize("size", [(1 << 63) - 1, 1 << 32, -1, True, 2.0])
def test_impossible_column_size_is_refused(tmp_path, size) -> None:
    # (1 << 63) - 1 wrapped the kernel's bounds check and crashed the process (segfault).
    out = str(tmp_path / "d")
    with MDSWriter(out=out, columns={"a": "int", "b": "str"}) as writer:
        for i in range(4):
            writer.write({"a": i, "b": "x"})
    _edit_index(out, column_sizes=[size, None])
    with pytest.raises(ValueError, match=r"shard\.00000\.mds: column 'a' has invalid size"):
        LocalDataset(out)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 64), st.integers(48, 4096))
def test_fixed_sizes_must_fit_the_declared_shard(size, raw_bytes) -> None:
    # (48 bytes hold the offset table of 10 samples: see the sample count tests below.)
    info = _index_with(column_sizes=[size], samples=10,
                       raw_data={"basename": "shard.00000.mds", "bytes": raw_bytes,
                                 "hashes": {}})["shards"][0]
    if 4 * (10 + 2) + 10 * size <= raw_bytes:
        assert reader_from_json("d", None, info).column_sizes == [size]
    else:
        with pytest.raises(ValueError, match=r"d/shard\.00000\.mds: 10 samples of at least"):
            reader_from_json("d", None, info)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, (1 << 32) - 1), st.integers(0, 1 << 40),
       st.sampled_from(["mds", "json", "csv", "tsv", "xsv"]))
def test_sample_count_must_fit_the_offset_table(samples, raw_bytes, fmt) -> None:
    # Sample counts size per-sample arrays before any shard is fetched: 2**31 samples in a tiny
    # shard asked the partitioner for 16-32 GiB. An offset table takes 4 * (samples + 2) bytes.
    table = "raw_data" if fmt == "mds" else "raw_meta"
    shard = _index_with(format=fmt, samples=samples)["shards"][0]
    shard[table] = {"basename": "f", "bytes": raw_bytes, "hashes": {}}
    if 4 * (samples + 2) <= raw_bytes:
        validate_shard(shard, "idx: shard 0")
    else:
        with pytest.raises(ValueError, match=f"idx: shard 0: {samples} samples cannot fit in f"):
            validate_shard(shard, "idx: shard 0")


def test_sample_count_is_checked_before_streaming(tmp_path) -> None:
    from streaming import StreamingDataset

    out = str(tmp_path / "d")
    with MDSWriter(out=out, columns={"a": "int"}) as writer:
        writer.write({"a": 1})
    _edit_index(out, samples=1 << 31)
    with pytest.raises(ValueError) as info:
        StreamingDataset(local=out, batch_size=2)
    # Refused when the index is read (naming it), before any plan is sized by the count.
    message = str(info.value)
    assert message.startswith(f"{os.path.join(out, 'index.json')}: ")
    assert "2147483648 samples cannot fit in shard.00000.mds" in message


def test_sample_count_of_a_json_shard_must_fit_its_meta_file(tmp_path) -> None:
    from streaming import JSONWriter

    out = str(tmp_path / "j")
    with JSONWriter(out=out, columns={"x": "int"}) as writer:
        writer.write({"x": 1})
    assert LocalDataset(out)[0] == {"x": 1}
    _edit_index(out, samples=1 << 31)
    with pytest.raises(ValueError, match=r"index\.json: shard 0: 2147483648 samples cannot fit "
                                         r"in shard\.00000\.json\.meta"):
        LocalDataset(out)


def test_huge_fixed_ndarray_shape_is_refused(tmp_path) -> None:
    # Its size wrapped to 4 bytes in int64 and only NumPy's "array is too big" stopped it.
    out = str(tmp_path / "d")
    with MDSWriter(out=out, columns={"x": "ndarray:uint8:4"}) as writer:
        writer.write({"x": np.arange(4, dtype=np.uint8)})
    _edit_index(out, column_encodings=["ndarray:uint8:4,4611686018427387905"])
    with pytest.raises(ValueError, match=r"shard\.00000\.mds: column 'x' has unsupported "
                                         r"encoding .*too large for any array"):
        LocalDataset(out)


# ---- values that do not decode name the shard, sample and column ---------------------------


def _told(err: BaseException) -> str:
    """What an error tells a reader: its message and its notes (Python 3.11+)."""
    return "\n".join([str(err), *getattr(err, "__notes__", [])])


# Variable-size encodings; a ``bytes`` value is written as it is, whatever the encoding.
_ENCODINGS = ["str", "str_int", "str_float", "str_decimal", "json", "ndarray", "ndarray:int32",
              "ndarray:int16:2,2", "pil", "jpeg", "png", "list[pil]", "list[png]",
              "jpeg_array", "int", "float32"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_ENCODINGS), st.binary(max_size=40))
def test_undecodable_values_name_the_shard_and_column(encoding, value) -> None:
    info = _index_with(column_encodings=[encoding], column_names=["col"], column_sizes=[None],
                       raw_data={"basename": "shard.00007.mds", "bytes": 1000,
                                 "hashes": {}})["shards"][0]
    reader = reader_from_json("d", None, info)
    try:
        reader.decode_sample(len(value).to_bytes(4, "little") + value)
    except IndexError as err:  # would end iteration by index at this sample, silently
        pytest.fail(f"IndexError escaped: {err!r}")
    except Exception as err:
        assert "shard.00007.mds: sample 0, column 'col'" in _told(err), repr(err)


def _str_column_decoded_as(tmp_path, encoding: str, value: str) -> str:
    out = str(tmp_path / "d")
    with MDSWriter(out=out, columns={"s": "str"}) as writer:
        writer.write({"s": value})
    _edit_index(out, column_encodings=[encoding])
    return out


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11+")
def test_decode_errors_keep_their_type_and_get_a_note(tmp_path) -> None:
    out = _str_column_decoded_as(tmp_path, "json", "not json")
    with pytest.raises(json.JSONDecodeError) as info:
        LocalDataset(out)[0]
    assert str(info.value) == "Expecting value: line 1 column 1 (char 0)"
    assert info.value.__notes__ == [
        f"{os.path.join(out, 'shard.00000.mds')}: sample 0, column 's': could not decode the value"
    ]


def test_decode_errors_without_notes(tmp_path, monkeypatch) -> None:
    # Python 3.10: this package's decoders' errors become ValueErrors naming the shard.
    monkeypatch.setattr(_mds, "_ADD_NOTE", False)
    out = _str_column_decoded_as(tmp_path, "str_decimal", "not a number")
    with pytest.raises(ValueError, match=r"shard\.00000\.mds: sample 0, column 's': could not "
                                         r"decode the value \(InvalidOperation: ") as info:
        LocalDataset(out)[0]
    assert type(info.value.__cause__).__name__ == "InvalidOperation"
    # The kernel's own UTF-8 decoding too.
    out = _str_column_decoded_as(tmp_path / "utf8", "str", "a")
    path = os.path.join(out, "shard.00000.mds")
    data = open(path, "rb").read()
    assert data.endswith(b"a")  # the one sample's value is the shard's last byte
    open(path, "wb").write(data[:-1] + b"\xff")
    with pytest.raises(ValueError, match=r"column 's': could not decode.*UnicodeDecodeError"):
        LocalDataset(out)[0]


class _Strict(Encoding):
    """A user's encoding whose decoder raises its own error type."""

    def encode(self, obj: str) -> bytes:
        return obj.encode()

    def decode(self, data: bytes) -> str:
        if data != b"ok":
            raise LookupError(f"not ok: {data!r}")
        return "ok"


@pytest.mark.parametrize("notes", [True, False])
def test_user_decoder_errors_keep_their_type(tmp_path, monkeypatch, notes) -> None:
    if notes and sys.version_info < (3, 11):
        pytest.skip("exception notes are Python 3.11+")
    monkeypatch.setattr(_mds, "_ADD_NOTE", notes)
    monkeypatch.setitem(_encodings, "strict", _Strict)
    out = _str_column_decoded_as(tmp_path, "strict", "bad")
    with pytest.raises(LookupError) as info:
        LocalDataset(out)[0]
    assert type(info.value) is LookupError and str(info.value) == "not ok: b'bad'"
    assert info.value.__notes__ == [
        f"{os.path.join(out, 'shard.00000.mds')}: sample 0, column 's': could not decode the value"
    ]


def test_index_errors_from_decoders_do_not_end_iteration(tmp_path) -> None:
    # An IndexError out of __getitem__ means "no more samples" to Python's iteration protocol:
    # list(dataset) stopped at the corrupt sample and returned the ones before it.
    out = str(tmp_path / "d")
    with MDSWriter(out=out, columns={"x": "ndarray"}) as writer:
        writer.write({"x": np.arange(3)})
        writer.write({"x": b""})  # empty: the decoder indexes past its end
        writer.write({"x": np.arange(3)})
    dataset = LocalDataset(out)
    with pytest.raises(ValueError, match=r"sample 1, column 'x'.*\(IndexError: ") as info:
        list(dataset)
    assert isinstance(info.value.__cause__, IndexError)


def test_missing_optional_libraries_name_the_extra(monkeypatch) -> None:
    import sys

    from streaming.format.compression import compress
    from streaming.format.mds.encodings import mds_encode

    monkeypatch.setitem(sys.modules, "brotli", None)
    monkeypatch.setitem(sys.modules, "snappy", None)
    with pytest.raises(ImportError, match=r"shardstream\[brotli\]"):
        compress("br", b"abc")
    with pytest.raises(ImportError, match=r"shardstream\[snappy\]"):
        compress("snappy", b"abc")
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"shardstream\[image\]"):
        mds_encode("png", object())
