"""Random access: read every sample of a local dataset by index, in index order.

MDS implementations use ``LocalDataset(local)[i]``; litdata uses ``StreamingDataset(dir)[i]`` on
its own copy of the same rows; ``raw`` is the NumPy ceiling over the same shard bytes.
Params: ``kind``, ``data`` (MDS dir), ``litdata`` (litdata dir).
"""

from __future__ import annotations

import shutil
import time
from typing import Any

from _common import RawMDS, check_row, fresh_view, main, row_nbytes, start_clock


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    kind = params["kind"]
    view = fresh_view(params["litdata" if impl == "litdata" else "data"])
    try:
        if impl == "raw":
            t0 = start_clock()
            ds = RawMDS(view, kind)
        elif impl == "litdata":
            from litdata import StreamingDataset

            t0 = start_clock()
            ds = StreamingDataset(view)
        else:
            from streaming import LocalDataset

            t0 = start_clock()
            ds = LocalDataset(local=view)
        n = len(ds)
        t1 = time.perf_counter()
        for i in range(n):
            ds[i]
        elapsed = time.perf_counter() - t1
        check_row(kind, ds[0])
        check_row(kind, ds[n - 1])
        open_s = t1 - t0
    finally:
        shutil.rmtree(view, ignore_errors=True)
    return {
        "samples": n,
        "seconds": elapsed,
        "open_s": open_s,
        "samples_s": n / elapsed,
        "MB_s": n * row_nbytes(kind) / elapsed / 1e6,
    }


if __name__ == "__main__":
    main(run)
