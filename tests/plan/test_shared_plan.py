"""When a node plans a random-batching epoch once into a file instead of in every worker, and
that the file's plan is every worker's own."""

from __future__ import annotations

import numpy as np
import pytest

from streaming import plan_file
from streaming.plan import PlanSpec, worker_plan
from streaming.plan_file import load_or_compute_plan, shares_plan


def _spec(samples: int, algo: str = "py1e", nc: int = 1, shuffle: bool = True) -> PlanSpec:
    sizes = np.full(max(1, samples // 10_000), min(samples, 10_000), np.int64)
    return PlanSpec(samples_per_shard=sizes, shards_per_stream=[len(sizes)],
                    choose_per_stream=[samples], proportion_per_stream=[1.0],
                    num_canonical_nodes=nc, batch_size=32, shuffle=shuffle, shuffle_algo=algo,
                    shuffle_seed=7)


# (sizes only: nothing is planned)
@pytest.mark.parametrize("samples,algo,nc,world,shared", [
    (10**8, "py1e", 1, (1, 8, 1), False),   # 8 views of one node, ~0.9 GB each: 7.2 GB
    (10**8, "py1e", 1, (1, 8, 2), True),    # 16 of them: 14.4 GB, against one 1.7 GB plan
    (10**8, "py1e", 1, (2, 8, 8), True),    # (per node: 64 processes)
    (10**8, "py1e", 8, (1, 8, 8), False),   # 64 views of 12.5M-sample nodes: 7.2 GB
    (10**8, "py1s", 1, (1, 1, 1), False),   # one process
    (10**8, "naive", 64, (1, 8, 1), False),  # naive views draw the epoch: 8 x 0.4 GB
    (10**8, "naive", 64, (1, 8, 4), True),   # 32 x 0.4 GB
    (10**7, "py1e", 1, (1, 8, 8), False),   # 64 x 90 MB
])
def test_shares_plan_when_every_worker_planning_would_cost_more(samples, algo, nc, world,
                                                                 shared) -> None:
    assert shares_plan(_spec(samples, algo, nc), world) == shared
    assert not shares_plan(_spec(samples, algo, nc, shuffle=False), world)


def test_shares_plan_only_past_twice_one_whole_plan(monkeypatch) -> None:
    monkeypatch.setattr(plan_file, "SHARE_PLAN_BYTES", 0)
    assert shares_plan(_spec(10**6), (1, 4, 2))  # 8 x 9 MB > 2 x 17 MB
    assert not shares_plan(_spec(10**6), (1, 2, 1))  # 2 x 9 MB
    assert not shares_plan(_spec(10**6, nc=4), (1, 4, 2))  # 8 x 2.25 MB
    assert not shares_plan(_spec(10**6), (1, 1, 1))


@pytest.mark.parametrize("algo", ["py1e", "py1s", "py2s", "py1br", "naive"])
@pytest.mark.parametrize("sample_in_epoch", [0, 4096])
def test_the_shared_plan_is_every_workers_own(tmp_path, algo, sample_in_epoch) -> None:
    spec = _spec(200_000, algo, nc=2)
    world = (2, 2, 3)
    work = load_or_compute_plan(str(tmp_path), spec, world, 1, sample_in_epoch)
    again = load_or_compute_plan(str(tmp_path), spec, world, 1, sample_in_epoch)
    assert isinstance(again, np.memmap)  # the second process maps the first one's file
    for node in range(2):
        for rank in range(2):
            for worker in range(3):
                want = worker_plan(spec, *world, 1, sample_in_epoch, node, rank, worker)
                assert np.array_equal(np.asarray(again[node, rank, worker]).reshape(-1), want)
    assert np.array_equal(work, again)


def test_old_plans_pruned_by_count_and_bytes(tmp_path, monkeypatch) -> None:
    spec = _spec(50_000, "py1s", nc=2)
    for epoch in range(4):
        load_or_compute_plan(str(tmp_path), spec, (1, 1, 2), epoch, 0)
    plans = sorted((tmp_path / "plans").glob("*.npy"))
    assert len(plans) == 4
    size = plans[0].stat().st_size
    monkeypatch.setattr(plan_file, "KEEP_PLAN_BYTES", 2 * size)  # the newest + 2 older ones
    load_or_compute_plan(str(tmp_path), spec, (1, 1, 2), 4, 0)
    assert len(list((tmp_path / "plans").glob("*.npy"))) == 3
    monkeypatch.setattr(plan_file, "KEEP_PLANS", 2)  # plans in all, the newest one included
    load_or_compute_plan(str(tmp_path), spec, (1, 1, 2), 5, 0)
    assert len(list((tmp_path / "plans").glob("*.npy"))) == 2
    assert load_or_compute_plan(str(tmp_path), spec, (1, 1, 2), 5, 0).shape[2] == 2
