"""Re-exports of ``streaming.plan.shuffle`` at the reference's module path."""

from streaming.plan.shuffle import (
    algos,
    get_shuffle,
    get_shuffle_naive,
    get_shuffle_py1br,
    get_shuffle_py1e,
    get_shuffle_py1s,
    get_shuffle_py2s,
)

__all__ = [
    "algos",
    "get_shuffle",
    "get_shuffle_naive",
    "get_shuffle_py1br",
    "get_shuffle_py1e",
    "get_shuffle_py1s",
    "get_shuffle_py2s",
]
