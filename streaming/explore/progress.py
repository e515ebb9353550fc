"""The one progress bar helper: a notebook widget in Jupyter, a text bar in a terminal.

Every long job in shardstream (predownloading a dataset, verifying shards, converting data,
reading a whole dataset into Arrow) shows its progress through :func:`progress_bar`, so that
users control all of them in one place:

* ``STREAMING_PROGRESS=0`` (or ``false``/``off``) turns every bar off; ``=1`` forces them on
  even when stderr is not a terminal (e.g. in CI logs).
* In a Jupyter kernel with ``ipywidgets`` installed the bar is a notebook widget; otherwise it
  is tqdm's text bar on stderr (which tqdm hides by itself when stderr is not a terminal and
  ``disable=None``).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, TypeVar

__all__ = ["progress_bar", "progress_enabled", "in_notebook"]

T = TypeVar("T")

_ENV = "STREAMING_PROGRESS"
_FALSE = {"0", "false", "no", "off"}
_TRUE = {"1", "true", "yes", "on"}


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (where a notebook widget can be displayed).

    Returns:
        bool: ``True`` inside an IPython kernel, ``False`` in a terminal, a plain IPython shell
        or a script.
    """
    ipython = sys.modules.get("IPython")
    if ipython is None:  # not imported means not running under IPython: never import it here
        return False
    try:
        shell = ipython.get_ipython()
    except AttributeError:  # pragma: no cover - a stub module named IPython
        return False
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def progress_enabled(disable: bool | None = None) -> bool | None:
    """Resolve whether bars show: an explicit argument wins, then ``STREAMING_PROGRESS``.

    Args:
        disable (bool, optional): ``True`` hides the bar, ``False`` shows it, ``None`` defers to
            the environment and then to tqdm (which hides bars when stderr is not a terminal).

    Returns:
        bool | None: The ``disable`` value to hand to tqdm.
    """
    if disable is not None:
        return bool(disable)
    value = os.environ.get(_ENV, "").strip().lower()
    if value in _FALSE:
        return True
    if value in _TRUE:
        return False
    return None


def _bar_class() -> type:
    if in_notebook():
        try:
            import ipywidgets  # noqa: F401  (tqdm.notebook needs it to draw the widget)
            from tqdm.notebook import tqdm as notebook_tqdm

            return notebook_tqdm
        except ImportError:
            pass  # without ipywidgets tqdm.notebook only warns; the text bar works everywhere
    from tqdm.std import tqdm as text_tqdm

    return text_tqdm


def progress_bar(
    iterable: Iterable[T] | None = None,
    *,
    total: int | float | None = None,
    desc: str | None = None,
    unit: str = "it",
    unit_scale: bool = False,
    disable: bool | None = None,
    leave: bool = True,
    **kwargs: Any,
) -> Any:
    """Make a tqdm progress bar suited to where the code runs (notebook widget or terminal).

    Use it as tqdm is used: wrap an iterable, or call ``update(n)`` on it inside a ``with``
    block. For byte counts pass ``unit="B", unit_scale=True``.

    Args:
        iterable (Iterable, optional): Items to iterate over while the bar advances.
        total (int | float, optional): Expected number of items (or bytes). Defaults to
            ``len(iterable)`` when it has one.
        desc (str, optional): Label shown before the bar.
        unit (str): Name of one step. Defaults to ``"it"``.
        unit_scale (bool): Show ``k``/``M``/``G`` prefixes. Defaults to ``False``.
        disable (bool, optional): ``True`` hides the bar, ``False`` always shows it. ``None``
            (default) follows ``STREAMING_PROGRESS`` and then whether stderr is a terminal.
        leave (bool): Keep the finished bar on screen. Defaults to ``True``.
        **kwargs: Passed to tqdm unchanged.

    Returns:
        tqdm: The bar (an iterator over ``iterable`` when one was given).
    """
    cls = _bar_class()
    resolved = progress_enabled(disable)
    if resolved is None and in_notebook():
        # A kernel's stderr is no TTY, yet the notebook shows a bar (widget or text) fine.
        resolved = False
    return cls(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit_scale,
        disable=resolved,
        leave=leave,
        dynamic_ncols=True,
        **kwargs,
    )
