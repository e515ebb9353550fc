"""Random StreamingDataset configurations ("specs") for the differential runner.

A spec is a JSON-able dict, run identically by both sides (``side.py``):

* ``datasets``: MDS datasets to write with the reference's writer, by the rebuild rule of
  ``oracles/cases/runtime.py`` (sample ``i`` has ``id = base + i`` and a pad of
  ``(i * pad_mul) % pad_mod`` bytes, so ids are global and tell streams apart);
* ``streams``: one ``Stream`` per entry (``ds`` indexes ``datasets``; ``remote`` chooses a
  remote-to-local copy over a local-only stream; optional ``proportion``/``repeat``/``choose``);
* ``kwargs``: ``StreamingDataset`` keyword arguments;
* ``main``: the simulated world (``ranks``, ``lws`` = ranks per node), ``num_workers`` (``None``
  iterates the dataset itself, otherwise a ``StreamingDataLoader``), epochs, and an optional
  ``checkpoint`` (epoch, after how many samples/batches, ``from_beginning``);
* ``resume``: ``None``, or a second run (possibly another world and worker count) that loads the
  main run's mid-epoch state dict (or, with ``"from": "end_state_dict"``, its end-of-run one).

The draws are weighted towards what goes wrong: several streams with mixed weights, odd epoch
sizes (strings such as ``"0.5k"``, zero, invalid values), every shuffle and batching method,
replication, several ranks per node and elastic resumption. A few configurations are invalid on
purpose; both sides must then raise the same exception at the same stage.

Keep the order of the ``rng`` calls: a (seed, index) pair names one configuration for good.
"""

from __future__ import annotations

import math
import random

# (ranks, ranks per node); single-rank worlds are the most common, as on small jobs.
WORLDS = [(1, 1)] * 4 + [(2, 1)] * 3 + [(3, 1), (4, 1), (2, 2), (2, 2), (4, 2), (3, 3), (4, 4)]
# Shuffle seeds around the 32- and 64-bit edges, where seeding bugs show.
SEEDS = [0, 1, 7, 9176, 2**31 - 1, 2**32 + 5, 2**40 + 3, 2**63 - 1, 12345678901]


def _world(rng: random.Random, repl: int | None) -> dict:
    """Draw a simulated world, mostly one whose rank count ``replication`` divides."""
    for _ in range(100):
        ranks, lws = rng.choice(WORLDS)
        # Now and then keep an indivisible world: both sides must reject it alike.
        if repl is None or ranks % repl == 0 or rng.random() < 0.03:
            return {"ranks": ranks, "lws": lws}
    return {"ranks": 1, "lws": 1}


def _datasets(rng: random.Random, nstreams: int) -> list[dict]:
    """Draw one small dataset per stream, with a few to a few dozen shards."""
    datasets = []
    for k in range(nstreams):
        n = rng.randint(50, 700)
        pad_mod = rng.randint(5, 60)
        avg = 20 + pad_mod / 2  # rough bytes per sample, to aim at the drawn shard count
        shards = rng.randint(3, 40)
        size_limit = max(64, int(math.ceil(n * avg / shards)))
        datasets.append({"num_samples": n, "base": 100000 * (k + 1), "pad_mul": rng.randint(1, 13),
                         "pad_mod": pad_mod, "size_limit": size_limit,
                         "compression": rng.choice([None, None, "zstd"])})
    return datasets


def _streams(rng: random.Random, datasets: list[dict]) -> list[dict]:
    """Draw the streams' weights: none, all proportions, a mix of repeat/choose, or invalid."""
    mode = rng.choices(["none", "proportion", "mixed", "invalid"], [35, 20, 40, 5])[0]
    streams = []
    for k in range(len(datasets)):
        s: dict = {"ds": k, "remote": rng.random() < 0.6}
        if mode == "proportion":
            s["proportion"] = round(rng.uniform(0.05, 3.0), rng.choice([1, 2, 6]))
        elif mode == "mixed":
            kind = rng.choice(["none", "repeat", "choose"])
            if kind == "repeat":
                s["repeat"] = rng.choice([round(rng.uniform(0.1, 3.0), rng.choice([1, 2, 5])),
                                          1, 2, 0.5])
            elif kind == "choose":
                s["choose"] = rng.randint(1, 2 * datasets[k]["num_samples"])
        elif mode == "invalid":
            kind = rng.choice(["prop_some", "neg_repeat", "prop_and_repeat", "zero_choose"])
            if kind == "prop_some" and k == 0:
                s["proportion"] = 0.5
            elif kind == "neg_repeat":
                s["repeat"] = -1.0
            elif kind == "prop_and_repeat":
                s["proportion"] = 0.5
                s["repeat"] = 2.0
            elif kind == "zero_choose":
                s["choose"] = 0
        streams.append(s)
    return streams


def _kwargs(rng: random.Random, streams: list[dict], total: int) -> dict:
    """Draw the ``StreamingDataset`` keyword arguments (each one often left at its default)."""
    kw: dict = {}
    r = rng.random()
    absolute = any(k in s for s in streams for k in ("repeat", "choose"))
    if r < 0.45 or (absolute and rng.random() < 0.85):
        pass
    elif r < 0.75:
        kw["epoch_size"] = rng.choice([rng.randint(1, 3000), rng.randint(total // 3 + 1, 2 * total),
                                       0, 1, total])
    elif r < 0.95:
        kw["epoch_size"] = rng.choice(["1k", "0.5k", "1.5k", "0.25k", "2K", " 1k ", str(
            rng.randint(1, 2000)), "0.1k", "0.0005m"])
    else:
        kw["epoch_size"] = rng.choice(["12x", -5, "-3", "abc", 123.7, "0"])

    if rng.random() < 0.7:
        kw["shuffle"] = True
    if rng.random() < 0.85:
        kw["shuffle_algo"] = rng.choice(["naive", "py1br", "py1e", "py1s", "py2s"])
    elif rng.random() < 0.1:
        kw["shuffle_algo"] = "py3x"  # unknown: the reference raises KeyError
    if rng.random() < 0.7:
        kw["shuffle_seed"] = rng.choice(SEEDS + [rng.randint(0, 2**31), rng.randint(0, 2**62)])
    elif rng.random() < 0.05:
        kw["shuffle_seed"] = -1
    if rng.random() < 0.7:
        kw["shuffle_block_size"] = rng.choice([1, 2, 3, 5, 10, 17, 50, 100, 300, 1000])
    if rng.random() < 0.7:
        kw["num_canonical_nodes"] = rng.randint(1, 8)
    if rng.random() < 0.5:
        kw["partition_algo"] = rng.choice(["orig", "relaxed"])
    if rng.random() < 0.4:
        kw["sampling_method"] = rng.choice(["balanced", "fixed"])
    if rng.random() < 0.35:
        kw["sampling_granularity"] = rng.choice([1, 2, 3, 4, 7, 10, 50])
    if rng.random() < 0.6:
        kw["batching_method"] = rng.choice(["random", "stratified", "per_stream",
                                            "device_per_stream"])
    if rng.random() < 0.97:
        kw["batch_size"] = rng.choice([1, 2, 3, 4, 5, 8, 8, 16])
    if "batch_size" not in kw and kw.get("batching_method", "random") != "random" and \
            rng.random() < 0.7:
        kw["batch_size"] = rng.choice([2, 4, 8])
    return kw


def gen(rng: random.Random, name: str) -> dict:
    """Draw one random configuration.

    Args:
        rng: The source of randomness; the same state gives the same spec.
        name: The spec's name (names its work directory and result record).

    Returns:
        The spec, a JSON-able dict (see the module docstring for its fields).
    """
    nstreams = rng.choice([1, 1, 2, 2, 3])
    datasets = _datasets(rng, nstreams)
    streams = _streams(rng, datasets)
    total = sum(d["num_samples"] for d in datasets)
    kw = _kwargs(rng, streams, total)

    repl = None
    if rng.random() < 0.2:
        repl = rng.choice([1, 2, 2, 4])
        kw["replication"] = repl
    world = _world(rng, repl)
    ncn = kw.get("num_canonical_nodes")
    nodes = world["ranks"] // world["lws"]
    # Canonical nodes that neither divide nor are divided by the physical nodes are rejected;
    # mostly draw a compatible count so that the run gets to the orders.
    if ncn and ncn % nodes and nodes % ncn and rng.random() < 0.8:
        kw["num_canonical_nodes"] = nodes * rng.choice([1, 1, 2, 3])

    nw = rng.choice([None, None, 0, 0, 1, 2])
    lbs = kw.get("batch_size") or rng.randint(1, 8)
    if rng.random() < 0.2:
        lbs = rng.randint(1, 10)  # a loader batch size unlike the dataset's batch_size
    epochs = rng.choice([1, 2, 2, 3])
    # Where to checkpoint: somewhere inside this rank's share of the (estimated) epoch, counted
    # in samples when iterating the dataset and in batches through a loader.
    est_epoch = kw["epoch_size"] if isinstance(kw.get("epoch_size"), int) and \
        kw.get("epoch_size", 0) > 0 else total
    per_rank = max(1, est_epoch // max(1, world["ranks"] // (repl or 1)))
    units = per_rank if nw is None else max(1, per_rank // lbs)
    main = {"world": world, "num_workers": nw, "loader_batch_size": lbs, "epochs": epochs,
            "persistent_workers": rng.random() < 0.3, "drop_last": rng.random() < 0.1}
    resume = None
    if rng.random() < 0.75:
        main["checkpoint"] = {"epoch": rng.randrange(epochs),
                              "after": rng.randint(1, max(1, int(units * 0.9))),
                              "from_beginning": rng.random() < 0.5}
        if rng.random() < 0.85:
            rworld = world if rng.random() < 0.5 else _world(rng, repl)
            rnw = nw if rng.random() < 0.5 else rng.choice([None, 0, 1, 2])
            resume = {"world": rworld, "num_workers": rnw,
                      "loader_batch_size": lbs, "epochs": rng.choice([1, 2]),
                      "persistent_workers": rng.random() < 0.3}
            if rng.random() < 0.15:
                resume["from"] = "end_state_dict"
    return {"name": name, "datasets": datasets, "streams": streams, "kwargs": kw, "main": main,
            "resume": resume}
