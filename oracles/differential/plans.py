"""Plan differential: random epoch plans at scale, the reference vs this project.

``run.py`` runs whole ``StreamingDataset``s over small MDS datasets; this compares planning alone
(sampling, shuffle and partition with ``random`` batching) at 1e2-1e7 samples, where the
planning kernels' fast paths engage (helper threads, jumps over unread draws, scouts): the whole
work array (``epoch_work``), every worker's own view (``worker_plan``) and, where it applies,
py1e's head-first plan (``worker_plan_head``) must equal the reference's work, or both sides must
raise the same exception type.

    python oracles/differential/plans.py --n 40 --seed 3           # configurations p3_0 .. p3_39
    python oracles/differential/plans.py --n 16 --seed 2 --heads   # py1e, nodes >= 2**20 samples

Run it with the project's interpreter. The reference's side runs as a child under
``$REF_VENV/bin/python`` (default ``/work/refvenv``, as ``oracles/make_venv.sh`` makes it) and
writes each configuration's work (``.npy``) or exception (``.err``) under ``--work``; then this
process plans the same configurations and compares. One line per configuration; exit status 1 if
any differed. A (seed, index) pair names one configuration for good: keep the order of the draws.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np

# Shuffle seeds around the 32- and 64-bit edges.
SEEDS = [0, 1, 7, 9176, 2**31 - 1, 2**32 + 5, 2**40 + 3, 2**63 - 11, 12345678901]


def _shards(rng: random.Random, large: bool, big: bool) -> list[int]:
    """One stream's shard sizes: even, uneven, a mix with tiny shards, or all tiny."""
    count = rng.randint(100, 500) if large else rng.randint(1, 300 if big else 60)
    kind = rng.choice(["even", "uneven", "mixed", "tiny"])
    top = (rng.choice([5000, 10000, 20000]) if large
           else rng.choice([100, 3000, 10000, 40000]) if big else rng.choice([10, 100, 2000]))
    if kind == "even":
        return [rng.randint(1, top)] * count
    if kind == "uneven":
        return [rng.randint(1, top) for _ in range(count)]
    if kind == "mixed":
        return [rng.choice([1, 2, rng.randint(1, top), top]) for _ in range(count)]
    return [rng.randint(1, 5) for _ in range(count)]


def gen(seed: int, index: int) -> dict:
    """A random plan: 1-3 streams (some resampled), any algorithm, world and resumption point."""
    rng = random.Random(f"{seed}-{index}")
    num_streams = rng.choice([1, 1, 1, 2, 3])
    big, large = rng.random() < 0.5, rng.random() < 0.5
    sizes, spp, choose = [], [], []
    for _ in range(num_streams):
        shards = _shards(rng, large, big)
        sizes += shards
        spp.append(len(shards))
        choose.append(max(1, int(sum(shards) * rng.choice([1.0, 1.0, 0.37, 0.81, 1.5, 2.3]))))
    total = sum(choose)
    nodes, rpn = rng.choice([1, 1, 1, 2, 4]), rng.choice([1, 2, 3, 8])
    batch = rng.choice([1, 4, 7, 32, 64])
    part = rng.choice(["relaxed", "relaxed", "orig"])
    resumed = 0 if rng.random() < 0.6 else rng.randint(0, total)
    if rng.random() < 0.5:
        resumed -= resumed % (batch * nodes * rpn)
    return {
        "name": f"p{seed}_{index}", "sizes": sizes, "spp": spp, "choose": choose,
        "nc": rng.choice([1, 2, 3, 7, 8, 16, 31, 64, 100, 128]),
        "algo": rng.choice(["py1e", "py1e", "py1s", "py1br", "py2s", "naive"]),
        "block": rng.choice([None, None, rng.randint(1, 2000), rng.randint(1000, 300000), 1 << 18]),
        "seed": rng.choice(SEEDS), "epoch": rng.randint(0, 5), "nodes": nodes, "rpn": rpn,
        "wpr": rng.choice([1, 2, 4]), "batch": batch, "part": part,
        "init": rng.choice([1, 2, 4, 8]) if part == "relaxed" and rng.random() < 0.3 else None,
        "resumed": resumed, "sampling": rng.choice(["balanced", "balanced", "fixed"]),
        "granularity": rng.choice([1, 1, 3, 100]), "shuffle": rng.random() < 0.9,
    }


def gen_head(seed: int, index: int) -> dict:
    """A py1e plan whose canonical nodes hold >= 2**20 samples: its views plan head first."""
    rng = random.Random(f"head-{seed}-{index}")
    count, top = rng.randint(100, 400), rng.choice([10000, 20000, 40000])
    sizes = [top] * count if rng.random() < 0.5 else [rng.randint(1, top) for _ in range(count)]
    return {
        "name": f"h{seed}_{index}", "sizes": sizes, "spp": [count], "choose": [sum(sizes)],
        "nc": rng.choice([1, 1, 2, 3, 4]), "algo": "py1e",
        "block": rng.choice([None, None, rng.randint(1000, 1 << 20)]), "seed": rng.choice(SEEDS),
        "epoch": rng.randint(0, 3), "nodes": rng.choice([1, 1, 2]), "rpn": rng.choice([1, 1, 2, 8]),
        "wpr": rng.choice([1, 1, 2, 8]), "batch": rng.choice([1, 7, 32, 256]),
        "part": rng.choice(["relaxed", "orig"]), "init": None,
        "resumed": 0 if rng.random() < 0.7 else rng.randint(0, 300000),
        "sampling": "balanced", "granularity": 1, "shuffle": True,
    }


def reference_side(configs: list[dict], work: Path) -> None:
    """Plan every configuration with the reference (its own ``generate_work_random_batching``
    over the oracle cases' stand-in for a ``StreamingDataset``, ``_fake_dataset``)."""
    from streaming.base.batching.random import generate_work_random_batching

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cases"))
    from plan import _fake_dataset  # (oracles/cases/plan.py)

    for c in configs:
        ds = _fake_dataset({
            "samples_per_shard": c["sizes"], "shards_per_stream": c["spp"],
            "proportion_per_stream": [None] * len(c["spp"]), "choose_per_stream": c["choose"],
            "num_canonical_nodes": c["nc"], "batch_size": c["batch"], "shuffle": c["shuffle"],
            "shuffle_algo": c["algo"], "shuffle_seed": c["seed"],
            "shuffle_block_size": c["block"] or max(4_000_000 // c["nc"], 1 << 18),
            "partition_algo": c["part"], "sampling_method": c["sampling"],
            "sampling_granularity": c["granularity"], "initial_physical_nodes": c["init"],
        })
        world = SimpleNamespace(num_nodes=c["nodes"], ranks_per_node=c["rpn"],
                                workers_per_rank=c["wpr"])
        try:
            np.save(work / f"{c['name']}.npy",
                    generate_work_random_batching(ds, world, c["epoch"], c["resumed"]))
        except Exception as e:  # noqa: BLE001 - recorded, compared with the project's
            (work / f"{c['name']}.err").write_text(type(e).__name__)


def project_check(c: dict, work: Path) -> tuple[bool, str]:
    """Plan one configuration with the project and compare with the reference's record."""
    from streaming.plan import PlanSpec, epoch_work, worker_plan, worker_plan_head

    choose = np.array(c["choose"], np.int64)
    heads = 0
    try:
        spec = PlanSpec(
            samples_per_shard=c["sizes"], shards_per_stream=c["spp"], choose_per_stream=choose,
            proportion_per_stream=choose / choose.sum(), num_canonical_nodes=c["nc"],
            batch_size=c["batch"], shuffle=c["shuffle"], shuffle_algo=c["algo"],
            shuffle_seed=c["seed"], shuffle_block_size=c["block"], partition_algo=c["part"],
            sampling_method=c["sampling"], sampling_granularity=c["granularity"],
            initial_physical_nodes=c["init"])
        args = (spec, c["nodes"], c["rpn"], c["wpr"], c["epoch"], c["resumed"])
        whole = epoch_work(*args)
        views, firsts = {}, {}
        for view in np.ndindex(*whole.shape[:3]):
            views[view] = worker_plan(*args, *view)
            got = worker_plan_head(*args, *view)
            if got is not None:
                heads += 1
                firsts[view] = np.concatenate([got[0], got[1]()])
        error = None
    except Exception as e:  # noqa: BLE001 - compared with the reference's
        error = type(e).__name__
    err = work / f"{c['name']}.err"
    if err.exists():
        want = err.read_text()
        if error == want:
            return True, f"both raise {want}"
        return False, f"the reference raises {want}, the project {error}"
    if error is not None:
        return False, f"project raises {error}"
    ref = np.load(work / f"{c['name']}.npy")
    if ref.shape != whole.shape or not np.array_equal(ref, whole):
        return False, f"epoch_work differs (shape {whole.shape}, reference {ref.shape})"
    bad = [v for v, ids in views.items() if not np.array_equal(ref[v].ravel(), ids)]
    bad += [v for v, ids in firsts.items() if not np.array_equal(ref[v].ravel(), ids)]
    if bad:
        return False, f"views differ: {bad[:4]}"
    return True, f"{ref.size} ids, {len(views)} views, {heads} heads"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20, help="random configurations to run")
    ap.add_argument("--seed", type=int, default=1, help="names the batch")
    ap.add_argument("--heads", action="store_true", help="py1e plans that go head first")
    ap.add_argument("--work", type=Path, default=None, help="where the records go (a temp dir)")
    ap.add_argument("--side", choices=["ref"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    make = gen_head if args.heads else gen
    configs = [make(args.seed, i) for i in range(args.n)]
    if args.side == "ref":
        reference_side(configs, args.work)
        return 0
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp)
        ref_python = Path(os.environ.get("REF_VENV", "/work/refvenv")) / "bin" / "python"
        cmd = [str(ref_python), "-I", __file__, "--side", "ref", "--n", str(args.n),
               "--seed", str(args.seed), "--work", str(work)] + (["--heads"] if args.heads else [])
        subprocess.run(cmd, check=True)
        failed = 0
        for c in configs:
            t0 = time.perf_counter()
            ok, what = project_check(c, work)
            failed += not ok
            print(f"{c['name']:8s} {'ok ' if ok else 'BAD'} {time.perf_counter() - t0:6.2f}s "
                  f"{c['algo']:5s} nc={c['nc']:<3d} samples={sum(c['choose'])}: {what}", flush=True)
    print(f"{len(configs) - failed} of {len(configs)} agree")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
