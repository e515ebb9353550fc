"""Lazy module attributes: a package exports names whose modules load on first access."""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_getattr(package: str, exports: dict[str, str], namespace: dict[str, Any]
                 ) -> Callable[[str], Any]:
    """Make a module ``__getattr__`` that imports each exported name on first use.

    Args:
        package (str): The package's name, for the error message.
        exports (Dict[str, str]): Public name -> module that defines it.
        namespace (Dict[str, Any]): The package's ``globals()``, where loaded names are cached
            so that later lookups skip ``__getattr__``.

    Returns:
        Callable[[str], Any]: The function to assign to the package's ``__getattr__``.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
