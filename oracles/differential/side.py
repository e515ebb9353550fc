"""One side of the differential runner: run a spec with whichever ``streaming`` this Python imports.

``run.py`` starts this file once per side, under the reference's interpreter and under the
project's, with the same spec; it is not meant to be run by hand::

    PY side.py run SPEC.json OUT.json WORKDIR [--reference]   # all phases of one spec
    PY side.py write JOBS_JSON                                # write datasets (reference only)

How a world is simulated: ranks are forked children of this process (torch and ``streaming`` are
imported before forking, so each rank starts fast; Linux only). Nodes run one after another; the
ranks of one node run concurrently in a gloo group of ``LOCAL_WORLD_SIZE`` processes (file
init), so the reference's ``dist`` barriers span one node, as on a real cluster where local
directories are per node. ``RANK``/``WORLD_SIZE``/``LOCAL_RANK``/``LOCAL_WORLD_SIZE`` describe
the simulated world. Each node has its own local directories under WORKDIR.

Every rank records what a user could observe: ``len``, ``size``, ``epoch_size``, the streams'
weights, the ids in iteration order per epoch, the state dicts (mid-epoch checkpoint and end of
run), or the exception it raised and at which stage (``init``, ``attrs``, ``iter_ep<N>``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import multiprocessing as mp
import os
import shutil
import sys
import time
import traceback
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[1]

# Both sides print different warnings and logs; only behaviour is compared, and the noise would
# bury a real traceback in the side's stderr.txt.
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)


def _oracle_runtime() -> ModuleType:
    """Load ``oracles/cases/runtime.py``, whose dataset rebuild rule the specs' datasets follow.

    It is loaded by path (``oracles`` is not a package, and the reference side runs with ``-I``,
    so neither this directory nor the checkout is on ``sys.path``).
    """
    path = HERE.parent / "cases" / "runtime.py"
    spec = importlib.util.spec_from_file_location("oracle_cases_runtime", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_reference() -> None:
    """Stop unless ``streaming`` is the installed reference, not this checkout's package."""
    import streaming

    origin = Path(streaming.__file__).resolve()
    if streaming.__version__ != "0.13.0" or CHECKOUT in origin.parents:
        raise SystemExit(f"reference side imported streaming {streaming.__version__} from "
                         f"{origin}; expected mosaicml-streaming 0.13.0 outside {CHECKOUT}")


def write_datasets(jobs: list[list]) -> None:
    """Write datasets with this side's ``MDSWriter`` (the reference's, as for the fixtures).

    Args:
        jobs: ``[directory, params]`` pairs; params as in ``gen._datasets``. Each directory
            appears only once complete (written beside it, then renamed).
    """
    runtime = _oracle_runtime()
    for out, params in jobs:
        runtime.write_dataset(out + ".tmp", {"hashes": None, **params})
        os.rename(out + ".tmp", out)


def _err(e: BaseException, stage: str) -> dict:
    """Describe an exception; ``mro`` lets the comparison accept a subclass of the reference's."""
    return {"stage": stage, "type": type(e).__name__,
            "mro": [c.__name__ for c in type(e).__mro__], "msg": str(e)[:400],
            "tb": traceback.format_exc()[-1500:]}


def _jsonable(x: Any) -> Any:
    """Turn a state dict (which may hold NumPy or torch scalars) into plain JSON values."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        try:
            return x.item()
        except Exception:  # not a scalar after all: fall through to repr
            pass
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x
    return repr(x)


def build(job: dict, node_dir: str) -> Any:
    """Build the spec's ``StreamingDataset``, with its local directories under ``node_dir``."""
    from streaming import Stream, StreamingDataset

    streams = []
    for i, s in enumerate(job["streams"]):
        src = job["data_dirs"][s["ds"]]
        weights = {k: s[k] for k in ("proportion", "repeat", "choose") if k in s}
        if s["remote"]:
            streams.append(Stream(remote=src, local=os.path.join(node_dir, f"s{i}"), **weights))
        else:
            loc = os.path.join(node_dir, f"l{i}")
            if not os.path.exists(loc):  # normally pre-copied by run_phase before forking
                shutil.copytree(src, loc)
            streams.append(Stream(local=loc, **weights))
    return StreamingDataset(streams=streams, **job["kwargs"])


def _node_barrier() -> None:
    """Keep a node's ranks alive together around the end-of-run state dicts.

    The reference keeps its resume state in shared memory that the first rank to exit unlinks;
    without this barrier, a fast rank's exit races the other ranks' end-of-run state dicts
    (several ranks per node only; the differences it caused were the reference's, not real).
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def run_rank(job: dict, phase: dict, rank: int, node_dir: str) -> dict:
    """Run one rank of one phase and record what it observed.

    Args:
        job: The spec, plus ``data_dirs`` (the written datasets, by index).
        phase: ``job["main"]`` or the resume phase (with ``resume``: the state dict to load).
        rank: The global rank (the environment variables are already set).
        node_dir: This rank's node's directory for local copies.

    Returns:
        The rank's record: ``len``, ``size``, ``epoch_size``, ``streams_w``, ``orders`` (ids per
        epoch), ``state_dict``/``end_state_dict``, ``ncn_after``; or ``error`` with its stage.
    """
    res: dict = {"rank": rank}
    try:
        ds = build(job, node_dir)
    except Exception as e:
        res["error"] = _err(e, "init")
        return res
    try:
        res["len"] = len(ds)
        res["size"] = int(ds.size)
        res["epoch_size"] = int(ds.epoch_size)
        res["streams_w"] = [[float(getattr(s, "proportion", -1) or -1),
                             float(getattr(s, "repeat", -1) or -1),
                             int(getattr(s, "choose", -1) or -1)] for s in ds.streams]
    except Exception as e:
        res["error"] = _err(e, "attrs")
        return res
    orders: list[list[int]] = []
    res["orders"] = orders
    ck = phase.get("checkpoint")
    nw = phase["num_workers"]
    repl = job["kwargs"].get("replication") or 1
    try:
        if nw is None:
            # Iterate the dataset itself; a checkpoint is a state dict for the samples seen so
            # far by the whole (replicated) world.
            if phase.get("resume") is not None:
                ds.load_state_dict(phase["resume"])
            for ep in range(phase["epochs"]):
                order: list[int] = []
                orders.append(order)
                for n, s in enumerate(ds):
                    order.append(int(s["id"]))
                    if ck and ep == ck["epoch"] and n + 1 == ck["after"]:
                        res["state_dict"] = _jsonable(ds.state_dict(
                            ck["after"] * max(1, phase["world"]["ranks"] // repl),
                            ck["from_beginning"]))
            _node_barrier()
            res["end_state_dict"] = _jsonable(ds.state_dict(0, False))
            _node_barrier()
        else:
            from streaming import StreamingDataLoader

            lkw: dict = {"batch_size": phase["loader_batch_size"], "num_workers": nw}
            if nw and phase.get("persistent_workers"):
                lkw["persistent_workers"] = True
            if phase.get("drop_last"):
                lkw["drop_last"] = True
            loader = StreamingDataLoader(ds, **lkw)
            if phase.get("resume") is not None:
                loader.load_state_dict(phase["resume"])
            for ep in range(phase["epochs"]):
                order = []
                orders.append(order)
                for n, batch in enumerate(loader):
                    order += [int(x) for x in batch["id"]]
                    if ck and ep == ck["epoch"] and n + 1 == ck["after"]:
                        res["state_dict"] = _jsonable(loader.state_dict())
            _node_barrier()
            res["end_state_dict"] = _jsonable(loader.state_dict())
            _node_barrier()
            del loader
        res["ncn_after"] = _jsonable(getattr(ds, "num_canonical_nodes", None))
    except Exception as e:
        res["error"] = _err(e, f"iter_ep{len(orders) - 1}")
    return res


def _child(job: dict, phase: dict, rank: int, node_dir: str, out_path: str, pg_file: str,
           lws: int) -> None:
    """Body of one forked rank: set up its world, run it, write its record, exit hard."""
    try:
        # Its own process group, so that run_phase can also end the DataLoader workers that the
        # reference sometimes leaves behind.
        os.setpgid(0, 0)
        w = phase["world"]
        # MASTER_PORT is never used (the gloo group is initialised from a file) but the
        # reference reads it.
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(w["ranks"]),
                          LOCAL_RANK=str(rank % lws), LOCAL_WORLD_SIZE=str(lws),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT="1")
        if w["ranks"] > 1:
            import torch.distributed as dist

            dist.init_process_group("gloo", init_method=f"file://{pg_file}",
                                    rank=rank % lws, world_size=lws)
        res = run_rank(job, phase, rank, node_dir)
    except BaseException as e:  # anything, even SystemExit: the parent must get a record
        res = {"rank": rank, "error": _err(e, "harness")}
    with open(out_path + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(out_path + ".tmp", out_path)
    # Skip atexit handlers and finalizers inherited from the parent (e.g. shared memory cleanup).
    os._exit(0)


def run_phase(job: dict, phase: dict, work: str, tag: str, timeout: float) -> list[dict]:
    """Run every rank of one phase, node after node; return the ranks' records in rank order.

    A rank that neither finishes nor raises within ``timeout`` seconds gets a ``TIMEOUT``
    record. When a rank raises, its peers get only 8 more seconds: the reference's other ranks
    then wait forever at a barrier for the one that left (``run.compare`` treats those as
    knocked out by their peer, not as a difference).
    """
    ctx = mp.get_context("fork")
    lws = phase["world"]["lws"]
    results = []
    for node in range(phase["world"]["ranks"] // lws):
        node_dir = os.path.join(work, tag, f"node{node}")
        os.makedirs(node_dir, exist_ok=True)
        # Copy local-only streams once per node, before the ranks race to do it.
        for i, s in enumerate(job["streams"]):
            loc = os.path.join(node_dir, f"l{i}")
            if not s["remote"] and not os.path.exists(loc):
                shutil.copytree(job["data_dirs"][s["ds"]], loc)
        pg_file = os.path.join(work, f"{tag}_node{node}.pg")
        procs, outs = [], []
        for r in range(node * lws, (node + 1) * lws):
            out = os.path.join(work, f"{tag}_r{r}.json")
            p = ctx.Process(target=_child, args=(job, phase, r, node_dir, out, pg_file, lws))
            p.daemon = False  # a rank's DataLoader starts worker processes of its own
            p.start()
            procs.append(p)
            outs.append(out)
        deadline = time.time() + timeout
        cut = False
        while time.time() < deadline and any(p.is_alive() for p in procs):
            time.sleep(0.05)
            if not cut:
                for out in outs:
                    if os.path.exists(out):
                        with open(out) as f:
                            if "error" in json.load(f):
                                deadline = min(deadline, time.time() + 8)
                                cut = True
                                break
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)
            try:
                os.killpg(p.pid, 9)  # its leftover DataLoader workers (see _child)
            except ProcessLookupError:
                pass
        for r, out in zip(range(node * lws, (node + 1) * lws), outs):
            if os.path.exists(out):
                with open(out) as f:
                    results.append(json.load(f))
            else:
                results.append({"rank": r, "error": {"stage": "timeout_or_crash", "type": "TIMEOUT",
                                                     "mro": ["TIMEOUT"], "msg": ""}})
    return results


def main_run(spec_path: str, out_path: str, work: str, reference: bool) -> None:
    """Run all phases of a spec and write the records to ``out_path``.

    Args:
        spec_path: The spec (JSON), with ``data_dirs`` filled in by the orchestrator.
        out_path: Where to write ``{"impl", "main", "resume", "resume_from"}``.
        work: This side's work directory (local copies, rank records, gloo files).
        reference: Whether this is the reference side (then check which ``streaming`` it is).
    """
    # Import before forking, so that the ranks do not each pay for it.
    import torch  # noqa: F401

    import streaming
    from streaming import StreamingDataLoader, StreamingDataset  # noqa: F401

    if reference:
        check_reference()
    with open(spec_path) as f:
        job = json.load(f)
    os.makedirs(work, exist_ok=True)
    timeout = job.get("timeout", 60)
    out: dict = {"impl": {"version": streaming.__version__,
                          "path": str(Path(streaming.__file__).resolve().parent)}}
    out["main"] = run_phase(job, job["main"], work, "main", timeout)
    rs = job.get("resume")
    if rs is not None:
        # Resume from rank 0's state dict, as a trainer restoring a checkpoint does.
        sd = out["main"][0].get(rs.get("from", "state_dict"))
        if sd is None:
            out["resume"] = "no_state_dict"
        else:
            phase = dict(rs)
            phase["resume"] = sd
            out["resume_from"] = sd
            out["resume"] = run_phase(job, phase, work, "resume", timeout)
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        main_run(sys.argv[2], sys.argv[3], sys.argv[4], reference="--reference" in sys.argv[5:])
    elif sys.argv[1] == "write":
        check_reference()
        write_datasets(json.loads(sys.argv[2]))
    else:
        raise SystemExit(__doc__)
