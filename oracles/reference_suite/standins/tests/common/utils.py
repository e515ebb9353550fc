"""Stand-ins for the reference's ``tests/common/utils.py`` helpers its tests import."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from typing import Any, Iterator

import pytest


@pytest.fixture()
def local_remote_dir() -> Iterator[tuple[str, str]]:
    """A fresh ``(local, remote)`` pair of (not yet made) directories."""
    with tempfile.TemporaryDirectory() as root:
        yield os.path.join(root, "local"), os.path.join(root, "remote")


@pytest.fixture()
def compressed_local_remote_dir() -> Iterator[tuple[str, str, str]]:
    """A fresh ``(compressed, local, remote)`` triple of (not yet made) directories."""
    with tempfile.TemporaryDirectory() as root:
        yield tuple(os.path.join(root, name) for name in ("compressed", "local", "remote"))


def get_config_in_bytes(format: str, size_limit: int | None, column_names: list[str],
                        column_encodings: list[str], column_sizes: list[int | None],
                        compression: str | None = None,
                        hashes: list[str] | None = None) -> bytes:
    """A shard's config as the reference's writers put it in an MDS shard's header."""
    config = {"version": 2, "format": format, "compression": compression,
              "hashes": hashes or [], "size_limit": size_limit, "column_names": column_names,
              "column_encodings": column_encodings, "column_sizes": column_sizes}
    return json.dumps(config, sort_keys=True).encode("utf-8")


def get_free_tcp_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def copy_all_files(source: str, destination: str) -> None:
    """Copy the files (not the directories) of ``source`` into ``destination``."""
    os.makedirs(destination, exist_ok=True)
    for name in os.listdir(source):
        path = os.path.join(source, name)
        if os.path.isfile(path):
            shutil.copy2(path, os.path.join(destination, name))


def convert_to_mds(out_root: str, dataset_name: str, num_samples: int,
                   compression: str | None = None, hashes: list[str] | None = None,
                   size_limit: int = 1 << 26, offset: int = 0) -> None:
    """Write one of the test datasets (by lower-case class name) as MDS to ``out_root``."""
    from streaming.base import MDSWriter
    from tests.common.datasets import NumberAndSayDataset, SequenceDataset

    if dataset_name == "sequencedataset":
        dataset: Any = SequenceDataset(num_samples, offset=offset)
    elif dataset_name == "numberandsaydataset":
        dataset = NumberAndSayDataset(num_samples)
    else:
        raise ValueError(f"unknown test dataset {dataset_name!r}")
    columns = dict(zip(dataset.column_names, dataset.column_encodings))
    with MDSWriter(out=out_root, columns=columns, compression=compression, hashes=hashes,
                   size_limit=size_limit) as out:
        for sample in dataset:
            out.write(sample)
