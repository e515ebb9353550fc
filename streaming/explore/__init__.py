"""Exploring datasets in notebooks and terminals: index and shard tables, samples, rich views.

Nothing here downloads more than it shows: :func:`open_index` fetches ``index.json`` only, and
:func:`open_dataset` fetches a shard the first time one of its samples is asked for.

Names are imported lazily (as in :mod:`streaming`), so ``import streaming.explore.progress``
from a hot path stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streaming._lazy import lazy_getattr

_EXPORTS = {
    "open_index": "streaming.explore.index",
    "IndexView": "streaming.explore.index",
    "ShardInfo": "streaming.explore.index",
    "ColumnInfo": "streaming.explore.index",
    "open_dataset": "streaming.explore.dataset",
    "DatasetView": "streaming.explore.dataset",
    "ShardView": "streaming.explore.dataset",
    "Sample": "streaming.explore.dataset",
    "Samples": "streaming.explore.dataset",
    "progress_bar": "streaming.explore.progress",
    "render_html": "streaming.explore.html",
    "render_text": "streaming.explore.terminal",
}

__all__ = [
    "ColumnInfo",
    "DatasetView",
    "IndexView",
    "Sample",
    "Samples",
    "ShardInfo",
    "ShardView",
    "open_dataset",
    "open_index",
    "progress_bar",
    "render_html",
    "render_text",
]

if TYPE_CHECKING:  # pragma: no cover
    from streaming.explore.dataset import (
        DatasetView,
        Sample,
        Samples,
        ShardView,
        open_dataset,
    )
    from streaming.explore.html import render_html
    from streaming.explore.index import ColumnInfo, IndexView, ShardInfo, open_index
    from streaming.explore.progress import progress_bar
    from streaming.explore.terminal import render_text


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
