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


@pytest.mark.parametrize("case", CASES, ids=[c["spec"]["name"] for c in CASES])
def test_matches_reference(case, data_root, tmp_path):
    spec = case["spec"]
    ranks = spec["world"]["ranks"]
    lws = spec["world"]["local_world_size"]
    for rank, expected in zip(range(ranks), case["ranks"]):
        local_root = os.path.join(tmp_path, f"node{rank // lws}")
        with world_env(rank, ranks, lws):
            got = run_rank(spec, data_root, local_root)
        assert got == expected, f"rank {rank}"
