"""What ``StreamingDataset`` tells its user: log records and warnings, per configuration.

Shared by ``oracles/cases/messages.py`` (run in the reference venv) and
``tests/runtime/test_messages.py`` (run in the project venv): both write the same small
datasets with their own ``MDSWriter``, build a dataset from the same arguments, iterate one
epoch in the main process (optionally after loading a checkpoint) and record, in order, every
record logged under the ``streaming`` loggers (level and message; the loggers' module names
differ) and every warning (category and message).
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

NUM_SAMPLES = 120


def _checkpoint(sample_in_epoch: int) -> dict[str, Any]:
    return {"epoch": 0, "sample_in_epoch": sample_in_epoch, "num_canonical_nodes": 1,
            "shuffle_seed": 9186, "initial_physical_nodes": 1}


# name -> (stream datasets, StreamingDataset keywords, checkpoint to load first or None)
CASES: dict[str, tuple[list[str], dict[str, Any], dict[str, Any] | None]] = {
    "defaults_batch": (["a"], {"batch_size": 4}, None),
    "shuffle_py1e": (["a"], {"batch_size": 4, "shuffle": True}, None),
    "shuffle_py1br": (["a"], {"batch_size": 4, "shuffle": True, "shuffle_algo": "py1br"}, None),
    "shuffle_py1s": (["a"], {"batch_size": 4, "shuffle": True, "shuffle_algo": "py1s"}, None),
    "shuffle_naive_ncn": (["a"], {"batch_size": 4, "shuffle": True, "shuffle_algo": "naive",
                                  "num_canonical_nodes": 2}, None),
    "all_given": (["a"], {"batch_size": 4, "shuffle": True, "num_canonical_nodes": 2,
                          "shuffle_block_size": 1000, "predownload": 16}, None),
    "small_block": (["a"], {"batch_size": 4, "shuffle": True, "shuffle_block_size": 10}, None),
    "predownload_small": (["a"], {"batch_size": 8, "predownload": 2}, None),
    "no_batch_size": (["a"], {}, None),
    "per_stream": (["a", "b"], {"batch_size": 7, "batching_method": "per_stream"}, None),
    "resume_mid_epoch": (["a"], {"batch_size": 4, "shuffle": True}, _checkpoint(40)),
    "stratified": (["a", "b"], {"batch_size": 7, "batching_method": "stratified"}, None),
    "device_per_stream": (["a", "b"], {"batch_size": 7,
                                       "batching_method": "device_per_stream"}, None),
    "per_stream_resume": (["a", "b"], {"batch_size": 7, "batching_method": "per_stream"},
                          _checkpoint(30)),
    "stratified_resume": (["a", "b"], {"batch_size": 7, "batching_method": "stratified"},
                          _checkpoint(30)),
    "device_per_stream_resume": (["a", "b"], {"batch_size": 7,
                                              "batching_method": "device_per_stream"},
                                 _checkpoint(30)),
    "more_nodes_than_samples": (["a"], {"batch_size": 4, "shuffle": True,
                                        "num_canonical_nodes": 200}, None),
    "replication_resume": (["a"], {"batch_size": 4, "replication": 1}, _checkpoint(8)),
    "epoch_size_small": (["a", "b"], {"batch_size": 4, "epoch_size": 30, "shuffle": True,
                                      "sampling_method": "fixed"}, None),
}


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[list[str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append([record.levelname, record.getMessage()])


def write_datasets(writer_cls: type, root: str) -> None:
    """Write the cases' datasets (``a``: 120 samples, ``b``: 50) under ``root``."""
    for name, count in (("a", NUM_SAMPLES), ("b", 50)):
        with writer_cls(out=os.path.join(root, name), columns={"id": "int"},
                        size_limit=1024) as writer:
            for i in range(count):
                writer.write({"id": i})


def run_case(name: str, streaming: Any, root: str, local: str) -> dict[str, Any]:
    """Build case ``name``'s dataset over the datasets under ``root`` (written by
    :func:`write_datasets`), iterate one epoch; return the messages, in order.

    Args:
        name (str): A key of :data:`CASES`.
        streaming (module): The ``streaming`` package under test.
        root (str): Where :func:`write_datasets` wrote.
        local (str): A fresh directory for the streams' local copies.

    Returns:
        Dict[str, Any]: ``logs`` ([level, message] pairs), ``warnings`` ([category,
        message] pairs), ``samples`` (the epoch's length) or ``error`` ([type, message]).
    """
    datasets, kwargs, checkpoint = CASES[name]
    handler = _Records()
    top = logging.getLogger("streaming")
    old_level = top.level
    top.addHandler(handler)
    top.setLevel(logging.INFO)
    out: dict[str, Any] = {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                streams = [streaming.Stream(remote=os.path.join(root, d),
                                            local=os.path.join(local, d)) for d in datasets]
                dataset = streaming.StreamingDataset(streams=streams, **kwargs)
                if checkpoint is not None:
                    dataset.load_state_dict(checkpoint)
                out["samples"] = sum(1 for _ in dataset)
            except Exception as error:  # noqa: BLE001 - recorded, the reference's included
                out["error"] = [type(error).__name__, str(error)]
        out["warnings"] = [[w.category.__name__, str(w.message)] for w in caught]
    finally:
        top.removeHandler(handler)
        top.setLevel(old_level)
    out["logs"] = handler.records
    return out
