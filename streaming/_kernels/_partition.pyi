import numpy as np
from numpy.typing import NDArray

def orig_worker_ids(
    num_samples: int,
    ncn: int,
    pn: int,
    rpn: int,
    wpr: int,
    bs: int,
    drop_first: int,
    node: int,
    rank: int,
    worker: int,
) -> NDArray[np.int64] | None: ...
