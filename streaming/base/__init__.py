"""The reference's ``streaming.base`` module paths. Re-exports only: no logic lives here."""

from __future__ import annotations

import importlib
from typing import Any

from streaming import _EXPORTS

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'streaming.base' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
