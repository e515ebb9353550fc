"""The compiled MDS kernel (streaming._kernels._mds) against a pure-Python twin, and fuzzing."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from streaming._kernels import _collate, _mds

# ---- the pure-Python twin ------------------------------------------------------------------


def _u32(buf: bytes, pos: int) -> int:
    return struct.unpack_from("<I", buf, pos)[0]


def py_check_shard(buf: bytes, samples: int) -> int:
    size = len(buf)
    if size < 8:
        raise ValueError("truncated")
    n = _u32(buf, 0)
    if n != samples:
        raise ValueError("count mismatch")
    need = 4 + 4 * (n + 1)
    if size < need:
        raise ValueError("truncated")
    prev = need
    for i in range(n + 1):
        off = _u32(buf, 4 + 4 * i)
        if off < prev or off > size:
            raise ValueError("bad offset")
        prev = off
    return _u32(buf, 4)


def py_decode_row(buf, idx, samples, names, kinds, decoders, fixed):
    if not 0 <= idx < samples:
        raise IndexError(idx)
    if len(buf) < 12 + 4 * idx:
        raise ValueError("truncated")
    begin, end = _u32(buf, 4 + 4 * idx), _u32(buf, 8 + 4 * idx)
    if begin > end or end > len(buf):
        raise ValueError("bad row")
    row = buf[begin:end]
    num_var = sum(1 for f in fixed if f < 0)
    if len(row) < 4 * num_var:
        raise ValueError("short row")
    pos, k, out = 4 * num_var, 0, {}
    for name, kind, decode, size in zip(names, kinds, decoders, fixed.tolist()):  # (Python ints)
        if size < 0:
            size = _u32(row, 4 * k)
            k += 1
        if pos + size > len(row):
            raise ValueError("column past end")
        data = bytes(row[pos : pos + size])
        out[name] = data if kind == 0 else data.decode("utf-8") if kind == 1 else decode(data)
        pos += size
    return out


# ---- helpers -------------------------------------------------------------------------------


def _shard(rows: list[bytes], config: bytes = b"{}") -> bytes:
    head = 4 + 4 * (len(rows) + 1) + len(config)
    offsets = [head]
    for row in rows:
        offsets.append(offsets[-1] + len(row))
    return struct.pack(f"<I{len(offsets)}I", len(rows), *offsets) + config + b"".join(rows)


def _row(values: list[bytes], fixed: list[int]) -> bytes:
    sizes = [len(v) for v, f in zip(values, fixed) if f < 0]
    return struct.pack(f"<{len(sizes)}I", *sizes) + b"".join(values)


def _outcome(func, *args):
    try:
        return ("ok", func(*args))
    except IndexError:
        return ("IndexError", None)
    except ValueError:  # UnicodeDecodeError included
        return ("ValueError", None)


COLUMNS = st.lists(
    st.tuples(st.sampled_from([0, 1, 2]), st.one_of(st.just(-1), st.integers(0, 6))),
    min_size=0,
    max_size=5,
)


@st.composite
def shards(draw, kinds=(0, 1, 2), broken=False):
    """Shards of columns of these kinds; ``broken``: sometimes not well formed too (text that
    is random bytes, a size header past the row's end), and ints mostly 8 bytes."""
    cols = draw(st.lists(st.tuples(st.sampled_from(kinds),
                                   st.one_of(st.just(-1), st.integers(0, 10 if broken else 6))),
                         min_size=1 if broken else 0, max_size=4 if broken else 5))
    cols = [(kind, 8 if kind == 3 and draw(st.booleans()) else size) for kind, size in cols]
    names = tuple(f"c{i}" for i in range(len(cols)))
    kinds = np.array([k for k, _ in cols], np.int64)
    fixed = np.array([f for _, f in cols], np.int64)
    rows = []
    for _ in range(draw(st.integers(0, 6 if broken else 5))):
        values = []
        for kind, size in cols:
            n = size if size >= 0 else draw(st.integers(0, 12))
            if kind == 1 and (not broken or draw(st.integers(0, 3))):
                values.append(draw(st.text(max_size=n)).encode()[:n].ljust(n, b"a"))
            else:
                values.append(draw(st.binary(min_size=n, max_size=n)))
        row = _row(values, list(fixed))
        if broken and (fixed < 0).any() and not draw(st.integers(0, 7)):
            row = struct.pack("<I", 1 << 20) + row[4:]  # a size past the row's end
        rows.append(row)
    return names, kinds, fixed, rows


def _decoders(n: int) -> tuple:
    return tuple(bytes.hex for _ in range(n))


# ---- tests ---------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shards(), st.data())
def test_kernel_matches_twin_on_valid_and_mutated_shards(shard, data) -> None:
    names, kinds, fixed, rows = shard
    buf = bytearray(_shard(rows))
    # Mutate some bytes or truncate, sometimes.
    mode = data.draw(st.sampled_from(["keep", "flip", "truncate"]))
    if mode == "flip" and buf:
        for _ in range(data.draw(st.integers(1, 4))):
            pos = data.draw(st.integers(0, len(buf) - 1))
            buf[pos] = data.draw(st.integers(0, 255))
    elif mode == "truncate":
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    buf = bytes(buf)
    decoders = _decoders(len(names))
    samples = len(rows)
    checked = _outcome(_mds.check_shard, buf, samples, "f")
    assert checked[0] == _outcome(py_check_shard, buf, samples)[0]
    if checked[0] != "ok":
        return
    for idx in range(-1, samples + 1):
        got = _outcome(_mds.Columns(names, kinds, decoders, fixed).decode, buf, idx, samples, "f")
        want = _outcome(py_decode_row, buf, idx, samples, names, kinds, decoders, fixed)
        assert got == want
        if got[0] == "ok":
            assert _mds.row_bytes(buf, idx, samples, "f") == buf[
                _u32(buf, 4 + 4 * idx) : _u32(buf, 8 + 4 * idx)
            ]
    ok = [i for i in range(samples)]
    if all(
        _outcome(py_decode_row, buf, i, samples, names, kinds, decoders, fixed)[0] == "ok"
        for i in ok
    ):
        cols = _mds.Columns(names, kinds, decoders, fixed)
        batch = list(_mds.Rows(((buf, samples, cols, "f"),), None, np.array(ok, np.int64)))
        assert batch == [py_decode_row(buf, i, samples, names, kinds, decoders, fixed) for i in ok]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 8), COLUMNS)
def test_random_bytes_raise_only_clean_errors(buf, samples, cols) -> None:
    names = tuple(f"c{i}" for i in range(len(cols)))
    kinds = np.array([k for k, _ in cols], np.int64)
    fixed = np.array([f for _, f in cols], np.int64)
    decoders = _decoders(len(cols))
    try:
        _mds.check_shard(buf, samples, "fuzz.mds")
    except ValueError as err:
        assert "fuzz.mds" in str(err)
    cols = _mds.Columns(names, kinds, decoders, fixed)
    for idx in range(samples + 1):
        try:
            cols.decode(buf, idx, samples, "fuzz.mds")
        except (ValueError, IndexError):
            pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shards(), st.data())
def test_huge_fixed_sizes_are_refused_not_read(shard, data) -> None:
    # Fixed sizes come from an untrusted index: near 2**63, ``pos + size`` wraps negative, so
    # the kernel must compare ``size > length - pos`` (the twin's Python ints cannot wrap).
    names, kinds, fixed, rows = shard
    assume(len(names) > 0)
    col = data.draw(st.integers(0, len(names) - 1))
    fixed, kinds = fixed.copy(), kinds.copy()
    kinds[col] = data.draw(st.sampled_from([0, 1, 2, 3]))  # 3: int64, copied by the kernel
    fixed[col] = data.draw(st.one_of(st.integers((1 << 63) - 64, (1 << 63) - 1),
                                     st.integers(1 << 31, (1 << 63) - 1)))
    buf = _shard(rows)
    decoders = _decoders(len(names))
    cols = _mds.Columns(names, kinds, decoders, fixed)
    for idx in range(len(rows)):
        got = _outcome(cols.decode, buf, idx, len(rows), "huge.mds")
        assert got == _outcome(py_decode_row, buf, idx, len(rows), names, kinds, decoders, fixed)
        assert got[0] == "ValueError"
        rows_iter = _mds.Rows(((buf, len(rows), cols, "huge.mds"),), None,
                              np.array([idx], np.int64))
        assert _drain(rows_iter) == [("ValueError", None)]


@pytest.mark.parametrize("idx", [1 << 61, (1 << 62) + 5, (1 << 63) - 3])
def test_huge_row_index_is_refused_not_read(idx) -> None:
    # With a huge sample count (the kernel takes any), 4 * (idx + 2) wraps around: the row's
    # offsets must be checked against the buffer without computing it.
    buf = _shard([b"ab"])
    samples = (1 << 63) - 1
    cols = _mds.Columns(("x",), np.array([0], np.int64), (bytes,), np.array([2], np.int64))
    with pytest.raises(ValueError, match="f.mds: shard is truncated"):
        _mds.row_bytes(buf, idx, samples, "f.mds")
    with pytest.raises(ValueError, match="f.mds: shard is truncated"):
        cols.decode(buf, idx, samples, "f.mds")
    with pytest.raises(ValueError, match="f.mds: shard is truncated"):
        _mds.rows_span(buf, np.array([0, idx], np.int64), samples, "f.mds")
    with pytest.raises(ValueError, match="f.mds: shard is truncated"):
        next(_mds.Rows(((buf, samples, cols, "f.mds"),), None, np.array([idx], np.int64)))


def test_errors_name_the_file() -> None:
    buf = _shard([b"abc", b"de"])
    with pytest.raises(ValueError, match="x.mds.*truncated"):
        _mds.check_shard(buf[:10], 2, "x.mds")
    with pytest.raises(ValueError, match="x.mds.*index says 3"):
        _mds.check_shard(buf, 3, "x.mds")
    past = bytearray(buf)
    past[8:12] = struct.pack("<I", 10_000)  # offsets[1] past the end
    with pytest.raises(ValueError, match="x.mds.*past the end"):
        _mds.check_shard(bytes(past), 2, "x.mds")
    disorder = bytearray(buf)
    disorder[8:12] = struct.pack("<I", 5)  # offsets[1] before offsets[0]
    with pytest.raises(ValueError, match="x.mds.*not in order"):
        _mds.check_shard(bytes(disorder), 2, "x.mds")
    with pytest.raises(IndexError, match="x.mds"):
        _mds.row_bytes(buf, 2, 2, "x.mds")


# ---- lazy multi-shard row iteration (Rows) -------------------------------------------------


def _two_shards_picked(shard, decoders, data) -> tuple:
    """Two shards of ``shard``'s rows sharing their columns (as one stream's), and some picks
    of (slot, row) among them (rows out of range too)."""
    names, kinds, fixed, rows = shard
    buf = _shard(rows)
    sources = tuple((buf, len(rows), _mds.Columns(names, kinds, decoders, fixed), f"s{k}.mds")
                    for k in range(2))
    picks = data.draw(st.lists(st.tuples(st.integers(0, 1), st.integers(-1, len(rows))),
                               max_size=12))
    return (sources, np.array([s for s, _ in picks], np.int64),
            np.array([r for _, r in picks], np.int64))


def _drain(rows_iter) -> list:
    out = []
    while True:
        try:
            out.append(("ok", next(rows_iter)))
        except StopIteration:
            return out
        except IndexError:
            out.append(("IndexError", None))
        except ValueError:
            out.append(("ValueError", None))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(shards(), min_size=1, max_size=3), st.data())
def test_rows_iterates_several_shards_like_the_twin(many, data) -> None:
    sources, twins = [], []
    for k, (names, kinds, fixed, rows) in enumerate(many):
        buf = _shard(rows)
        decoders = _decoders(len(names))
        cols = _mds.Columns(names, kinds, decoders, fixed)
        sources.append((buf, len(rows), cols, f"s{k}.mds"))
        twins.append((buf, len(rows), names, kinds, decoders, fixed))
    picks = data.draw(st.lists(st.tuples(st.integers(0, len(many) - 1), st.integers(-1, 6)),
                               max_size=12))
    slots = np.array([s for s, _ in picks], np.int64)
    rows = np.array([r for _, r in picks], np.int64)
    got = _drain(_mds.Rows(tuple(sources), slots, rows))
    want = [_outcome(py_decode_row, twins[s][0], r, twins[s][1], *twins[s][2:])
            for s, r in picks]
    assert got == want
    # One shard, no slots: the same as decoding row by row.
    if picks:
        first = picks[0][0]
        only = rows[slots == first]
        got = _drain(_mds.Rows((sources[first],), None, only))
        assert got == [_outcome(py_decode_row, twins[first][0], int(r), twins[first][1],
                                *twins[first][2:]) for r in only]


def test_rows_is_lazy_and_holds_its_buffer() -> None:
    buf = bytearray(_shard([b"ab", b"cd", b"ef"]))
    cols = _mds.Columns(("x",), np.array([0], np.int64), (bytes,), np.array([2], np.int64))
    it = _mds.Rows(((buf, 3, cols, "f.mds"),), None, np.array([2, 0, 1], np.int64))
    assert len(it) == 3
    assert next(it) == {"x": b"ef"}
    # The iterator holds the buffer exported: nobody can shrink it under a pending row.
    with pytest.raises(BufferError):
        buf.extend(b"x")
    assert list(it) == [{"x": b"ab"}, {"x": b"cd"}]
    del it
    buf.extend(b"x")  # released once the iterator is gone


def test_rows_rejects_bad_arguments() -> None:
    buf = _shard([b"ab"])
    cols = _mds.Columns(("x",), np.array([0], np.int64), (bytes,), np.array([2], np.int64))
    source = (buf, 1, cols, "f.mds")
    with pytest.raises(ValueError, match="slot 1 is out of range"):
        _mds.Rows((source,), np.array([1], np.int64), np.array([0], np.int64))
    with pytest.raises(ValueError, match="differ in length"):
        _mds.Rows((source,), np.array([0, 0], np.int64), np.array([0], np.int64))
    with pytest.raises(ValueError, match="no shards"):
        _mds.Rows((), None, np.array([0], np.int64))
    with pytest.raises(ValueError, match="Columns"):
        _mds.Rows(((buf, 1, None, "f.mds"),), None, np.array([0], np.int64))
    with pytest.raises(ValueError, match="differ in length"):
        _mds.Columns(("x", "y"), np.array([0], np.int64), (bytes,), np.array([2], np.int64))
    with pytest.raises(IndexError, match="f.mds"):
        next(_mds.Rows((source,), None, np.array([5], np.int64)))
    # Set up again with bad arguments: left exhausted, never half set up.
    again = _mds.Rows((source,), None, np.array([0], np.int64))
    with pytest.raises(ValueError, match="slot 3"):
        again.__init__((source,), np.array([3], np.int64), np.array([0], np.int64))
    assert len(again) == 0 and list(again) == []


@given(st.lists(st.binary(max_size=9), min_size=1, max_size=8), st.data())
def test_rows_span_is_where_rows_read_in_order_lie(rows, data) -> None:
    buf = _shard(rows)
    n = len(rows)
    picked = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    assert _mds.rows_span(buf, np.array(picked, np.int64), n, "f") == (
        _u32(buf, 4 + 4 * picked[0]), _u32(buf, 8 + 4 * picked[-1]))
    if len(picked) > 1:  # not in order, or repeated: no span
        assert _mds.rows_span(buf, np.array(picked[::-1], np.int64), n, "f") is None
        assert _mds.rows_span(buf, np.array([picked[0]] * 2, np.int64), n, "f") is None
    assert _mds.rows_span(buf, np.zeros(0, np.int64), n, "f") is None
    with pytest.raises(IndexError, match="f"):
        _mds.rows_span(buf, np.array([picked[0], n], np.int64), n, "f")


def test_columns_pickle_round_trip() -> None:
    import pickle

    cols = _mds.Columns(("x", "n"), np.array([1, 3], np.int64), (bytes, bytes),
                        np.array([-1, 8], np.int64))
    buf = _shard([_row([b"hi", (7).to_bytes(8, "little")], [-1, 8])])
    again = pickle.loads(pickle.dumps(cols))
    assert again.decode(buf, 0, 1, "f") == cols.decode(buf, 0, 1, "f") == {"x": "hi", "n": 7}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shards(), st.data())
def test_decode_columns_equals_the_rows_samples(shard, data) -> None:
    # Two shards sharing their columns (as one stream's), rows taken a few at a time.
    names, kinds, fixed, rows = shard
    sources, slots, at = _two_shards_picked(shard, _decoders(len(names)), data)
    want = _drain(_mds.Rows(sources, slots, at))
    it = _mds.Rows(sources, slots, at)
    assert it.schema() == (names, tuple(kinds.tolist()))
    done = 0
    while done < len(want):
        step = data.draw(st.integers(0, 5))
        part = want[done:done + step]
        got = _outcome(it.decode_columns, step)
        failed = [kind for kind, _ in part if kind != "ok"]
        if failed:  # the first bad row's error, as next() raises it
            assert got == (failed[0], None)
            return
        assert got == ("ok", [[sample[name] for _, sample in part] for name in names])
        assert len(it) == len(want) - done - len(part)
        done += len(part)
    assert _outcome(it.decode_columns, 3) == ("ok", [[] for _ in names])


def test_decode_columns_needs_shared_columns() -> None:
    buf = _shard([_row([b"ab"], [-1])])
    text = _mds.Columns(("c",), np.array([1], np.int64), _decoders(1), np.array([-1], np.int64))
    raw = _mds.Columns(("c",), np.array([0], np.int64), _decoders(1), np.array([-1], np.int64))
    rows = _mds.Rows(((buf, 1, text, "a.mds"), (buf, 1, raw, "b.mds")),
                     np.array([0, 1], np.int64), np.array([0, 0], np.int64))
    assert rows.schema() is None
    with pytest.raises(ValueError, match="columns differ"):
        rows.decode_columns(2)
    assert [next(rows), next(rows)] == [{"c": "ab"}, {"c": b"ab"}]  # samples as ever


# ---- packed columns (what a DataLoader worker sends) ----------------------------------------


def _unpacked(kinds, packed) -> list:
    return [column.tolist() if kind == 3 else column if type(column) is list else
            _collate.unpack_text(column[0], column[1], kind == 1)
            for kind, column in zip(kinds, packed)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shards((0, 1, 3), broken=True), st.data(), st.booleans())
def test_taken_columns_are_the_decoded_columns_or_none(shard, data, pack) -> None:
    # Two shards sharing their columns, rows taken a few at a time: taken (packed or not),
    # the columns hold exactly the values decode_columns makes; where any row would decode
    # otherwise, nothing is taken and decode_columns takes over (raising what next() raises).
    names, kinds, fixed, rows = shard
    decoders = tuple(lambda b: int.from_bytes(b, "little") for _ in names)
    sources, slots, at = _two_shards_picked(shard, decoders, data)
    packed_it = _mds.Rows(sources, slots, at)
    plain_it = _mds.Rows(sources, slots, at)
    while True:
        step = data.draw(st.integers(0, 5))
        left = len(packed_it)
        packed = packed_it.take_columns(step, pack)
        want = _outcome(plain_it.decode_columns, step)
        if packed is None:
            assert len(packed_it) == left  # nothing taken
            assert _outcome(packed_it.decode_columns, step) == want
        else:
            assert want[0] == "ok"
            assert _unpacked(kinds.tolist(), packed) == want[1]
            assert all(type(c) is np.ndarray and c.dtype == np.int64 if k == 3 else
                       type(c) is (tuple if pack else list)
                       for k, c in zip(kinds.tolist(), packed))
        if want[0] != "ok" or not left:
            return
        assert len(packed_it) == len(plain_it)


def test_taken_columns_decline_other_kinds_and_need_shared_columns() -> None:
    buf = _shard([_row([b"ab"], [-1])])
    call = _mds.Columns(("c",), np.array([2], np.int64), _decoders(1), np.array([-1], np.int64))
    rows = _mds.Rows(((buf, 1, call, "a.mds"),), None, np.array([0], np.int64))
    assert rows.take_columns(1, True) is None and len(rows) == 1
    assert rows.array_specs() == [None]
    assert rows.decode_columns(1) == [["6162"]]
    text = _mds.Columns(("c",), np.array([1], np.int64), _decoders(1), np.array([-1], np.int64))
    raw = _mds.Columns(("c",), np.array([0], np.int64), _decoders(1), np.array([-1], np.int64))
    rows = _mds.Rows(((buf, 1, text, "a.mds"), (buf, 1, raw, "b.mds")),
                     np.array([0, 1], np.int64), np.array([0, 0], np.int64))
    with pytest.raises(ValueError, match="columns differ"):
        rows.take_columns(2)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=40), st.text(max_size=20).map(str.encode),
                 st.lists(st.sampled_from([b"a", b"\xc2", b"\x80", b"\xe0\xa0", b"\xed\xa0\x80",
                                           b"\xed\x9f\xbf", b"\xf4\x90\x80\x80", b"\xf0\x8f",
                                           b"\xf4\x8f\xbf\xbf", b"\xc1\xbf", b"\xff",
                                           b"12345678"]), max_size=8).map(b"".join)))
def test_utf8_check_accepts_what_python_decodes(data) -> None:
    try:
        data.decode("utf-8")
        ok = True
    except UnicodeDecodeError:
        ok = False
    assert _mds.utf8_ok(data) == ok


def _array_value(shape: tuple, dtype: str, values: np.ndarray, code: bool, header: bool) -> bytes:
    """An ``ndarray`` column value as the encoding writes it: dtype code and shape only where
    the column's encoding does not fix them."""
    head = b""
    if code:
        head += bytes([{"int32": 33, "uint8": 8, "float64": 66}[dtype]])
    if header:
        head += bytes([(len(shape) << 2) | 2]) + b"".join(
            int(d).to_bytes(4, "little") for d in shape)
    return head + values.astype(dtype).tobytes()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans(), st.booleans(), st.booleans())
def test_array_columns_are_stacked_or_declined(data, fixed_dtype, fixed_shape, pack) -> None:
    # Rows of an id, an ndarray and a text: the arrays are copied into rows ``at ..`` of the
    # array given when every row's value has its dtype and shape; otherwise nothing is taken
    # or written, and decode_columns decodes the rows as next() does.
    dtypes = ["int32"] if fixed_dtype else data.draw(st.lists(
        st.sampled_from(["int32", "uint8", "float64"]), min_size=1, max_size=2, unique=True))
    shapes = [(3,)] if fixed_shape else data.draw(st.lists(
        st.tuples(st.integers(1, 3), st.integers(1, 2)), min_size=1, max_size=2, unique=True))
    spec = (np.dtype(dtypes[0]) if fixed_dtype else None,
            tuple(shapes[0]) if fixed_shape else None)
    cols = _mds.Columns(("id", "arr", "text"), np.array([3, 4, 1], np.int64),
                        (bytes.hex, bytes.hex, bytes.hex), np.array([8, -1, -1], np.int64),
                        (None, spec, None))
    rows = []
    for i in range(data.draw(st.integers(1, 6))):
        dtype = data.draw(st.sampled_from(dtypes))
        shape = data.draw(st.sampled_from(shapes))
        value = _array_value(shape, dtype, np.arange(int(np.prod(shape))) + i,
                             not fixed_dtype, not fixed_shape)
        if data.draw(st.integers(0, 9)) == 0:
            value = value[:-1]  # a size that does not match the shape: the decoder's
        rows.append(_row([i.to_bytes(8, "little"), value, f"r{i}".encode()], [8, -1, -1]))
    buf = _shard(rows)
    source = ((buf, len(rows), cols, "a.mds"),)
    at = np.arange(len(rows), dtype=np.int64)
    taker, plain = _mds.Rows(source, None, at), _mds.Rows(source, None, at)
    specs = taker.array_specs()
    assert specs[0] is None and specs[2] is None
    n = data.draw(st.integers(1, len(rows)))
    offset = data.draw(st.integers(0, 2))
    if specs[1] is None:
        arrays = [None, np.zeros((n + offset, 3), np.int32), None]
    else:
        arrays = [None, np.zeros((n + offset, *specs[1][1]), specs[1][0]), None]
    before = arrays[1].copy()
    got = taker.take_columns(n, pack, arrays, offset)
    want = _outcome(lambda: [next(plain) for _ in range(n)])
    if got is None:
        assert len(taker) == len(rows) and np.array_equal(arrays[1], before)
        return
    assert want[0] == "ok" and got[1] is None and len(taker) == len(rows) - n
    for k, sample in enumerate(want[1]):
        stacked = arrays[1][offset + k]
        assert stacked.dtype == sample["arr"].dtype and np.array_equal(stacked, sample["arr"])
    assert np.array_equal(arrays[1][:offset], before[:offset])
    assert got[0].tolist() == [s["id"] for s in want[1]]
    assert _unpacked([1], [got[2]]) == [[s["text"] for s in want[1]]]


def test_array_columns_need_room_and_a_writable_array() -> None:
    cols = _mds.Columns(("arr",), np.array([4], np.int64), (bytes.hex,), np.array([-1], np.int64),
                        ((np.dtype("int32"), (2,)),))
    buf = _shard([_row([np.arange(2, dtype=np.int32).tobytes()], [-1])] * 3)
    rows = _mds.Rows(((buf, 3, cols, "a.mds"),), None, np.arange(3, dtype=np.int64))
    assert rows.array_specs() == [(np.dtype("int32"), (2,))]
    assert rows.take_columns(3, False, [np.zeros((2, 2), np.int32)]) is None  # no room
    assert rows.take_columns(3, False, None) is None
    frozen = np.zeros((3, 2), np.int32)
    frozen.flags.writeable = False
    assert rows.take_columns(3, False, [frozen]) is None
    assert rows.take_columns(3, False, [np.zeros((3, 2), np.int64)]) is None  # another dtype
    assert rows.take_columns(3, False, [np.zeros((3, 3), np.int32)]) is None  # another shape
    out = np.zeros((4, 2), np.int32)
    assert rows.take_columns(3, False, [out], 1) == [None]
    assert out.tolist() == [[0, 0], [0, 1], [0, 1], [0, 1]] and len(rows) == 0
    assert rows.array_specs() is None
