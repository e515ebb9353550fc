"""Epoch planning equals the reference (mosaicml-streaming 0.13.0) on every recorded case."""

from __future__ import annotations

import hashlib
import json
import logging
import warnings

import numpy as np
import pytest

import streaming.base.batching as base_batching
from streaming.plan import (
    PlanSpec,
    epoch_work,
    get_partitions,
    get_sampling,
    get_shuffle,
    resample_streams,
    resolve_stream_weights,
    worker_plan,
    worker_plan_head,
)
from streaming.world import World

_CACHE: dict[str, list[dict]] = {}


def _cases(oracles, name: str) -> list[dict]:
    if name not in _CACHE:
        _CACHE[name] = json.loads((oracles / "plan" / f"{name}.json").read_text())
    return _CACHE[name]


def _run(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.CRITICAL)
        try:
            return fn(*args, **kwargs), None
        except Exception as e:  # noqa: BLE001 - compared with what the reference raised
            return None, e
        finally:
            logging.disable(logging.NOTSET)


def _assert_array(actual, expected: dict) -> None:
    a = np.ascontiguousarray(np.asarray(actual), dtype="<i8")
    assert list(a.shape) == expected["shape"]
    if "values" in expected:
        assert a.reshape(-1).tolist() == expected["values"]
    assert hashlib.sha256(a.tobytes()).hexdigest() == expected["sha256"]


def _assert_case(case: dict, result, error) -> None:
    if "error" in case:
        assert error is not None, f"expected {case['error']}: {case['message']}"
        assert type(error).__name__ == case["error"]
        # Same message in spirit: the reference's opening words (before any number or quote).
        opening = case["message"].split("{")[0].split("(")[0][:24]
        assert str(error).startswith(opening), (str(error), case["message"])
        return
    if error is not None:
        raise error
    if isinstance(case["result"], list):
        assert len(result) == len(case["result"])
        for got, want in zip(result, case["result"]):
            _assert_array(got, want)
    else:
        _assert_array(result, case["result"])


def _ids(name: str):
    return lambda case: None


@pytest.mark.parametrize("chunk", range(10))
def test_shuffles_match_reference(oracles, chunk):
    cases = _cases(oracles, "shuffle")[chunk::10]
    assert cases
    for case in cases:
        algo, sizes, ncn, seed, epoch, bs = case["args"]
        result, error = _run(get_shuffle, algo, np.array(sizes, np.int64), ncn, seed, epoch, bs)
        _assert_case(case, result, error)


def test_partitions_match_reference(oracles):
    cases = _cases(oracles, "partition")
    assert len(cases) > 100
    for case in cases:
        result, error = _run(get_partitions, *case["args"])
        _assert_case(case, result, error)


def test_sampling_matches_reference(oracles):
    for case in _cases(oracles, "sampling"):
        sizes, *rest = case["args"]
        result, error = _run(get_sampling, np.array(sizes, np.int64), *rest)
        _assert_case(case, result, error)


def test_stream_weights_match_reference(oracles):
    cases = _cases(oracles, "weights")
    for case in cases:
        streams, samples, epoch_size, seed = case["args"]
        props, repeats, chooses = zip(*streams)
        result, error = _run(
            resolve_stream_weights, props, repeats, chooses, samples, epoch_size, seed
        )
        if "error" in case:
            _assert_case(case, result, error)
            continue
        assert error is None, error
        want_prop, want_repeat, want_choose, want_size = case["result"]
        assert result.choose.tolist() == want_choose
        assert result.epoch_size == want_size
        assert result.proportion.tolist() == want_prop
        assert result.repeat.tolist() == want_repeat


def _spec(d: dict, **extra) -> PlanSpec:
    return PlanSpec(
        samples_per_shard=d["samples_per_shard"],
        shards_per_stream=d["shards_per_stream"],
        choose_per_stream=d["choose_per_stream"],
        proportion_per_stream=d["proportion_per_stream"],
        num_canonical_nodes=d["num_canonical_nodes"],
        batch_size=d["batch_size"],
        shuffle=d["shuffle"],
        shuffle_algo=d["shuffle_algo"],
        shuffle_seed=d["shuffle_seed"],
        shuffle_block_size=d["shuffle_block_size"],
        partition_algo=d["partition_algo"],
        sampling_method=d["sampling_method"],
        sampling_granularity=d["sampling_granularity"],
        initial_physical_nodes=d["initial_physical_nodes"],
        **extra,
    )


def test_resample_streams_matches_reference(oracles):
    cases = _cases(oracles, "resample")
    for case in cases:
        d = case["spec"]
        result, error = _run(
            resample_streams,
            np.array(d["samples_per_shard"]),
            d["shards_per_stream"],
            d["choose_per_stream"],
            d["shuffle_seed"],
            case["epoch"],
            d["sampling_method"],
            d["sampling_granularity"],
            d["shuffle"],
            case["stream_id"],
        )
        _assert_case(case, result, error)


@pytest.mark.parametrize("method", ["random", "stratified", "per_stream", "device_per_stream"])
def test_batching_matches_reference(oracles, method):
    cases = [c for c in _cases(oracles, "batching") if c["method"] == method]
    assert len(cases) > 20
    for case in cases:
        spec = _spec(case["spec"], batching_method=method, replication=case["replication"])
        pn, rpn, wpr = case["world"]
        result, error = _run(epoch_work, spec, pn, rpn, wpr, case["epoch"], case["sample_in_epoch"])
        _assert_case(case, result, error)
        # The reference's own entry point, called as the reference's callers do: with a
        # ``World`` (replicated, as its dataset does) where ``epoch_work`` takes the shape.
        world = World(pn, rpn, wpr, 0)
        if case["replication"] is not None:
            world = world.replicate(case["replication"])
        result, error = _run(base_batching.generate_work, method, spec, world, case["epoch"],
                             case["sample_in_epoch"])
        _assert_case(case, result, error)


def _large(oracles, pick) -> list[tuple[dict, tuple]]:
    out = []
    for case in _cases(oracles, "large"):
        if pick(case):
            pn, rpn, wpr = case["world"]
            args = (_spec(case["spec"]), pn, rpn, wpr, case["epoch"], case["sample_in_epoch"])
            out.append((case, args))
    return out


@pytest.mark.parametrize("algo", ["naive", "py1br", "py1e", "py1s", "py2s"])
def test_large_plans_match_reference(oracles, algo):
    """Epochs of 1e5-5e6 samples, where the kernels' fast paths engage (helper threads, jumps
    over raws nobody reads): the whole work and every worker's own view (``worker_plan``, which
    plans only what that worker reads) equal the reference's, digest for digest."""
    cases = _large(oracles, lambda c: c["spec"]["shuffle_algo"] == algo)
    assert len(cases) >= 5
    for case, args in cases:
        result, error = _run(epoch_work, *args)
        _assert_case(case, result, error)
        for n, r, w, want in case["views"]:
            view, error = _run(worker_plan, *args, n, r, w)
            if error is not None:
                raise error
            _assert_array(view, want)


def test_large_py1e_heads_match_reference(oracles):
    """py1e over canonical nodes of >= 2**20 samples gives every worker its first ids before the
    rest is planned (``worker_plan_head``): both parts together are the reference's view."""
    cases = _large(oracles, lambda c: c["head"])
    heads = 0
    for case, args in cases:
        for n, r, w, want in case["views"]:
            got, error = _run(worker_plan_head, *args, n, r, w)
            if error is not None:
                raise error
            if got is None:  # (places alternating between canonical nodes: no head)
                assert args[0].num_canonical_nodes > 1, (case["world"], n, r, w)
                continue
            heads += 1
            first, rest = got
            assert args[0].batch_size <= len(first) < want["shape"][0]
            _assert_array(np.concatenate([first, rest()]), want)
    assert heads >= 16
