"""Cold full epoch from a loopback S3 endpoint (moto server started by ``run.py``).

MDS implementations: ``StreamingDataset(remote='s3://BUCKET/PREFIX', local=<empty dir>,
shuffle=False, batch_size=32)`` iterated directly, with ``S3_ENDPOINT_URL`` pointing at the
server. litdata: its ``StreamingDataset('s3://BUCKET/PREFIX-litdata', cache_dir=<empty dir>,
storage_options={'endpoint_url': ...})`` over its own copy of the same rows (its obstore
client is allowed plain http, which loopback needs).
Params: ``kind``, ``remote``, ``litdata_remote``, ``endpoint``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Any

from _common import check_row, clean_shm, main, row_nbytes, start_clock


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    kind = params["kind"]
    os.environ["S3_ENDPOINT_URL"] = params["endpoint"]
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    cache = tempfile.mkdtemp(prefix=f"s3cache-{impl}-", dir=os.environ.get("BENCH_TMP"))
    try:
        if impl == "litdata":
            import litdata.streaming.downloader as lit_dl
            from litdata import StreamingDataset

            # litdata's obstore fast path refuses plain http unless told; the loopback endpoint
            # is http, so allow it (this changes no performance setting).
            lit_dl._OBSTORE_CLIENT_OPTIONS = {
                **lit_dl._OBSTORE_CLIENT_OPTIONS,
                "allow_http": "true",
            }
            t0 = start_clock()
            ds = StreamingDataset(
                params["litdata_remote"],
                cache_dir=cache,
                storage_options={"endpoint_url": params["endpoint"]},
            )
        else:
            from streaming import StreamingDataset

            clean_shm(impl)
            local = os.path.join(cache, "local")
            t0 = start_clock()
            ds = StreamingDataset(
                remote=params["remote"], local=local, shuffle=False, batch_size=32
            )
        it = iter(ds)
        first = next(it)
        ttfs = time.perf_counter() - t0
        count = 1
        for _ in it:
            count += 1
        elapsed = time.perf_counter() - t0
        check_row(kind, first)  # outside the timings
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "ttfs_s": ttfs,
        "expected": int(params.get("samples", count)),
        "samples": count,
        "seconds": elapsed,
        "samples_s": count / elapsed,
        "MB_s": count * row_nbytes(kind) / elapsed / 1e6,
    }


if __name__ == "__main__":
    main(run)
