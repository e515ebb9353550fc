"""Compiled planning kernels equal their short pure-NumPy twins, and consume the same draws."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming._kernels import _plan, _shuffle

seeds = st.integers(0, 2**64 - 1)
span_sizes = st.lists(st.integers(0, 70), min_size=0, max_size=12)


def twin_shuffle_spans(rng, begins, sizes):
    parts = []
    for b, s in zip(begins, sizes):
        a = np.arange(b, b + s, dtype=np.int64)
        rng.shuffle(a)
        parts.append(a)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _twin_py1br(rng, ids, bounds, stagger, low, high):
    ids = ids.copy()
    for node in range(len(bounds) - 1):
        start, stop, st_ = int(bounds[node]), int(bounds[node + 1]), int(stagger[node])
        end, blocks = start, []
        while end < stop:
            size = rng.integers(low, high)
            b0, b1 = max(end - st_, start), min(end + size - st_, stop)
            blocks.append((b0, b1))
            end += b1 - b0
        for b0, b1 in blocks:
            rng.shuffle(ids[b0:b1])
    return ids


def twin_py1e_positions(rng, sizes, low, high):
    """The reference's py1e positions of a node's places (block sizes, then shifts, per span),
    and whether a span outgrew its block."""
    n = int(sum(sizes))
    pos = np.arange(n).astype(np.float64)
    off, warn = 0, False
    for span in sizes:
        block = rng.integers(low, high)
        cutoff = (block - span) / 2
        if cutoff < 0:
            cutoff, warn = 0, True
        lo, hi = max(-cutoff, -off), min(cutoff, n - off - span)
        pos[off : off + span] += rng.uniform(lo, hi, span)
        off += span
    return pos, warn


def _twin_py1e(rng, ids, sizes, low, high):
    pos, warn = twin_py1e_positions(rng, sizes, low, high)
    return ids[np.argsort(pos, kind="stable")], warn


def _same_value(a, b) -> bool:
    # Bit generator states are dicts of ints, and (MT19937, Philox) arrays.
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b


def _same_state(a: np.random.Generator, b: np.random.Generator) -> bool:
    return _same_value(a.bit_generator.state, b.bit_generator.state)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, sizes=span_sizes, data=st.data())
def test_shuffle_spans_equals_twin(seed, sizes, data):
    begins = [data.draw(st.integers(0, 10**12)) for _ in sizes]
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    out = np.empty(sum(sizes), np.int64)
    _shuffle.shuffle_spans(ours, np.array(begins, np.int64), np.array(sizes, np.int64), out)
    assert np.array_equal(out, twin_shuffle_spans(twin, begins, sizes))
    assert _same_state(ours, twin)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, sizes=span_sizes, data=st.data())
def test_gather_shuffle_pieces_equals_twin(seed, sizes, data):
    src = np.arange(sum(sizes) + 5, dtype=np.int64) * 3
    starts = [data.draw(st.integers(0, len(src) - s)) for s in sizes]
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    out = np.empty(sum(sizes), np.int64)
    _shuffle.gather_shuffle_pieces(
        ours, src, np.array(starts, np.int64), np.array(sizes, np.int64), out
    )
    expect = []
    for s0, n in zip(starts, sizes):
        piece = src[s0 : s0 + n].copy()
        twin.shuffle(piece)
        expect.append(piece)
    assert np.array_equal(out, np.concatenate(expect) if expect else np.zeros(0, np.int64))
    assert _same_state(ours, twin)


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    node_sizes=st.lists(st.integers(0, 200), min_size=1, max_size=6),
    low=st.integers(1, 40),
    extra=st.integers(1, 40),
    data=st.data(),
)
def test_py1br_blocks_equal_twin(seed, node_sizes, low, extra, data):
    bounds = np.concatenate([[0], np.cumsum(node_sizes)]).astype(np.int64)
    stagger = np.array([data.draw(st.integers(0, low - 1)) for _ in node_sizes], np.int64)
    ids = np.random.default_rng(1).permutation(int(bounds[-1]))
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    got = ids.copy()
    _shuffle.shuffle_blocks_py1br(ours, got, bounds, stagger, low, low + extra)
    assert np.array_equal(got, _twin_py1br(twin, ids, bounds, stagger, low, low + extra))
    assert _same_state(ours, twin)


def test_py1br_blocks_clipped_at_the_node_start():
    # A stagger near ``low`` clips block after block at the node's start (each ends past twice
    # the last's end): every one of them is still shuffled, as in the reference.
    ids = np.arange(16, dtype=np.int64)
    ours, twin = np.random.default_rng(0), np.random.default_rng(0)
    out = ids.copy()
    _shuffle.shuffle_blocks_py1br(ours, out, np.array([0, 16]), np.array([16]), 17, 18)
    assert np.array_equal(out, _twin_py1br(twin, ids, [0, 16], [16], 17, 18))
    assert _same_state(ours, twin)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), seed=st.integers(0, 2**32), use_map=st.booleans())
def test_compose_ids_equals_where(n, seed, use_map):
    rng = np.random.default_rng(seed)
    shuffle = rng.permutation(n)
    small = rng.integers(0, 10**9, n) if use_map else None
    work = rng.integers(-1, n, 2 * n)
    expect = np.where(work != -1, shuffle[work], -1)
    if use_map:
        expect = np.where(expect != -1, small[expect], -1)
    got = work.copy()
    _plan.compose_ids(got, shuffle, small)
    assert np.array_equal(got, expect)


def test_kernels_reject_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="spans hold"):
        _shuffle.shuffle_spans(
            rng, np.array([0], np.int64), np.array([5], np.int64), np.empty(4, np.int64)
        )
    with pytest.raises(ValueError, match="negative size"):
        _shuffle.shuffle_spans(
            rng, np.array([0], np.int64), np.array([-1], np.int64), np.empty(0, np.int64)
        )
    with pytest.raises(ValueError, match="out of the source"):
        _shuffle.gather_shuffle_pieces(
            rng,
            np.arange(4),
            np.array([2], np.int64),
            np.array([3], np.int64),
            np.empty(3, np.int64),
        )
    with pytest.raises(ValueError, match="node_bounds"):
        _shuffle.shuffle_blocks_py1br(
            rng, np.arange(4), np.array([0, 9], np.int64), np.array([0], np.int64), 2, 3
        )
    with pytest.raises(ValueError, match="block size range"):
        _shuffle.shuffle_nodes(
            rng,
            "py1e",
            np.array([0], np.int64),
            np.array([4], np.int64),
            np.array([0, 1]),
            5,
            5,
            np.empty(4, np.int64),
        )
    with pytest.raises(ValueError, match="outside"):
        _plan.compose_ids(np.array([0, 7, -1]), np.arange(5), None)
    with pytest.raises(ValueError, match="outside"):
        _plan.compose_ids(np.array([-2]), None, np.arange(5))


def _predraw(rngs, pre):
    # 32-bit draws leave half a 64-bit draw buffered in the generator: kernels must use it first.
    for rng in rngs:
        for _ in range(pre):
            rng.integers(0, 10)


@settings(max_examples=80, deadline=None)
@given(
    seed=seeds,
    node_sizes=st.lists(
        st.lists(st.integers(0, 60), min_size=0, max_size=5), min_size=1, max_size=4
    ),
    algo=st.sampled_from(["py1s", "py1e"]),
    low=st.integers(0, 100),
    extra=st.integers(1, 60),
    pre=st.integers(0, 3),
    data=st.data(),
)
def test_shuffle_nodes_equals_twin(seed, node_sizes, algo, low, extra, pre, data):
    if algo == "py1e":
        node_sizes = [s if sum(s) else s + [1] for s in node_sizes]
    sizes = [s for node in node_sizes for s in node]
    begins = [data.draw(st.integers(0, 10**9)) for _ in sizes]
    bounds = np.cumsum([0] + [len(node) for node in node_sizes]).astype(np.int64)
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    _predraw([ours, twin], pre)
    out = np.empty(sum(sizes), np.int64)
    warn = _shuffle.shuffle_nodes(
        ours,
        algo,
        np.array(begins, np.int64),
        np.array(sizes, np.int64),
        bounds,
        low,
        low + extra,
        out,
    )
    expect, twin_warn, k = [], False, 0
    for node in node_sizes:
        ids = twin_shuffle_spans(twin, begins[k : k + len(node)], node)
        if algo == "py1e" and len(ids):
            ids, w = _twin_py1e(twin, ids, node, low, low + extra)
            twin_warn |= w
        expect.append(ids)
        k += len(node)
    assert np.array_equal(out, np.concatenate(expect))
    assert warn == twin_warn
    assert _same_state(ours, twin)

    # Keeping only some places gives the same values and leaves the generator the same way.
    places = np.array(
        sorted(data.draw(st.lists(st.integers(0, max(len(out) - 1, 0)), max_size=20)))
        if len(out)
        else [],
        np.int64,
    )
    # Grouped by span: places are sorted, so each span's are a slice.
    starts = np.concatenate([[0], np.cumsum(sizes)])
    want_bounds = np.searchsorted(places, starts).astype(np.int64)
    want_bounds[-1] = len(places)
    picked = np.empty(len(places), np.int64)
    again = np.random.default_rng(seed)
    _predraw([again], pre)
    _shuffle.shuffle_nodes(
        again,
        algo,
        np.array(begins, np.int64),
        np.array(sizes, np.int64),
        bounds,
        low,
        low + extra,
        picked,
        places,
        want_bounds,
    )
    assert np.array_equal(picked, out[places])
    assert _same_state(again, twin)


@settings(max_examples=40, deadline=None)
@given(seed=seeds, sizes=span_sizes, pre=st.integers(0, 3), data=st.data())
def test_shuffle_spans_after_buffered_draw(seed, sizes, pre, data):
    begins = [data.draw(st.integers(0, 10**6)) for _ in sizes]
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    _predraw([ours, twin], pre)
    out = np.empty(sum(sizes), np.int64)
    _shuffle.shuffle_spans(ours, np.array(begins, np.int64), np.array(sizes, np.int64), out)
    assert np.array_equal(out, twin_shuffle_spans(twin, begins, sizes))
    assert _same_state(ours, twin)


_BIT_GENERATORS = [np.random.MT19937, np.random.SFC64, np.random.Philox, np.random.PCG64DXSM]


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(_BIT_GENERATORS),
    seed=seeds,
    node_sizes=st.lists(
        st.lists(st.integers(1, 300), min_size=1, max_size=4), min_size=1, max_size=3
    ),
    algo=st.sampled_from(["py1s", "py1e"]),
    low=st.integers(0, 400),
    pre=st.integers(0, 3),
)
def test_kernels_draw_from_any_bit_generator(kind, seed, node_sizes, algo, low, pre):
    # The kernels only use the bitgen_t interface, so any NumPy bit generator gives NumPy's draws.
    sizes = [s for node in node_sizes for s in node]
    begins = np.cumsum([0] + sizes[:-1]).astype(np.int64)
    bounds = np.cumsum([0] + [len(node) for node in node_sizes]).astype(np.int64)
    ours, twin = np.random.Generator(kind(seed)), np.random.Generator(kind(seed))
    _predraw([ours, twin], pre)
    out = np.empty(sum(sizes), np.int64)
    warn = _shuffle.shuffle_nodes(
        ours, algo, begins, np.array(sizes, np.int64), bounds, low, low + 50, out
    )
    expect, twin_warn, k = [], False, 0
    for node in node_sizes:
        ids = twin_shuffle_spans(twin, begins[k : k + len(node)].tolist(), node)
        if algo == "py1e":
            ids, w = _twin_py1e(twin, ids, node, low, low + 50)
            twin_warn |= w
        expect.append(ids)
        k += len(node)
    assert np.array_equal(out, np.concatenate(expect))
    assert warn == twin_warn
    assert _same_state(ours, twin)
    # And the generator carries on as NumPy's own would.
    assert ours.integers(0, 2**63) == twin.integers(0, 2**63)
    assert ours.random() == twin.random()


def test_shuffle_kernels_need_a_generator():
    with pytest.raises(TypeError, match="Generator"):
        _shuffle.shuffle_spans(
            np.random.RandomState(0),
            np.array([0], np.int64),
            np.array([3], np.int64),
            np.empty(3, np.int64),
        )


@pytest.mark.parametrize("algo", ["py1s", "py1e"])
def test_shuffle_nodes_holds_the_bit_generator_lock(algo):
    # Like NumPy's own methods, a kernel draws only while holding the bit generator's lock.
    rng = np.random.default_rng(5)
    out = np.zeros(1000, np.int64)
    args = (rng, algo, np.array([0], np.int64), np.array([1000], np.int64))
    args += (np.array([0, 1], np.int64), 10, 2000, out)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (_shuffle.shuffle_nodes(*args), done.set()))
    with rng.bit_generator.lock:
        worker.start()
        assert not done.wait(0.2)
        assert not out.any()
    worker.join(10)
    assert done.is_set()
    assert sorted(out.tolist()) == list(range(1000))


def test_shuffle_nodes_rejects_bad_input():
    rng = np.random.default_rng(0)
    one = np.array([0], np.int64)
    three = np.array([3], np.int64)
    with pytest.raises(ValueError, match="unknown algorithm"):
        _shuffle.shuffle_nodes(
            rng, "py2s", one, three, np.array([0, 1]), 0, 1, np.empty(3, np.int64)
        )
    with pytest.raises(ValueError, match="node_spans"):
        _shuffle.shuffle_nodes(
            rng, "py1s", one, three, np.array([0, 2]), 0, 1, np.empty(3, np.int64)
        )
    with pytest.raises(ValueError, match="outside its span"):
        _shuffle.shuffle_nodes(
            rng,
            "py1s",
            one,
            three,
            np.array([0, 1]),
            0,
            1,
            np.empty(1, np.int64),
            np.array([3], np.int64),
            np.array([0, 1], np.int64),
        )


@settings(max_examples=25, deadline=None)
@given(
    seed=seeds,
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=4),
    pre=st.integers(0, 1),
)
def test_shuffle_spans_long_spans_equal_twin(seed, sizes, pre):
    # Spans past a block of 64-bit draws: refills, and giving back the unused draws at the end.
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    _predraw([ours, twin], pre)
    out = np.empty(sum(sizes), np.int64)
    begins = np.cumsum([0] + sizes[:-1]).astype(np.int64)
    _shuffle.shuffle_spans(ours, begins, np.array(sizes, np.int64), out)
    assert np.array_equal(out, twin_shuffle_spans(twin, begins.tolist(), sizes))
    assert _same_state(ours, twin)


# The PCG64 raw path (NumPy's PCG64 outputs read in bulk, unneeded ones jumped over) and the
# generic bitgen_t path must give NumPy's draws, values and generator state alike.
_MODES = {"generic": 1, "raw": 2, "raw, helper thread": 3}


def _nodes_case(node_sizes):
    sizes = [s for node in node_sizes for s in node]
    begins = np.cumsum([0, *sizes])[:-1].astype(np.int64) * 3 + 7
    bounds = np.cumsum([0] + [len(node) for node in node_sizes]).astype(np.int64)
    return begins, np.array(sizes, np.int64), bounds


def _twin_nodes(rng, algo, begins, node_sizes, low, high):
    expect, warn, k = [], False, 0
    for node in node_sizes:
        ids = twin_shuffle_spans(rng, begins[k : k + len(node)].tolist(), node)
        if algo == "py1e" and len(ids):
            ids, w = _twin_py1e(rng, ids, node, low, high)
            warn |= w
        expect.append(ids)
        k += len(node)
    return np.concatenate(expect), warn


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    node_sizes=st.lists(
        st.lists(st.sampled_from([0, 1, 2, 3, 17, 255, 256, 257, 1000, 9000]), max_size=4),
        min_size=1,
        max_size=4,
    ),
    algo=st.sampled_from(["py1s", "py1e"]),
    mode=st.sampled_from(sorted(_MODES)),
    low=st.integers(0, 3000),
    extra=st.integers(1, 3000),
    pre=st.integers(0, 3),
)
def test_raw_path_equals_numpy(seed, node_sizes, algo, mode, low, extra, pre):
    if algo == "py1e":
        node_sizes = [s if sum(s) else s + [1] for s in node_sizes]
    begins, sizes, bounds = _nodes_case(node_sizes)
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    _predraw([ours, twin], pre)
    out = np.empty(int(sizes.sum()), np.int64)
    warn = _shuffle.shuffle_nodes(
        ours, algo, begins, sizes, bounds, low, low + extra, out, _mode=_MODES[mode]
    )
    expect, twin_warn = _twin_nodes(twin, algo, begins, node_sizes, low, low + extra)
    assert np.array_equal(out, expect)
    assert warn == twin_warn
    assert _same_state(ours, twin)
    assert ours.integers(0, 2**63) == twin.integers(0, 2**63)
    assert ours.random() == twin.random()


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    node_sizes=st.lists(
        st.lists(st.integers(0, 700), min_size=1, max_size=4), min_size=1, max_size=6
    ),
    algo=st.sampled_from(["py1s", "py1e"]),
    mode=st.sampled_from(sorted(_MODES)),
    low=st.integers(0, 800),
    pre=st.integers(0, 1),
    data=st.data(),
)
def test_wanted_places_skip_nodes_exactly(seed, node_sizes, algo, mode, low, pre, data):
    # Nodes without a wanted place are drawn past (shifts jumped); with exact=False the nodes
    # after the last one needed are not drawn at all. Values and the py1e warning stay the same.
    if algo == "py1e":
        node_sizes = [s if sum(s) else s + [1] for s in node_sizes]
    begins, sizes, bounds = _nodes_case(node_sizes)
    total = int(sizes.sum())
    twin = np.random.default_rng(seed)
    _predraw([twin], pre)
    full, twin_warn = _twin_nodes(twin, algo, begins, node_sizes, low, low + 200)
    starts = np.concatenate([[0], np.cumsum([sum(node) for node in node_sizes])])
    span_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    chosen = data.draw(st.lists(st.integers(0, len(node_sizes) - 1), max_size=3))
    places = [p for c in chosen for p in range(int(starts[c]), int(starts[c + 1]), 3)]
    places = np.array(data.draw(st.permutations(places)) if places else [], np.int64)
    places = np.concatenate([places, [-1]]) if total else places
    for exact in (True, False):
        rng = np.random.default_rng(seed)
        _predraw([rng], pre)
        out = np.full(len(places), 99, np.int64)
        want_bounds, order = _shuffle.group_places(places, span_starts, out)
        warn = _shuffle.shuffle_nodes(
            rng,
            algo,
            begins,
            sizes,
            bounds,
            low,
            low + 200,
            out,
            places,
            want_bounds,
            order,
            exact=exact,
            _mode=_MODES[mode],
        )
        assert np.array_equal(out, np.where(places >= 0, full[np.maximum(places, 0)], -1))
        assert warn == twin_warn
        if exact:
            assert _same_state(rng, twin)


# Span sizes at and around mask boundaries, and long enough to cross the reader's chunk ends.
_skip_span = st.one_of(
    st.integers(0, 300),
    st.sampled_from([15, 16, 17, 31, 32, 33, 2**12, 2**12 + 1, 2**14 - 1, 2**14, 2**14 + 1]),
    st.integers(300, 30_000),
)


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    spans=st.lists(st.tuples(_skip_span, st.booleans()), min_size=1, max_size=8),
    pre=st.integers(0, 3),
    mode=st.sampled_from([2, 3]),
)
def test_skipped_spans_read_the_words_of_drawn_ones(seed, spans, pre, mode):
    # A node nobody wants reads its Fisher-Yates words in blocks (raw path); the generator must
    # end exactly where drawing every span (word by word) leaves it. Wanted nodes in between make
    # skips start mid-chunk and after a pending half word; mode 3 reads the raws that a helper
    # thread made ahead.
    sizes = np.array([size for size, _ in spans], np.int64)
    begins = np.zeros(len(spans), np.int64)
    bounds = np.arange(len(spans) + 1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    places = np.array(
        [
            p
            for (size, wanted), s in zip(spans, starts)
            if wanted and size
            for p in (s, s + size - 1)
        ],
        np.int64,
    )
    drawn, skipped = np.random.default_rng(seed), np.random.default_rng(seed)
    _predraw([drawn, skipped], pre)
    full = np.empty(int(sizes.sum()), np.int64)
    _shuffle.shuffle_nodes(drawn, "py1s", begins, sizes, bounds, 0, 1, full, _mode=2)
    out = np.empty(len(places), np.int64)
    want_bounds, order = _shuffle.group_places(places, starts, out)
    _shuffle.shuffle_nodes(
        skipped, "py1s", begins, sizes, bounds, 0, 1, out, places, want_bounds, order, _mode=mode
    )
    assert np.array_equal(out, full[places])
    assert _same_state(skipped, drawn)
    assert skipped.integers(0, 2**32) == drawn.integers(0, 2**32)


@settings(max_examples=80, deadline=None)
@given(
    # Long epochs: the node table's entries span many places, some holding a node boundary.
    node_lengths=st.lists(
        st.one_of(st.integers(0, 50), st.integers(50_000, 300_000)), min_size=1, max_size=8
    ),
    data=st.data(),
)
def test_group_places_equals_twin(node_lengths, data):
    starts = np.concatenate([[0], np.cumsum(node_lengths)]).astype(np.int64)
    total = int(starts[-1])
    near = [int(b) + d for b in starts[1:-1] for d in (-1, 0) if 0 <= int(b) + d < total]
    places = np.array(
        data.draw(
            st.lists(
                st.one_of(st.integers(-3, total - 1), *([st.sampled_from(near)] if near else []))
                if total
                else st.just(-1),
                max_size=40,
            )
        ),
        np.int64,
    )
    out = np.zeros(len(places), np.int64)
    want_bounds, order = _shuffle.group_places(places, starts, out)
    valid = np.flatnonzero(places >= 0)
    node = np.searchsorted(starts, places[valid], side="right") - 1
    twin_order = valid[np.argsort(node, kind="stable")]
    assert order.dtype == np.int32  # fewer than 2**31 places
    assert np.array_equal(order, twin_order)
    assert np.array_equal(
        want_bounds, np.searchsorted(np.sort(node), np.arange(len(starts)), "left")
    )
    assert (out[places < 0] == -1).all()


def test_group_places_rejects_places_past_the_epoch():
    with pytest.raises(ValueError, match="outside the epoch of 5"):
        _shuffle.group_places(
            np.array([1, 5], np.int64), np.array([0, 2, 5], np.int64), np.empty(2, np.int64)
        )


def test_raw_path_long_epoch_equals_generic_and_numpy():
    # Many chunks of raws (refills, a chunk ending inside a span's words or shifts).
    node_sizes = [[40_000, 25_000, 1], [70_000]]
    begins, sizes, bounds = _nodes_case(node_sizes)
    results = []
    for mode in (1, 2, 3):
        rng = np.random.default_rng(2**63 + 5)
        _predraw([rng], 1)
        out = np.empty(int(sizes.sum()), np.int64)
        _shuffle.shuffle_nodes(rng, "py1e", begins, sizes, bounds, 30_000, 90_000, out, _mode=mode)
        results.append((out, rng.bit_generator.state))
    twin = np.random.default_rng(2**63 + 5)
    _predraw([twin], 1)
    expect, _ = _twin_nodes(twin, "py1e", begins, node_sizes, 30_000, 90_000)
    for out, state in results:
        assert np.array_equal(out, expect)
        assert state == twin.bit_generator.state


def test_raw_path_needs_pcg64():
    with pytest.raises(ValueError, match="PCG64"):
        _shuffle.shuffle_nodes(
            np.random.Generator(np.random.MT19937(0)),
            "py1s",
            np.array([0], np.int64),
            np.array([3], np.int64),
            np.array([0, 1], np.int64),
            0,
            1,
            np.empty(3, np.int64),
            _mode=2,
        )


@pytest.mark.parametrize(
    ("ids", "expect"),
    [
        ([], True),
        ([0], True),
        ([0, 1, 2], True),
        ([1], False),
        ([0, 2, 1], False),
        ([0, 1, -1], False),
    ],
)
def test_is_arange(ids, expect):
    assert _plan.is_arange(np.array(ids, np.int64)) is expect


@pytest.mark.parametrize("mode", sorted(_MODES))
def test_py1e_large_node_sorts_in_two_threads_exactly(mode):
    # A node past the two-thread threshold (2**18 samples): buckets split between two threads.
    node_sizes = [[120_000, 90_000, 7, 60_000]]
    begins, sizes, bounds = _nodes_case(node_sizes)
    rng, twin = np.random.default_rng(77), np.random.default_rng(77)
    out = np.empty(int(sizes.sum()), np.int64)
    _shuffle.shuffle_nodes(
        rng, "py1e", begins, sizes, bounds, 100_000, 160_000, out, _mode=_MODES[mode]
    )
    expect, _ = _twin_nodes(twin, "py1e", begins, node_sizes, 100_000, 160_000)
    assert np.array_equal(out, expect)
    assert _same_state(rng, twin)


@settings(max_examples=60, deadline=None)
@given(
    seed=seeds,
    spans=st.lists(st.tuples(_skip_span, st.booleans()), min_size=1, max_size=8),
    nodes=st.integers(1, 3),
    pre=st.integers(0, 3),
    mode=st.sampled_from([2, 3]),
    limit=st.integers(0, 8),
    exact=st.booleans(),
    alias=st.booleans(),
    wide=st.booleans(),
)
def test_scouted_spans_equal_reading_them(seed, spans, nodes, pre, mode, limit, exact, alias, wide):
    # A scout records where each span's words start; spans it passed are jumped to (wanted) or
    # over (not), the rest read as before: same values, and (exact) the generator ends the same.
    # Scouts stopped after any number of spans; out as the places themselves; int64 order.
    sizes = np.array([size for size, _ in spans], np.int64)
    begins = np.arange(len(spans), dtype=np.int64) * 40_000
    bounds = np.unique(np.linspace(0, len(spans), nodes + 1).astype(np.int64))
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    places = [p for (size, w), s in zip(spans, starts) if w and size for p in (s + size - 1, s)]
    places = np.array(places + [-1], np.int64)
    drawn, ours = np.random.default_rng(seed), np.random.default_rng(seed)
    _predraw([drawn, ours], pre)
    full = np.empty(int(sizes.sum()), np.int64)
    _shuffle.shuffle_nodes(drawn, "py1s", begins, sizes, bounds, 0, 1, full, _mode=2)
    scout = _shuffle.Scout(ours, sizes, _limit=limit, _force=True)
    assert scout.running
    out = places.copy() if alias else np.empty(len(places), np.int64)
    want = out if alias else places
    want_bounds, order = _shuffle.group_places(want, starts, out)
    if wide:
        order = order.astype(np.int64)
    _shuffle.shuffle_nodes(
        ours,
        "py1s",
        begins,
        sizes,
        bounds,
        0,
        1,
        out,
        want,
        want_bounds,
        order,
        exact=exact,
        _mode=mode,
        scout=scout,
    )
    expect = [int(full[p]) if p >= 0 else -1 for p in places]
    assert out.tolist() == expect
    if exact:
        assert ours.bit_generator.state == drawn.bit_generator.state


def test_scout_must_match_the_generator_and_spans():
    rng = np.random.default_rng(3)
    sizes = np.array([5000, 7000], np.int64)
    scout = _shuffle.Scout(rng, sizes, _force=True)
    rng.integers(0, 10)  # the generator moved on since the scout started
    args = (np.zeros(2, np.int64), sizes, np.array([0, 2], np.int64), 0, 1)
    out = np.array([3], np.int64)
    with pytest.raises(ValueError, match="scout"):
        _shuffle.shuffle_nodes(rng, "py1s", *args, out, out, np.array([0, 1, 1]), scout=scout)
    assert scout.stop() <= 2


def test_scout_is_not_started_for_other_generators_or_few_samples():
    sizes = np.array([100], np.int64)
    assert not _shuffle.Scout(np.random.Generator(np.random.MT19937(0)), sizes).running
    assert not _shuffle.Scout(np.random.default_rng(0), sizes).running  # too few to pay
