"""Shared helpers of the runtime tests: datasets as the oracle script writes them, spec runner."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

from streaming import MDSWriter, Stream, StreamingDataLoader, StreamingDataset

WORLD_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


def write_dataset(out: str, params: dict[str, Any]) -> None:
    """Write a dataset by the rule of ``oracles/cases/runtime.py`` (id = base + i, pad bytes)."""
    with MDSWriter(out=out, columns={"id": "int", "pad": "bytes"},
                   compression=params["compression"], hashes=params["hashes"],
                   size_limit=params["size_limit"]) as writer:
        for i in range(params["num_samples"]):
            pad = b"\x07" * ((i * params["pad_mul"]) % params["pad_mod"])
            writer.write({"id": params["base"] + i, "pad": pad})


def expected_pad(params: dict[str, Any], sample_id: int) -> bytes:
    i = sample_id - params["base"]
    return b"\x07" * ((i * params["pad_mul"]) % params["pad_mod"])


@contextlib.contextmanager
def world_env(rank: int, world_size: int, local_world_size: int) -> Iterator[None]:
    """Pretend to be ``rank`` of ``world_size`` through the reference's environment variables."""
    saved = {k: os.environ.get(k) for k in WORLD_VARS}
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size),
                      LOCAL_RANK=str(rank % local_world_size),
                      LOCAL_WORLD_SIZE=str(local_world_size))
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def build_dataset(spec: dict[str, Any], data_root: str, local_root: str) -> StreamingDataset:
    streams = []
    for i, s in enumerate(spec["streams"]):
        src = os.path.join(data_root, s["dataset"])
        weights = {k: s[k] for k in ("proportion", "repeat", "choose") if k in s}
        if s["remote"]:
            streams.append(Stream(remote=src, local=os.path.join(local_root, f"s{i}"), **weights))
        else:
            streams.append(Stream(local=src, **weights))
    return StreamingDataset(streams=streams, **spec["kwargs"])


def run_rank(spec: dict[str, Any], data_root: str, local_root: str,
             multiprocessing_context: str | None = None) -> dict[str, Any]:
    """Run one rank of an oracle case with this package; same outputs as the oracle script."""
    ds = build_dataset(spec, data_root, local_root)
    result: dict[str, Any] = {"len": len(ds), "size": ds.size, "epoch_size": int(ds.epoch_size),
                              "orders": []}
    if spec["num_workers"] is None:
        for _ in range(spec["epochs"]):
            result["orders"].append([int(s["id"]) for s in ds])
        return result
    loader = StreamingDataLoader(ds, batch_size=spec["loader_batch_size"],
                                 num_workers=spec["num_workers"],
                                 multiprocessing_context=multiprocessing_context
                                 if spec["num_workers"] else None)
    if spec.get("resume") is not None:
        loader.load_state_dict(spec["resume"])
    for epoch in range(spec["epochs"]):
        order: list[int] = []
        for n, batch in enumerate(loader):
            order += [int(x) for x in batch["id"]]
            if epoch == 0 and n + 1 == spec.get("checkpoint_after"):
                result["state_dict"] = loader.state_dict()
        result["orders"].append(order)
    result["end_state_dict"] = loader.state_dict()
    return result
