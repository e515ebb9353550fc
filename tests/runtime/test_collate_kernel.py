"""The collation kernel (``streaming._kernels._collate``) against its pure-NumPy twin, and its
packing of strings against Python's own encoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming._kernels import _collate
from streaming.collate import _stack


def _match_twin(values) -> int:
    first = values[0]
    if type(first) is not np.ndarray:
        return _collate.MISMATCH
    for value in values:
        if type(value) is not np.ndarray or value.dtype != first.dtype or \
                value.shape != first.shape:
            return _collate.MISMATCH
    if all(value.flags.c_contiguous for value in values):
        return _collate.CONTIGUOUS
    return _collate.STRIDED


@st.composite
def columns(draw):
    dtype = np.dtype(draw(st.sampled_from(["int8", "int32", "float64", "<u2", ">i4", "bool"])))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    size = draw(st.integers(1, 6))
    values = [np.arange(int(np.prod(shape)), dtype=np.int64).astype(dtype).reshape(shape) + i
              if dtype.kind != "b" else np.ones(shape, dtype) for i in range(size)]
    for i in range(size):
        change = draw(st.sampled_from(["none"] * 4 + ["dtype", "shape", "strided", "list",
                                                       "subclass"]))
        if change == "dtype":
            values[i] = values[i].astype(np.float32)
        elif change == "shape":
            values[i] = values[i].reshape(-1)[:1] if values[i].size else np.zeros(1, dtype)
        elif change == "strided" and shape:
            values[i] = np.repeat(values[i], 2, axis=-1)[..., ::2]
        elif change == "list":
            values[i] = values[i].tolist()
        elif change == "subclass":
            values[i] = values[i].view(np.ma.MaskedArray)
    return values


@settings(max_examples=300, deadline=None)
@given(columns())
def test_match_rows_equals_twin(values) -> None:
    assert _collate.match_rows(values) == _match_twin(values)


@settings(max_examples=200, deadline=None)
@given(columns(), st.booleans())
def test_stack_equals_numpy_stack(values, into) -> None:
    made = []

    def alloc(shape, dtype):
        made.append(np.full(shape, 7, dtype))
        return made[-1]

    if type(values[0]) is not np.ndarray:
        return  # (collate_batch stacks only columns whose first value is an ndarray)
    got = _stack(values, alloc if into else None)
    if _match_twin(values) == _collate.MISMATCH or values[0].dtype.byteorder == ">":
        assert got is None
        return
    try:
        torch.from_numpy(values[0])
    except TypeError:  # a dtype this torch has no tensor for (uint16 before torch 2.3)
        assert got is None  # torch's own collate decides, and raises
        return
    want = np.stack(values)
    assert got.shape == want.shape and np.array_equal(got.numpy(), want)
    assert got.dtype == torch.from_numpy(want).dtype
    if into:  # made in the memory the allocator gave
        assert len(made) == 1 and (got.data_ptr() == made[0].ctypes.data or not want.size)


def test_copy_rows_refuses_what_it_cannot_copy() -> None:
    rows = [np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int32)]
    with pytest.raises(ValueError, match="one row per value"):
        _collate.copy_rows(rows, np.empty((3, 4), np.int32))
    with pytest.raises(ValueError, match="one row per value"):
        _collate.copy_rows(rows, np.empty((2, 4), np.int32)[:, ::1].T.copy().T)
    with pytest.raises(ValueError, match="value 1"):
        _collate.copy_rows([rows[0], np.arange(5, dtype=np.int32)], np.empty((2, 4), np.int32))
    with pytest.raises(ValueError, match="one row per value"):
        readonly = np.empty((2, 4), np.int32)
        readonly.flags.writeable = False
        _collate.copy_rows(rows, readonly)


# ---- packed strings ----

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)))  # (no lone surrogates)


def _twin_pack(values: list) -> tuple[bytes, bytes]:
    data = [v.encode() if type(v) is str else v for v in values]
    return np.cumsum([len(d) for d in data], dtype=np.int64).tobytes(), b"".join(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, max_size=40) | st.lists(st.binary(max_size=20), max_size=40))
def test_pack_text_equals_its_twin_and_round_trips(values) -> None:
    ends, data = _collate.pack_text(values)
    assert (ends, data) == _twin_pack(values)
    text = bool(values) and type(values[0]) is str
    back = _collate.unpack_text(ends, data, text)
    assert back == values and [type(v) for v in back] == [type(v) for v in values]


def test_pack_text_refuses_what_it_cannot_pack() -> None:
    with pytest.raises(TypeError, match="value 1 is a bytes, not str"):
        _collate.pack_text(["a", b"b"])
    with pytest.raises(TypeError, match="value 0 is a int, not bytes"):
        _collate.pack_text([1])
    with pytest.raises(UnicodeEncodeError):
        _collate.pack_text(["a", "\ud800"])


@pytest.mark.parametrize("ends,data,message", [
    (np.array([2, 1], np.int64).tobytes(), b"abc", "value 1 ends at 1, outside"),
    (np.array([4], np.int64).tobytes(), b"abc", "value 0 ends at 4, outside"),
    (np.array([-1], np.int64).tobytes(), b"abc", "value 0 ends at -1, outside"),
    (b"\x01\x00", b"abc", "not whole int64s"),
])
def test_unpack_text_refuses_ends_that_do_not_fit(ends, data, message) -> None:
    with pytest.raises(ValueError, match=message):
        _collate.unpack_text(ends, data, True)


def test_unpack_text_refuses_bytes_that_are_not_utf8() -> None:
    with pytest.raises(UnicodeDecodeError):
        _collate.unpack_text(np.array([2], np.int64).tobytes(), b"\xff\xfe", True)
    assert _collate.unpack_text(np.array([2], np.int64).tobytes(), b"\xff\xfe", False) == \
        [b"\xff\xfe"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(), max_size=50), st.integers(1, 12))
def test_list_batches_equals_slicing(values, size) -> None:
    batches = _collate.list_batches(values, size)
    assert batches == [values[at:at + size] for at in range(0, len(values), size)]
    assert all(type(batch) is list and batch is not values for batch in batches)


def test_list_batches_refuses_a_size_below_one() -> None:
    with pytest.raises(ValueError, match="size must be positive, not 0"):
        _collate.list_batches([1, 2], 0)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4).flatmap(lambda width: st.tuples(
    st.just(tuple(f"k{i}" for i in range(width))),
    st.lists(st.lists(st.integers(), max_size=8), min_size=width, max_size=width))))
def test_batch_dicts_equals_zipping(case) -> None:
    keys, parts = case
    parts = [tuple(part) if i % 2 else part for i, part in enumerate(parts)]  # any sequence
    assert _collate.batch_dicts(keys, parts) == \
        [dict(zip(keys, values)) for values in zip(*parts)]


def test_batch_dicts_refuses_parts_that_do_not_match_the_keys() -> None:
    with pytest.raises(ValueError, match="1 sequences of values for 2 keys"):
        _collate.batch_dicts(("a", "b"), [[1]])
