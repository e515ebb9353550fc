"""Oracle cases for epoch planning: shuffles, partitions, sampling, stream weights, batching.

Runs in the reference venv. Arrays are recorded by shape, dtype and SHA-256 of their int64
little-endian bytes (exact equality, small fixtures); small ones are also stored in full so a
failing test can show the difference. Errors are recorded as exception type and message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pathlib
import warnings
from types import SimpleNamespace

import numpy as np

SEEDS = [0, 1, 7, 9176, 2**31 - 1, 2**32 + 5]
FULL_LIMIT = 64


def _digest(arr) -> dict:
    a = np.ascontiguousarray(np.asarray(arr), dtype="<i8")
    out = {"shape": list(a.shape), "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
    if a.size <= FULL_LIMIT:
        out["values"] = a.reshape(-1).tolist()
    return out


def _run(fn, *args, **kwargs) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - record whatever the reference raises
            return {"error": type(e).__name__, "message": str(e)}
    out = {"warned": bool(caught)}
    if isinstance(result, tuple):
        out["result"] = [_digest(r) for r in result]
    else:
        out["result"] = _digest(result)
    return out


def _shard_size_cases(rs: np.random.RandomState) -> list[list[int]]:
    cases = [[1], [5], [100], [3, 4], [1, 1, 1, 1, 1], [10] * 7, [0, 5, 0, 7], [2, 0, 9]]
    cases += [[50, 1, 200, 3, 77, 120], [1000], [256] * 9]
    for _ in range(22):
        nsh = rs.randint(1, 25)
        lo = 0 if rs.rand() < 0.2 else 1
        cases.append(rs.randint(lo, rs.choice([5, 40, 300]), nsh).tolist())
    return cases


def shuffle_cases(rs: np.random.RandomState) -> list[dict]:
    from streaming.base.shuffle import get_shuffle

    out = []
    for sizes in _shard_size_cases(rs):
        for algo in ["naive", "py1br", "py1e", "py1s", "py2s"]:
            ncns = sorted({1, int(rs.choice([2, 3, 4, 8])), int(rs.choice([16, 50]))})
            for ncn in ncns:
                seed = int(rs.choice(SEEDS))
                bs = int(rs.choice([1, 2, 3, 10, 64, 1 << 18]))
                for epoch in range(4) if ncn == ncns[0] else [int(rs.randint(0, 4))]:
                    args = [algo, sizes, ncn, seed, epoch, bs]
                    res = _run(get_shuffle, algo, np.array(sizes, np.int64), ncn, seed, epoch, bs)
                    out.append({"args": args, **res})
    return out


def partition_cases(rs: np.random.RandomState) -> list[dict]:
    from streaming.base.partition import get_partitions

    out = []
    worlds = [(1, 1, 1), (1, 8, 1), (1, 8, 4), (2, 8, 2), (4, 2, 3), (3, 1, 2), (8, 1, 1)]
    for _ in range(220):
        algo = str(rs.choice(["orig", "relaxed"]))
        n = int(rs.choice([1, 2, 3, 7, 16, 64, 100, 333, 1000, 1024]))
        pn, rpn, wpr = worlds[rs.randint(len(worlds))]
        ncn = int(rs.choice([1, 2, 3, 4, 8, 16, 24, pn, 2 * pn]))
        bs = int(rs.choice([1, 2, 4, 7, 32]))
        drop = int(rs.choice([0, 0, 1, 5, 17, n // 2, n, n + 50]))
        ipn = rs.choice([None, None, 1, 2, 3, 4, 8])
        ipn = None if ipn is None else int(ipn)
        args = [algo, n, ncn, pn, rpn, wpr, bs, drop, ipn]
        out.append({"args": args, **_run(get_partitions, *args)})
    return out


def sampling_cases(rs: np.random.RandomState) -> list[dict]:
    from streaming.base.sampling import get_sampling

    out = []
    for sizes in _shard_size_cases(rs)[:20] + [[10, 20, 30], [1, 2, 3, 4, 5, 6]]:
        total = sum(sizes)
        for choose in sorted({0, 1, total // 3, total, total + 1, 2 * total + 7, 3 * total}):
            gran = int(rs.choice([1, 2, 5, 100]))
            seed = int(rs.choice(SEEDS))
            epoch = int(rs.randint(0, 4))
            use_epoch = bool(rs.randint(2))
            args = [sizes, choose, gran, seed, epoch, use_epoch]
            out.append({"args": args, **_run(get_sampling, np.array(sizes, np.int64), *args[1:])})
    for bad in [
        ([3, 4], -1, 1, 0, 0, True),
        ([3, 4], 2, 0, 0, 0, True),
        ([3, 4], 2, 1, -1, 0, True),
        ([3, 4], 2, 1, 0, -1, True),
    ]:
        out.append({"args": list(bad), **_run(get_sampling, np.array(bad[0], np.int64), *bad[1:])})
    return out


def _weights(streams, samples, epoch_size, seed):
    from streaming.base.stream import Stream

    objs = []
    for p, r, c in streams:
        obj = SimpleNamespace()
        if p is not None:
            obj.proportion = p
        if r is not None:
            obj.repeat = r
        if c is not None:
            obj.choose = c
        objs.append(obj)
    size = Stream.apply_weights(objs, np.array(samples, np.int64), epoch_size, seed)
    return (
        [float(o.proportion) for o in objs],
        [float(o.repeat) for o in objs],
        [int(o.choose) for o in objs],
        int(size),
    )


def weight_cases(rs: np.random.RandomState) -> list[dict]:
    from streaming.base.stream import Stream

    out = []
    specs = [
        ([(None, None, None)], [100], None),
        ([(None, None, None)] * 3, [10, 20, 30], None),
        ([(None, None, None)] * 3, [10, 20, 30], 100),
        ([(None, None, None)] * 3, [7, 11, 13], 1000),
        ([(0.5, None, None), (0.25, None, None), (0.25, None, None)], [10, 20, 30], None),
        ([(1.0, None, None), (1.0, None, None), (1.0, None, None)], [10, 20, 30], 100),
        ([(0.3, None, None), (0.7, None, None)], [999, 1], 12345),
        ([(2.0, None, None), (1.0, None, None), (3.0, None, None)], [5, 5, 5], 11),
        ([(None, 2.0, None), (None, None, 7), (None, None, None)], [10, 20, 30], None),
        ([(None, 0.5, None), (None, 1.7, None)], [33, 9], None),
        ([(None, None, 0), (None, None, 1000)], [3, 4], None),
        # Errors.
        ([(0.5, None, None), (None, 2.0, None)], [10, 20], None),
        ([(None, 2.0, None), (0.5, None, None)], [10, 20], None),
        ([(None, 2.0, None), (None, None, 5)], [10, 20], 50),
        ([(0.5, 2.0, None)], [10], None),
        ([(-0.5, None, None)], [10], None),
        ([(None, -1.0, None)], [10], None),
        ([(None, None, -3)], [10], None),
    ]
    for _ in range(12):
        k = rs.randint(1, 6)
        props = (rs.rand(k) + 0.01).round(3).tolist()
        samples = rs.randint(1, 500, k).tolist()
        size = None if rs.rand() < 0.3 else int(rs.randint(1, 3000))
        specs.append(([(p, None, None) for p in props], samples, size))
    for streams, samples, epoch_size in specs:
        seed = int(rs.choice(SEEDS))

        def resolve(streams=streams, samples=samples, epoch_size=epoch_size, seed=seed):
            # Stream.__init__ checks each stream's own weights before the dataset does.
            for p, r, c in streams:
                if (p is not None) + (r is not None) + (c is not None) > 1:
                    Stream(local="/nonexistent", proportion=p, repeat=r, choose=c)
                for name, value in (("proportion", p), ("repeat", r), ("choose", c)):
                    if value is not None and value < 0:
                        Stream(local="/nonexistent", **{name: value})
            return _weights(streams, samples, epoch_size, seed)

        res = {"args": [[list(s) for s in streams], samples, epoch_size, seed]}
        try:
            res["result"] = list(resolve())
        except Exception as e:  # noqa: BLE001
            res.update(error=type(e).__name__, message=str(e))
        out.append(res)
    return out


def _fake_dataset(spec: dict):
    """An object with just what the reference's planning code reads off a StreamingDataset."""
    from streaming.base.dataset import StreamingDataset

    samples_per_shard = np.array(spec["samples_per_shard"], np.int64)
    shards_per_stream = np.array(spec["shards_per_stream"], np.int64)
    ds = SimpleNamespace()
    ds.samples_per_shard = samples_per_shard
    ds.sample_offset_per_shard = samples_per_shard.cumsum() - samples_per_shard
    ds.shards_per_stream = shards_per_stream
    ds.shard_offset_per_stream = shards_per_stream.cumsum() - shards_per_stream
    ds.num_streams = len(shards_per_stream)
    ds.streams = [
        SimpleNamespace(proportion=p, choose=c)
        for p, c in zip(spec["proportion_per_stream"], spec["choose_per_stream"])
    ]
    ds.epoch_size = int(sum(spec["choose_per_stream"]))
    for key in (
        "num_canonical_nodes",
        "batch_size",
        "shuffle",
        "shuffle_algo",
        "shuffle_seed",
        "shuffle_block_size",
        "partition_algo",
        "sampling_method",
        "sampling_granularity",
        "initial_physical_nodes",
    ):
        setattr(ds, key, spec[key])
    ds.epoch_seed_change = spec["shuffle"] and spec["sampling_method"] == "balanced"
    ds.resample_streams = lambda epoch, stream_id=None: StreamingDataset.resample_streams(
        ds, epoch, stream_id
    )
    return ds


def _stream_totals(samples_per_shard: list[int], shards: list[int]) -> list[int]:
    """Each stream's samples, its shards being the next ``shards[k]`` of ``samples_per_shard``."""
    ends = np.cumsum(shards)
    return [int(sum(samples_per_shard[e - k : e])) for k, e in zip(shards, ends)]


def _random_spec(rs: np.random.RandomState) -> dict:
    num_streams = int(rs.choice([1, 1, 2, 3]))
    shards = rs.randint(1, 6, num_streams).tolist()
    samples_per_shard = rs.randint(1, 60, sum(shards)).tolist()
    samples_per_stream = _stream_totals(samples_per_shard, shards)
    mode = rs.choice(["none", "proportion", "repeat"])
    if mode == "proportion":
        props = (rs.rand(num_streams) + 0.2).tolist()
        weights = _weights(
            [(p, None, None) for p in props],
            samples_per_stream,
            int(rs.choice([0, 100, 257])),
            9176,
        )
    elif mode == "repeat":
        weights = _weights(
            [(None, float(rs.choice([0.5, 1.0, 1.5, 2.25])), None) for _ in shards],
            samples_per_stream,
            None,
            9176,
        )
    else:
        weights = _weights([(None, None, None)] * num_streams, samples_per_stream, None, 9176)
    return {
        "samples_per_shard": samples_per_shard,
        "shards_per_stream": shards,
        "proportion_per_stream": weights[0],
        "choose_per_stream": weights[2],
        "num_canonical_nodes": int(rs.choice([1, 2, 4, 8])),
        "batch_size": int(rs.choice([1, 2, 4, 8])),
        "shuffle": bool(rs.rand() < 0.7),
        "shuffle_algo": str(rs.choice(["naive", "py1br", "py1e", "py1s", "py2s"])),
        "shuffle_seed": int(rs.choice(SEEDS)),
        "shuffle_block_size": int(rs.choice([16, 64, 1 << 18])),
        "partition_algo": str(rs.choice(["orig", "relaxed"])),
        "sampling_method": str(rs.choice(["balanced", "fixed"])),
        "sampling_granularity": int(rs.choice([1, 1, 3, 10])),
        "initial_physical_nodes": None,
    }


def resample_cases(rs: np.random.RandomState) -> list[dict]:
    from streaming.base.dataset import StreamingDataset

    out = []
    for _ in range(60):
        spec = _random_spec(rs)
        ds = _fake_dataset(spec)
        for epoch in [0, int(rs.randint(1, 4))]:
            for sid in [None] + list(range(ds.num_streams)):
                res = _run(StreamingDataset.resample_streams, ds, epoch, sid)
                out.append({"spec": spec, "epoch": epoch, "stream_id": sid, **res})
    return out


def batching_cases(rs: np.random.RandomState) -> list[dict]:
    from streaming.base.batching import generate_work
    from streaming.base.world import World

    out = []
    worlds = [(1, 1, 1), (1, 2, 2), (2, 2, 1), (1, 4, 2), (2, 1, 3), (4, 1, 1)]
    for i in range(160):
        spec = _random_spec(rs)
        method = ["random", "stratified", "per_stream", "device_per_stream"][i % 4]
        pn, rpn, wpr = worlds[rs.randint(len(worlds))]
        if rs.rand() < 0.15:
            spec["initial_physical_nodes"] = int(rs.choice([1, 2, 4]))
        replication = None
        if rs.rand() < 0.15 and pn * rpn > 1:
            replication = int(rs.choice([d for d in (1, 2, 4) if (pn * rpn) % d == 0]))
        ds = _fake_dataset(spec)
        world = World(pn, rpn, wpr, 0)
        if replication is not None:
            world = world.replicate(replication)
        total = ds.epoch_size
        sample_in_epoch = int(rs.choice([0, 0, spec["batch_size"] * pn * rpn, total // 3]))
        epoch = int(rs.randint(0, 3))
        res = _run(generate_work, method, ds, world, epoch, sample_in_epoch)
        out.append(
            {
                "spec": spec,
                "method": method,
                "world": [pn, rpn, wpr],
                "replication": replication,
                "epoch": epoch,
                "sample_in_epoch": sample_in_epoch,
                **res,
            }
        )
    return out


def _large_sizes(rs: np.random.RandomState, shards: int, top: int) -> list[int]:
    kind = str(rs.choice(["even", "uneven", "mixed"]))
    if kind == "even":
        return [top] * shards
    if kind == "uneven":
        return rs.randint(1, top + 1, shards).tolist()
    return [int(rs.choice([1, 7, top // 2, top])) for _ in range(shards)]


def large_cases(rs: np.random.RandomState) -> list[dict]:
    """Whole epochs of 1e5-5e6 samples, where the kernels' fast paths engage (a helper thread
    making raws or draws ahead, jumps over raws nobody reads, py1e's head first), as digests:
    the whole work array and every worker's view of it."""
    from streaming.base.batching import generate_work
    from streaming.base.world import World

    out = []
    algos = ["naive", "py1br", "py1e", "py1s", "py2s"]
    worlds = [(1, 1, 1), (1, 8, 2), (1, 2, 1), (2, 4, 2), (1, 1, 4), (4, 2, 1)]
    made: list = []

    def keep(*args):  # generate_work, keeping the work for its views
        made.append(generate_work(*args))
        return made[-1]

    for i in range(30):
        algo = algos[i % 5]
        head = algo == "py1e" and i % 10 == 2  # one big canonical node: py1e's head comes first
        num_streams = 1 if head or rs.rand() < 0.6 else int(rs.choice([2, 3]))
        shards = [int(rs.randint(60, 300)) // num_streams for _ in range(num_streams)]
        top = int(rs.choice([4000, 10000, 20000]))
        if head:  # at least HEAD_MIN_SAMPLES (2**20) per canonical node
            shards, top = [int(rs.randint(110, 250))], 20000
        samples_per_shard = []
        for k in shards:
            samples_per_shard += _large_sizes(rs, k, top)
        if head:
            samples_per_shard = [top] * shards[0]
        samples_per_stream = _stream_totals(samples_per_shard, shards)
        resample = not head and rs.rand() < 0.4
        repeats = [float(rs.choice([0.5, 1.0, 1.5])) if resample else None for _ in shards]
        weights = _weights([(None, r, None) for r in repeats], samples_per_stream, None, 9176)
        pn, rpn, wpr = worlds[0 if head else rs.randint(len(worlds))]
        if head:
            rpn, wpr = int(rs.choice([1, 8])), int(rs.choice([1, 2]))
        ncs = [1, 2] if head else [1, 3, 8, 64] if algo in ("py1s", "py2s") else [1, 2, 8, 16]
        nc = int(rs.choice(ncs)) * (1 if head else pn)
        spec = {
            "samples_per_shard": samples_per_shard,
            "shards_per_stream": shards,
            "proportion_per_stream": weights[0],
            "choose_per_stream": weights[2],
            "num_canonical_nodes": nc,
            "batch_size": int(rs.choice([1, 8, 32])),
            "shuffle": True,
            "shuffle_algo": algo,
            "shuffle_seed": int(rs.choice(SEEDS + [2**63 - 11, 12345678901])),
            "shuffle_block_size": int(rs.choice([1 << 18, 1 << 20, 5000, 99991])),
            "partition_algo": str(rs.choice(["orig", "relaxed"])),
            "sampling_method": str(rs.choice(["balanced", "balanced", "fixed"])),
            "sampling_granularity": int(rs.choice([1, 1, 1, 100])),
            "initial_physical_nodes": None,
        }
        ds = _fake_dataset(spec)
        world = World(pn, rpn, wpr, 0)
        total = ds.epoch_size
        step = spec["batch_size"] * pn * rpn
        sample_in_epoch = 0 if head else int(rs.choice([0, 0, step * 5, total // 3]))
        epoch = int(rs.randint(0, 3))
        made.clear()
        res = _run(keep, "random", ds, world, epoch, sample_in_epoch)
        if made:
            work = made[-1]
            res["views"] = [
                [n, r, w, _digest(work[n, r, w].reshape(-1))]
                for n in range(work.shape[0])
                for r in range(work.shape[1])
                for w in range(work.shape[2])
            ]
        out.append(
            {
                "spec": spec,
                "world": [pn, rpn, wpr],
                "epoch": epoch,
                "sample_in_epoch": sample_in_epoch,
                "head": head,
                **res,
            }
        )
    return out


def generate(outdir: pathlib.Path) -> None:
    logging.disable(logging.CRITICAL)
    rs = np.random.RandomState(20240613)
    groups = {
        "shuffle": shuffle_cases,
        "partition": partition_cases,
        "sampling": sampling_cases,
        "weights": weight_cases,
        "resample": resample_cases,
        "batching": batching_cases,
        "large": large_cases,
    }
    for name, make in groups.items():
        cases = make(rs)
        with open(outdir / f"{name}.json", "w") as f:
            json.dump(cases, f, separators=(",", ":"), sort_keys=True)
