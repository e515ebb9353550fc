"""JSONL of token lists -> MDS (``{"tokens": [int, ...]}`` per line, 2048 tokens).

- reference / neprr: the straightforward loop a user writes: ``json.loads`` each line and
  ``MDSWriter.write({'tokens': np.asarray(tokens, np.int32)})`` (column ``ndarray:int32``).
- project: its command line, ``python -m streaming convert ...`` (args from params ``cli``, with
  ``{src}``/``{out}`` filled in), run as a child process and timed end to end.
Params: ``src`` (JSONL path), optional ``cli`` (list of str).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
from _common import main, start_clock


def run(impl: str, params: dict[str, Any]) -> dict[str, Any]:
    src = params["src"]
    size = os.path.getsize(src)
    out = os.path.join(
        tempfile.mkdtemp(prefix=f"convert-{impl}-", dir=os.environ.get("BENCH_TMP")), "mds"
    )
    try:
        if impl == "project":
            from streaming.cli import _COMMANDS

            if "convert" not in _COMMANDS:
                raise NotImplementedError("the project has no `streaming convert` command yet")
            argv = [a.format(src=src, out=out) for a in params["cli"]]
            t0 = start_clock()
            proc = subprocess.run(
                [sys.executable, "-m", "streaming", *argv], capture_output=True, text=True
            )
            elapsed = time.perf_counter() - t0
            if proc.returncode:
                tail = (proc.stderr or proc.stdout).strip().splitlines()
                raise RuntimeError(f"convert exited {proc.returncode}: {tail[-1] if tail else ''}")
        else:
            from streaming import MDSWriter

            t0 = start_clock()
            with open(src) as f, MDSWriter(out=out, columns={"tokens": "ndarray:int32"}) as w:
                for line in f:
                    w.write({"tokens": np.asarray(json.loads(line)["tokens"], np.int32)})
            elapsed = time.perf_counter() - t0
        with open(os.path.join(out, "index.json")) as f:
            samples = sum(s["samples"] for s in json.load(f)["shards"])
    finally:
        shutil.rmtree(os.path.dirname(out), ignore_errors=True)
    return {
        "seconds": elapsed,
        "samples": samples,
        "samples_s": samples / elapsed,
        "input_MB_s": size / elapsed / 1e6,
    }


if __name__ == "__main__":
    main(run)
