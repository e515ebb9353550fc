"""``Spanner.first_visits`` (the prefetcher's plan walk) equals a pure-NumPy twin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.spanner import Spanner


def _twin_first_visits(sizes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.cumsum(sizes)
    shards = np.searchsorted(bounds, ids, side="right")  # empty shards never own an id
    unique, first = np.unique(shards, return_index=True)
    order = np.argsort(first)
    return unique[order], first[order]


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(
        st.sampled_from([0, 1, 2, 5, 100, 70_000, 200_000]), min_size=1, max_size=12
    ).filter(lambda s: sum(s) > 0),
    seed=st.integers(0, 2**32),
    runs=st.booleans(),
    count=st.integers(0, 3000),
)
def test_first_visits_equals_twin(sizes, seed, runs, count):
    sizes = np.array(sizes, np.int64)
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, int(sizes.sum()), count)
    if runs:  # runs of consecutive ids, as an unshuffled plan has
        ids = np.minimum(
            np.repeat(ids[: count // 8 + 1], 8)[:count] + np.arange(count) % 8, int(sizes.sum()) - 1
        )
    got_shards, got_first = Spanner(sizes).first_visits(ids.astype(np.int64))
    want_shards, want_first = _twin_first_visits(sizes, ids)
    assert np.array_equal(got_shards, want_shards)
    assert np.array_equal(got_first, want_first)


def test_first_visits_rejects_ids_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        Spanner(np.array([3, 4], np.int64)).first_visits(np.array([0, 7], np.int64))
