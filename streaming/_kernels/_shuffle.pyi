import numpy as np
from numpy.typing import NDArray

def shuffle_spans(
    rng: np.random.Generator,
    begins: NDArray[np.int64],
    sizes: NDArray[np.int64],
    out: NDArray[np.int64],
) -> None: ...
def gather_shuffle_pieces(
    rng: np.random.Generator,
    src: NDArray[np.int64],
    starts: NDArray[np.int64],
    sizes: NDArray[np.int64],
    out: NDArray[np.int64],
) -> None: ...
def shuffle_blocks_py1br(
    rng: np.random.Generator,
    ids: NDArray[np.int64],
    node_bounds: NDArray[np.int64],
    stagger: NDArray[np.int64],
    low: int,
    high: int,
) -> None: ...
def shuffle_nodes(
    rng: np.random.Generator,
    algo: str,
    begins: NDArray[np.int64],
    sizes: NDArray[np.int64],
    node_spans: NDArray[np.int64],
    low: int,
    high: int,
    out: NDArray[np.int64],
    want: NDArray[np.int64] | None = ...,
    want_bounds: NDArray[np.int64] | None = ...,
    order: NDArray[np.int64] | NDArray[np.int32] | None = ...,
    exact: bool = ...,
    _mode: int = ...,
    scout: Scout | None = ...,
) -> bool: ...
def py1br_places(
    rng: np.random.Generator,
    begins: NDArray[np.int64],
    sizes: NDArray[np.int64],
    node_spans: NDArray[np.int64],
    stagger: NDArray[np.int64],
    low: int,
    high: int,
    out: NDArray[np.int64],
    want: NDArray[np.int64] | None = ...,
    want_bounds: NDArray[np.int64] | None = ...,
    order: NDArray[np.int64] | NDArray[np.int32] | None = ...,
    exact: bool = ...,
    _mode: int = ...,
    scout: Scout | None = ...,
) -> None: ...
def py2s_places(
    fixed_rng: np.random.Generator,
    epoch_rng: np.random.Generator,
    shard_begins: NDArray[np.int64],
    shard_sizes: NDArray[np.int64],
    piece_starts: NDArray[np.int64],
    piece_sizes: NDArray[np.int64],
    node_pieces: NDArray[np.int64],
    out: NDArray[np.int64],
    want: NDArray[np.int64] | None = ...,
    want_bounds: NDArray[np.int64] | None = ...,
    order: NDArray[np.int64] | NDArray[np.int32] | None = ...,
    exact: bool = ...,
    _mode: int = ...,
) -> None: ...
def permutation(
    rng: np.random.Generator,
    n: int,
    places: NDArray[np.int64] | None = ...,
    out: NDArray[np.int64] | None = ...,
    exact: bool = ...,
    _mode: int = ...,
) -> NDArray[np.int64]: ...
def group_places(
    places: NDArray[np.int64],
    node_starts: NDArray[np.int64],
    out: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64] | NDArray[np.int32]]: ...
def ascending_bounds(
    places: NDArray[np.int64],
    node_starts: NDArray[np.int64],
) -> tuple[int, NDArray[np.int64]] | None: ...
def strided_group(
    places: NDArray[np.int64],
    node_starts: NDArray[np.int64],
    out: NDArray[np.int64],
    max_width: int = ...,
    columns: bool = ...,
) -> tuple[NDArray[np.int64], NDArray[np.int64] | NDArray[np.int32] | int] | None: ...

class Scout:
    def __init__(self, rng: np.random.Generator, sizes: NDArray[np.int64], *,
                 stagger: NDArray[np.int64] | None = ..., low: int = ..., high: int = ...,
                 _limit: int = ..., _force: bool = ...) -> None: ...
    def stop(self) -> int: ...
    @property
    def running(self) -> bool: ...
    @property
    def _joined(self) -> bool: ...
