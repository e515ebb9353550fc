"""Type stubs for the compiled MDS kernel (src/_mds.pyx)."""

from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

KIND_BYTES: int
KIND_STR: int
KIND_CALL: int

def check_shard(buf: Any, samples: int, filename: str) -> int: ...
def row_bytes(buf: Any, idx: int, samples: int, filename: str) -> bytes: ...
def decode_row(
    buf: Any,
    idx: int,
    samples: int,
    names: tuple[str, ...],
    kinds: NDArray[np.int64],
    decoders: tuple[Callable[[bytes], Any], ...],
    fixed: NDArray[np.int64],
    filename: str,
) -> dict[str, Any]: ...
def decode_rows(
    buf: Any,
    idxs: NDArray[np.int64],
    samples: int,
    names: tuple[str, ...],
    kinds: NDArray[np.int64],
    decoders: tuple[Callable[[bytes], Any], ...],
    fixed: NDArray[np.int64],
    filename: str,
) -> list[dict[str, Any]]: ...
