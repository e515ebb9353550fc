"""Types the storage tests share (a module of its own: each test directory has a ``conftest``,
so ``from conftest import ...`` would depend on which one pytest imported first)."""

from __future__ import annotations

import dataclasses
import os
from typing import Callable


@dataclasses.dataclass
class Cloud:
    """A fresh bucket (or container) on one of the loopback object stores.

    Attributes:
        root (str): Its URL (``s3://...``, ``gs://...`` or ``az://...``).
        endpoint (str): The store's ``http://127.0.0.1:PORT``.
        point_at (Callable[[str], None]): Sends this process's clients to another endpoint
            URL (a :class:`FaultProxy` in front of the store, say).
    """

    root: str
    endpoint: str
    point_at: Callable[[str], None]


def random_payload(size: int) -> bytes:
    """``size`` random bytes for an object the tests upload to the loopback stores: never ending
    in a carriage return, which gcp-storage-emulator drops from uploads (its multipart parsing;
    GCS itself keeps it)."""
    data = os.urandom(size)
    return data[:-1] + b"\0" if data.endswith(b"\r") else data
