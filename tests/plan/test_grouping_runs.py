"""py1s/py1e look-ups of places made of interleaved ascending columns (a worker's share over
several canonical nodes): ``strided_group`` against ``group_places`` and against indexing the
whole shuffle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming._kernels import _shuffle
from streaming.plan.partition import worker_partition
from streaming.plan.shuffle import get_shuffle, shuffle_places


def _interleave(columns: list[list[int]]) -> list[int]:
    # Row-major over columns of non-increasing lengths (the last rows may be partial).
    out = []
    for r in range(max((len(c) for c in columns), default=0)):
        out.extend(c[r] for c in columns if r < len(c))
    return out


@st.composite
def strided(draw):
    lengths = draw(st.lists(st.integers(0, 30), min_size=1, max_size=10))
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(starts[-1])
    if total == 0:
        return starts, np.array([-1] * draw(st.integers(0, 3)), np.int64)
    w = draw(st.integers(1, 6))
    rows = draw(st.integers(1, 12))
    short = draw(st.integers(0, w - 1))  # columns w - short .. w - 1 lack the last row
    if draw(st.booleans()):
        # Disjoint ascending ranges, one per column (the orig partition's shape).
        # Cut at distinct group starts (one column after another, each group within one:
        # the kernel may then walk columns) or anywhere (a group may straddle two columns).
        inner = sorted({int(x) for x in starts[1:-1]} - {0, total})
        if inner and draw(st.booleans()):
            w = min(w, len(inner) + 1)
            short = min(short, w - 1)
            cuts = sorted(draw(st.lists(st.sampled_from(inner), unique=True, min_size=w - 1,
                                        max_size=w - 1)))
        else:
            cuts = sorted(draw(st.lists(st.integers(0, total), min_size=w - 1,
                                        max_size=w - 1)))
        edges = [0] + cuts + [total]
        columns = []
        for j in range(w):
            lo = min(edges[j], total - 1)
            hi = max(min(edges[j + 1] - 1, total - 1), lo)
            n = rows - (j >= w - short)
            columns.append(sorted(draw(st.lists(st.integers(lo, hi),
                                                min_size=n, max_size=n))))
    else:
        # Overlapping ascending columns (groups then merge several columns).
        columns = [
            sorted(draw(st.lists(st.integers(0, total - 1), min_size=rows - (j >= w - short),
                                 max_size=rows - (j >= w - short))))
            for j in range(w)
        ]
    pad = draw(st.integers(0, 5))
    return starts, np.array(_interleave(columns) + [-1] * pad, np.int64)


def _both(places, starts):
    out1 = np.full(len(places), 77, np.int64)
    out2 = out1.copy()
    got = _shuffle.strided_group(places.copy(), starts, out1)
    want = _shuffle.group_places(places.copy(), starts, out2)
    return got, want, out1, out2


@settings(max_examples=400, deadline=None)
@given(case=strided())
def test_strided_group_equals_group_places(case):
    starts, places = case
    got, want, out1, out2 = _both(places, starts)
    if got is None:
        assert np.all(out1 == 77)  # nothing written: the caller falls back
        return
    assert np.array_equal(got[0], want[0])
    assert got[1].dtype == want[1].dtype
    assert np.array_equal(got[1], want[1])
    assert np.array_equal(out1, out2)


def test_strided_group_takes_interleaved_columns():
    starts = np.array([0, 10, 20, 30, 40], np.int64)
    places = np.array(_interleave([[0, 3, 9], [12, 14, 19], [25, 31]]) + [-1, -1], np.int64)
    got, want, out1, out2 = _both(places, starts)
    assert got is not None
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(out1, out2)


@settings(max_examples=300, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 30), min_size=1, max_size=8),
    data=st.data(),
)
def test_strided_group_on_any_places_is_none_or_equal(lengths, data):
    # Places that are not runs (padding inside, descents, past the epoch) must fall back.
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(starts[-1])
    places = np.array(
        data.draw(st.lists(st.integers(-1, total + 1), max_size=40)), np.int64
    )
    out1 = np.full(len(places), 77, np.int64)
    got = _shuffle.strided_group(places.copy(), starts, out1)
    if got is None:
        assert np.all(out1 == 77)
        return
    assert not (places >= total).any()
    out2 = np.full(len(places), 77, np.int64)
    want = _shuffle.group_places(places.copy(), starts, out2)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(out1, out2)


@pytest.mark.parametrize(
    "places",
    [
        [0, 1, 2, 3],  # ascending: ascending_bounds' case
        [3, 1, -1, 2],  # padding inside
        [5, 2, 6, 1],  # a column descends
        [],
        [-1, -1],
    ],
)
def test_strided_group_refuses(places):
    starts = np.array([0, 4, 10], np.int64)
    out = np.full(len(places), 77, np.int64)
    assert _shuffle.strided_group(np.array(places, np.int64), starts, out) is None
    assert np.all(out == 77)


def test_strided_group_refuses_wide_or_costly_merges():
    starts = np.array([0, 100], np.int64)
    # One group over two columns that overlap in rows only at the ends: merging walks them all.
    places = np.array(_interleave([list(range(0, 40)), list(range(40, 80))]), np.int64)
    got = _shuffle.strided_group(places, starts, np.empty(80, np.int64))
    if got is not None:
        want = _shuffle.group_places(places, starts, np.empty(80, np.int64))
        assert np.array_equal(got[1], want[1])
    places = np.array(_interleave([[j] for j in range(70)] + [[99]]) + [], np.int64)[::-1].copy()
    assert _shuffle.strided_group(places, starts, np.empty(len(places), np.int64), 4) is None


def test_strided_group_rejects_bad_arguments():
    with pytest.raises(ValueError):
        _shuffle.strided_group(np.array([1], np.int64), np.array([1, 4], np.int64),
                               np.empty(1, np.int64))
    with pytest.raises(ValueError):
        _shuffle.strided_group(np.array([1], np.int64), np.array([0, 4], np.int64),
                               np.empty(2, np.int64))


@settings(max_examples=60, deadline=None)
@given(
    algo=st.sampled_from(["py1s", "py1e"]),
    shard=st.integers(8, 60),
    shards=st.integers(8, 40),
    ncn=st.sampled_from([8, 16, 32]),
    ranks=st.sampled_from([4, 8]),
    workers=st.sampled_from([2, 3]),
    batch=st.sampled_from([1, 3, 8]),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_partition_shares_look_up_as_the_whole_shuffle(
    algo, shard, shards, ncn, ranks, workers, batch, seed, data
):
    sizes = np.full(shards, shard, np.int64)
    total = int(sizes.sum())
    rank = data.draw(st.integers(0, ranks - 1))
    worker = data.draw(st.integers(0, workers - 1))
    places = worker_partition("orig", total, ncn, 1, ranks, workers, batch, 0, None, 0, rank,
                              worker)
    full = get_shuffle(algo, sizes, ncn, seed, 0, 1 << 18)
    want = np.where(places >= 0, full[np.maximum(places, 0)], -1)
    got = shuffle_places(algo, sizes, ncn, seed, 0, 1 << 18, places.copy())
    assert np.array_equal(got, want)
    got = shuffle_places(algo, sizes, ncn, seed, 0, 1 << 18, places.copy(), overwrite=True)
    assert np.array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(case=strided(), algo=st.sampled_from(["py1s", "py1e"]), seed=st.integers(0, 2**32 - 1),
       ncn=st.integers(1, 6))
def test_strided_places_look_up_as_the_whole_shuffle(case, algo, seed, ncn):
    starts, places = case
    sizes = np.diff(starts)
    # A span after the places' makes their share small enough to be looked up node by node.
    sizes = np.concatenate([sizes[sizes > 0], [4 * len(places) + ncn]]).astype(np.int64)
    full = get_shuffle(algo, sizes, ncn, seed, 0, 1 << 18)
    want = np.where(places >= 0, full[np.maximum(places, 0)], -1)
    got = shuffle_places(algo, sizes, ncn, seed, 0, 1 << 18, places.copy())
    assert np.array_equal(got, want)


def _column_order(m: int, w: int) -> np.ndarray:
    # The grouping a column count stands for: entries 0 .. m, column by column.
    return np.concatenate([np.arange(j, m, w) for j in range(w)]).astype(np.int64)


@settings(max_examples=400, deadline=None)
@given(case=strided())
def test_columns_stand_for_group_places_order(case):
    starts, places = case
    out1 = np.full(len(places), 77, np.int64)
    out2 = out1.copy()
    got = _shuffle.strided_group(places.copy(), starts, out1, columns=True)
    want = _shuffle.group_places(places.copy(), starts, out2)
    if got is None:
        assert np.all(out1 == 77)
        return
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(out1, out2)
    if isinstance(got[1], int):
        assert np.array_equal(_column_order(int(got[0][-1]), got[1]), want[1])
    else:
        assert np.array_equal(got[1], want[1])


@settings(max_examples=500, deadline=None)
@given(
    case=strided(),
    algo=st.sampled_from(["py1s", "py1e"]),
    seed=st.integers(0, 2**64 - 1),
    mode=st.sampled_from([1, 2, 3]),
    exact=st.booleans(),
    data=st.data(),
)
def test_shuffle_nodes_walks_columns_as_the_order(case, algo, seed, mode, exact, data):
    # The kernel with a column count equals it with group_places' order array (values and the
    # generator left behind), on the generic and both raw paths.
    starts, places = case
    sizes = np.diff(starts)
    if not len(sizes) or not sizes.any():
        return
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(sizes) - 1), max_size=3)))) \
        if len(sizes) > 1 else []
    bounds = np.array([0] + cuts + [len(sizes)], np.int64)
    if any(not sizes[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])):
        return
    begins = (np.cumsum(sizes) - sizes) * 3 + 1
    got = _shuffle.strided_group(places.copy(), starts, np.empty(len(places), np.int64),
                                 columns=True)
    if got is None or not isinstance(got[1], int):
        return
    low, high = (2, 9) if algo == "py1e" else (0, 1)
    results = []
    for order in ("columns", "array"):
        rng = np.random.default_rng(seed)
        out = np.full(len(places), -5, np.int64)
        if order == "columns":
            want_bounds, how = got
            out[int(want_bounds[-1]):] = -1
        else:
            want_bounds, how = _shuffle.group_places(places, starts, out)
        with _quiet():
            _shuffle.shuffle_nodes(rng, algo, begins, sizes, bounds, low, high, out, places,
                                   want_bounds, how, exact=exact, _mode=mode)
        results.append((out, rng.bit_generator.state if exact else None))
    assert np.array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]
    full = np.empty(int(sizes.sum()), np.int64)
    with _quiet():
        _shuffle.shuffle_nodes(np.random.default_rng(seed), algo, begins, sizes, bounds, low,
                               high, full)
    assert np.array_equal(results[0][0], np.where(places >= 0, full[np.maximum(places, 0)], -1))


def _quiet():
    import warnings

    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("ignore")

    class _Exit:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            ctx.__exit__(*exc)
            return False

    return _Exit()


def test_shuffle_nodes_columns_in_place_and_errors():
    sizes = np.array([10, 10, 10, 10], np.int64)
    begins = np.array([0, 100, 200, 300], np.int64)
    bounds = np.array([0, 2, 4], np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    places = np.array(_interleave([[1, 4, 8, 9], [12, 13, 19], [25, 26, 29], [31, 35, 39]])
                      + [-1, -1, -1], np.int64)
    want_bounds, w = _shuffle.strided_group(places, starts, places.copy(), columns=True)
    assert w == 4
    full = np.empty(40, np.int64)
    _shuffle.shuffle_nodes(np.random.default_rng(3), "py1s", begins, sizes, bounds, 0, 1, full)
    inplace = places.copy()
    inplace[int(want_bounds[-1]):] = -1
    _shuffle.shuffle_nodes(np.random.default_rng(3), "py1s", begins, sizes, bounds, 0, 1,
                           inplace, inplace, want_bounds, w)
    assert np.array_equal(inplace, np.where(places >= 0, full[np.maximum(places, 0)], -1))
    with pytest.raises(ValueError, match="bad columns"):
        _shuffle.shuffle_nodes(np.random.default_rng(3), "py1s", begins, sizes, bounds, 0, 1,
                               places.copy(), places, want_bounds, 0)
    bad = want_bounds.copy()
    bad[1:] += len(places)
    with pytest.raises(ValueError):
        _shuffle.shuffle_nodes(np.random.default_rng(3), "py1s", begins, sizes, bounds, 0, 1,
                               places.copy(), places, bad, w)
    # A place outside its span is reported with the place (the columns' index of the entry).
    wrong = want_bounds.copy()
    wrong[1] -= 1
    with pytest.raises(ValueError, match="outside its span"):
        _shuffle.shuffle_nodes(np.random.default_rng(3), "py1s", begins, sizes, bounds, 0, 1,
                               places.copy(), places, wrong, w)
