"""MDS encodings given untrusted encoding strings: sizes are exact, impossible shapes refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streaming.format.mds.encodings import NDArray, get_coder, unsupported_reason

DTYPES = ["uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32", "uint64",
          "int64", "float64"]
INTP_MAX = int(np.iinfo(np.intp).max)


@given(st.sampled_from(DTYPES), st.lists(st.integers(1, 1 << 40), min_size=1, max_size=5))
def test_ndarray_static_size_is_exact_or_refused(dtype, shape) -> None:
    # np.prod wrapped around in int64: ndarray:uint8:4,4611686018427387905 claimed 4 bytes.
    shape = tuple(shape)
    exact = math.prod(shape) * np.dtype(dtype).itemsize
    assert NDArray._get_static_size(dtype, shape) == exact
    encoding = f"ndarray:{dtype}:{','.join(map(str, shape))}"
    if exact <= INTP_MAX:
        assert NDArray(dtype, shape).size == exact
        assert get_coder(encoding).size == exact
    else:
        with pytest.raises(ValueError, match="too large for any array"):
            NDArray(dtype, shape)
        assert get_coder(encoding) is None
        assert "too large for any array" in unsupported_reason(encoding)


def test_unsupported_reason_says_why() -> None:
    assert "no encoding is named 'float128'" in unsupported_reason("float128")
    assert "takes no configuration" in unsupported_reason("str:utf8")
    assert "unsupported dtype 'int128'" in unsupported_reason("ndarray:int128")
    assert "a str" in unsupported_reason(None)
