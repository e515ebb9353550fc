"""The reference's ``streaming.base`` module paths. Re-exports only: no logic lives here."""

from __future__ import annotations

from streaming import _EXPORTS
from streaming._lazy import lazy_getattr

__all__ = list(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
