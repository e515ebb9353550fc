"""shardstream: a drop-in, faster and sturdier MosaicML Streaming (``import streaming``).

Public names are imported lazily so that ``import streaming`` does no work beyond reading this
file: the heavy modules (torch, pyarrow, the compiled kernels) load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from streaming._lazy import lazy_getattr
from streaming._version import __version__

# Public name -> module that defines it.
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

__all__ = [
    "StreamingDataset", "Stream", "StreamingDataLoader", "LocalDataset", "MDSWriter", "JSONWriter",
    "CSVWriter", "TSVWriter", "XSVWriter", "multimodal", "vision", "text", "__version__",
]

if TYPE_CHECKING:  # pragma: no cover
    from streaming.dataloader import StreamingDataLoader
    from streaming.dataset import StreamingDataset
    from streaming.format.json.writer import JSONWriter
    from streaming.format.mds.writer import MDSWriter
    from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter
    from streaming.local import LocalDataset
    from streaming.stream import Stream


_exported = lazy_getattr(__name__, _EXPORTS, globals())


def __getattr__(name: str) -> Any:
    # The reference's subpackages (streaming.base, ...) are importable as attributes too.
    if name in ("base", "format", "plan", "storage", "explore", "text", "vision", "multimodal"):
        return importlib.import_module(f"streaming.{name}")
    return _exported(name)


def __dir__() -> list[str]:
    return sorted(__all__)
