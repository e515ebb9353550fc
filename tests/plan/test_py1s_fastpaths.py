"""py1s/py1e look-up fast paths: ascending places grouped without an order, wanted spans shuffled
as 16/32-bit offsets on the raw path, the skip's block scan; each against the generic path or
NumPy itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming._kernels import _shuffle
from streaming.plan.shuffle import get_shuffle, shuffle_places

seeds = st.integers(0, 2**64 - 1)


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=8),
    data=st.data(),
)
def test_ascending_bounds_equal_group_places(lengths, data):
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(starts[-1])
    valid = sorted(data.draw(st.lists(st.integers(0, max(total - 1, 0)), max_size=50))) if total else []
    pad = data.draw(st.integers(0, 4))
    places = np.array(valid + [-1] * pad, np.int64)
    got = _shuffle.ascending_bounds(places, starts)
    assert got is not None
    m, bounds = got
    out = np.full(len(places), 7, np.int64)
    want_bounds, order = _shuffle.group_places(places, starts, out)
    assert m == len(valid)
    assert np.array_equal(bounds, want_bounds)
    assert np.array_equal(order, np.arange(m))


@pytest.mark.parametrize(
    "places", [[3, 2], [0, -1, 1], [-1, 0], [5, 5, 4, -1], [1, -2, -1, 0]]
)
def test_ascending_bounds_refuse_other_orders(places):
    starts = np.array([0, 4, 10], np.int64)
    assert _shuffle.ascending_bounds(np.array(places, np.int64), starts) is None


def test_ascending_bounds_reject_places_past_the_epoch():
    with pytest.raises(ValueError, match="outside the epoch of 10"):
        _shuffle.ascending_bounds(np.array([1, 10, -1], np.int64), np.array([0, 4, 10], np.int64))
    with pytest.raises(ValueError, match="node_starts"):
        _shuffle.ascending_bounds(np.array([1], np.int64), np.array([1, 4], np.int64))


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=10),
    ncn=st.integers(1, 5),
    algo=st.sampled_from(["py1s", "py1e"]),
    seed=st.integers(0, 2**32),
    epoch=st.integers(0, 2),
    overwrite=st.booleans(),
    data=st.data(),
)
def test_ascending_places_equal_indexing(sizes, ncn, algo, seed, epoch, overwrite, data):
    # Ascending places (a worker's share of one canonical node), padded at the end: the grouping
    # without an order gives what indexing the whole shuffle does.
    total = sum(sizes)
    if not total:
        return
    lo = data.draw(st.integers(0, total - 1))
    hi = data.draw(st.integers(lo, min(total, lo + total // 5 + 1)))
    step = data.draw(st.integers(1, 3))
    valid = list(range(lo, hi, step))
    places = np.array(valid + [-1] * data.draw(st.integers(0, 3)), np.int64)
    args = (algo, np.array(sizes, np.int64), ncn, seed, epoch, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # py1e: blocks smaller than some shards
        try:
            full = get_shuffle(*args)
        except ValueError:
            return
        got = shuffle_places(*args, places.copy(), overwrite=overwrite)
    assert np.array_equal(got, np.where(places >= 0, full[np.maximum(places, 0)], -1))


@settings(max_examples=25, deadline=None)
@given(
    seed=seeds,
    sizes=st.lists(
        st.one_of(st.integers(1, 3000), st.sampled_from([2**16 - 1, 2**16, 2**16 + 1]),
                  st.integers(2**16 + 2, 150_000)),
        min_size=1,
        max_size=4,
    ),
    mode=st.sampled_from([2, 3]),
    data=st.data(),
)
def test_wide_wanted_spans_equal_the_generic_path(seed, sizes, mode, data):
    # Spans past 2**16 samples are shuffled as 32-bit offsets, up to it as 16-bit ones (raw path).
    sizes = np.array(sizes, np.int64)
    begins = (np.cumsum(sizes) - sizes) * 2 + 5
    bounds = np.array([0, len(sizes)], np.int64)
    total = int(sizes.sum())
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    picks = data.draw(st.lists(st.integers(0, total - 1), min_size=1, max_size=40))
    places = np.array(picks, np.int64)
    outs = []
    for m in (1, mode):
        rng = np.random.default_rng(seed)
        out = np.full(len(places), 99, np.int64)
        want_bounds, order = _shuffle.group_places(places, starts, out)
        _shuffle.shuffle_nodes(
            rng, "py1s", begins, sizes, bounds, 0, 1, out, places, want_bounds, order, _mode=m
        )
        outs.append((out, rng.bit_generator.state))
    assert np.array_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1]
    full = np.empty(total, np.int64)
    _shuffle.shuffle_nodes(np.random.default_rng(seed), "py1s", begins, sizes, bounds, 0, 1, full)
    assert np.array_equal(outs[0][0], full[places])


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=30),
    parts=st.integers(1, 40),
    seed=st.integers(0, 2**16),
)
def test_divide_spans_arrays_equal_divide_spans(sizes, parts, seed):
    from streaming.plan.shuffle import _divide_spans_arrays, divide_spans

    sizes = np.array(sizes, np.int64)
    order = np.random.default_rng(seed).permutation(len(sizes))
    ends = np.cumsum(sizes)
    begins = ends - sizes
    total = int(ends[-1])
    spans = list(zip(begins[order].tolist(), ends[order].tolist()))
    expect, expect_parts = divide_spans(spans, total, parts)
    arr, got_parts = _divide_spans_arrays(begins[order], sizes[order], total, parts)
    assert arr.tolist() == [list(span) for span in expect]
    assert got_parts == expect_parts


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    sizes=st.lists(st.one_of(st.integers(0, 400), st.integers(2**16, 2**16 + 300)), min_size=1,
                   max_size=5),
    mode=st.sampled_from([1, 2, 3]),
    data=st.data(),
)
def test_strided_places_and_outputs_equal_flat_ones(seed, sizes, mode, data):
    # Kept places are read and written through strided views as through flat arrays.
    sizes = np.array(sizes, np.int64)
    total = int(sizes.sum())
    if not total:
        return
    begins = np.cumsum(sizes) - sizes
    bounds = np.array([0, len(sizes)], np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    places = np.array(data.draw(st.lists(st.integers(-1, total - 1), min_size=1, max_size=30)),
                      np.int64)
    flat = np.full(len(places), 99, np.int64)
    want_bounds, order = _shuffle.group_places(places, starts, flat)
    rng = np.random.default_rng(seed)
    _shuffle.shuffle_nodes(rng, "py1s", begins, sizes, bounds, 0, 1, flat, places, want_bounds,
                           order, _mode=mode)
    wide_places = np.repeat(places, 2)[::2]
    wide_out = np.full(2 * len(places), 99, np.int64)
    wide_out[::2] = np.where(places < 0, -1, 99)
    rng2 = np.random.default_rng(seed)
    _shuffle.shuffle_nodes(rng2, "py1s", begins, sizes, bounds, 0, 1, wide_out[::2], wide_places,
                           want_bounds, order, _mode=mode)
    assert np.array_equal(wide_out[::2], flat)
    assert rng.bit_generator.state == rng2.bit_generator.state
    full = np.empty(total, np.int64)
    _shuffle.shuffle_nodes(np.random.default_rng(seed), "py1s", begins, sizes, bounds, 0, 1, full)
    assert np.array_equal(flat, np.where(places >= 0, full[np.maximum(places, 0)], -1))


@pytest.mark.parametrize("mode", [1, 2, 3])
@pytest.mark.parametrize("size", [50, 2**16 + 5])
def test_places_outside_their_span_are_rejected_as_they_are_kept(mode, size):
    sizes = np.array([size, size], np.int64)
    begins = np.array([0, size], np.int64)
    places = np.array([3, size + 1, 1], np.int64)
    want_bounds = np.array([0, 2, 3], np.int64)  # entry 1 claims span 0 but lies in span 1
    out = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match=rf"wanted place {size + 1} \(entry 1\) is outside"):
        _shuffle.shuffle_nodes(np.random.default_rng(1), "py1s", begins, sizes,
                               np.array([0, 2], np.int64), 0, 1, out, places, want_bounds,
                               _mode=mode)
