"""Full iteration orders, lengths and checkpoints equal the reference's (oracle fixtures)."""

from __future__ import annotations

import json
import os
import pathlib

import pytest
from rt_helpers import run_rank, world_env, write_dataset


def _fixture(oracles):
    with open(oracles / "runtime" / "orders.json") as f:
        return json.load(f)


def _load_cases():
    path = pathlib.Path(__file__).resolve().parents[2] / "oracles/fixtures/runtime/orders.json"
    with open(path) as f:
        return json.load(f)["cases"]


CASES = _load_cases()


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, oracles):
    root = tmp_path_factory.mktemp("runtime-data")
    for name, params in _fixture(oracles)["datasets"].items():
        write_dataset(str(root / name), params)
    return str(root)


def _each_rank_matches(case, data_root, tmp_path) -> None:
    """Run every rank of the case (each node with its own local root) against the fixture."""
    spec = case["spec"]
    ranks = spec["world"]["ranks"]
    lws = spec["world"]["local_world_size"]
    for rank, expected in zip(range(ranks), case["ranks"]):
        local_root = os.path.join(tmp_path, f"node{rank // lws}")
        with world_env(rank, ranks, lws):
            got = run_rank(spec, data_root, local_root)
        assert got == expected, f"rank {rank}"


@pytest.mark.parametrize("case", CASES, ids=[c["spec"]["name"] for c in CASES])
def test_matches_reference(case, data_root, tmp_path):
    _each_rank_matches(case, data_root, tmp_path)


@pytest.mark.parametrize("case", CASES, ids=[c["spec"]["name"] for c in CASES])
def test_matches_reference_reading_plan_heads_first(case, data_root, tmp_path, monkeypatch):
    # Every epoch, however small, is read head first wherever a worker's plan has a head (see
    # streaming.plan.worker_plan_head; forked DataLoader workers inherit the lowered floor):
    # the orders stay the reference's.
    import streaming.dataset
    from streaming.plan import epoch

    monkeypatch.setattr(epoch, "HEAD_MIN_SAMPLES", 1)
    monkeypatch.setattr(epoch, "HEAD_UNTIL", 40)
    heads = []

    def spy(*args):
        got = epoch.worker_plan_head(*args)
        heads.append(got is not None)
        return got

    monkeypatch.setattr(streaming.dataset, "worker_plan_head", spy)
    _each_rank_matches(case, data_root, tmp_path)
    if case["spec"]["name"] in ("shuffle_py1e_one_node", "shuffle_defaults", "ranks2_node1"):
        assert heads and all(heads)  # the head path was taken, every epoch and rank


@pytest.mark.parametrize("case", CASES, ids=[c["spec"]["name"] for c in CASES])
def test_matches_reference_from_a_shared_plan(case, data_root, tmp_path, monkeypatch):
    # Every random-batching epoch planned once per node into a plan file (as many processes
    # over big canonical nodes do, see streaming.plan_file.shares_plan), heads read first where
    # a plan has one (their rest then comes from the file): the orders stay the reference's.
    import streaming.dataset
    from streaming import plan_file
    from streaming.plan import epoch

    monkeypatch.setattr(epoch, "HEAD_MIN_SAMPLES", 1)
    monkeypatch.setattr(epoch, "HEAD_UNTIL", 40)
    monkeypatch.setattr(streaming.dataset, "shares_plan", lambda spec, shape: True)
    calls = tmp_path / "plans-loaded"

    def load(*args):  # (forked DataLoader workers inherit it and append too)
        with open(calls, "a") as f:
            f.write("x")
        return plan_file.load_or_compute_plan(*args)

    monkeypatch.setattr(streaming.dataset, "load_or_compute_plan", load)
    _each_rank_matches(case, data_root, tmp_path)
    assert calls.exists()  # (the plans were the node's files)
