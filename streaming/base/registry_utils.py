"""Re-export of :mod:`streaming.registry` at the reference's path."""

from streaming.registry import (
    TypedRegistry,
    construct_from_registry,
    create_registry,
    import_file,
    save_registry,
)

__all__ = [
    "TypedRegistry",
    "create_registry",
    "construct_from_registry",
    "import_file",
    "save_registry",
]
