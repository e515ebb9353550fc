"""Fixtures shared by the runtime tests."""

from __future__ import annotations

import numpy as np
import pytest

from streaming import MDSWriter


@pytest.fixture(scope="session")
def token_dataset(tmp_path_factory) -> str:
    """203 rows of 16 int32 tokens, an int id and a short text, over several small shards."""
    out = str(tmp_path_factory.mktemp("tokens"))
    with MDSWriter(out=out, columns={"tokens": "ndarray:int32", "id": "int", "text": "str"},
                   size_limit=1 << 14) as writer:
        for i in range(203):
            writer.write({"tokens": np.arange(i, i + 16, dtype=np.int32), "id": i,
                          "text": f"row {i}"})
    return out


@pytest.fixture(scope="session")
def text_dataset(tmp_path_factory) -> str:
    """203 small rows (an int id, a text with non-ASCII and empty ones, bytes) over several
    small shards: rows that loaders collate a column at a time."""
    out = str(tmp_path_factory.mktemp("text"))
    with MDSWriter(out=out, columns={"id": "int", "text": "str", "blob": "bytes"},
                   size_limit=1 << 11) as writer:
        for i in range(203):
            writer.write({"id": i - 100 if i % 7 else 2**62 + i, "text": "é" * (i % 3) + f"r{i}"
                          if i % 11 else "", "blob": bytes(range(i % 5))})
    return out


@pytest.fixture(scope="session")
def shaped_token_dataset(tmp_path_factory) -> str:
    """200 rows of int32 tokens whose count changes every 8 rows (16, 17, 16, ...), an int id:
    in order, each batch of 8 holds one shape, but the loaders' chunks of batches do not."""
    out = str(tmp_path_factory.mktemp("shaped"))
    with MDSWriter(out=out, columns={"tokens": "ndarray:int32", "id": "int"},
                   size_limit=1 << 13) as writer:
        for i in range(200):
            width = 16 + (i // 8) % 2
            writer.write({"tokens": np.arange(i, i + width, dtype=np.int32), "id": i})
    return out
