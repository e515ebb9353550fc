"""Looking up one worker's places of the shuffle equals indexing the whole shuffle."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.plan.shuffle import get_shuffle, shuffle_places


@settings(max_examples=120, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=12),
    ncn=st.integers(1, 9),
    algo=st.sampled_from(["py1s", "py1e", "py1br", "py2s", "naive"]),
    seed=st.integers(0, 2**32),
    epoch=st.integers(0, 3),
    block=st.integers(2, 900),
    data=st.data(),
)
def test_shuffle_places_equals_indexing(sizes, ncn, algo, seed, epoch, block, data):
    total = sum(sizes)
    places = np.array(
        data.draw(st.lists(st.integers(-1, max(total - 1, -1)), max_size=60)), np.int64
    )
    args = (algo, np.array(sizes, np.int64), ncn, seed, epoch, block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            full = get_shuffle(*args)
        except ValueError as e:
            with pytest.raises(ValueError, match=str(e)[:30].replace("(", r"\(")):
                shuffle_places(*args, places)
            return
        got = shuffle_places(*args, places)
    expect = np.where(places >= 0, full[np.maximum(places, 0)], -1) if total else places
    assert np.array_equal(got, expect)


def test_shuffle_places_rejects_places_outside_the_epoch():
    with pytest.raises(ValueError, match="outside the epoch"):
        shuffle_places("py1s", np.array([5, 5], np.int64), 2, 0, 0, 10, np.array([10]))


@pytest.mark.parametrize("algo", ["py1s", "py1e", "py2s"])
def test_shuffle_places_lone_worker_and_large_share(algo):
    # All places in order (a lone worker) is the whole shuffle; a large share in any order, and a
    # small share spread over a few nodes (others drawn past or not drawn), index it the same.
    sizes = np.array([700, 0, 1300, 90, 2000, 400], np.int64)
    args = (algo, sizes, 6, 31, 2, 1500)
    full = get_shuffle(*args)
    total = int(sizes.sum())
    assert np.array_equal(shuffle_places(*args, np.arange(total)), full)
    rng = np.random.default_rng(3)
    for places in (rng.permutation(total), rng.choice(total, 40), np.array([4000, 4001, -1])):
        places = places.astype(np.int64)
        got = shuffle_places(*args, places.copy(), overwrite=True)
        assert np.array_equal(got, np.where(places >= 0, full[np.maximum(places, 0)], -1))
