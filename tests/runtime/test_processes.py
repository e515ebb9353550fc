"""Real processes: spawn workers, torch.distributed ranks, a kill -9 mid-download, a shared cache."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest
from rt_helpers import run_rank, write_dataset

HERE = pathlib.Path(__file__).resolve().parent
FIXTURE = HERE.parents[1] / "oracles" / "fixtures" / "runtime" / "orders.json"
PARAMS_A = {"num_samples": 300, "base": 0, "pad_mul": 7, "pad_mod": 23, "size_limit": 1024,
            "compression": None, "hashes": None}


def _case(name):
    with open(FIXTURE) as f:
        d = json.load(f)
    return d, next(c for c in d["cases"] if c["spec"]["name"] == name)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    with open(FIXTURE) as f:
        datasets = json.load(f)["datasets"]
    root = tmp_path_factory.mktemp("procs-data")
    for name, params in datasets.items():
        write_dataset(str(root / name), params)
    return str(root)


def _run(name, *args, **popen):
    return subprocess.Popen([sys.executable, str(HERE / "rt_procs.py"), name, json.dumps(args)],
                            cwd=str(HERE), **popen)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_workers_match_reference(data_root, tmp_path, method):
    """DataLoader workers started with spawn or forkserver (Python 3.14's default on Linux; the
    dataset pickles either way) give the reference's order."""
    _, case = _case("loader_w2")
    got = run_rank(case["spec"], data_root, str(tmp_path), multiprocessing_context=method)
    assert got == case["ranks"][0]


def test_dataset_iterated_in_main_then_by_forked_workers(tmp_path):
    """An epoch read in the main process (downloads, decompression, their file locks), then the
    next through forked DataLoader workers: the workers read epoch 1, exactly as workers that
    read both epochs. (The reference fails here beside filelock 4.3: a lock its main process
    used is used again in a forked child.)"""
    from streaming import StreamingDataLoader, StreamingDataset

    remote = str(tmp_path / "remote")
    write_dataset(remote, {**PARAMS_A, "compression": "zstd"})
    ids = list(range(PARAMS_A["num_samples"]))

    def dataset(local):
        return StreamingDataset(remote=remote, local=str(tmp_path / local), batch_size=4,
                                shuffle=True, shuffle_seed=9)

    def epoch(loader):
        return [int(i) for batch in loader for i in batch["id"]]

    mixed = dataset("a")
    assert sorted(int(s["id"]) for s in mixed) == ids
    after = epoch(StreamingDataLoader(mixed, batch_size=4, num_workers=2,
                                      multiprocessing_context="fork"))
    loader = StreamingDataLoader(dataset("b"), batch_size=4, num_workers=2,
                                 multiprocessing_context="fork")
    first = epoch(loader)
    assert after == epoch(loader) != first
    assert sorted(after) == ids


def test_torch_distributed_gloo_two_ranks(data_root, tmp_path):
    """Two gloo ranks on 127.0.0.1: each sees the reference's order, and they are disjoint."""
    _, case = _case("ranks2_node1")
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps({"spec": case["spec"], "data_root": data_root,
                                     "local_root": str(tmp_path / "node0")}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [_run("dist_rank", r, 2, port, str(spec_path), str(tmp_path)) for r in range(2)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert results == case["ranks"]
    for epoch in range(2):
        a, b = (set(r["orders"][epoch]) for r in results)
        assert not a & b


def test_kill_9_mid_download_leaves_nothing_that_blocks(tmp_path):
    """A process killed while holding a shard's lock mid-download: the next run just works."""
    remote, local = str(tmp_path / "remote"), str(tmp_path / "local")
    write_dataset(remote, PARAMS_A)
    flag = str(tmp_path / "flag")
    proc = _run("hang_while_downloading", remote, local, flag)
    deadline = time.time() + 60
    while not os.path.exists(flag):
        assert proc.poll() is None, "helper exited early"
        assert time.time() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    from streaming import StreamingDataset

    start = time.time()
    ds = StreamingDataset(remote=remote, local=local, batch_size=4)
    samples = list(ds)
    assert time.time() - start < 30
    assert [int(s["id"]) for s in samples] == list(range(300))
    for s in samples:
        assert s["pad"] == b"\x07" * ((int(s["id"]) * 7) % 23)


def test_processes_share_cache_under_limit(tmp_path):
    """Three processes on one cache smaller than the dataset: all samples right, limit kept."""
    remote, local = str(tmp_path / "remote"), str(tmp_path / "local")
    params = dict(PARAMS_A, num_samples=400)
    write_dataset(remote, params)
    shard_sizes = [os.path.getsize(os.path.join(remote, n)) for n in os.listdir(remote)
                   if n.endswith(".mds")]
    index_size = os.path.getsize(os.path.join(remote, "index.json"))
    limit = index_size + 5 * max(shard_sizes)
    nprocs = 3
    outs = [str(tmp_path / f"out{i}.json") for i in range(nprocs)]
    procs = [_run("iterate_and_check", remote, local, limit, 100 + i, outs[i])
             for i in range(nprocs)]
    peak = 0
    while any(p.poll() is None for p in procs):
        total = 0
        if os.path.isdir(local):
            for name in os.listdir(local):
                if name.endswith(".mds"):
                    try:
                        total += os.path.getsize(os.path.join(local, name))
                    except FileNotFoundError:
                        pass
        peak = max(peak, total)
        time.sleep(0.01)
    assert all(p.returncode == 0 for p in procs)
    for out in outs:
        result = json.loads(pathlib.Path(out).read_text())
        assert result["bad"] == []
        assert sorted(result["ids"]) == list(range(400))
    assert peak + index_size <= limit + nprocs * max(shard_sizes), (peak, limit)
    assert len(shard_sizes) > 5  # the limit really forced evictions
