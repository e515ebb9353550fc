from typing import Any

import numpy as np

MISMATCH: int
CONTIGUOUS: int
STRIDED: int

def match_rows(values: list[Any]) -> int: ...
def copy_rows(values: list[np.ndarray], out: np.ndarray) -> None: ...
