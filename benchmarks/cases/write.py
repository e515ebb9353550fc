"""Writer throughput: rows of one kind written to a fresh local directory.

MDS implementations (reference, project, neprr) use ``MDSWriter.write`` per row with the
reference's defaults (no compression, no hashes, 64 MB shards); litdata uses its
``BinaryWriter.add_item`` (its own chunk format, 64 MB chunks), the closest equivalent.
Params: ``kind`` (tokens|bytes), ``samples``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

from _common import MDS_COLUMNS, main, row_nbytes, rows, start_clock


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    kind, n = params["kind"], int(params["samples"])
    data = list(rows(kind, n))  # generated up front so only writing is timed
    out = tempfile.mkdtemp(prefix=f"write-{impl}-", dir=os.environ.get("BENCH_TMP"))
    shutil.rmtree(out)
    try:
        if impl == "litdata":
            from litdata.streaming.writer import BinaryWriter

            t0 = start_clock()
            writer = BinaryWriter(out, chunk_bytes="64MB")
            for i, row in enumerate(data):
                writer.add_item(i, row)
            writer.done()
            writer.merge()
            elapsed = time.perf_counter() - t0
        else:
            from streaming import MDSWriter

            t0 = start_clock()
            with MDSWriter(out=out, columns=MDS_COLUMNS[kind]) as writer:
                for row in data:
                    writer.write(row)
            elapsed = time.perf_counter() - t0
        written = dir_bytes(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    payload = n * row_nbytes(kind)
    return {
        "seconds": elapsed,
        "MB_s": payload / elapsed / 1e6,
        "samples_s": n / elapsed,
        "bytes_on_disk": written,
    }


if __name__ == "__main__":
    main(run)
