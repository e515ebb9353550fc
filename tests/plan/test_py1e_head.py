"""py1e's head (the samples placed below a position, read without ordering the node) equals the
first places of the whole order, and a lone reader's plan in two parts equals its plan."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming._kernels import _shuffle
from streaming.plan import PlanSpec, epoch, worker_plan, worker_plan_head
from streaming.plan.partition import worker_partition
from streaming.plan.shuffle import (
    get_shuffle,
    get_shuffle_py1e,
    get_shuffle_py1e_head,
    shuffle_places,
)

from .test_kernels import twin_py1e_positions, twin_shuffle_spans


def _twin_head(rng, begins, sizes, low, high, until):
    """The reference's draws for one node (span shuffles, then block sizes and shifts), its
    stable order by position, and the samples placed below ``until``."""
    ids = twin_shuffle_spans(rng, begins.tolist(), sizes.tolist())
    pos, warn = twin_py1e_positions(rng, sizes.tolist(), low, high)
    order = np.argsort(pos, kind="stable")
    return ids[order][pos[order] < until], warn


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([0, 1, 2, 3, 17, 100, 255, 256, 257, 1000, 3000]),
                   min_size=1, max_size=8),
    seed=st.integers(0, 2**64 - 1),
    low=st.integers(0, 4000),
    extra=st.integers(1, 3000),
    until=st.integers(0, 20_000),
    skew=st.booleans(),
)
def test_head_is_the_order_below_until(sizes, seed, low, extra, until, skew):
    sizes = np.array(sizes, np.int64)
    begins = (np.cumsum(sizes) - sizes) * 3 + 11
    rng = np.random.default_rng(seed)
    if skew:  # a buffered half word at the start (an odd number of 32-bit draws made before)
        rng.integers(0, 2**32 - 1, dtype=np.uint32)
    before = rng.bit_generator.state
    twin = np.random.default_rng()
    twin.bit_generator.state = before
    got = _shuffle.py1e_head(rng, begins, sizes, low, low + extra, until)
    assert got is not None
    head, warn = got
    expect, expect_warn = _twin_head(twin, begins, sizes, low, low + extra, until)
    assert np.array_equal(head, expect)
    assert warn == expect_warn
    assert rng.bit_generator.state == before  # read from copies: the caller's generator stays


@settings(max_examples=80, deadline=None)
@given(
    shard_sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=12),
    nc=st.integers(1, 4),
    seed=st.integers(0, 2**63 - 10),
    ep=st.integers(0, 5),
    block=st.integers(5, 40_000),
    until=st.integers(0, 70_000),
    data=st.data(),
)
def test_epoch_head_is_the_node_order_s_first_places(shard_sizes, nc, seed, ep, block, until,
                                                    data):
    node = data.draw(st.integers(0, nc - 1))
    with warnings.catch_warnings(record=True) as whole_warned:
        warnings.simplefilter("always")
        try:
            whole = get_shuffle_py1e(shard_sizes, nc, seed, ep, block)
        except ValueError:  # a node without samples: no head either
            assert get_shuffle_py1e_head(shard_sizes, nc, seed, ep, block, until) is None
            return
    total = sum(shard_sizes)
    start = node * total // nc  # the node's first place
    place = data.draw(st.integers(start, (node + 1) * total // nc - 1))  # any place of it
    with warnings.catch_warnings(record=True) as head_warned:
        warnings.simplefilter("always")
        got = get_shuffle_py1e_head(shard_sizes, nc, seed, ep, block, until, place)
    assert got is not None
    assert got[0] == start
    head = got[1]
    assert np.array_equal(head, whole[start : start + len(head)])
    # One node: the same warning, once; more: left to the epoch's plan.
    assert len(head_warned) == (len(whole_warned) if nc == 1 else 0)
    if until >= (node + 1) * total // nc - start:
        assert len(head) == (node + 1) * total // nc - start  # the whole node


def test_a_large_epoch_s_head_is_cheap_and_exact():
    # 1e6 samples in 9 shards, the dataset default's block for one node: the head holds the
    # first places and is only a small share of the epoch.
    sizes = np.full(9, 111_111, np.int64)
    sizes[-1] += 1_000_000 - int(sizes.sum())
    whole = get_shuffle_py1e(sizes, 1, 9176, 3, 4_000_000)
    start, head = get_shuffle_py1e_head(sizes, 1, 9176, 3, 4_000_000, 1 << 17)
    assert start == 0 and 0 < len(head) < len(whole) // 4
    assert np.array_equal(head, whole[: len(head)])


def test_no_head_where_it_cannot_be_read_ahead():
    sizes = np.array([5, 7, 9], np.int64)
    begins = np.array([0, 5, 12], np.int64)
    assert get_shuffle_py1e_head(sizes, 1, 1, 0, 0, 100) is None  # no block size range
    assert get_shuffle_py1e_head([1], 2, 1, 0, 64, 100) is None  # a node without samples
    assert get_shuffle_py1e_head(sizes, 2, 1, 0, 64, 100, place=21) is None  # past the epoch
    rng = np.random.Generator(np.random.Philox(3))
    assert _shuffle.py1e_head(rng, begins, sizes, 10, 20, 100) is None  # not PCG64


@pytest.mark.parametrize(
    "args, message",
    [
        (([0, 1], [1], 1, 2, 5), "differ in length"),
        (([0], [-1], 1, 2, 5), "negative size"),
        (([0], [1], 2, 2, 5), "bad block size range"),
        (([0], [1], -1, 2, 5), "bad block size range"),
        (([0], [1], 1, 2, -1), "until must be non-negative"),
    ],
)
def test_head_kernel_rejects_bad_arguments(args, message):
    begins, sizes, low, high, until = args
    with pytest.raises(ValueError, match=message):
        _shuffle.py1e_head(np.random.default_rng(0), np.array(begins, np.int64),
                           np.array(sizes, np.int64), low, high, until)


def _spec(n=20_000, per=1_500, **kw):
    sizes = np.full(n // per, per, np.int64)
    if n % per:
        sizes = np.append(sizes, n % per)
    args = dict(samples_per_shard=sizes, shards_per_stream=[len(sizes)], choose_per_stream=[n],
                proportion_per_stream=[1.0], num_canonical_nodes=1, batch_size=8, shuffle=True,
                shuffle_algo="py1e", shuffle_seed=77, shuffle_block_size=6_000)
    args.update(kw)
    return PlanSpec(**args)


@pytest.mark.parametrize("partition_algo", ["orig", "relaxed"])
@pytest.mark.parametrize(
    "world, where, ep, sample_in_epoch, batch_size, nc",
    [
        ((1, 1, 1), (0, 0, 0), 0, 0, 8, 1),  # a lone reader: the shuffle itself
        ((1, 1, 1), (0, 0, 0), 2, 0, 8, 1),
        ((1, 1, 1), (0, 0, 0), 0, 0, 7, 1),  # padded to whole batches
        ((1, 1, 2), (0, 0, 1), 1, 0, 8, 1),  # DataLoader workers
        ((1, 4, 2), (0, 0, 0), 0, 0, 8, 1),  # ranks x workers
        ((1, 4, 2), (0, 3, 1), 0, 0, 8, 1),
        ((1, 4, 2), (0, 2, 1), 0, 48, 8, 1),  # resumed inside the head
        ((1, 2, 1), (0, 1, 0), 3, 0, 5, 1),
        ((2, 2, 2), (0, 1, 1), 0, 0, 8, 2),  # a node each (the first: no nodes passed)
        ((2, 2, 2), (1, 0, 1), 1, 0, 8, 2),  # (the second: the first node's draws passed)
        ((2, 1, 1), (1, 0, 0), 0, 0, 4, 2),  # one rank a node
        ((4, 1, 2), (3, 0, 1), 2, 0, 8, 4),
    ],
)
def test_plan_in_two_parts_is_the_plan(monkeypatch, partition_algo, world, where, ep,
                                       sample_in_epoch, batch_size, nc):
    monkeypatch.setattr(epoch, "HEAD_MIN_SAMPLES", 1)
    monkeypatch.setattr(epoch, "HEAD_UNTIL", 3_000)
    spec = _spec(partition_algo=partition_algo, batch_size=batch_size, num_canonical_nodes=nc)
    got = worker_plan_head(spec, *world, ep, sample_in_epoch, *where)
    assert got is not None
    head, rest = got
    whole = worker_plan(spec, *world, ep, sample_in_epoch, *where)
    assert 0 < len(head) < len(whole)
    assert np.array_equal(np.concatenate([head, rest()]), whole)


@pytest.mark.parametrize(
    "change",
    [
        dict(sample_in_epoch=8_000),  # resumed past the head
        dict(spec=dict(shuffle_algo="py1s")),
        # A lone reader of two nodes: its places alternate between them, so its first batch is
        # not in one node's head.
        dict(spec=dict(num_canonical_nodes=2)),
        dict(spec=dict(shuffle=False)),
        dict(spec=dict(batching_method="stratified")),
        dict(world=(2, 1, 1), spec=dict(num_canonical_nodes=4)),  # two alternating nodes each
        dict(min_samples=None),  # the default floor: a 20,000-sample plan is quick anyway
    ],
)
def test_other_plans_have_no_head(monkeypatch, change):
    if "min_samples" not in change:
        monkeypatch.setattr(epoch, "HEAD_MIN_SAMPLES", 1)
    monkeypatch.setattr(epoch, "HEAD_UNTIL", 3_000)
    spec = _spec(**change.get("spec", {}))
    world = change.get("world", (1, 1, 1))
    assert worker_plan_head(spec, *world, 0, change.get("sample_in_epoch", 0), 0, 0, 0) is None


def test_the_rest_raises_what_planning_raised(monkeypatch):
    monkeypatch.setattr(epoch, "HEAD_MIN_SAMPLES", 1)
    monkeypatch.setattr(epoch, "HEAD_UNTIL", 3_000)

    def broken(*args, **kwargs):
        raise MemoryError("planning ran out of memory")

    monkeypatch.setattr(epoch, "_py1e_epoch", broken)
    head, rest = worker_plan_head(_spec(), 1, 1, 1, 0, 0, 0, 0, 0)
    assert len(head)
    with pytest.raises(MemoryError, match="planning ran out"):
        rest()


# ---- py1e views with a node scout (a second thread finding where each node's draws start) ----


@settings(max_examples=80, deadline=None)
@given(
    node_sizes=st.lists(
        st.lists(st.sampled_from([0, 1, 2, 3, 17, 255, 256, 1000, 3000]), max_size=4),
        min_size=1, max_size=10),
    seed=st.integers(0, 2**64 - 1),
    low=st.integers(0, 3000),
    extra=st.integers(1, 2000),
    exact=st.booleans(),
    data=st.data(),
)
def test_node_scout_draws_the_view_as_alone(node_sizes, seed, low, extra, exact, data):
    sizes = np.array([s for node in node_sizes for s in node], np.int64)
    begins = (np.cumsum(sizes) - sizes) * 5 + 3
    bounds = np.cumsum([0] + [len(node) for node in node_sizes]).astype(np.int64)
    total = int(sizes.sum())
    want = np.unique(np.array(
        data.draw(st.lists(st.integers(0, max(total - 1, 0)), max_size=80)), np.int64))
    want = want[want < total]
    starts = np.cumsum(sizes) - sizes
    want_bounds = np.searchsorted(want, np.append(starts, total)).astype(np.int64)
    full = np.empty(total, np.int64)
    full_warn = _shuffle.shuffle_nodes(np.random.default_rng(seed), "py1e", begins, sizes,
                                       bounds, low, low + extra, full)
    results = []
    for scout in (0, 2):
        rng = np.random.default_rng(seed)
        out = np.empty(len(want), np.int64)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_shuffle, "_py1e_node_scout", scout)
            warn = _shuffle.shuffle_nodes(rng, "py1e", begins, sizes, bounds, low, low + extra,
                                          out, want, want_bounds, exact=exact)
        assert np.array_equal(out, full[want])
        results.append((warn, rng.bit_generator.state))
    assert results[0] == results[1]  # the same warning, the generator left in the same place
    if exact:
        assert results[1][0] == full_warn


@pytest.mark.parametrize("scout", [0, 1, 2])
def test_node_scout_in_worker_plans(monkeypatch, scout):
    # Every worker of 4 ranks x 2 workers over 32 canonical nodes wants a few nodes spread
    # over the epoch (the scout's case); each worker's plan is its share of the epoch's.
    from streaming.plan import epoch_work, worker_work

    monkeypatch.setattr(_shuffle, "_py1e_node_scout", scout)
    spec = _spec(n=64_000, per=700, num_canonical_nodes=32, shuffle_block_size=3_000)
    work = epoch_work(spec, 1, 4, 2, 1, 0)
    for rank in range(4):
        for worker in range(2):
            got = worker_plan(spec, 1, 4, 2, 1, 0, 0, rank, worker)
            assert np.array_equal(got, worker_work(work, 0, rank, worker))


# ---- py1e nodes ordered in scratch bounded by the block size (ss_py1e_node_stream) ----


@settings(max_examples=80, deadline=None)
@given(
    node_sizes=st.lists(
        st.lists(st.sampled_from([0, 1, 2, 3, 17, 255, 256, 257, 1000, 3000]), max_size=6),
        min_size=1, max_size=3),
    seed=st.integers(0, 2**64 - 1),
    low=st.integers(0, 3000),
    extra=st.integers(1, 2000),
    raw=st.booleans(),
)
def test_streamed_nodes_equal_the_twins(node_sizes, seed, low, extra, raw):
    sizes = np.array([s for node in node_sizes for s in node], np.int64)
    begins = (np.cumsum(sizes) - sizes) * 2 + 1
    bounds = np.cumsum([0] + [len(node) for node in node_sizes]).astype(np.int64)
    twin = np.random.default_rng(seed)
    expect, expect_warn = [], False
    k = 0
    for node in node_sizes:
        ids = twin_shuffle_spans(twin, begins[k : k + len(node)].tolist(), node)
        if len(ids):
            pos, warn = twin_py1e_positions(twin, node, low, low + extra)
            ids, expect_warn = ids[np.argsort(pos, kind="stable")], expect_warn or warn
        expect.append(ids)
        k += len(node)
    old = _shuffle._set_py1e_stream(2)
    try:
        out = np.empty(int(sizes.sum()), np.int64)
        rng = np.random.default_rng(seed)
        warn = _shuffle.shuffle_nodes(rng, "py1e", begins, sizes, bounds, low, low + extra, out,
                                      _mode=2 if raw else 1)
    finally:
        _shuffle._set_py1e_stream(old)
    assert np.array_equal(out, np.concatenate(expect))
    assert warn == expect_warn
    assert rng.bit_generator.state == twin.bit_generator.state


def test_a_large_node_streams_as_it_sorts_whole():
    # 5M samples in uneven shards, block 300k: the default streams the node (and its runs stay
    # near the block's size); the same ids as the whole-node path's.
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 40_000, 250).astype(np.int64)
    sizes[-1] += max(0, 5_000_000 - int(sizes.sum()))
    got = {}
    for mode in (1, 0):
        old = _shuffle._set_py1e_stream(mode)
        try:
            got[mode] = get_shuffle_py1e(sizes, 1, 77, 2, 300_000)
        finally:
            _shuffle._set_py1e_stream(old)
    assert np.array_equal(got[0], got[1])


# ---- raws read instead of jumped over when jumping (a Python call, the GIL's wait) is slow ----


def test_skips_read_instead_of_jumped_give_the_same_views():
    # A view wanting places in 2 of 12 nodes skips the others' shifts: read and dropped instead
    # of jumped over, the ids are the same.
    sizes = np.full(120, 700, np.int64)
    n = int(sizes.sum())
    places = np.concatenate([np.arange(3 * n // 12, 4 * n // 12, 97),
                             np.arange(9 * n // 12, 10 * n // 12, 89)]).astype(np.int64)
    got = {}
    for mode in (0, 1):
        old = _shuffle._set_jump_mode(mode)
        reads = _shuffle._jump_reads()
        try:
            got[mode] = shuffle_places("py1e", sizes, 12, 3, 1, 2_000, places)
            if mode == 1:
                assert _shuffle._jump_reads() > reads  # the reads were made
        finally:
            _shuffle._set_jump_mode(old)
    assert np.array_equal(got[0], got[1])
    assert np.array_equal(got[0], get_shuffle("py1e", sizes, 12, 3, 1, 2_000)[places])


def test_nodes_passed_cost_only_their_words():
    # The last worker of 8 nodes wants only the last node: the 7 before it are passed, their
    # Fisher-Yates words read (~0.73 raws a sample in 10k-sample spans) and their shifts jumped
    # over. Between two jumps only a block size is read, so the chunk made after a jump stays
    # short: a full one (8k raws) there, two spans in every two, made ~1.14 raws a sample.
    sizes = np.full(400, 10_000, np.int64)
    n = int(sizes.sum())
    made = []
    # (Always jump, and no helper making raws ahead: the count does not hang on timings.)
    old, old_windows = _shuffle._set_jump_mode(2), _shuffle._set_window_mode(1)
    try:
        for rank, worker in ((0, 0), (7, 1)):
            places = worker_partition("relaxed", n, 8, 1, 8, 2, 32, 0, None, 0, rank, worker)
            places = places[places >= 0]
            before = _shuffle._raws_made()
            got = shuffle_places("py1e", sizes, 8, 9, 0, 1 << 18, places)
            made.append(_shuffle._raws_made() - before)
            assert np.array_equal(got, get_shuffle("py1e", sizes, 8, 9, 0, 1 << 18)[places])
    finally:
        _shuffle._set_jump_mode(old)
        _shuffle._set_window_mode(old_windows)
    passed = 7 * n // 8  # (either view draws one node whole)
    assert 0.7 * passed < made[1] - made[0] < 0.8 * passed


@pytest.mark.parametrize("mode", [2, 3])
def test_nodes_passed_read_from_windows_made_ahead(mode):
    # The last worker's view passes 7 nodes, then draws the last: a helper makes the words of
    # each passed after the first, and the last node's raws, ahead in windows about where they
    # are expected, and the reader reads them there (mode 2:
    # it always waits for the helper; 3: each window also starts after the node's words do, so
    # the reader makes their first raws itself). The same ids, and the raws the reader made
    # itself fall by about what it took from the windows.
    sizes = np.full(400, 10_000, np.int64)
    n = int(sizes.sum())
    places = worker_partition("relaxed", n, 8, 1, 8, 2, 32, 0, None, 0, 7, 1)
    places = places[places >= 0]
    expect = get_shuffle("py1e", sizes, 8, 9, 0, 1 << 18)[places]
    made, taken = {}, {}
    old = _shuffle._set_jump_mode(2)
    try:
        for windows in (1, mode):
            old_windows = _shuffle._set_window_mode(windows)
            before, took = _shuffle._raws_made(), _shuffle._window_raws()
            try:
                got = shuffle_places("py1e", sizes, 8, 9, 0, 1 << 18, places)
            finally:
                _shuffle._set_window_mode(old_windows)
            made[windows] = _shuffle._raws_made() - before
            taken[windows] = _shuffle._window_raws() - took
            assert np.array_equal(got, expect)
    finally:
        _shuffle._set_jump_mode(old)
    # The words of the nodes passed after the first (the first's are the reader's at once),
    # and the last node's raws whole (its words, then a shift a sample).
    in_windows = 0.73 * (7 * n // 8) + n // 8
    assert taken[1] == 0 and taken[mode] > 0.95 * in_windows
    assert abs(made[1] - made[mode] - in_windows) < 0.05 * in_windows


def test_views_beside_a_busy_python_thread():
    # Another Python thread keeps the GIL busy: jumps then wait for it, and the reader reads
    # instead; the view is the same (this checks the ids, not the time).
    import threading

    sizes = np.full(400, 2_500, np.int64)
    places = worker_partition("relaxed", int(sizes.sum()), 64, 1, 8, 2, 32, 0, None, 0, 7, 1)
    expect = get_shuffle("py1e", sizes, 64, 9, 0, 20_000)[places[places >= 0]]
    stop = threading.Event()

    def busy():
        x = 0
        while not stop.is_set():
            x += 1

    spinner = threading.Thread(target=busy)
    spinner.start()
    try:
        got = shuffle_places("py1e", sizes, 64, 9, 0, 20_000, places)
    finally:
        stop.set()
        spinner.join()
    assert np.array_equal(got[places >= 0], expect)
