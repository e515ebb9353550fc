"""One worker's partition by index arithmetic equals the full partition's slice for that worker."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from streaming._kernels import _partition
from streaming.plan.partition import get_partitions, worker_partition


def _twin_orig_worker_ids(
    num_samples: int,
    ncn: int,
    pn: int,
    rpn: int,
    wpr: int,
    bs: int,
    drop_first: int,
    node: int,
    rank: int,
    worker: int,
) -> NDArray[np.int64] | None:
    """``get_partitions_orig(...)[node, rank, worker].ravel()`` by index arithmetic alone.

    Follows each entry back through the dealing steps of ``get_partitions_orig`` (workers,
    ranks, nodes, canonical rows) instead of building every worker's partition. Returns ``None``
    for the corner cases (fewer samples than nodes or ranks, shapes the full algorithm rejects);
    callers then use the full algorithm, which warns or raises as the reference does.
    """
    if min(ncn, pn, rpn, wpr, bs, num_samples) < 1 or drop_first < 0 or drop_first % pn:
        return None
    if not (num_samples > ncn or (num_samples == ncn and ncn >= pn)):
        return None
    if (ncn < pn and pn % ncn) or (pn < ncn and ncn % pn):
        return None
    per_cn = (num_samples + ncn - 1) // ncn
    node_ratio = pn // ncn if ncn < pn else 0
    padding = 0
    if node_ratio and per_cn % node_ratio:
        padding = node_ratio - per_cn % node_ratio
    width = per_cn + padding
    pad_src = padding + node_ratio - 1  # padding column k repeats column k - pad_src
    if padding and width - padding - pad_src < 0:
        return None
    stream = ncn * width - drop_first
    if stream < 0 or stream % pn:
        return None
    per_node = stream // pn
    overflow = per_node % rpn
    underflow = rpn - overflow if overflow else 0
    if overflow and rpn + underflow - 1 > per_node:
        return None
    per_rank = (per_node + underflow) // rpn
    unit = wpr * bs
    batches = -(-per_rank // unit)

    # Worker entry f is rank entry j (dealt a batch at a time); beyond the rank's share, -1.
    f = np.arange(batches * bs, dtype=np.int64)
    j = (f // bs * wpr + worker) * bs + f % bs
    valid = j < per_rank
    j = j[valid]
    # Rank entry j is node entry q; entries past the node's share repeat ones just before.
    q = j * rpn + rank
    if underflow:
        q = np.where(q >= per_node, q - rpn - underflow + 1, q)
    # Node entry q is stream entry t (nodes take turns), which is column t // ncn of row t % ncn.
    t = drop_first + q * pn + node
    row, col = t % ncn, t // ncn
    if padding:
        col = np.where(col >= width - padding, col - pad_src, col)
    start = row * num_samples // ncn
    stop = (row + 1) * num_samples // ncn
    ids = start + col
    # A row shorter than per_cn repeats its last id in column per_cn - 1.
    ids -= (col == per_cn - 1) & (stop - start < per_cn)
    out = np.full(batches * bs, -1, np.int64)
    out[valid] = ids
    return out


def _full_slice(algo, n, ncn, pn, rpn, wpr, bs, drop, ipn, node, rank, worker):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parts = get_partitions(algo, n, ncn, pn, rpn, wpr, bs, drop, ipn)
    except ValueError as e:
        return e
    return parts[node, rank, worker].reshape(-1)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 3000),
    ncn=st.sampled_from([1, 2, 3, 4, 6, 8, 12]),
    pn=st.sampled_from([1, 2, 3, 4, 6, 8, 24]),
    rpn=st.integers(1, 5),
    wpr=st.integers(1, 4),
    bs=st.integers(1, 9),
    drop_frac=st.floats(0, 1.05),
    algo=st.sampled_from(["orig", "relaxed"]),
    ipn=st.sampled_from([None, 1, 2, 3, 4, 5]),
    data=st.data(),
)
def test_worker_partition_equals_full_slice(n, ncn, pn, rpn, wpr, bs, drop_frac, algo, ipn, data):
    drop = int(n * drop_frac)
    node = data.draw(st.integers(0, pn - 1))
    rank = data.draw(st.integers(0, rpn - 1))
    worker = data.draw(st.integers(0, wpr - 1))
    expect = _full_slice(algo, n, ncn, pn, rpn, wpr, bs, drop, ipn, node, rank, worker)
    if isinstance(expect, ValueError):
        with pytest.raises(ValueError):
            worker_partition(algo, n, ncn, pn, rpn, wpr, bs, drop, ipn, node, rank, worker)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = worker_partition(algo, n, ncn, pn, rpn, wpr, bs, drop, ipn, node, rank, worker)
    assert got.dtype == np.int64
    assert np.array_equal(got, expect)


def test_worker_partition_large_matches_and_is_small():
    # 1e6 samples over 64 workers: the worker's share only, equal to the full slice.
    args = ("orig", 10**6 + 7, 8, 1, 8, 8, 32, 4096, None)
    full = get_partitions(*args)
    for node, rank, worker in [(0, 0, 0), (0, 7, 7), (0, 3, 5)]:
        got = worker_partition(*args, node, rank, worker)
        assert np.array_equal(got, full[node, rank, worker].reshape(-1))
        assert got.size < full.size // 50


def test_worker_partition_rejects_worker_outside_world():
    with pytest.raises(ValueError, match="outside"):
        worker_partition("orig", 100, 2, 1, 2, 2, 4, 0, None, 0, 2, 0)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 5000),
    ncn=st.integers(1, 16),
    pn=st.integers(1, 16),
    rpn=st.integers(1, 6),
    wpr=st.integers(1, 4),
    bs=st.integers(1, 9),
    drop=st.integers(0, 6000),
    data=st.data(),
)
def test_orig_worker_kernel_equals_twin(n, ncn, pn, rpn, wpr, bs, drop, data):
    node = data.draw(st.integers(0, pn - 1))
    rank = data.draw(st.integers(0, rpn - 1))
    worker = data.draw(st.integers(0, wpr - 1))
    args = (n, ncn, pn, rpn, wpr, bs, drop, node, rank, worker)
    got = _partition.orig_worker_ids(*args)
    expect = _twin_orig_worker_ids(*args)
    if expect is None:
        assert got is None
    else:
        assert got is not None and np.array_equal(got, expect)
