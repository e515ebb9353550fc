import numpy as np
from numpy.typing import NDArray

def compose_ids(
    work: NDArray[np.int64],
    shuffle: NDArray[np.int64] | None = ...,
    small_per_big: NDArray[np.int64] | None = ...,
) -> None: ...
def is_arange(ids: NDArray[np.int64]) -> bool: ...
