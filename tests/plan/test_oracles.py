"""Epoch planning equals the reference (mosaicml-streaming 0.13.0) on every recorded case."""

from __future__ import annotations

import hashlib
import json
import logging
import warnings

import numpy as np
import pytest

from streaming.plan import (
    PlanSpec,
    epoch_work,
    get_partitions,
    get_sampling,
    get_shuffle,
    resample_streams,
    resolve_stream_weights,
)

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
