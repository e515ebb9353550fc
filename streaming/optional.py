"""Packages this project does not depend on: import one where a feature needs it, or say what to
install (each caller words its own message: the extra, the URL or the class that needs it)."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_optional"]


def import_optional(module: str, message: str) -> ModuleType:
    """Import ``module``, or raise an ImportError with ``message`` if it is not installed.

    Args:
        module (str): The module to import.
        message (str): What needs it and how to install it.

    Returns:
        module: The imported module.

    Raises:
        ImportError: The module (or one it imports) is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(message) from e
