"""One worker's view of py1br, py2s and naive equals indexing the whole shuffle, which equals
pure-NumPy twins of the reference algorithms; the kernels draw exactly NumPy's draws."""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming._kernels import _shuffle
from streaming.plan import shuffle as S
from streaming.plan.shuffle import divide_spans, get_shuffle, shuffle_places

ALGOS = ["py1br", "py2s", "naive"]
KINDS = [np.random.PCG64, np.random.Philox, np.random.SFC64, np.random.MT19937]


# ---- pure-NumPy twins (the reference's NumPy calls, in its order) ----


def _twin_py1br(sizes, nc, seed, epoch, block_size):
    ends = np.cumsum(sizes)
    spans = list(zip((ends - sizes).tolist(), ends.tolist()))
    num_samples = int(ends[-1]) if len(ends) else 0
    np.random.default_rng(seed).shuffle(spans)
    spans, node_spans = divide_spans(spans, num_samples, nc)
    rng = np.random.default_rng(seed + epoch)
    for a, z in node_spans:
        part = spans[a:z]
        rng.shuffle(part)
        spans[a:z] = part
    low, high = int(0.75 * block_size), int(1.25 * block_size)
    stagger = rng.integers(0, low, (nc,))
    ids = np.empty(num_samples, np.int64)
    stop = 0
    for node, (a, z) in enumerate(node_spans):
        start = stop
        for b, e in spans[a:z]:
            ids[stop : stop + e - b] = np.arange(b, e)
            stop += e - b
        blocks, end = [], start
        while end < stop:
            size = rng.integers(low, high)
            b0, b1 = max(end - stagger[node], start), min(end + size - stagger[node], stop)
            blocks.append((b0, b1))
            end += b1 - b0
        for b0, b1 in blocks:
            rng.shuffle(ids[b0:b1])
    return ids


def _twin_py2s(sizes, nc, seed, epoch):
    ends = np.cumsum(sizes)
    shards = [np.arange(b, e) for b, e in zip((ends - sizes).tolist(), ends.tolist())]
    fixed = np.random.default_rng(seed)
    fixed.shuffle(shards)
    for a in shards:
        fixed.shuffle(a)
    total = sum(len(a) for a in shards)
    parts, k, so_far = [], 0, 0
    for part in range(nc):
        end, cur = total * (part + 1) // nc, []
        while k < len(shards):
            a = shards[k]
            if end < so_far + len(a):
                if so_far < end:
                    cur.append(a[: end - so_far])
                    shards[k] = a[end - so_far :]
                    so_far = end
                break
            cur.append(a)
            k += 1
            so_far += len(a)
        parts.append(cur)
    rng = np.random.default_rng(seed + epoch)
    out = []
    for cur in parts:
        rng.shuffle(cur)
        for a in cur:
            rng.shuffle(a)
        out.extend(cur)
    return np.concatenate(out).astype(np.int64) if out else np.zeros(0, np.int64)


def _twin_permutation(rng, n, stop=0):
    """Generator.permutation(n) from the bit generator's raw outputs, in Python: arange, then
    for i = n-1 .. 1 (or down to stop + 1) a 32-bit word (the low half of a raw, then its
    buffered high half) masked to i's bit length, rejected while above i; swap."""
    bit = rng.bit_generator
    state = bit.state
    has, half = state["has_uint32"], state["uinteger"]
    x = np.arange(n, dtype=np.int64)
    for i in range(n - 1, stop, -1):
        mask = (1 << i.bit_length()) - 1
        while True:
            if has:
                w, has = half, 0
            else:
                raw = int(bit.random_raw())
                w, half, has = raw & 0xFFFFFFFF, raw >> 32, 1
            if w & mask <= i:
                break
        j = w & mask
        x[i], x[j] = x[j], x[i]
    state = bit.state
    state["has_uint32"], state["uinteger"] = has, half
    bit.state = state
    return x


def _look_up(full, places):
    return np.array([full[p] if p >= 0 else -1 for p in places.tolist()], np.int64)


def _same_state(a, b) -> bool:
    sa, sb = a.bit_generator.state, b.bit_generator.state

    def same(u, v):
        if isinstance(u, dict):
            return u.keys() == v.keys() and all(same(u[k], v[k]) for k in u)
        if isinstance(u, np.ndarray):
            return np.array_equal(u, v)
        return u == v

    return same(sa, sb)


# ---- places ----


def _places(data, total, node_bounds):
    """Random places: spread, in one node (first, last or any), or a run; with -1 padding."""
    if total == 0:
        return np.array(data.draw(st.lists(st.just(-1), max_size=3)), np.int64)
    how = data.draw(st.sampled_from(["spread", "first", "last", "node", "run", "all"]))
    nodes = [(int(a), int(b)) for a, b in zip(node_bounds[:-1], node_bounds[1:]) if b > a]
    if how == "all":
        return np.arange(total, dtype=np.int64)
    if how == "spread":
        lo, hi = 0, total
    elif how == "first":
        lo, hi = nodes[0]
    elif how == "last":
        lo, hi = nodes[-1]
    elif how == "node":
        lo, hi = data.draw(st.sampled_from(nodes))
    else:
        lo = data.draw(st.integers(0, total - 1))
        hi = min(total, lo + 40)
        pads = np.full(data.draw(st.integers(0, 2)), -1, np.int64)
        return np.concatenate([np.arange(lo, hi, dtype=np.int64), pads])
    places = data.draw(st.lists(st.integers(lo, hi - 1), max_size=50))
    pads = data.draw(st.lists(st.just(-1), max_size=3))
    return np.array(places + pads, np.int64)


def _node_bounds(algo, sizes, nc, seed):
    if algo == "py2s":
        _, _, layout, _ = S._py2s_setup(sizes, nc, seed, 0)
        return np.concatenate([[0], np.cumsum(layout[3])])[layout[4]]
    _, span_sizes, node_spans, _, _ = S._node_spans(sizes, nc, seed, 0)
    return np.concatenate([[0], np.cumsum(span_sizes)])[S._bounds(node_spans)]


sizes_st = st.lists(
    st.one_of(st.just(0), st.integers(1, 40), st.integers(41, 700)), min_size=1, max_size=10
)
seeds_st = st.one_of(st.integers(0, 2**32 - 1), st.integers(2**32, 2**64))


@settings(max_examples=250, deadline=None)
@given(
    algo=st.sampled_from(ALGOS),
    sizes=sizes_st,
    nc=st.integers(1, 14),
    seed=seeds_st,
    epoch=st.integers(0, 5),
    block=st.integers(2, 1200),
    data=st.data(),
)
def test_views_equal_indexing_the_twins(algo, sizes, nc, seed, epoch, block, data):
    sizes = np.array(sizes, np.int64)
    if algo == "py1br":
        twin = _twin_py1br(sizes, nc, seed, epoch, block)
    elif algo == "py2s":
        twin = _twin_py2s(sizes, nc, seed, epoch)
    else:
        twin = np.random.default_rng(seed + epoch).permutation(int(sizes.sum()))
    full = get_shuffle(algo, sizes, nc, seed, epoch, block)
    assert np.array_equal(full, twin)
    places = _places(data, len(full), _node_bounds(algo, sizes, nc, seed))
    expect = _look_up(full, places)
    got = shuffle_places(algo, sizes, nc, seed, epoch, block, places.copy())
    assert np.array_equal(got, expect)
    given_away = places.copy()
    got = shuffle_places(algo, sizes, nc, seed, epoch, block, given_away, overwrite=True)
    assert np.array_equal(got, expect)


def test_more_nodes_than_samples_and_one_shard():
    for algo in ALGOS:
        for sizes in ([5], [3, 0, 4], [0, 0, 7, 0], [1]):
            sizes = np.array(sizes, np.int64)
            for nc in (1, 3, 9, 50):
                full = get_shuffle(algo, sizes, nc, 2**40 + 3, 1, 4)
                places = np.concatenate([np.arange(len(full))[::-1], [-1]])
                got = shuffle_places(algo, sizes, nc, 2**40 + 3, 1, 4, places)
                assert np.array_equal(got[:-1], full[::-1]) and got[-1] == -1


@pytest.mark.parametrize("algo", ALGOS)
def test_views_reject_places_outside_the_epoch(algo):
    with pytest.raises(ValueError, match="outside"):
        shuffle_places(algo, np.array([5, 5], np.int64), 2, 0, 0, 10, np.array([3, 10]))


# ---- kernels: every draw path, generator left where NumPy leaves it ----


def _py1br_kernel_args(sizes, nc, seed, epoch, block, kind):
    # As _py1br_setup, from a generator of any kind (the span reorder and stagger drawn by NumPy).
    begins, span_sizes, node_spans, _, n = S._node_spans(sizes, nc, seed, epoch)
    order_rng = np.random.Generator(kind(seed + epoch))
    for a, z in node_spans:  # the span reorder's draws (values unused: only the rng's position)
        if z - a > 1:
            order_rng.shuffle(np.arange(z - a))
    low, high = int(0.75 * block), int(1.25 * block)
    stagger = order_rng.integers(0, low, (nc,))
    return begins, span_sizes, S._bounds(node_spans), stagger, low, max(high, low + 1), order_rng


def _py1br_twin(args, rng):
    """py1br's shuffle of the kernel arguments ``args`` (``begins, span_sizes, bounds, stagger,
    low, high``) by the twin kernel, from a copy of ``rng``: the ids, the copy (where it
    ends) and the spans' starts."""
    begins, span_sizes, bounds, stagger, low, high = args
    starts = np.concatenate([[0], np.cumsum(span_sizes)])
    layout = np.concatenate([np.arange(b, b + s) for b, s in zip(begins, span_sizes)] or [[]])
    twin = layout.astype(np.int64)
    twin_rng = _rng_copy(rng)
    _shuffle.shuffle_blocks_py1br(
        twin_rng, twin, np.append(starts[bounds[:-1]], starts[-1]), stagger, low, high
    )
    return twin, twin_rng, starts


def _rng_copy(rng):
    twin = np.random.Generator(type(rng.bit_generator)())
    twin.bit_generator.state = rng.bit_generator.state
    return twin


# A py1br epoch of up to 8 shards over up to 6 canonical nodes, with any block size.
_py1br_epochs = dict(
    sizes=st.lists(st.integers(0, 900), min_size=1, max_size=8),
    nc=st.integers(1, 6),
    seed=seeds_st,
    block=st.integers(3, 1500),
)


@settings(max_examples=120, deadline=None)
@given(
    **_py1br_epochs,
    kind=st.sampled_from(KINDS),
    mode=st.sampled_from([0, 1, 2, 3]),
    pre=st.booleans(),
    wide=st.booleans(),
    data=st.data(),
)
def test_py1br_kernel_every_path(sizes, nc, seed, block, kind, mode, pre, wide, data):
    # wide: a view's blocks of int64 ids (as past 2**31 samples), not int32.
    with _wide_ids(wide):
        _check_py1br_kernel(sizes, nc, seed, block, kind, mode, pre, data)


def _check_py1br_kernel(sizes, nc, seed, block, kind, mode, pre, data):
    if kind is not np.random.PCG64 and mode == 2:
        mode = 1  # (mode 3 falls back to the generic path itself, threads kept)
    sizes = np.array(sizes, np.int64)
    begins, span_sizes, bounds, stagger, low, high, rng = _py1br_kernel_args(
        sizes, nc, seed, 0, block, kind
    )
    if pre:
        rng.integers(0, 2**31)  # a buffered 32-bit half
    n = int(span_sizes.sum())
    twin, twin_rng, starts = _py1br_twin((begins, span_sizes, bounds, stagger, low, high), rng)
    # The whole epoch, exact.
    rng_full = _rng_copy(rng)
    out = np.empty(n, np.int64)
    _shuffle.py1br_places(rng_full, begins, span_sizes, bounds, stagger, low, high, out, _mode=mode)
    assert np.array_equal(out, twin)
    assert _same_state(rng_full, twin_rng)
    # Some places, exact or not (with or without an order).
    places = _places(data, n, starts[bounds])
    expect = _look_up(twin, places)
    for exact in (True, False):
        r = _rng_copy(rng)
        got = np.empty(len(places), np.int64)
        want_bounds, order = _shuffle.group_places(places, starts[bounds], got)
        _shuffle.py1br_places(
            r,
            begins,
            span_sizes,
            bounds,
            stagger,
            low,
            high,
            got,
            places,
            want_bounds,
            order,
            exact=exact,
            _mode=mode,
        )
        assert np.array_equal(got, expect)
        if exact:
            assert _same_state(r, twin_rng)
    # Places grouped by node and given without an order (taken in turn).
    for flat, turn_bounds, idx in _in_turn(places, starts[bounds]):
        got = np.empty(len(flat), np.int64)
        _shuffle.py1br_places(_rng_copy(rng), begins, span_sizes, bounds, stagger, low, high,
                              got, flat, turn_bounds, None, exact=False, _mode=mode)
        assert np.array_equal(got, expect[idx])


@settings(max_examples=80, deadline=None)
@given(
    **_py1br_epochs,
    mode=st.sampled_from([0, 1, 2, 3]),
    pre=st.booleans(),
    limit=st.integers(0, 7),
    data=st.data(),
)
def test_py1br_scouted_nodes_equal_reading_them(sizes, nc, seed, block, mode, pre, limit, data):
    # A scout passes the first nodes (any number: stopped after limit) recording where each
    # one's draws start; the view jumps to the wanted ones among them and reads on from the
    # last: the same values, and (exact) the generator ends where NumPy's calls leave it.
    # (Mode 1, the generic path, reads every node itself: the scout is stopped and ignored.)
    sizes = np.array(sizes, np.int64)
    begins, span_sizes, bounds, stagger, low, high, rng = _py1br_kernel_args(
        sizes, nc, seed, 0, block, np.random.PCG64
    )
    if pre:
        rng.integers(0, 2**31)  # a buffered 32-bit half
    twin, twin_rng, starts = _py1br_twin((begins, span_sizes, bounds, stagger, low, high), rng)
    places = _places(data, int(span_sizes.sum()), starts[bounds])
    expect = _look_up(twin, places)
    node_sizes = np.diff(starts[bounds])
    for exact in (True, False):
        r = _rng_copy(rng)
        scout = _shuffle.Scout(r, node_sizes, stagger=stagger, low=low, high=high,
                               _limit=limit, _force=True)
        assert scout.running
        got = np.empty(len(places), np.int64)
        want_bounds, order = _shuffle.group_places(places, starts[bounds], got)
        _shuffle.py1br_places(r, begins, span_sizes, bounds, stagger, low, high, got, places,
                              want_bounds, order, exact=exact, _mode=mode, scout=scout)
        assert np.array_equal(got, expect)
        if exact:
            assert _same_state(r, twin_rng)
        assert not scout.running or scout.stop() <= min(limit, nc)


def test_py1br_scout_must_match_the_nodes_and_generator():
    sizes = np.array([5000, 7000], np.int64)
    begins, span_sizes, bounds, stagger, low, high, rng = _py1br_kernel_args(
        sizes, 2, 5, 0, 3000, np.random.PCG64
    )
    node_sizes = np.diff(np.concatenate([[0], np.cumsum(span_sizes)])[bounds])
    args = (begins, span_sizes, bounds, stagger, low, high)
    for change in ("state", "stagger", "block"):
        r = _rng_copy(rng)
        kw = {"stagger": stagger, "low": low, "high": high}
        if change == "stagger":
            kw["stagger"] = (stagger + 1) % low
        if change == "block":
            kw["high"] = high + 1
        scout = _shuffle.Scout(r, node_sizes, _force=True, **kw)
        if change == "state":
            r.integers(0, 10)  # the generator moved on since the scout started
        out = np.array([3], np.int64)
        with pytest.raises(ValueError, match="scout"):
            _shuffle.py1br_places(r, *args, out, out, np.array([0, 1, 1]), scout=scout)
        scout.stop()
    with pytest.raises(ValueError, match="stagger"):
        _shuffle.Scout(rng, node_sizes, stagger=np.array([low, 0]), low=low, high=high)


def _in_turn(places, node_bounds):
    """The valid places grouped by node (as ``group_places`` groups them) with their group
    bounds and where each came from: once in ``group_places``' order within each node, once
    ascending within each node (no order needed). Yields ``(places, bounds, indices)``."""
    got = np.empty(len(places), np.int64)
    bounds, order = _shuffle.group_places(places, node_bounds, got)
    idx = np.arange(len(places)) if order is None else np.asarray(order, np.int64)
    yield places[idx], bounds, idx
    for a, z in zip(bounds[:-1], bounds[1:]):
        seg = idx[a:z]
        idx[a:z] = seg[np.argsort(places[seg], kind="stable")]
    yield places[idx], bounds, idx


def _py2s_twin_kernels(fixed, epoch, layout, n):
    # The previous (oracle-verified) py2s: the layout, then per node piece order and pieces.
    sb, ss, ps, pz, npc = layout
    lay = np.empty(n, np.int64)
    _shuffle.shuffle_spans(fixed, sb, ss, lay)
    ids = np.empty(n, np.int64)
    off = 0
    for c in range(len(npc) - 1):
        a, z = int(npc[c]), int(npc[c + 1])
        order = np.arange(z - a)
        if z - a > 1:
            epoch.shuffle(order)
        m = int(pz[a:z].sum())
        _shuffle.gather_shuffle_pieces(
            epoch, lay, ps[a:z][order].copy(), pz[a:z][order].copy(), ids[off : off + m]
        )
        off += m
    return ids


@settings(max_examples=120, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 900), min_size=1, max_size=8),
    nc=st.integers(1, 12),
    seed=seeds_st,
    kind=st.sampled_from(KINDS),
    mode=st.sampled_from([0, 1, 2, 3]),
    wide=st.booleans(),
    data=st.data(),
)
def test_py2s_kernel_every_path(sizes, nc, seed, kind, mode, wide, data):
    # wide: a view's layout values held as int64 (as past 2**31 samples), not int32.
    with _wide_ids(wide):
        _check_py2s_kernel(sizes, nc, seed, kind, mode, data)


@contextlib.contextmanager
def _wide_ids(wide: bool):
    """Views hold sample ids in int64 scratch (as past 2**31 samples), not int32."""
    names = ("_PY1BR_BLOCK32_BELOW", "_PY2S_FX32_BELOW")
    was = [getattr(_shuffle, name) for name in names]
    for name in names:
        setattr(_shuffle, name, 0 if wide else getattr(_shuffle, name))
    try:
        yield
    finally:
        for name, value in zip(names, was):
            setattr(_shuffle, name, value)


def _check_py2s_kernel(sizes, nc, seed, kind, mode, data):
    if kind is not np.random.PCG64 and mode == 2:
        mode = 1  # (mode 3 falls back to the generic path itself, threads kept)
    sizes = np.array(sizes, np.int64)
    fixed0, _, layout, n = S._py2s_setup(sizes, nc, seed, 0)
    fixed = np.random.Generator(kind(seed))
    fixed.shuffle(np.arange(len(sizes)))  # the shard reorder's draws (its order is layout's)
    epoch = np.random.Generator(kind(seed + 1))
    tf, te = _rng_copy(fixed), _rng_copy(epoch)
    twin = _py2s_twin_kernels(tf, te, layout, n)
    f, e = _rng_copy(fixed), _rng_copy(epoch)
    out = np.empty(n, np.int64)
    _shuffle.py2s_places(f, e, *layout, out, _mode=mode)
    assert np.array_equal(out, twin)
    assert _same_state(f, tf) and _same_state(e, te)
    node_bounds = np.concatenate([[0], np.cumsum(layout[3])])[layout[4]]
    places = _places(data, n, node_bounds)
    expect = _look_up(twin, places)
    for exact in (True, False):
        f, e = _rng_copy(fixed), _rng_copy(epoch)
        got = np.empty(len(places), np.int64)
        want_bounds, order = _shuffle.group_places(places, node_bounds, got)
        _shuffle.py2s_places(
            f, e, *layout, got, places, want_bounds, order, exact=exact, _mode=mode
        )
        assert np.array_equal(got, expect)
        if exact:
            assert _same_state(f, tf) and _same_state(e, te)
    # Places grouped by node and given without an order (taken in turn).
    for flat, turn_bounds, idx in _in_turn(places, node_bounds):
        got = np.empty(len(flat), np.int64)
        _shuffle.py2s_places(_rng_copy(fixed), _rng_copy(epoch), *layout, got, flat, turn_bounds,
                             None, exact=False, _mode=mode)
        assert np.array_equal(got, expect[idx])


@pytest.fixture(params=[True, False], ids=["groups", "words"])
def simd(request):
    """Fisher-Yates words read (and counted) 64 at a time where the CPU can, or not at all."""
    was = _shuffle._set_simd(request.param)
    yield request.param
    _shuffle._set_simd(was)


@pytest.mark.parametrize("mode", [0, 2, 3])
@pytest.mark.parametrize("wide", [False, True], ids=["int32", "int64"])
@pytest.mark.parametrize("algo", ["py1br", "py2s"])
def test_large_views_take_the_raw_skip_and_helper_paths(algo, wide, mode, simd):
    with _wide_ids(wide):
        _check_large_view(algo, mode)


def test_py2s_view_looks_up_on_two_threads(monkeypatch):
    # Mode 3 draws the layout on a second thread; from one entry on, the look-ups of the
    # wanted places are shared with a second thread too (by default from 200k entries).
    monkeypatch.setattr(_shuffle, "_py2s_look_split", 1)
    _check_large_view("py2s", 3)


def _check_large_view(algo, mode):
    # ~1.2M samples: bulk raw reads, count-only skips of whole nodes and of blocks/pieces
    # (SSE block counting on long runs of words; py1br's 60k blocks are counted and drawn 64
    # words at a time with AVX2), the helper / second thread (mode 3 forces it; mode 0 takes
    # it when a second core is there); places in one late node, and spread.
    sizes = np.full(120, 10_000, np.int64)
    sizes[7] = 0
    nc, seed, block = 8, 2**33 + 5, 60_000
    if algo == "py1br":
        begins, span_sizes, bounds, stagger, low, high, rng = _py1br_kernel_args(
            sizes, nc, seed, 2, block, np.random.PCG64
        )
        n = int(span_sizes.sum())
        twin, twin_rng, starts = _py1br_twin((begins, span_sizes, bounds, stagger, low, high), rng)
        node_bounds = starts[bounds]
    else:
        fixed, epoch, layout, n = S._py2s_setup(sizes, nc, seed, 2)
        tf, te = _rng_copy(fixed), _rng_copy(epoch)
        twin = _py2s_twin_kernels(tf, te, layout, n)
        node_bounds = np.concatenate([[0], np.cumsum(layout[3])])[layout[4]]
    gen = np.random.default_rng(0)
    late = np.arange(node_bounds[6], node_bounds[7])[::3]
    spread = gen.choice(n, 50_000)
    for places in (late, spread, np.array([node_bounds[7] - 1])):
        places = places.astype(np.int64)
        for exact in (True, False):
            got = np.empty(len(places), np.int64)
            want_bounds, order = _shuffle.group_places(places, node_bounds, got)
            if algo == "py1br":
                r = _rng_copy(rng)
                _shuffle.py1br_places(
                    r,
                    begins,
                    span_sizes,
                    bounds,
                    stagger,
                    low,
                    high,
                    got,
                    places,
                    want_bounds,
                    order,
                    exact=exact,
                    _mode=mode,
                )
                ok_state = not exact or _same_state(r, twin_rng)
            else:
                f, e = _rng_copy(fixed), _rng_copy(epoch)
                _shuffle.py2s_places(
                    f, e, *layout, got, places, want_bounds, order, exact=exact, _mode=mode
                )
                ok_state = not exact or (_same_state(f, tf) and _same_state(e, te))
            assert np.array_equal(got, twin[places])
            assert ok_state


def test_kernels_reject_bad_groupings():
    sizes = np.array([10, 10], np.int64)
    begins, span_sizes, bounds, stagger, low, high, rng = _py1br_kernel_args(
        sizes, 2, 1, 0, 8, np.random.PCG64
    )
    out = np.empty(3, np.int64)
    places = np.array([1, 2, 19], np.int64)
    with pytest.raises(ValueError, match="want_bounds"):
        _shuffle.py1br_places(
            rng, begins, span_sizes, bounds, stagger, low, high, out, places, np.array([0, 3])
        )
    with pytest.raises(ValueError, match="outside its node"):
        # Claimed all in node 0: the place 19 is in node 1.
        _shuffle.py1br_places(
            rng, begins, span_sizes, bounds, stagger, low, high, out, places, np.array([0, 3, 3])
        )
    with pytest.raises(ValueError, match="epoch holds"):
        _shuffle.py1br_places(rng, begins, span_sizes, bounds, stagger, low, high, out)
    fixed, epoch, layout, n = S._py2s_setup(sizes, 2, 1, 0)
    with pytest.raises(ValueError, match="outside its node"):
        _shuffle.py2s_places(fixed, epoch, *layout, out, places, np.array([0, 3, 3]), None)
    with pytest.raises(ValueError, match="different generators"):
        _shuffle.py2s_places(fixed, fixed, *layout, np.empty(n, np.int64))
    with pytest.raises(ValueError, match="crosses a shard"):
        sb, ss, ps, pz, npc = layout
        _shuffle.py2s_places(
            fixed,
            epoch,
            sb,
            ss,
            np.array([0, 5]),
            np.array([5, 15]),
            np.array([0, 2]),
            np.empty(n, np.int64),
        )


# ---- naive ----


@settings(max_examples=150, deadline=None)
@given(
    n=st.one_of(st.integers(0, 40), st.integers(41, 2500)),
    seed=seeds_st,
    pre=st.booleans(),
    kind=st.sampled_from(KINDS),
    mode=st.sampled_from([0, 1, 2, 3]),
)
def test_permutation_equals_twin_and_numpy(n, seed, pre, kind, mode):
    if kind is not np.random.PCG64 and mode == 2:
        mode = 1
    ours, numpys = np.random.Generator(kind(seed)), np.random.Generator(kind(seed))
    if pre:
        ours.integers(0, 2**31)
        numpys.integers(0, 2**31)
    expect = numpys.permutation(n)
    got = _shuffle.permutation(ours, n, _mode=mode)
    assert got.dtype == np.int64 and np.array_equal(got, expect)
    assert _same_state(ours, numpys)
    if kind is np.random.PCG64:
        twin_rng = np.random.Generator(kind(seed))
        if pre:
            twin_rng.integers(0, 2**31)
        assert np.array_equal(_twin_permutation(twin_rng, n), expect)
        assert _same_state(twin_rng, numpys)


@pytest.mark.parametrize("n", [4095, 4097, 8193, 300_000])
@pytest.mark.parametrize("mode", [0, 1, 3])
def test_permutation_across_draw_chunks(n, mode):
    # Draws are made 2048 at a time into the draw queue (by a helper thread in mode 3) and
    # swapped 4096 at a time, the far ends prefetched within a chunk.
    ours, numpys = np.random.default_rng(n), np.random.default_rng(n)
    assert np.array_equal(_shuffle.permutation(ours, n, _mode=mode), numpys.permutation(n))
    assert _same_state(ours, numpys)
    places = np.array([0, n - 1, -1, n // 2, 7, 7], np.int64)
    full = np.random.default_rng(n).permutation(n)
    got = _shuffle.permutation(np.random.default_rng(n), n, places, _mode=mode)
    assert np.array_equal(got, np.where(places >= 0, full[np.maximum(places, 0)], -1))
    with pytest.raises(ValueError, match="outside the epoch"):
        _shuffle.permutation(np.random.default_rng(n), n, np.array([n]))


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(65_537, 400_000),
    seed=seeds_st,
    mode=st.sampled_from([0, 2, 3]),
    simd=st.booleans(),
    data=st.data(),
)
def test_permutation_groups_and_offsets(n, seed, mode, simd, data):
    # Past 2**16 the draws are read 64 words at a time where the CPU has AVX2 (a group's words
    # all surely accepted or rejected; ~3% of groups at n ~ 2**17 are not, and are read word
    # by word), or word by word everywhere; looked-up places come from a permutation held as
    # offsets from arange(n).
    was = _shuffle._set_simd(simd)
    try:
        ours, numpys = np.random.default_rng(seed), np.random.default_rng(seed)
        places = np.array(data.draw(st.lists(st.integers(-1, n - 1), max_size=200)), np.int64)
        expect = numpys.permutation(n)
        got = _shuffle.permutation(ours, n, places, _mode=mode)
        assert np.array_equal(got, np.where(places >= 0, expect[np.maximum(places, 0)], -1))
        assert _same_state(ours, numpys)
        ours = np.random.default_rng(seed)
        assert np.array_equal(_shuffle.permutation(ours, n, _mode=mode), expect)
        assert _same_state(ours, numpys)
    finally:
        _shuffle._set_simd(was)


@settings(max_examples=60, deadline=None)
@given(
    n=st.one_of(st.integers(0, 3000), st.integers(65_537, 300_000)),
    seed=seeds_st,
    mode=st.sampled_from([0, 2, 3]),
    data=st.data(),
)
def test_permutation_stops_at_the_least_place(n, seed, mode, data):
    # With exact=False the draws stop once the least place is final (its own step: place p
    # at i = p, place 0 at i = 1): the values are the permutation's, and the generator is
    # where a Fisher-Yates stopped there leaves it, so no further draw was made.
    high = st.integers(max(0, n - 1 - data.draw(st.integers(0, 2000))), n - 1) if n else st.nothing()
    picks = st.lists(st.one_of(st.just(-1), high, st.integers(0, max(n - 1, 0)) if n else
                               st.nothing()), max_size=40)
    places = np.array(data.draw(picks), np.int64)
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    expect = np.random.default_rng(seed).permutation(n)
    got = _shuffle.permutation(ours, n, places, exact=False, _mode=mode)
    assert np.array_equal(got, _look_up(expect, places))
    valid = places[places >= 0]
    least = int(valid.min()) if len(valid) else n
    partial = _twin_permutation(twin, n, max(least - 1, 0))
    assert _same_state(ours, twin)
    assert np.array_equal(partial[valid], expect[valid])


@pytest.mark.parametrize("mode", [0, 2, 3])
def test_permutation_stopped_after_whole_raws_keeps_numpys_half_word(mode):
    # Found by the test above: these draws stop right after words read a group (or block) of
    # raws at a time, both halves of each used. NumPy keeps a used raw's high half in the
    # state (``uinteger``, with ``has_uint32`` 0); the reader kept an older one there, so
    # the states differed in that unused field only.
    n, seed, places = 65_537, 18_950, np.array([64_706], np.int64)
    ours, twin = np.random.default_rng(seed), np.random.default_rng(seed)
    got = _shuffle.permutation(ours, n, places, exact=False, _mode=mode)
    assert np.array_equal(got, np.random.default_rng(seed).permutation(n)[places])
    _twin_permutation(twin, n, int(places[0]) - 1)
    assert _same_state(ours, twin)


@contextlib.contextmanager
def _two_core_naive(helper=True, share=None):
    """naive's two-core path (ss_nsplit) from a few steps on, with or without its helper
    thread, the caller taking ``share`` of the steps (default: ``_naive_share``'s); restored
    after."""
    was = _shuffle._naive_split_min, _shuffle._naive_split_helper, _shuffle._naive_share
    _shuffle._naive_split_min, _shuffle._naive_split_helper = 2, helper
    if share is not None:
        _shuffle._naive_share = lambda n: share
    try:
        yield
    finally:
        _shuffle._naive_split_min, _shuffle._naive_split_helper, _shuffle._naive_share = was


@settings(max_examples=60, deadline=None)
@given(
    n=st.one_of(st.integers(3, 3000), st.integers(65_537, 300_000)),
    seed=seeds_st,
    exact=st.booleans(),
    helper=st.booleans(),
    share=st.one_of(st.none(), st.floats(0.01, 0.99)),
    pre=st.booleans(),
    alias=st.booleans(),
    data=st.data(),
)
def test_permutation_on_two_cores(n, seed, exact, helper, share, pre, alias, data):
    # The later steps run on an identity of their own places (by a helper thread, or after the
    # earlier ones when there is none), composed with the epoch's at the places wanted; the
    # helper's copy of the generator is the one that leaves rng where it should be. Where the
    # steps are split (the caller's share) changes the time only.
    near_end = st.integers(max(0, n - 1 - data.draw(st.integers(0, 2000))), n - 1)
    picks = st.lists(st.one_of(st.just(-1), near_end, st.integers(0, n - 1)), max_size=300)
    places = np.array(data.draw(picks), np.int64)
    ours, twin, numpys = (np.random.default_rng(seed) for _ in range(3))
    if pre:  # a buffered half word to start from
        for rng in (ours, twin, numpys):
            rng.integers(0, 2**31)
    full = numpys.permutation(n)
    with _two_core_naive(helper, share):
        if alias:  # out may be places itself
            got = places.copy()
            assert _shuffle.permutation(ours, n, got, got, exact=exact) is got
        else:
            got = _shuffle.permutation(ours, n, places, exact=exact)
    assert np.array_equal(got, _look_up(full, places))
    if exact:
        assert _same_state(ours, numpys)
    else:
        valid = places[places >= 0]
        least = int(valid.min()) if len(valid) else n
        _twin_permutation(twin, n, max(least - 1, 0))
        assert _same_state(ours, twin)


@pytest.mark.parametrize("two_cores", [True, False])
def test_permutation_refuses_places_past_the_epoch_before_drawing(two_cores):
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    with contextlib.ExitStack() as stack:
        if two_cores:
            stack.enter_context(_two_core_naive())
        with pytest.raises(ValueError, match="place 1000 is outside the epoch"):
            _shuffle.permutation(rng, 1000, np.array([5, 1000, 7]))
    assert rng.bit_generator.state == before  # refused before any draw


# ---- the draw queue (naive, py1br): a helper thread makes the draws, or the caller does ----


def _py1br_large(seed):
    # 600k samples over 8 nodes: enough draws for a helper, blocks of 45k-75k.
    *args, rng = _py1br_kernel_args(
        np.full(60, 10_000, np.int64), 8, seed, 1, 60_000, np.random.PCG64
    )
    twin, twin_rng, _ = _py1br_twin(tuple(args), rng)
    return tuple(args), rng, twin, twin_rng


@pytest.mark.parametrize("mode", [3, 4])
@pytest.mark.parametrize("algo", ["naive", "py1br"])
def test_draw_queue_helper_and_its_takeover(algo, mode):
    # Mode 3: a helper thread makes every draw. Mode 4: the helper stalls (50 ms, past the
    # 20 ms the caller waits for a sign of it) after two calls; the caller stops it and makes
    # the rest itself, from where it left off. Same ids, same generator state either way.
    if algo == "naive":
        n = 600_000
        ours, numpys = np.random.default_rng(17), np.random.default_rng(17)
        expect = numpys.permutation(n)
        places = np.random.default_rng(1).choice(n, 5_000)
        got = _shuffle.permutation(ours, n, places, _mode=mode)
        assert np.array_equal(got, expect[places])
        assert _same_state(ours, numpys)
    else:
        args, rng, twin, twin_rng = _py1br_large(2**40 + 3)
        out = np.empty(len(twin), np.int64)
        _shuffle.py1br_places(rng, *args, out, _mode=mode)
        assert np.array_equal(out, twin)
        assert _same_state(rng, twin_rng)
    helped, taken = _shuffle.last_queue
    assert helped
    if mode == 4:
        assert taken


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two allowed cores")
@pytest.mark.parametrize("one_core", [False, True])
def test_helper_threads_leave_the_callers_cores_as_they_were(one_core):
    # Helper threads are started on the caller's other cores (a CPU mask of their own, widened
    # once they run); the caller's own mask is never changed. With one core allowed there is
    # no other core: the helper starts as a plain thread. Same ids either way.
    mask = os.sched_getaffinity(0)
    n = 600_000
    expect = np.random.default_rng(17).permutation(n)
    places = np.random.default_rng(1).choice(n, 5_000)
    try:
        if one_core:
            os.sched_setaffinity(0, {min(mask)})
        before = os.sched_getaffinity(0)
        with _two_core_naive():  # ss_nsplit's helper (started only with a second core)
            split = _shuffle.permutation(np.random.default_rng(17), n, places)
        queued = _shuffle.permutation(np.random.default_rng(17), n, places, _mode=3)
        helped = _shuffle.last_queue[0]
        after = os.sched_getaffinity(0)
    finally:
        os.sched_setaffinity(0, mask)
    assert after == before
    assert helped  # mode 3 starts the draw queue's helper whatever the cores
    assert np.array_equal(split, expect[places])
    assert np.array_equal(queued, expect[places])


def test_draw_queue_without_a_helper():
    # Below _queue_min_draws (or with one core) the caller makes the draws itself.
    ours, numpys = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(_shuffle.permutation(ours, 50_000), numpys.permutation(50_000))
    assert _shuffle.last_queue == (False, False)
    assert _same_state(ours, numpys)


def test_py1br_refuses_block_sizes_past_32_bits():
    args, rng, _, _ = _py1br_large(3)
    begins, span_sizes, bounds, stagger, low, _ = args
    with pytest.raises(ValueError, match="2\\*\\*32"):
        _shuffle.py1br_places(
            rng, begins, span_sizes, bounds, stagger, low, 2**32 + 1, np.empty(1, np.int64)
        )


def test_draw_queue_beside_busy_python_threads():
    # The queue's helper takes the GIL only for ss_pref's jumps (mode 3 forces both helpers);
    # planning from a Python thread while another one keeps the GIL busy neither deadlocks nor
    # changes the ids.
    import threading

    args, rng, twin, twin_rng = _py1br_large(11)
    stop = threading.Event()

    def busy():
        x = 0
        while not stop.is_set():
            x += 1

    out = np.empty(len(twin), np.int64)

    def plan():
        _shuffle.py1br_places(rng, *args, out, _mode=3)

    spinner = threading.Thread(target=busy)
    spinner.start()
    try:
        planner = threading.Thread(target=plan)
        planner.start()
        planner.join(60)
        assert not planner.is_alive()
    finally:
        stop.set()
        spinner.join()
    assert np.array_equal(out, twin)
    assert _same_state(rng, twin_rng)


@pytest.mark.parametrize("algo", ["py1br", "py2s"])
def test_ascending_places_take_the_run_split(algo):
    # A worker's places within a node usually ascend: blocks (py1br) and pieces (py2s) are then
    # found as runs by binary search, nothing reordered; repeats and the blocks clipped together
    # at a node's start included. Unsorted places of the same set take the general sort.
    gen = np.random.default_rng(4)
    if algo == "py1br":
        args, rng, twin, _ = _py1br_large(29)
        bounds = args[2]
        starts = np.concatenate([[0], np.cumsum(args[1])])
        node_bounds = starts[bounds]
    else:
        fixed, epoch, layout, n = S._py2s_setup(np.full(60, 10_000, np.int64), 8, 29, 1)
        twin = _py2s_twin_kernels(_rng_copy(fixed), _rng_copy(epoch), layout, n)
        node_bounds = np.concatenate([[0], np.cumsum(layout[3])])[layout[4]]
    n = len(twin)
    ascending = np.sort(gen.choice(n, 20_000))  # repeats too
    for places in (ascending, gen.permutation(ascending)):
        got = np.empty(len(places), np.int64)
        want_bounds, order = _shuffle.group_places(places, node_bounds, got)
        if algo == "py1br":
            _shuffle.py1br_places(
                _rng_copy(rng), *args, got, places, want_bounds, order, exact=False
            )
        else:
            _shuffle.py2s_places(
                _rng_copy(fixed),
                _rng_copy(epoch),
                *layout,
                got,
                places,
                want_bounds,
                order,
                exact=False,
            )
        assert np.array_equal(got, twin[places])


@pytest.mark.parametrize(
    "delay_ns, left",
    # 3 us every 512 raws: a sub-block of 32,768 raws takes ~0.3 ms, as on a slow day here
    # (raws at 6 ns; 200 us used to count as descheduled and switched most 1e8 plans' helpers
    # off). 1 ms every 512 raws: a helper that loses whole time slices (it shares a core).
    [(3_000, False), (1_000_000, True)],
    ids=["slow", "descheduled"],
)
def test_raws_ahead_helper_kept_when_slow_and_left_when_descheduled(delay_ns, left):
    sizes = np.full(200, 10_000, np.int64)
    fixed, epoch, layout, n = S._py2s_setup(sizes, 8, 2**35 + 9, 3)
    expect = np.empty(n, np.int64)
    _shuffle.py2s_places(_rng_copy(fixed), _rng_copy(epoch), *layout, expect, _mode=1)
    got = np.empty(n, np.int64)
    made, offs = _shuffle._pref_stats()
    old = _shuffle._set_pref_delay(delay_ns)
    try:
        # Mode 3: raws read as PCG64's, the epoch's made ahead by the helper (ss_pref).
        _shuffle.py2s_places(_rng_copy(fixed), _rng_copy(epoch), *layout, got, _mode=3)
    finally:
        _shuffle._set_pref_delay(old)
    assert np.array_equal(got, expect)
    helper_made, helper_offs = (a - b for a, b in zip(_shuffle._pref_stats(), (made, offs)))
    if left:
        # The reader stops waiting for it (and may switch it off): it makes most raws itself.
        assert helper_made < 200_000
    else:
        # The epoch's ~1.4M raws: the helper makes a good share of them and stays on.
        assert helper_offs == 0
        assert helper_made >= 300_000


def _spied_scouts(monkeypatch):
    """The py1br scouts shuffle_places starts from here on (made worth it for small epochs)."""
    monkeypatch.setattr(_shuffle, "_helper_min_raws", 0)
    scouts = []
    make = S._py1br_scout

    def spy(setup):
        scouts.append(make(setup))
        return scouts[-1]

    monkeypatch.setattr(S, "_py1br_scout", spy)
    return scouts


@pytest.mark.parametrize("nc", [4, 32])
def test_py1br_worker_plans_with_a_scout(monkeypatch, nc):
    # worker_plan starts a scout over py1br's nodes while it computes the worker's places (made
    # worth it here for a small epoch): every worker's plan is still its share of the epoch's.
    from streaming.plan import PlanSpec, epoch_work, worker_plan, worker_work

    scouts = _spied_scouts(monkeypatch)
    sizes = np.full(80, 700, np.int64)
    spec = PlanSpec(samples_per_shard=sizes, shards_per_stream=[80], choose_per_stream=[56_000],
                    proportion_per_stream=[1.0], num_canonical_nodes=nc, batch_size=8,
                    shuffle=True, shuffle_algo="py1br", shuffle_seed=91, shuffle_block_size=2_000)
    work = epoch_work(spec, 1, 4, 2, 1, 0)
    for rank in range(4):
        for worker in range(2):
            got = worker_plan(spec, 1, 4, 2, 1, 0, 0, rank, worker)
            assert np.array_equal(got, worker_work(work, 0, rank, worker))
    assert scouts and (all(scout.running for scout in scouts)
                       or len(os.sched_getaffinity(0)) < 2)


def test_a_scout_is_stopped_when_the_places_fail(monkeypatch):
    # The places are computed while the scout reads; if computing them fails, the scout does
    # not go on reading the epoch on a core of its own.
    scouts = _spied_scouts(monkeypatch)

    def places():
        raise KeyError("no places")

    with pytest.raises(KeyError):
        shuffle_places("py1br", np.full(40, 5_000, np.int64), 8, 3, 0, 20_000, places)
    assert len(scouts) == 1
    assert scouts[0].running and scouts[0]._joined  # started, then stopped on the way out
