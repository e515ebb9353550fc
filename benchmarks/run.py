#!/usr/bin/env python3
"""Side-by-side benchmarks: this project vs the reference (mosaicml-streaming 0.13.0) and peers.

Every measurement runs a small worker script (``benchmarks/cases/<bench>.py``) in the Python of
ONE implementation's venv, as a child process that prints one ``BENCH_RESULT {json}`` line. This
orchestrator uses only the standard library, so it runs under any Python 3.9+.

    python benchmarks/run.py --quick                     # everything, small sizes (~10 min)
    python benchmarks/run.py --bench plan,iterate        # some benchmarks, full sizes
    python benchmarks/run.py --impl reference,project    # some implementations
    python benchmarks/run.py --plan-sizes 1e6,1e7,1e8    # the heavy 1e8 plan is opt-in
    python benchmarks/run.py --quick --repeat 3          # best of 3 per cell (noisy machines)
    python benchmarks/run.py --bench iterate --epoch-repeat 4 --case tokens  # 4x longer epochs

Implementations (override a venv with the env var in brackets):
  project    /work/venv                    [BENCH_PROJECT_VENV]
  reference  /work/refvenv                 [REF_VENV]    made by oracles/make_venv.sh
  neprr      $BENCH_VENVS/neprr            [BENCH_VENVS] made by benchmarks/make_venvs.sh
  litdata    $BENCH_VENVS/litdata
  raw        the project venv's NumPy, no library: the ceiling
Shared datasets are written once, by the reference's MDSWriter, under $BENCH_DATA
(default /work/benchdata); litdata reads its own copy of the same rows (written with
``litdata.optimize``). Results go to benchmarks/results/latest.{md,json}.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import functools
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
RESULTS = HERE / "results"
PREFIX = "BENCH_RESULT "

BENCH_VENVS = Path(os.environ.get("BENCH_VENVS", "/work/benchvenvs"))
VENVS = {
    "reference": Path(os.environ.get("REF_VENV", "/work/refvenv")),
    "project": Path(os.environ.get("BENCH_PROJECT_VENV", "/work/venv")),
    "neprr": BENCH_VENVS / "neprr",
    "litdata": BENCH_VENVS / "litdata",
    "raw": Path(os.environ.get("BENCH_PROJECT_VENV", "/work/venv")),
}
IMPLS = list(VENVS)
PACKAGES = {
    "reference": "mosaicml-streaming",
    "project": "shardstream",
    "neprr": "neprr-streaming",
    "litdata": "litdata",
    "raw": "numpy",
}
BENCHES = ["write", "read", "plan", "iterate", "ttfs", "s3", "convert"]

# Which implementations take part in each benchmark.
APPLIES = {
    "write": ["reference", "project", "neprr", "litdata"],
    "read": ["reference", "project", "neprr", "litdata", "raw"],
    "plan": ["reference", "project", "neprr"],
    "iterate": ["reference", "project", "neprr", "litdata", "raw"],
    "ttfs": ["reference", "project", "neprr", "litdata"],
    "s3": ["reference", "project", "neprr", "litdata"],
    "convert": ["reference", "project", "neprr"],
}
# Headline metric of each benchmark: (key, unit, higher is better).
METRIC = {
    "write": ("MB_s", "MB/s", True),
    "read": ("samples_s", "samples/s", True),
    "plan": ("seconds", "s", False),
    "iterate": ("samples_s", "samples/s", True),
    "ttfs": ("ttfs_s", "s", False),
    "s3": ("MB_s", "MB/s", True),
    "convert": ("input_MB_s", "MB/s of JSONL", True),
}
# Secondary columns shown beside the headline: (key, unit, higher is better).
EXTRA = {
    "write": [("samples_s", "samples/s", True)],
    "plan": [("work_mb", "MB peak above baseline", False)],
    "s3": [("ttfs_s", "s to first sample", False)],
    "iterate": [
        ("ttfs_s", "s to first sample", False),
        ("peak_rss_mb", "peak RSS MB (the process, or its largest DataLoader worker)", False),
    ],
    "convert": [("samples_s", "samples/s", True)],
}

SIZES = {  # quick, full
    "write_tokens": (4096, 65536),  # 2048 x int32 rows: 32 MB, 512 MB
    "write_bytes": (320, 5120),  # 100 KB rows: 32 MB, 512 MB
    "tokens": (4096, 32768),  # read/iterate dataset: 32 MB, 256 MB
    "text": (100_000, 300_000),
    "ttfs": (1_000_000, 10_000_000),
    "s3_tokens": (8192, 61440),  # 64 MB, 500 MB
    "jsonl": (4800, 75000),  # ~64 MB, ~1 GB of JSONL
}
# litdata.optimize writes ~5k small rows/s here; larger litdata copies are not made.
LITDATA_MAX_ROWS = 2_000_000
WORK_PASSES = 8  # per-row CPU work of the "+ work" iterate cases (~10 us per 8 KB pass)
PLAN_SIZES = ((1_000_000, 10_000_000), (1_000_000, 10_000_000))  # 1e8 only via --plan-sizes


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def python_of(impl: str) -> Path:
    return VENVS[impl] / "bin" / "python"


def run_worker(
    impl: str,
    script: str,
    params: dict[str, Any],
    timeout: float,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one worker in ``impl``'s venv; return its result dict (``{"error": ...}`` on failure)."""
    py = python_of(impl)
    if not py.exists():
        return {"error": f"no venv at {VENVS[impl]} (run benchmarks/make_venvs.sh)"}
    cmd = [str(py), str(CASES / script), "--impl", impl, "--params", json.dumps(params)]
    compile_source_of(impl)
    # Each worker gets a cache directory of its own, removed after it: neprr writes every epoch
    # plan it makes under $XDG_CACHE_HOME and never removes them (~45 GB over 31 sessions' runs
    # filled this VM's disk).
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as cache:
        full_env = {**os.environ, **(env or {}), "PYTHONDONTWRITEBYTECODE": "1",
                    "XDG_CACHE_HOME": cache}
        full_env.pop("PYTHONPATH", None)
        try:
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=full_env,
                cwd=os.environ.get("BENCH_TMP", tempfile.gettempdir()),
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timeout after {timeout:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX) :])
    tail = [ln for ln in (proc.stderr + proc.stdout).strip().splitlines() if ln.strip()]
    return {"error": f"exit {proc.returncode}: {tail[-1][:200] if tail else 'no output'}"}


@functools.cache
def compile_source_of(impl: str) -> None:
    """Compile an implementation run from its source tree (the project's editable install)
    once per run, writing its bytecode beside its modules as pip does for an installed
    package (nothing to do for installed packages).

    pip writes every installed module's bytecode at install time, so the reference and the
    peers import compiled modules. An editable checkout has none (and workers never write any),
    so each worker would compile every module it imports from source, those imported lazily
    inside the timings included (~10 ms of a 32,768-row epoch here). A ``PYTHONPYCACHEPREFIX``
    is no substitute: Python then looks for every module's bytecode there only, so the
    standard library's and torch's modules imported inside the timings (the DataLoader's
    ``multiprocessing`` queues and ``popen_fork``, torch's profiler hooks) were compiled from
    source in each project worker (~10 ms of time to first batch with 2 workers).
    """
    if impl not in ("project", "raw"):
        return
    py = python_of(impl)
    if not py.exists():
        return
    code = "import os, streaming; print(os.path.dirname(streaming.__file__))"
    try:
        package = subprocess.run([str(py), "-c", code], capture_output=True, text=True,
                                 check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
                                 ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return
    if "site-packages" in package:  # installed: it has its bytecode already
        return
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    subprocess.run([str(py), "-m", "compileall", "-q", package], capture_output=True,
                   env=env, check=False)


def version_of(impl: str) -> str:
    py = python_of(impl)
    if not py.exists():
        return "missing"
    code = (
        f"import importlib.metadata as m, sys; "
        f"print(m.version({PACKAGES[impl]!r}), sys.version.split()[0])"
    )
    try:
        out = subprocess.run([str(py), "-c", code], capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or "unknown"
    except subprocess.TimeoutExpired:
        return "unknown"


class Data:
    """Shared datasets, written once and reused across runs (idempotent)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def mds(self, kind: str, samples: int, **extra: Any) -> str:
        out = self.root / f"mds-{kind}-{samples}"
        self._prepare("reference", dict(kind=kind, samples=samples, out=str(out), **extra))
        return str(out)

    def litdata(self, kind: str, samples: int) -> str:
        out = self.root / f"litdata-{kind}-{samples}"
        self._prepare("litdata", dict(kind=kind, samples=samples, out=str(out)))
        return str(out)

    def jsonl(self, samples: int) -> str:
        out = self.root / f"jsonl-tokens-{samples}"
        self._prepare("reference", dict(kind="jsonl", samples=samples, out=str(out)))
        return str(out / "tokens.jsonl")

    def _prepare(self, impl: str, params: dict[str, Any]) -> None:
        marker = Path(params["out"]) / ".complete"
        if marker.exists():
            return
        log(f"preparing {params['out']} with {impl}")
        res = run_worker(impl, "prepare.py", params, timeout=7200)
        if "error" in res:
            raise RuntimeError(f"preparing {params['out']}: {res['error']}")


def warm(path: str) -> None:
    """Put a dataset's files in the page cache the same way before every implementation's run:
    dropped from it first (where the OS allows), then read once.

    A file's pages stay in the page cache in the folios they came in with: huge (2 MB) ones
    after a big write, smaller ones after reads or after part of the file was reclaimed and read
    again. Mapped readers pay per page table entry, so that history moved the same epoch over
    token rows by 12-20% here (session 26: 0 workers, 70 vs 56 ms an epoch). Dropping and
    reading gives every run the same folios (on that VM, 22 MB of each 64 MB shard in huge
    ones, every time).
    """
    p = Path(path)
    for f in [p] if p.is_file() else sorted(p.rglob("*")):
        if f.is_file():
            with open(f, "rb") as fh:
                if hasattr(os, "posix_fadvise"):
                    os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                while fh.read(1 << 24):
                    pass


class Moto:
    """A moto S3 server on 127.0.0.1 (from the project venv), stopped by :meth:`stop`."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.uploaded: set[str] = set()
        self.proc = subprocess.Popen(
            [
                str(python_of("project")),
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(self.url, timeout=1)
                return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("moto server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def plan_cases(args: argparse.Namespace, data: Data) -> list[tuple[str, str, dict[str, Any]]]:
    """Return (bench, case label, params) for every selected case; prepares datasets lazily."""
    q = 0 if args.quick else 1
    cases: list[tuple[str, str, dict[str, Any]]] = []
    sel = args.bench
    if "write" in sel:
        for kind, key in (("tokens", "write_tokens"), ("bytes", "write_bytes")):
            n = SIZES[key][q]
            label = f"{kind} ({n} rows, {'2048 x int32' if kind == 'tokens' else '100 KB bytes'})"
            cases.append(("write", label, {"kind": kind, "samples": n}))
    for bench in ("read", "iterate"):
        if bench not in sel:
            continue
        for kind in ("tokens", "text"):
            n = SIZES[kind][q]
            params = {"kind": kind, "samples": n, "_lazy": True}
            if bench == "read":
                cases.append(("read", f"{kind} ({n} rows), by index", params))
                continue
            rep = args.epoch_repeat
            size = f"{n} x {rep}" if rep > 1 else f"{n}"
            for mode in ("direct", "dl0", "dl2"):
                for shuffle in (False, True):
                    label = f"{kind} ({size}), {mode}, {'shuffled' if shuffle else 'in order'}"
                    extra = {"repeat": rep} if rep > 1 else {}
                    cases.append(
                        ("iterate", label, {**params, "mode": mode, "shuffle": shuffle, **extra})
                    )
            if rep > 1:  # longer fresh epochs only: the cases below measure other things
                continue
            # A long run's steady state: no workers' start. Token rows also at the 6th epoch
            # (what lasts across epochs shows there: a ring that leaked slots every epoch was
            # full by the fifth); text rows would take the reference ~6 minutes a run.
            for epochs in (2, 6) if kind == "tokens" else (2,):
                nth = {2: "2nd", 6: "6th"}[epochs]
                for mode in ("dl0", "dl2"):
                    label = f"{kind} ({n}), {mode}, in order, {nth} epoch (persistent workers)"
                    cases.append(("iterate", label, {**params, "mode": mode, "shuffle": False,
                                                     "epochs": epochs}))
            if kind == "tokens":  # rows that cost CPU (a transform): where workers can help
                for mode in ("dl0", "dl2"):
                    label = f"{kind} ({n}), {mode}, in order, + {WORK_PASSES} SHA-256 passes/row"
                    cases.append(("iterate", label, {**params, "mode": mode, "shuffle": False,
                                                     "work": WORK_PASSES}))
    if "ttfs" in sel:
        n = SIZES["ttfs"][q]
        cases.append(
            (
                "ttfs",
                f"text ({n:.0e} rows), shuffled, direct",
                {
                    "kind": "text",
                    "samples": n,
                    "mode": "direct",
                    "shuffle": True,
                    "ttfs_only": True,
                    "_lazy": True,
                },
            )
        )
    if "plan" in sel:
        sizes = args.plan_sizes or PLAN_SIZES[q]
        for n in sizes:
            for nc in (8, 64):
                for algo in ("py1e", "py1s", "py1br", "py2s", "naive"):
                    cases.append(
                        (
                            "plan",
                            f"{n:.0e} samples, nc={nc}, {algo}",
                            {"samples": n, "nc": nc, "algo": algo},
                        )
                    )
    if "s3" in sel:
        n = args.s3_samples or SIZES["s3_tokens"][q]
        cases.append(
            (
                "s3",
                f"tokens ({n} rows, {n * 8192 / 1e6:.0f} MB), cold, in order",
                {"kind": "tokens", "samples": n, "_lazy": True},
            )
        )
    if "convert" in sel:
        n = args.jsonl_samples or SIZES["jsonl"][q]
        cases.append(
            (
                "convert",
                f"JSONL of 2048-token lists ({n} lines)",
                {
                    "samples": n,
                    "_lazy": True,
                    "cli": [
                        "convert",
                        "{src}",
                        "-o",
                        "{out}",
                        "--columns",
                        "tokens:ndarray:int32",
                        "--no-progress",
                    ],
                },
            )
        )
    return cases


def resolve(
    bench: str, params: dict[str, Any], impl: str, data: Data, moto: Moto | None
) -> dict[str, Any]:
    """Fill in dataset paths (writing datasets on first use) for one case and implementation."""
    params = {k: v for k, v in params.items() if k != "_lazy"}
    if bench in ("read", "iterate", "ttfs"):
        kind, n = params["kind"], params["samples"]
        if impl == "litdata":
            if n > LITDATA_MAX_ROWS:
                raise RuntimeError(
                    f"skipped: writing {n} rows with litdata.optimize takes too long here"
                )
            params["litdata"] = data.litdata(kind, n)
        else:
            params["data"] = data.mds(kind, n)
    elif bench == "s3":
        assert moto is not None
        n = params["samples"]
        params["endpoint"] = moto.url
        params["remote"] = f"s3://bench/mds-tokens-{n}"
        params["litdata_remote"] = f"s3://bench/litdata-tokens-{n}"
        key = "litdata" if impl == "litdata" else "mds"
        if key not in moto.uploaded:
            src = data.litdata("tokens", n) if impl == "litdata" else data.mds("tokens", n)
            prefix = params["litdata_remote" if impl == "litdata" else "remote"][
                len("s3://bench/") :
            ]
            res = run_worker(
                "reference",
                "s3_upload.py",
                {"src": src, "bucket": "bench", "prefix": prefix, "endpoint": moto.url},
                timeout=3600,
            )
            if "error" in res:
                raise RuntimeError(f"upload to moto: {res['error']}")
            moto.uploaded.add(key)
    elif bench == "convert":
        params["src"] = data.jsonl(params.pop("samples"))
    return params


def fmt(value: float) -> str:
    if value != value:  # NaN
        return "nan"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def cell(
    res: dict[str, Any] | None,
    ref: dict[str, Any] | None,
    key: str,
    higher: bool,
    ratio: bool = True,
) -> str:
    if res is None:
        return "n/a"
    if "error" in res:
        return "error: " + res["error"].replace("|", "/")[:90]
    if key not in res:
        return "-"
    text = fmt(res[key])
    if ratio and ref and "error" not in ref and ref.get(key):
        r = res[key] / ref[key] if higher else ref[key] / res[key] if res[key] else float("inf")
        text += f" ({r:.1f}x)"
    if "expected" in res and res.get("samples") != res["expected"]:
        text += f" [yielded {res.get('samples')} of {res['expected']} samples]"
    return text


def markdown(records: list[dict[str, Any]], impls: list[str], header: dict[str, Any]) -> str:
    lines = ["# Benchmark results", ""]
    lines.append(f"Run {header['date']} on {header['machine']}; mode: {header['mode']}.")
    lines.append("Versions: " + ", ".join(f"{k} {v}" for k, v in header["versions"].items()) + ".")
    lines.append("")
    lines.append(
        "Each cell: absolute figure (ratio vs the reference; >1x means better than the "
        "reference, for times and memory too). `raw` is the NumPy ceiling over the same "
        "shard bytes. litdata reads its own format (same rows, written by "
        "`litdata.optimize`). n/a: the implementation has no equivalent."
    )
    by_bench: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        by_bench.setdefault(rec["bench"], []).append(rec)
    for bench in BENCHES:
        if bench not in by_bench:
            continue
        key, unit, higher = METRIC[bench]
        cols = [i for i in impls if i in APPLIES[bench]]
        lines += ["", f"## {bench}: {unit} ({'higher' if higher else 'lower'} is better)", ""]
        lines.append("| case | " + " | ".join(cols) + " |")
        lines.append("|---" * (len(cols) + 1) + "|")
        for rec in by_bench[bench]:
            ref = rec["results"].get("reference")
            row = [cell(rec["results"].get(i), ref, key, higher) for i in cols]
            if bench == "plan":
                refsum = (ref or {}).get("head_checksum")
                for j, i in enumerate(cols):
                    got = rec["results"].get(i) or {}
                    if refsum is not None and got.get("head_checksum") not in (None, refsum):
                        row[j] += " **order differs from reference**"
            lines.append(f"| {rec['case']} | " + " | ".join(row) + " |")
        for ekey, eunit, ehigher in EXTRA.get(bench, []):
            lines += ["", f"{bench}, {eunit}:", ""]
            lines.append("| case | " + " | ".join(cols) + " |")
            lines.append("|---" * (len(cols) + 1) + "|")
            for rec in by_bench[bench]:
                ref = rec["results"].get("reference")
                row = [cell(rec["results"].get(i), ref, ekey, ehigher) for i in cols]
                lines.append(f"| {rec['case']} | " + " | ".join(row) + " |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument(
        "--bench", default=",".join(BENCHES), help=f"comma-separated subset of {','.join(BENCHES)}"
    )
    parser.add_argument(
        "--impl", default=",".join(IMPLS), help=f"comma-separated subset of {','.join(IMPLS)}"
    )
    parser.add_argument(
        "--plan-sizes",
        type=lambda s: [int(float(x)) for x in s.split(",")],
        help="plan sizes, e.g. 1e6,1e7,1e8 (default 1e6,1e7)",
    )
    parser.add_argument("--s3-samples", type=int, help="rows of the S3 dataset (8 KB each)")
    parser.add_argument(
        "--jsonl-samples", type=int, help="lines of the convert JSONL (~14 KB each)"
    )
    parser.add_argument(
        "--epoch-repeat",
        type=int,
        default=1,
        metavar="N",
        help="iterate: each fresh epoch reads its dataset N times (a Stream with repeat=N), to "
        "see fresh workers' start weigh less; only the fresh-epoch cases run (default 1)",
    )
    parser.add_argument("--case", default="", help="only cases whose label contains this")
    parser.add_argument(
        "--data",
        default=os.environ.get("BENCH_DATA", "/work/benchdata"),
        help="where shared datasets are written (default /work/benchdata)",
    )
    parser.add_argument(
        "--out",
        default=str(RESULTS / "latest"),
        help="results path without extension (default benchmarks/results/latest)",
    )
    parser.add_argument("--timeout", type=float, help="seconds per worker run")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each measurement N times and keep the best, with every run's figure (default 1)",
    )
    parser.add_argument("--render", metavar="JSON", help="only re-render a saved results JSON")
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        print(markdown(saved["records"], list(saved["header"]["versions"]), saved["header"]))
        return 0
    if args.epoch_repeat < 1:
        parser.error(f"--epoch-repeat must be at least 1, not {args.epoch_repeat}")
    args.bench = [b for b in args.bench.split(",") if b]
    impls = [i for i in args.impl.split(",") if i]
    for name in args.bench:
        if name not in BENCHES:
            parser.error(f"unknown benchmark {name!r}")
    for name in impls:
        if name not in VENVS:
            parser.error(f"unknown implementation {name!r}")
    timeout = args.timeout or (900 if args.quick else 3600)

    tmp = Path(tempfile.mkdtemp(prefix="shardstream-bench-"))
    os.environ["BENCH_TMP"] = str(tmp)
    data = Data(Path(args.data))
    cases = [c for c in plan_cases(args, data) if args.case in c[1]]
    moto = None
    header = {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "mode": "quick" if args.quick else "full",
        "versions": {i: version_of(i) for i in impls},
    }
    records: list[dict[str, Any]] = []
    try:
        if any(b == "s3" for b, _, _ in cases):
            moto = Moto()
            log(f"moto S3 server at {moto.url}")
        for bench, label, params in cases:
            rec = {"bench": bench, "case": label, "params": params, "results": {}}
            for impl in impls:
                if impl not in APPLIES[bench]:
                    continue
                if impl == "raw" and bench == "iterate" and params.get("mode") != "direct":
                    continue
                try:
                    p = resolve(bench, params, impl, data, moto)
                except Exception as err:  # noqa: BLE001 - a failed dataset is one cell's error
                    rec["results"][impl] = {"error": f"setup: {err}"[:300]}
                    continue
                for path in (p.get("data"), p.get("litdata"), p.get("src")):
                    if path:
                        warm(path)
                script = {"ttfs": "iterate.py"}.get(bench, f"{bench}.py")
                key, _, higher = METRIC[bench]
                measure = functools.partial(run_worker, impl, script, p, timeout)
                res = best_of(args.repeat, key, higher, measure)
                rec["results"][impl] = res
                shown = res.get("error") or fmt(res.get(key, float("nan")))
                log(f"{bench} | {label} | {impl}: {shown}")
            records.append(rec)
            # Write as we go so a long run leaves usable partial results.
            write_results(records, impls, header, Path(args.out))
    finally:
        if moto is not None:
            moto.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    text = write_results(records, impls, header, Path(args.out))
    print(text)
    return 0


def best_of(n: int, key: str, higher: bool, measure: Any) -> dict[str, Any]:
    """Run ``measure`` up to ``n`` times; keep the best headline figure (stop at an error).

    The kept result also lists every run's headline figure, in order, under ``runs``: the
    best alone hides how far this machine's runs spread.
    """
    best: dict[str, Any] | None = None
    runs: list[float] = []
    for _ in range(max(n, 1)):
        res = measure()
        if "error" in res:
            if best is None:
                return res
            break
        runs.append(res[key])
        if best is None or (res[key] > best[key]) == higher:
            best = res
    assert best is not None
    return {**best, "runs": runs}


def write_results(
    records: list[dict[str, Any]], impls: list[str], header: dict[str, Any], out: Path
) -> str:
    out.parent.mkdir(parents=True, exist_ok=True)
    text = markdown(records, impls, header)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(
        json.dumps({"header": header, "records": records}, indent=1, default=float)
    )
    return text


if __name__ == "__main__":
    sys.exit(main())
