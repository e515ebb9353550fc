"""Write a shared benchmark dataset once, so every implementation reads the same bytes.

``--impl reference`` writes MDS with the reference's ``MDSWriter`` (64 MB shards, or
``size_limit`` from params); ``--impl litdata`` writes the same rows in litdata's own chunk format
with ``litdata.optimize`` (litdata cannot read MDS). A ``.complete`` marker holding the params makes
this idempotent. Params: ``kind``, ``samples``, ``out``, optional ``size_limit``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

from _common import MDS_COLUMNS, bytes_pool, main, rows, start_clock, text_row, token_pool

_POOLS: dict[str, Any] = {}


def _litdata_row(job: tuple[str, int]) -> dict[str, Any]:
    # Module-level and self-contained so litdata's (spawned) worker processes can run it.
    kind, i = job
    if kind == "text":
        return text_row(i)
    if kind not in _POOLS:
        _POOLS[kind] = token_pool() if kind == "tokens" else bytes_pool()
    pool = _POOLS[kind]
    return {"tokens" if kind == "tokens" else "blob": pool[i % len(pool)]}


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    out = params["out"]
    marker = os.path.join(out, ".complete")
    want = json.dumps({k: params[k] for k in sorted(params) if k != "out"})
    if os.path.exists(marker) and open(marker).read() == want:
        return {"skipped": True}
    shutil.rmtree(out, ignore_errors=True)
    kind, n = params["kind"], int(params["samples"])
    t0 = start_clock()
    if kind == "jsonl":
        # ~12 KB per line of 2048 token ids; samples = lines.
        os.makedirs(out, exist_ok=True)
        pool = token_pool()
        with open(os.path.join(out, "tokens.jsonl"), "w") as f:
            for i in range(n):
                f.write(json.dumps({"tokens": pool[i % len(pool)].tolist()}) + "\n")
    elif impl == "litdata":
        from litdata import optimize

        optimize(
            fn=_litdata_row,
            inputs=[(kind, i) for i in range(n)],
            output_dir=out,
            chunk_bytes="64MB",
            num_workers=1,
            reorder_files=False,
            verbose=False,
        )
    else:
        from streaming import MDSWriter

        kwargs = {"size_limit": params["size_limit"]} if "size_limit" in params else {}
        with MDSWriter(out=out, columns=MDS_COLUMNS[kind], **kwargs) as writer:
            for row in rows(kind, n):
                writer.write(row)
    with open(marker, "w") as f:
        f.write(want)
    return {"seconds": time.perf_counter() - t0}


if __name__ == "__main__":
    main(run)
