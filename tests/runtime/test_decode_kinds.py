"""The MDS kernel's own ``int`` and ``ndarray`` decoding equals the encodings' Python decoders."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming._kernels import _mds
from streaming.format.mds.encodings import Int, NDArray

DTYPES = ["uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32", "uint64",
          "int64", "float64"]


def _shard(values: list[bytes]) -> bytes:
    """A one-variable-column raw shard holding each value as a row."""
    rows = [len(v).to_bytes(4, "little") + v for v in values]
    head = 4 + 4 * (len(rows) + 1)
    offsets = np.cumsum([head] + [len(r) for r in rows]).astype(np.uint32)
    return len(rows).to_bytes(4, "little") + offsets.tobytes() + b"".join(rows)


def _decode_all(coder, kind, values, spec):
    buf = _shard(values)
    got = []
    for i in range(len(values)):
        try:
            cols = _mds.Columns(("x",), np.array([kind], np.int64), (coder.decode,),
                                np.array([-1], np.int64), (spec,))
            got.append(("ok", cols.decode(buf, i, len(values), "f")))
        except (ValueError, IndexError) as e:
            got.append(("err", type(e)))
    return got


def _expected(coder, values):
    want = []
    for v in values:
        try:
            want.append(("ok", {"x": coder.decode(v)}))
        except ValueError as e:
            want.append(("err", type(e)))
        except IndexError:
            # The kernel raises a decoder's IndexError as a ValueError naming the shard: out of
            # a dataset's __getitem__, an IndexError would end iteration at a corrupt sample.
            want.append(("err", ValueError))
    return want


def _same(got, want):
    assert len(got) == len(want)
    for (gs, gv), (ws, wv) in zip(got, want):
        assert gs == ws
        if gs == "ok":
            g, w = gv["x"], wv["x"]
            assert type(g) is type(w)
            if isinstance(w, np.ndarray):
                assert g.dtype == w.dtype and g.shape == w.shape
                assert g.tobytes() == w.tobytes()
            else:
                assert g == w
        else:
            assert gv is wv


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_ndarray_kernel_matches_python(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    fix_dtype = data.draw(st.booleans())
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 300 if ndim == 1 else 6), min_size=ndim,
                                     max_size=ndim)))
    fix_shape = fix_dtype and data.draw(st.booleans())
    coder = NDArray(dtype if fix_dtype else None, shape if fix_shape else None)
    values = []
    for _ in range(data.draw(st.integers(1, 4))):
        arr = np.frombuffer(data.draw(st.binary(min_size=int(np.prod(shape)) * np.dtype(
            dtype).itemsize, max_size=int(np.prod(shape)) * np.dtype(dtype).itemsize)),
            dtype).reshape(shape)
        values.append(coder.encode(arr))
    # Corrupt ones too: truncated, extended, a random header.
    values.append(values[0][:-1])
    values.append(values[0] + b"\0")
    values.append(data.draw(st.binary(max_size=40)))
    spec = (coder._np_dtype, coder.shape)
    _same(_decode_all(coder, 4, values, spec), _expected(coder, values))


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1, max_size=20))
def test_int_kernel_matches_python(ints):
    coder = Int()
    values = [coder.encode(i) for i in ints]
    _same(_decode_all(coder, 3, values, None), _expected(coder, values))


def test_ndarray_needs_a_spec():
    buf = _shard([b"\0" * 8])
    with pytest.raises(ValueError, match="spec"):
        _mds.Columns(("x",), np.array([4], np.int64), (None,), np.array([-1], np.int64),
                     (("bad", None),)).decode(buf, 0, 1, "f")


def test_decoded_arrays_own_their_memory():
    coder = NDArray("int32")
    arr = np.arange(2048, dtype=np.int32)
    buf = _shard([coder.encode(arr)])
    cols = _mds.Columns(("x",), np.array([4], np.int64), (coder.decode,),
                        np.array([-1], np.int64), ((coder._np_dtype, None),))
    out = list(_mds.Rows(((buf, 1, cols, "f"),), None, np.array([0, 0], np.int64)))
    assert (out[0]["x"] == arr).all()
    out[0]["x"][0] = 7  # writable, and not shared with the other row or the shard
    assert out[1]["x"][0] == 0


@pytest.mark.parametrize("shape", [(4, (1 << 62) + 1), (1 << 32, 1 << 32), ((1 << 63) + 8,)])
def test_fixed_shape_whose_product_wraps_is_refused(shape):
    # (4, 2**62 + 1) has 2**64 + 4 elements, which wrapped to 4 in int64: a 4-byte value passed
    # every size check and only NumPy's own ("array is too big") stopped it.
    buf = _shard([b"\0" * 4])
    with pytest.raises(ValueError, match="too many elements"):
        _mds.Columns(("x",), np.array([4], np.int64), (None,), np.array([-1], np.int64),
                     ((np.dtype("uint8"), shape),)).decode(buf, 0, 1, "f")


@given(st.lists(st.integers(1, 1 << 15), min_size=1, max_size=4), st.binary(max_size=64))
def test_fixed_shapes_too_big_for_the_value_go_to_the_decoder(shape, value):
    # Products checked without multiplying past the value's size: anything not matching it goes
    # to the column's decoder, whose error (here) is what comes out.
    def decoder(data):
        raise KeyError("decoder")

    cols = _mds.Columns(("x",), np.array([4], np.int64), (decoder,), np.array([-1], np.int64),
                        ((np.dtype("uint8"), tuple(shape)),))
    if int(np.prod(shape, dtype=object)) == len(value):
        assert cols.decode(_shard([value]), 0, 1, "f")["x"].tobytes() == value
    else:
        with pytest.raises(KeyError, match="decoder"):
            cols.decode(_shard([value]), 0, 1, "f")
