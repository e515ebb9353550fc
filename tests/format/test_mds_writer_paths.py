"""MDSWriter's fast paths: pooled blocks, zero-copy array parts, pre-encoded rows, sync stage."""

from __future__ import annotations

import base64
import errno
import importlib.util
import json
import os
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streaming.format.mds.writer as mds_writer
from streaming.format.mds.encodings import NDArray, get_coder
from streaming.format.mds.writer import MDSWriter
from streaming.local import LocalDataset

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "_mds_samples_paths", _ROOT / "oracles" / "cases" / "_mds_samples.py"
)
samples_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(samples_mod)
_WRITERS = json.loads((_ROOT / "oracles" / "fixtures" / "mds" / "writers.json").read_text())
_UNCOMPRESSED = [c for c in _WRITERS if not c["compression"]]


def _dir_bytes(path: pathlib.Path) -> dict[str, bytes]:
    return {name: (path / name).read_bytes() for name in sorted(os.listdir(path))}


@pytest.mark.parametrize("block", [16, 200])
@pytest.mark.parametrize("case", _UNCOMPRESSED, ids=[c["name"] for c in _UNCOMPRESSED])
def test_tiny_blocks_still_write_the_reference_bytes(case, block, tmp_path, monkeypatch) -> None:
    # Blocks smaller than rows force every path: closing blocks, outsize-row buffers, rows that
    # mix copied and by-reference parts across blocks.
    monkeypatch.setattr(mds_writer, "_BLOCK", block)
    monkeypatch.setattr(mds_writer, "_BY_REFERENCE", 24)
    samples = samples_mod.make_samples(case["schema"], case["count"], case["seed"])
    out = tmp_path / "out"
    with MDSWriter(
        out=str(out),
        columns=case["columns"],
        hashes=case["hashes"] or None,
        size_limit=case["size_limit"],
    ) as writer:
        for sample in samples:
            writer.write(sample)
    expected = {name: base64.b64decode(data) for name, data in case["files"].items()}
    assert _dir_bytes(out) == expected


_DTYPES = ["uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32",
           "uint64", "int64", "float64"]


@st.composite
def _arrays(draw: st.DrawFn) -> tuple[str, np.ndarray]:
    dtype = np.dtype(draw(st.sampled_from(_DTYPES)))
    if draw(st.booleans()):
        dtype = dtype.newbyteorder(">")
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    arr = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    arr = arr.astype(dtype)
    if arr.ndim and draw(st.booleans()):
        arr = arr[::-1]  # not C-contiguous (unless trivially so)
    which = draw(st.sampled_from(["any", "dtype", "fixed", "other-dtype", "other-shape"]))
    if which == "any":
        encoding = "ndarray"
    elif which == "dtype":
        encoding = f"ndarray:{dtype.name}"
    elif which == "other-dtype":
        encoding = "ndarray:int16" if dtype.name != "int16" else "ndarray:uint8"
    else:
        dims = [max(d, 1) for d in shape] or [1]
        if which == "other-shape":
            dims = dims + [2]
        encoding = f"ndarray:{dtype.name}:{','.join(map(str, dims))}"
    return encoding, arr


def _outcome(fn, arr):
    try:
        return b"".join(bytes(memoryview(p)) for p in fn(arr))
    except (ValueError, TypeError) as err:
        return type(err), str(err)


@settings(max_examples=300, deadline=None)
@given(_arrays())
def test_encode_parts_concatenate_to_encode(case) -> None:
    encoding, arr = case
    coder = get_coder(encoding)
    assert isinstance(coder, NDArray)
    for _ in range(2):  # the second call hits the (dtype, shape) header cache
        assert _outcome(coder.encode_parts, arr) == _outcome(lambda a: [coder.encode(a)], arr)


def test_arrays_are_copied_when_written(tmp_path) -> None:
    out = tmp_path / "d"
    buf = np.zeros(1000, np.int32)
    with MDSWriter(out=str(out), columns={"a": "ndarray:int32"}, size_limit=20_000) as writer:
        for i in range(30):
            buf[:] = i  # the caller reuses its buffer, as loaders do
            writer.write({"a": buf})
    got = LocalDataset(str(out))
    assert len(got.shards) > 2
    assert [int(got[i]["a"][0]) for i in range(30)] == list(range(30))
    assert all((got[i]["a"] == i).all() for i in range(30))


def test_write_encoded_writes_what_write_writes(tmp_path) -> None:
    columns = {"id": "int", "tokens": "ndarray:int32", "text": "str", "raw": "bytes"}
    rng = np.random.default_rng(3)
    samples = [
        {"id": i, "tokens": rng.integers(0, 9, int(rng.integers(1, 300)), dtype=np.int32),
         "text": "x" * i, "raw": rng.bytes(int(rng.integers(0, 6000)))}
        for i in range(40)
    ]
    kwargs = {"columns": columns, "size_limit": 12_000, "hashes": ["xxh64"]}
    with MDSWriter(out=str(tmp_path / "a"), **kwargs) as writer:
        for sample in samples:
            writer.write(sample)
    with MDSWriter(out=str(tmp_path / "b"), **kwargs) as writer:
        rows = [writer.encode_sample(s) for s in samples]
        for row in rows:
            writer.write_encoded(row)
    a, b = _dir_bytes(tmp_path / "a"), _dir_bytes(tmp_path / "b")
    assert a == b and len(a) > 3


def test_wrong_arrays_raise_like_encode(tmp_path) -> None:
    with MDSWriter(out=str(tmp_path / "d"), columns={"a": "ndarray:int32"}) as writer:
        with pytest.raises(ValueError, match="Wrong dtype: expected int32, got int64"):
            writer.write({"a": np.zeros(3, np.int64)})
        with pytest.raises(ValueError, match="0 elements"):
            writer.write({"a": np.zeros(0, np.int32)})
        with pytest.raises(ValueError, match="scalar"):
            writer.write({"a": np.array(5, np.int32)})
        writer.write({"a": np.arange(3, dtype=np.int32)})
    assert LocalDataset(str(tmp_path / "d"))[0]["a"].tolist() == [0, 1, 2]


def test_fsync_failure_surfaces_and_leaves_nothing_half_written(tmp_path, monkeypatch) -> None:
    import streaming.storage.atomic as atomic

    real = os.fsync
    synced = []

    def fsync(fd):
        if len(synced) >= 2:
            raise OSError("device gone")
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    out = tmp_path / "d"
    writer = MDSWriter(out=str(out), columns={"a": "bytes"}, size_limit=3000)
    with pytest.raises(RuntimeError, match="device gone"):
        try:
            for i in range(200):
                writer.write({"a": bytes([i % 256]) * 1000})
        finally:
            writer.finish()  # as the context manager does
    names = os.listdir(out)
    assert "index.json" not in names
    assert not [n for n in names if n.startswith(".")]  # no temp files left behind
    # Every shard that made it under its final name is complete.
    for name in names:
        data = (out / name).read_bytes()
        count = int.from_bytes(data[:4], "little")
        assert int.from_bytes(data[4 + 4 * count : 8 + 4 * count], "little") == len(data)


def test_buffers_are_released_after_finish(tmp_path) -> None:
    writer = MDSWriter(out=str(tmp_path / "d"), columns={"a": "ndarray:uint8"}, size_limit=1 << 20)
    for i in range(40):
        writer.write({"a": np.full(100_000, i, np.uint8)})
    writer.finish()
    assert writer._free == [] and len(writer.shards) > 3


def test_disk_full_names_the_shard_and_leaves_nothing_half_written(tmp_path, monkeypatch) -> None:
    from streaming.format import index as index_mod

    real = os.writev
    calls = []

    def writev(fd, buffers):  # the third shard's write finds the disk full
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, buffers)

    monkeypatch.setattr(index_mod.os, "writev", writev)
    out = tmp_path / "d"
    writer = MDSWriter(out=str(out), columns={"a": "bytes"}, size_limit=3000)
    with pytest.raises(RuntimeError, match=r"No space left on device: '.*shard\.00002\.mds'") as info:
        try:
            for i in range(200):
                writer.write({"a": bytes([i % 256]) * 1000})
        finally:
            writer.finish()
    assert info.value.__cause__.errno == errno.ENOSPC
    names = sorted(os.listdir(out))
    # No temp file and no index; the failed shard is not there. (Shards queued behind it may
    # have been written before the failure was seen: each one there is complete.)
    assert names[:2] == ["shard.00000.mds", "shard.00001.mds"]
    assert "shard.00002.mds" not in names and "index.json" not in names
    assert not [n for n in names if n.startswith(".")]
    for name in names:
        data = (out / name).read_bytes()
        count = int.from_bytes(data[:4], "little")
        assert int.from_bytes(data[4 + 4 * count : 8 + 4 * count], "little") == len(data)
