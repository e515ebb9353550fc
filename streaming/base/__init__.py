"""The reference's ``streaming.base`` module paths. Re-exports only: no logic lives here."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "StreamingDataset": "streaming.dataset",
    "Stream": "streaming.stream",
    "StreamingDataLoader": "streaming.dataloader",
    "LocalDataset": "streaming.local",
    "MDSWriter": "streaming.format.mds.writer",
    "JSONWriter": "streaming.format.json.writer",
    "CSVWriter": "streaming.format.xsv.writer",
    "TSVWriter": "streaming.format.xsv.writer",
    "XSVWriter": "streaming.format.xsv.writer",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streaming.base' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
