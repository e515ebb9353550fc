"""Planning API: argument errors, defaults, replication, and one worker's view of the epoch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streaming.base.batching as base_batching
import streaming.base.partition as base_partition
import streaming.base.sampling as base_sampling
import streaming.base.shuffle as base_shuffle
from streaming.plan import (
    PlanSpec,
    default_num_canonical_nodes,
    default_predownload,
    default_shuffle_block_size,
    epoch_work,
    get_partitions,
    get_shuffle,
    parallel_world_shape,
    worker_plan,
    worker_work,
)
from streaming.plan.partition import worker_partition


def _spec(**kw) -> PlanSpec:
    sizes = np.array([30, 17, 41, 8, 25], np.int64)
    base = dict(
        samples_per_shard=sizes,
        shards_per_stream=[5],
        choose_per_stream=[sizes.sum()],
        proportion_per_stream=[1.0],
        num_canonical_nodes=4,
        batch_size=3,
        shuffle=True,
    )
    base.update(kw)
    return PlanSpec(**base)


def test_unknown_algorithms_are_named():
    # A KeyError as the reference's (its algorithm tables raise it), and a ValueError naming
    # the argument and the choices.
    for call, name, argument in (
        (lambda: get_shuffle("py9", np.array([3]), 1, 0, 0), "'py9'", "shuffle_algo"),
        (lambda: get_shuffle(["py1s"], np.array([3]), 1, 0, 0), "['py1s']", "shuffle_algo"),
        (lambda: get_partitions("diagonal", 10, 1, 1, 1, 1, 1), "'diagonal'", "partition_algo"),
    ):
        with pytest.raises(KeyError) as info:
            call()
        assert isinstance(info.value, ValueError)
        assert str(info.value).startswith(f"{argument}: unknown algorithm {name}; choose one")
    with pytest.raises(ValueError, match="Invalid batching method"):
        epoch_work(_spec(batching_method="zigzag"), 1, 1, 1, 0, 0)


@pytest.mark.parametrize("method", ["stratified", "per_stream", "device_per_stream"])
def test_a_stream_without_samples_is_named_by_per_stream_batching(method):
    # Two streams, the second chosen down to nothing: the reference fails inside NumPy.
    first = int(_spec().samples_per_shard[:3].sum())  # the first stream's three shards, whole
    spec = _spec(shards_per_stream=[3, 2], choose_per_stream=[first, 0],
                 proportion_per_stream=[1.0, 1.0], batching_method=method, shuffle=False)
    with pytest.raises(ValueError, match=f"Stream 1 gets no samples.*{method} batching"):
        epoch_work(spec, 1, 1, 1, 0, 0)


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="shard_sizes"):
        get_shuffle("py1s", np.array([3, -1]), 1, 0, 0)
    with pytest.raises(ValueError, match="num_canonical_nodes"):
        get_shuffle("py1e", np.array([3]), 0, 0, 0)
    with pytest.raises(ValueError, match="batch_size"):
        get_partitions("orig", 10, 1, 1, 1, 1, 0)
    with pytest.raises(ValueError, match="batch_size"):
        epoch_work(_spec(batch_size=None), 1, 1, 1, 0, 0)
    with pytest.raises(ValueError, match="shards_per_stream"):
        _spec(shards_per_stream=[4])
    with pytest.raises(ValueError, match="divisible by your replication"):
        epoch_work(_spec(replication=3), 1, 4, 1, 0, 0)


def test_defaults():
    assert default_num_canonical_nodes("py1s", 2) == 128
    assert default_num_canonical_nodes("py2s", 1) == 64
    assert default_num_canonical_nodes("py1e", 3) == 3
    assert default_shuffle_block_size(None) == 1 << 18
    assert default_shuffle_block_size(2) == 2_000_000
    assert default_shuffle_block_size(64) == 1 << 18
    assert default_predownload(None) == 64
    assert default_predownload(5) == 40
    assert _spec(shuffle_block_size=None).resolved_shuffle_block_size == 1_000_000


def test_parallel_world_shape():
    assert parallel_world_shape(2, 8, None) == (2, 8)
    assert parallel_world_shape(2, 8, 2) == (1, 8)
    assert parallel_world_shape(4, 2, 2) == (2, 2)
    with pytest.raises(ValueError, match="divisible"):
        parallel_world_shape(1, 6, 4)


@pytest.mark.parametrize("algo", ["py1e", "py1s", "py2s", "py1br", "naive"])
def test_worker_plan_equals_slice_of_epoch_work(algo):
    spec = _spec(shuffle_algo=algo, shuffle_block_size=20)
    work = epoch_work(spec, 2, 2, 3, 1, 6)
    assert work.flags.c_contiguous and work.shape[:3] == (2, 2, 3)
    seen = []
    for node in range(2):
        for rank in range(2):
            for worker in range(3):
                ids = worker_plan(spec, 2, 2, 3, 1, 6, node, rank, worker)
                assert np.array_equal(ids, worker_work(work, node, rank, worker))
                seen.append(ids[ids >= 0])
    # Every sample after the first 6 is seen (the rest are repeats to even out ranks).
    assert set(np.concatenate(seen).tolist()) <= set(range(121))
    assert len(set(np.concatenate(seen).tolist())) >= 121 - 6


@settings(max_examples=60, deadline=None)
@given(batches=st.integers(1, 200), batch_size=st.integers(1, 40),
       algo=st.sampled_from(["orig", "relaxed"]), initial=st.sampled_from([None, 1, 2, 4]))
def test_a_lone_worker_of_one_canonical_node_reads_in_order(batches, batch_size, algo, initial):
    # The premise of worker_plan's shortcut: its places are the epoch's, in order.
    n = batches * batch_size
    places = worker_partition(algo, n, 1, 1, 1, 1, batch_size, 0, initial, 0, 0, 0)
    assert np.array_equal(places, np.arange(n))


@pytest.mark.parametrize("algo", ["py1e", "py1s", "py2s", "py1br", "naive"])
@pytest.mark.parametrize("batch_size", [3, 4])  # 121 samples: padded, and not (with choose)
def test_a_lone_worker_plan_equals_its_slice_of_epoch_work(algo, batch_size):
    for choose in (None, 120):
        kw = {} if choose is None else {"choose_per_stream": [choose]}
        spec = _spec(shuffle_algo=algo, shuffle_block_size=20, num_canonical_nodes=1,
                     batch_size=batch_size, **kw)
        for epoch in (0, 1):
            ids = worker_plan(spec, 1, 1, 1, epoch, 0, 0, 0, 0)
            assert np.array_equal(ids, worker_work(epoch_work(spec, 1, 1, 1, epoch, 0), 0, 0, 0))


def test_replication_plans_for_the_parallel_world():
    spec = _spec(replication=2)
    work = epoch_work(spec, 1, 4, 1, 0, 0)
    plain = epoch_work(_spec(), 1, 2, 1, 0, 0)
    assert np.array_equal(work, plain)


def test_reference_module_paths_reexport():
    assert base_shuffle.get_shuffle is get_shuffle
    assert base_partition.get_partitions is get_partitions
    assert callable(base_sampling.get_sampling)
    assert set(base_batching.batching_methods) == {
        "random",
        "stratified",
        "per_stream",
        "device_per_stream",
    }
    from streaming.base.shuffle.py1s import divide_spans

    spans, parts = divide_spans([(0, 5), (5, 9)], 9, 2)
    assert spans == [(0, 4), (4, 5), (5, 9)] and parts == [(0, 1), (1, 3)]
