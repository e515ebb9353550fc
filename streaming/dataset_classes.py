"""What the reference's ready-made dataset classes share (``streaming.text``, ``.vision``,
``.multimodal``).

Those classes predate ``streams`` and the newer sampling and batching arguments: each takes
an older subset of :class:`~streaming.StreamingDataset`'s keywords, with that era's defaults
(``partition_algo='orig'``, ``shuffle_algo='py1s'``, ``shuffle_block_size=1 << 18``). The
defaults decide the sample order, so they are kept exactly.
"""

from __future__ import annotations

from typing import Any

from streaming.optional import import_optional

__all__ = ["STANDARD_ARGS", "standard_args", "require_package"]

# The StreamingDataset keywords those classes accept and pass on unchanged.
STANDARD_ARGS = (
    "remote", "local", "split", "download_retry", "download_timeout", "validate_hash", "keep_zip",
    "epoch_size", "predownload", "cache_limit", "partition_algo", "num_canonical_nodes",
    "batch_size", "shuffle", "shuffle_algo", "shuffle_seed", "shuffle_block_size",
)


def standard_args(values: dict[str, Any]) -> dict[str, Any]:
    """The :data:`STANDARD_ARGS` among a constructor's arguments (its ``locals()``).

    Args:
        values (Dict[str, Any]): The constructor's arguments by name.

    Returns:
        Dict[str, Any]: The keywords to pass to :class:`~streaming.StreamingDataset`.
    """
    return {name: values[name] for name in STANDARD_ARGS}


def require_package(module: str, needed_by: str) -> Any:
    """Import a package this project does not depend on, which one dataset class needs.

    Args:
        module (str): The module to import.
        needed_by (str): The class that needs it, for the message.

    Returns:
        module: The imported module.

    Raises:
        ImportError: The package is not installed; the message says which one to install.
    """
    package = module.split(".")[0]
    return import_optional(module, f"{needed_by} needs {package}, which is not installed: "
                                   f"pip install {package}")
