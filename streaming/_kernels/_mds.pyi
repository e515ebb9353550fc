"""Type stubs for the compiled MDS kernel (src/_mds.pyx)."""

from typing import Any, Callable, Iterator

import numpy as np
from numpy.typing import NDArray

KIND_BYTES: int
KIND_STR: int
KIND_CALL: int
KIND_INT64: int
KIND_NDARRAY: int

def check_shard(buf: Any, samples: int, filename: str) -> int: ...
def row_bytes(buf: Any, idx: int, samples: int, filename: str) -> bytes: ...
def rows_span(
    buf: Any, rows: NDArray[np.int64], samples: int, filename: str
) -> tuple[int, int] | None: ...

class Columns:
    def __init__(
        self,
        names: tuple[str, ...],
        kinds: NDArray[np.int64],
        decoders: tuple[Callable[[bytes], Any], ...],
        fixed: NDArray[np.int64],
        arrays: tuple[Any, ...] | None = None,
    ) -> None: ...
    def decode(self, buf: Any, idx: int, samples: int, filename: str) -> dict[str, Any]: ...
    @property
    def schema(self) -> tuple[tuple[str, ...], tuple[int, ...]]: ...

class Rows(Iterator[dict[str, Any]]):
    def __init__(
        self,
        shards: tuple[tuple[Any, int, Columns, str], ...],
        slots: NDArray[np.int64] | None,
        rows: NDArray[np.int64],
    ) -> None: ...
    def __iter__(self) -> Rows: ...
    def __next__(self) -> dict[str, Any]: ...
    def __len__(self) -> int: ...
    def schema(self) -> tuple[tuple[str, ...], tuple[int, ...]] | None: ...
    def decode_columns(self, n: int) -> list[list[Any]]: ...
