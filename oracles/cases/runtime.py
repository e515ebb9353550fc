"""Oracle: full iteration orders, state dicts and resumed orders of the reference StreamingDataset.

Datasets are written with the REFERENCE's MDSWriter into a temp dir; fixtures keep only the
parameters needed to rebuild the same datasets (``DATASETS``) plus, per case, the spec that was run
and what came out: every sample id in iteration order for each epoch, ``len(ds)``, and any
state dict taken mid-epoch. Column ``id`` holds ``base + index`` so that ids are global and tell
streams apart.

Ranks are simulated with the reference's environment variables. One rank per "node"
(``LOCAL_WORLD_SIZE=1``) runs in its own subprocess with a 1-process gloo group already
initialised, so the reference's barriers are trivial; several ranks per node run concurrently as
real processes in one gloo group on 127.0.0.1.

This file is also its own subprocess entry point: ``python runtime.py --run SPEC.json OUT.json``.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile

# Rebuild rule (also used by tests/runtime): sample i of a dataset has
#   id = base + i, pad = b'\x07' * ((i * pad_mul) % pad_mod)
DATASETS = {
    "A": {"num_samples": 300, "base": 0, "pad_mul": 7, "pad_mod": 23, "size_limit": 1024,
          "compression": None, "hashes": None},
    "B": {"num_samples": 200, "base": 100000, "pad_mul": 5, "pad_mod": 41, "size_limit": 1500,
          "compression": "zstd", "hashes": ["sha1", "xxh64"]},
    "C": {"num_samples": 120, "base": 200000, "pad_mul": 3, "pad_mod": 11, "size_limit": 700,
          "compression": None, "hashes": None},
}


def write_dataset(out: str, params: dict) -> None:
    from streaming import MDSWriter

    columns = {"id": "int", "pad": "bytes"}
    with MDSWriter(out=out, columns=columns, compression=params["compression"],
                   hashes=params["hashes"], size_limit=params["size_limit"]) as writer:
        for i in range(params["num_samples"]):
            pad = b"\x07" * ((i * params["pad_mul"]) % params["pad_mod"])
            writer.write({"id": params["base"] + i, "pad": pad})


def _case(name: str, **spec) -> dict:
    spec.setdefault("kwargs", {})
    spec.setdefault("epochs", 2)
    spec.setdefault("num_workers", None)  # None: iterate the dataset directly
    spec.setdefault("world", {"ranks": 1, "local_world_size": 1})
    spec["name"] = name
    return spec


def cases() -> list[dict]:
    one = [{"dataset": "A", "remote": True}]
    three = [{"dataset": "A", "remote": True}, {"dataset": "B", "remote": True},
             {"dataset": "C", "remote": False}]
    out = [
        _case("seq_remote", streams=one, kwargs={"batch_size": 8}),
        _case("seq_local_only", streams=[{"dataset": "C", "remote": False}],
              kwargs={"batch_size": 4}),
        _case("seq_compressed", streams=[{"dataset": "B", "remote": True}],
              kwargs={"batch_size": 5, "validate_hash": "sha1"}),
        _case("orig_partition", streams=one,
              kwargs={"batch_size": 8, "partition_algo": "orig", "num_canonical_nodes": 3}),
        _case("ncn4_noshuffle", streams=one, kwargs={"batch_size": 6, "num_canonical_nodes": 4}),
    ]
    for algo in ("naive", "py1br", "py1e", "py1s", "py2s"):
        out.append(_case(f"shuffle_{algo}", streams=three,
                         kwargs={"batch_size": 8, "shuffle": True, "shuffle_algo": algo,
                                 "shuffle_block_size": 50, "num_canonical_nodes": 2,
                                 "shuffle_seed": 1234}))
    out += [
        _case("shuffle_defaults", streams=three, kwargs={"batch_size": 8, "shuffle": True}),
        # One canonical node (py1e's default for one node) and whole batches: a lone reader's
        # plan is the shuffle itself (the project reads its head first).
        _case("shuffle_py1e_one_node", streams=three,
              kwargs={"batch_size": 4, "shuffle": True, "shuffle_algo": "py1e",
                      "shuffle_block_size": 120, "shuffle_seed": 4321}),
        _case("proportion_epoch_size", kwargs={"batch_size": 8, "shuffle": True,
                                               "epoch_size": "1k"},
              streams=[{"dataset": "A", "remote": True, "proportion": 0.5},
                       {"dataset": "B", "remote": True, "proportion": 0.3},
                       {"dataset": "C", "remote": False, "proportion": 0.2}]),
        _case("repeat_choose", kwargs={"batch_size": 8, "shuffle": True, "shuffle_seed": 7},
              streams=[{"dataset": "A", "remote": True, "repeat": 1.5},
                       {"dataset": "B", "remote": True, "choose": 77},
                       {"dataset": "C", "remote": False}]),
        _case("unspecified_epoch_size", kwargs={"batch_size": 8, "epoch_size": 450},
              streams=three),
        _case("fixed_sampling", kwargs={"batch_size": 8, "shuffle": True,
                                        "sampling_method": "fixed"},
              streams=[{"dataset": "A", "remote": True, "repeat": 0.7},
                       {"dataset": "B", "remote": True, "repeat": 1.3}]),
        _case("granularity", kwargs={"batch_size": 8, "shuffle": True,
                                     "sampling_granularity": 4},
              streams=[{"dataset": "A", "remote": True, "repeat": 0.55},
                       {"dataset": "C", "remote": False, "repeat": 2.25}]),
    ]
    for method in ("stratified", "per_stream", "device_per_stream"):
        out.append(_case(f"batching_{method}", streams=three,
                         kwargs={"batch_size": 8, "shuffle": True, "batching_method": method,
                                 "num_canonical_nodes": 2}))
    out += [
        _case("loader_w0", streams=three, num_workers=0, loader_batch_size=8,
              kwargs={"batch_size": 8, "shuffle": True}, checkpoint_after=7),
        _case("loader_w2", streams=three, num_workers=2, loader_batch_size=8,
              kwargs={"batch_size": 8, "shuffle": True, "num_canonical_nodes": 2},
              checkpoint_after=9),
        _case("resume_w0", streams=three, num_workers=0, loader_batch_size=8,
              kwargs={"batch_size": 8, "shuffle": True}, resume_from="loader_w0"),
        _case("resume_w2", streams=three, num_workers=2, loader_batch_size=8,
              kwargs={"batch_size": 8, "shuffle": True, "num_canonical_nodes": 2},
              resume_from="loader_w2"),
        _case("resume_w2_to_w0", streams=three, num_workers=0, loader_batch_size=8,
              kwargs={"batch_size": 8, "shuffle": True, "num_canonical_nodes": 2},
              resume_from="loader_w2"),
        # Several simulated nodes (one rank each).
        _case("nodes2_py1e", streams=three, num_workers=0, loader_batch_size=4,
              kwargs={"batch_size": 4, "shuffle": True, "num_canonical_nodes": 4},
              world={"ranks": 2, "local_world_size": 1}, checkpoint_after=5),
        _case("nodes3_seq", streams=one, kwargs={"batch_size": 4},
              world={"ranks": 3, "local_world_size": 1}),
        _case("nodes2_replication", streams=one,
              kwargs={"batch_size": 4, "shuffle": True, "replication": 2},
              world={"ranks": 2, "local_world_size": 1}),
        # Elastic resumption: a checkpoint from 1 node resumed on 2 nodes, and 2 nodes -> 1.
        _case("ncn4_loader", streams=three, num_workers=0, loader_batch_size=4,
              kwargs={"batch_size": 4, "shuffle": True, "num_canonical_nodes": 4},
              checkpoint_after=11),
        _case("elastic_1_to_2", streams=three, num_workers=0, loader_batch_size=4,
              kwargs={"batch_size": 4, "shuffle": True, "num_canonical_nodes": 4},
              world={"ranks": 2, "local_world_size": 1}, resume_from="ncn4_loader"),
        _case("elastic_2_to_1", streams=three, num_workers=0, loader_batch_size=4,
              kwargs={"batch_size": 4, "shuffle": True, "num_canonical_nodes": 4},
              resume_from="nodes2_py1e"),
        # Two ranks on one node: real concurrent processes in one gloo group.
        _case("ranks2_node1", streams=three, num_workers=0, loader_batch_size=4,
              kwargs={"batch_size": 4, "shuffle": True},
              world={"ranks": 2, "local_world_size": 2}),
        _case("ranks2_node1_w2", streams=one, num_workers=2, loader_batch_size=4,
              kwargs={"batch_size": 4, "shuffle": True, "shuffle_algo": "py1s"},
              world={"ranks": 2, "local_world_size": 2}),
    ]
    return out


# ------------------------------------------------------------------------------------------------
# Running one rank of a case (inside a subprocess).


def _ids(batch) -> list[int]:
    return [int(x) for x in batch["id"]]


def run_rank(spec: dict, data_root: str, local_root: str) -> dict:
    from streaming import Stream, StreamingDataLoader, StreamingDataset

    streams = []
    for i, s in enumerate(spec["streams"]):
        src = os.path.join(data_root, s["dataset"])
        weights = {k: s[k] for k in ("proportion", "repeat", "choose") if k in s}
        if s["remote"]:
            streams.append(Stream(remote=src, local=os.path.join(local_root, f"s{i}"), **weights))
        else:
            streams.append(Stream(local=src, **weights))
    ds = StreamingDataset(streams=streams, **spec["kwargs"])
    result = {"len": len(ds), "size": ds.size, "epoch_size": int(ds.epoch_size), "orders": []}
    if spec["num_workers"] is None:
        for _ in range(spec["epochs"]):
            result["orders"].append([int(s["id"]) for s in ds])
        return result
    loader = StreamingDataLoader(ds, batch_size=spec["loader_batch_size"],
                                 num_workers=spec["num_workers"])
    if spec.get("resume") is not None:
        loader.load_state_dict(spec["resume"])
    for epoch in range(spec["epochs"]):
        order = []
        for n, batch in enumerate(loader):
            order += _ids(batch)
            if epoch == 0 and n + 1 == spec.get("checkpoint_after"):
                result["state_dict"] = loader.state_dict()
        result["orders"].append(order)
    result["end_state_dict"] = loader.state_dict()
    del loader
    return result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_case(spec: dict, data_root: str, work: str) -> list[dict]:
    """Run every rank of a case in subprocesses; return each rank's result."""
    ranks = spec["world"]["ranks"]
    lws = spec["world"]["local_world_size"]
    port = _free_port()
    procs = []
    outs = []
    batches = [range(ranks)] if lws > 1 else [[r] for r in range(ranks)]
    for group in batches:
        for rank in group:
            node = rank // lws
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks),
                       LOCAL_RANK=str(rank % lws), LOCAL_WORLD_SIZE=str(lws),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            if lws == 1:
                env["ORACLE_PREINIT_DIST"] = "1"
            tag = f"{spec['name']}_r{rank}"
            spec_path = os.path.join(work, tag + ".spec.json")
            out_path = os.path.join(work, tag + ".out.json")
            with open(spec_path, "w") as f:
                json.dump({"spec": spec, "data_root": data_root,
                           "local_root": os.path.join(work, spec["name"], f"node{node}")}, f)
            procs.append(subprocess.Popen([sys.executable, __file__, "--run", spec_path,
                                           out_path], env=env))
            outs.append(out_path)
        for p in procs:
            if p.wait(timeout=600):
                raise RuntimeError(f"reference run failed: {spec['name']}")
        procs = []
    results = []
    for path in outs:
        with open(path) as f:
            results.append(json.load(f))
    return results


def generate(outdir: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data_root = os.path.join(tmp, "data")
        for name, params in DATASETS.items():
            write_dataset(os.path.join(data_root, name), params)
        done: dict[str, list[dict]] = {}
        fixtures = []
        for spec in cases():
            spec = copy.deepcopy(spec)
            if "resume_from" in spec:
                spec["resume"] = done[spec["resume_from"]][0]["state_dict"]
            work = os.path.join(tmp, "work")
            os.makedirs(work, exist_ok=True)
            results = run_case(spec, data_root, work)
            shutil.rmtree(work)
            done[spec["name"]] = results
            fixtures.append({"spec": spec, "ranks": results})
            print(f"  {spec['name']}: {[len(o) for o in results[0]['orders']]}", flush=True)
    with open(outdir / "orders.json", "w") as f:
        json.dump({"datasets": DATASETS, "cases": fixtures}, f, separators=(",", ":"),
                  sort_keys=True)


def _main_run(spec_path: str, out_path: str) -> None:
    with open(spec_path) as f:
        job = json.load(f)
    if os.environ.get("ORACLE_PREINIT_DIST"):
        # One rank per simulated node: a 1-process group makes the reference's barriers trivial.
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method=f"file://{spec_path}.pg", rank=0,
                                world_size=1)
    result = run_rank(job["spec"], job["data_root"], job["local_root"])
    with open(out_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--run":
        _main_run(sys.argv[2], sys.argv[3])

