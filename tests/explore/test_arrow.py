"""Arrow conversion of shards that are corrupt: errors name the shard and column, never hang."""

from __future__ import annotations

import json
import pathlib
import struct

import numpy as np
import pytest

from streaming import JSONWriter, MDSWriter
from streaming.explore import open_dataset
from streaming.explore.arrow import mds_column

Image = pytest.importorskip("PIL.Image", reason="Pillow is needed for image columns")

SHARD = "shard.00000.mds"


def _one_sample(out: pathlib.Path, columns: dict[str, str], sample: dict) -> pathlib.Path:
    with MDSWriter(out=str(out), columns=columns) as writer:
        writer.write(sample)
    return out / SHARD


def _patch(path: pathlib.Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) == 1, "the patched bytes must be unambiguous"
    path.write_bytes(data.replace(old, new))


def _to_arrow_error(out: pathlib.Path) -> str:
    with open_dataset(str(out)) as ds, pytest.raises(ValueError) as err:
        ds.to_arrow()
    return str(err.value)


def _image(seed: int) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 255, (3, 5, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def _u32(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


@pytest.mark.parametrize("encoding", ["jpeg_array", "list[jpeg]", "list[png]", "list[pil]"])
@pytest.mark.parametrize("count", [2**20, 2**32 - 1])
def test_list_count_past_the_value_is_an_error(tmp_path, encoding, count) -> None:
    images = [_image(0), _image(1)]
    if encoding == "jpeg_array":
        import io

        files = []
        for image in images:
            buf = io.BytesIO()
            image.save(buf, format="JPEG")
            files.append(buf.getvalue())
        value, head = files, _u32(2, *map(len, files))
    else:
        value = images
        from streaming.format.mds.encodings import mds_encode

        head = mds_encode(encoding, images)[:16]  # [0] [count] [size] [size]
    path = _one_sample(tmp_path, {"x": encoding}, {"x": value})
    # The count of 2 items becomes `count`: before, 2**20 made a list of a million empty
    # items (silent garbage) and 2**32 - 1 hung, building a list of four billion.
    at = 0 if encoding == "jpeg_array" else 4
    _patch(path, head, head[:at] + _u32(count) + head[at + 4:])
    message = _to_arrow_error(tmp_path)
    assert f"{SHARD}: column 'x' ({encoding})" in message
    assert f"a list of {count:,} items" in message


@pytest.mark.parametrize(
    ("encoding", "value", "error"),
    [
        ("jpeg_array", b"", "list header needs 4 bytes"),
        ("jpeg_array", _u32(1, 5) + b"abcd", "items need 5 bytes after their sizes, the value has 4"),
        ("list[png]", _u32(0), "list header needs 8 bytes"),
        ("list[png]", _u32(0, 2, 1, 2**32 - 1) + b"abc", "items need 4,294,967,296 bytes"),
    ],
)
def test_list_sizes_past_the_value_are_errors(encoding, value, error) -> None:
    with pytest.raises(ValueError, match=error):
        mds_column(encoding, [value])


def test_lists_read_back_their_items() -> None:
    items = [b"\xff\xd8a", b"", b"\xff\xd8bc"]
    sizes = _u32(*map(len, items))
    got = mds_column("jpeg_array", [_u32(3) + sizes + b"".join(items), _u32(0)])
    assert got.to_pylist() == [items, []]
    got = mds_column("list[jpeg]", [_u32(0, 3) + sizes + b"".join(items) + b"pad"])
    assert got.to_pylist() == [items]


def test_pil_size_is_bounded_by_its_pixels() -> None:
    # PIL would allocate the whole 65535x65535 image before finding the pixels missing.
    value = _u32(65535, 65535, 1) + b"L" + bytes(100)
    with pytest.raises(ValueError, match="65535x65535 image, but 100 bytes of pixels"):
        mds_column("pil", [value])
    with pytest.raises(ValueError, match="header takes 12"):
        mds_column("pil", [b"\x01\x00"])


def test_corrupt_text_names_shard_and_column(tmp_path) -> None:
    path = _one_sample(tmp_path, {"t": "str", "f": "str_float"}, {"t": "caf\u00e9", "f": 1.5})
    _patch(path, "caf\u00e9".encode(), b"caf\xff\xfe")
    message = _to_arrow_error(tmp_path)
    assert f"{SHARD}: column 't' (str)" in message and "utf-8" in message

    path = _one_sample(tmp_path / "f", {"f": "str_float"}, {"f": 1.5})
    _patch(path, b"1.5", b"1#5")
    assert f"{SHARD}: column 'f' (str_float)" in _to_arrow_error(tmp_path / "f")


def test_wrong_column_size_in_the_index_names_shard_and_column(tmp_path) -> None:
    _one_sample(tmp_path, {"a": "int32", "b": "int32"}, {"a": 1, "b": 2})
    index_path = tmp_path / "index.json"
    index = json.loads(index_path.read_text())
    index["shards"][0]["column_sizes"] = [3, 5]  # was [4, 4]: every value would shift
    index_path.write_text(json.dumps(index))
    message = _to_arrow_error(tmp_path)
    assert f"{SHARD}: column 'a' (int32): a value is 3 bytes, int32 values take 4" in message


def test_fixed_shape_ndarray_checks_each_value() -> None:
    with pytest.raises(ValueError, match="a value is 7 bytes, ndarray:uint8:2,4 values take 8"):
        mds_column("ndarray:uint8:2,4", [bytes(8), bytes(7), bytes(9)])
    with pytest.raises(ValueError, match="unsupported encoding 'ndarray:nonsense:2'"):
        mds_column("ndarray:nonsense:2", [bytes(8)])
    table = mds_column("ndarray:uint8:2,4", [bytes(range(8)), bytes(8)])
    assert table.to_numpy_ndarray().tolist()[0] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_pil_with_too_few_pixels_names_shard_and_column(tmp_path) -> None:
    image = _image(2)
    path = _one_sample(tmp_path, {"p": "pil"}, {"p": image})
    _patch(path, _u32(5, 3, 3) + b"RGB", _u32(500, 3, 3) + b"RGB")
    message = _to_arrow_error(tmp_path)
    assert f"{SHARD}: column 'p' (pil): pil: a 500x3 image" in message


def test_json_shard_type_clash_names_shard_and_column(tmp_path) -> None:
    with JSONWriter(out=str(tmp_path), columns={"x": "int"}) as writer:
        writer.write({"x": 12})
        writer.write({"x": 34})
    _patch(tmp_path / "shard.00000.json", b'{"x": 34}', b'{"x":"3"}')  # same length
    message = _to_arrow_error(tmp_path)
    assert "shard.00000.json: column 'x' (int)" in message and "'3'" in message


def test_other_errors_keep_their_type(tmp_path, monkeypatch) -> None:
    from streaming.explore import arrow

    def boom(encoding, parts):
        raise KeyError("from a user's encoding")

    _one_sample(tmp_path, {"a": "int"}, {"a": 1})
    monkeypatch.setattr(arrow, "mds_column", boom)
    with open_dataset(str(tmp_path)) as ds, pytest.raises(KeyError) as err:
        ds.to_arrow()
    if hasattr(err.value, "add_note"):  # Python 3.11+
        assert err.value.__notes__ == [f"while converting {SHARD}: column 'a' (int)"]
