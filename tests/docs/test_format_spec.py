"""The byte layouts stated in docs/format.md hold for what MDSWriter writes."""

from __future__ import annotations

import json
import pathlib
import struct

import numpy as np

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "format.md"


def test_documented_example_sample_bytes(tmp_path):
    from streaming import MDSWriter

    with MDSWriter(out=str(tmp_path), columns={"text": "str", "id": "int"}) as writer:
        writer.write({"id": 5, "text": "hi"})
        writer.write({"id": 6, "text": ""})
    index = json.loads((tmp_path / "index.json").read_text())
    assert (tmp_path / "index.json").read_text() == json.dumps(index, sort_keys=True)
    shard = index["shards"][0]
    assert shard["column_names"] == ["id", "text"]  # sorted by name
    assert shard["column_sizes"] == [8, None]
    data = (tmp_path / shard["raw_data"]["basename"]).read_bytes()
    assert len(data) == shard["raw_data"]["bytes"]
    (n,) = struct.unpack_from("<I", data, 0)
    offsets = struct.unpack_from(f"<{n + 1}I", data, 4)
    assert n == 2 and offsets[-1] == len(data)
    config = json.loads(data[4 * (n + 2):offsets[0]])
    assert config == {k: shard[k] for k in config}
    assert set(config) == {"column_encodings", "column_names", "column_sizes", "compression",
                           "format", "hashes", "size_limit", "version"}
    first = data[offsets[0]:offsets[1]]
    documented = bytes.fromhex("02 00 00 00 05 00 00 00 00 00 00 00 68 69".replace(" ", ""))
    assert first == documented
    assert "`02 00 00 00` (size of `text`) `05 00 00 00 00 00 00 00` (`id`) `68 69`" \
        in DOC.read_text()


def test_documented_ndarray_header(tmp_path):
    from streaming.format.mds.encodings import mds_encode

    value = np.arange(6, dtype=np.int32).reshape(2, 3)
    encoded = mds_encode("ndarray", value)
    # dtype byte 33 (int32), shape header (ndim 2 << 2) | 0 (uint8 dims), dims 2 and 3
    assert encoded[:4] == bytes([33, (2 << 2) | 0, 2, 3])
    assert encoded[4:] == value.tobytes()
    assert mds_encode("ndarray:int32", value)[:3] == bytes([(2 << 2) | 0, 2, 3])
    assert mds_encode("ndarray:int32:2,3", value) == value.tobytes()
    big = np.zeros((300, 1), np.uint8)
    assert mds_encode("ndarray:uint8", big)[:5] == bytes([(2 << 2) | 1]) + struct.pack("<HH",
                                                                                         300, 1)


def test_documented_image_layouts():
    import io

    import pytest

    Image = pytest.importorskip("PIL.Image")
    from streaming.format.mds.encodings import mds_encode

    image = Image.fromarray(np.arange(12, dtype=np.uint8).reshape(3, 4))
    pil = mds_encode("pil", image)
    assert pil == struct.pack("<III", 4, 3, 1) + b"L" + image.tobytes()
    png = io.BytesIO()
    image.save(png, format="PNG")
    listed = mds_encode("list[png]", [image, image])
    one = mds_encode("png", image)
    assert listed == struct.pack("<IIII", 0, 2, len(one), len(one)) + one + one
    jpegs = [b"\xff\xd8a", b"\xff\xd8bc"]
    assert mds_encode("jpeg_array", jpegs) == struct.pack("<III", 2, 3, 4) + b"".join(jpegs)
