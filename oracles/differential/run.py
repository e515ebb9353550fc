"""Differential runner: random StreamingDataset configurations, reference vs this project.

Each configuration (a "spec", see ``gen.py``) runs twice, once under the reference's interpreter
(mosaicml-streaming 0.13.0, ``$REF_VENV/bin/python``, default ``/work/refvenv`` as made by
``oracles/make_venv.sh``) and once under the project's (``$BENCH_PROJECT_VENV/bin/python``, by
default the interpreter running this file), each in its own process (``side.py``). Then every
rank's ``len``/``size``/``epoch_size``, stream weights, iteration order per epoch, state dicts
and resumed orders must be equal, or both sides must raise the same exception at the same stage.

    python oracles/differential/run.py --n 200 --seed 4           # random batch c4_0 .. c4_199
    python oracles/differential/run.py --n 50 --seed 4 --start 200 --budget 1800
    python oracles/differential/run.py --spec oracles/differential/specs/min_py3x.json --show
    python oracles/differential/run.py --coverage                   # what the results covered

Random batches print one line per configuration and exit with status 1 if any diverged (so does
``--spec``). Everything goes under ``--work`` (default ``<tempdir>/shardstream-differential``):
``data/`` (datasets, written once by the reference's ``MDSWriter`` and shared by specs),
``runs/<name>/<side>/`` (a spec's work, kept only on divergence or with ``--keep``) and
``results/`` (``<name>.json`` records and ``log_seed<S>.txt``).

This orchestrator only uses the standard library; it never imports ``streaming``.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gen import gen

HERE = Path(__file__).resolve().parent
SIDE = HERE / "side.py"
# A whole side of one spec; each of its phases also has its own per-node timeout (side.py).
SIDE_TIMEOUT = 400


@dataclass
class Runner:
    """Where the two interpreters and the work directory are, and how to compare."""

    ref_python: Path
    proj_python: Path
    work: Path
    keep: bool = False
    rerun: bool = True
    strict_messages: bool = False

    @property
    def data(self) -> Path:
        return self.work / "data"

    @property
    def runs(self) -> Path:
        return self.work / "runs"

    @property
    def results(self) -> Path:
        return self.work / "results"


def reference_python() -> Path:
    """The reference's interpreter: ``$REF_VENV/bin/python`` (as ``oracles/make_venv.sh``)."""
    return Path(os.environ.get("REF_VENV", "/work/refvenv")) / "bin" / "python"


def project_python() -> Path:
    """The project's interpreter: ``$BENCH_PROJECT_VENV/bin/python``, else this one."""
    venv = os.environ.get("BENCH_PROJECT_VENV")
    return Path(venv) / "bin" / "python" if venv else Path(sys.executable)


def _side_command(runner: Runner, side: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a side's process.

    The reference runs isolated (``-I``: no ``PYTHONPATH``, no user site, not even the script's
    directory on ``sys.path``) and from its work directory, so that it can only import the
    ``streaming`` installed in its venv, never this checkout's; ``side.py`` checks that too. The
    project side keeps the caller's environment: its ``streaming`` is whatever its interpreter
    imports (the checkout, for an editable install), and each record names it (``impl``).
    """
    env = dict(os.environ)
    if side.startswith("ref"):
        env.pop("PYTHONPATH", None)
        return [str(runner.ref_python), "-I", str(SIDE), *args], env
    return [str(runner.proj_python), str(SIDE), *args], env


def data_dir(runner: Runner, params: dict) -> Path:
    """A dataset's directory, named by its parameters so that specs share it."""
    key = hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:12]
    return runner.data / key


def ensure_data(runner: Runner, spec: dict) -> list[str]:
    """Write the spec's datasets that are missing (with the reference); return their paths."""
    dirs = [data_dir(runner, p) for p in spec["datasets"]]
    todo = [[str(d), p] for d, p in zip(dirs, spec["datasets"]) if not d.exists()]
    if todo:
        runner.data.mkdir(parents=True, exist_ok=True)
        cmd, env = _side_command(runner, "ref", "write", json.dumps(todo))
        proc = subprocess.run(cmd, cwd=runner.data, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"writing datasets failed: {proc.stderr.strip()[-2000:]}")
    return [str(d) for d in dirs]


def run_side(runner: Runner, side: str, spec: dict) -> dict:
    """Run a spec on one side (``ref``, ``proj``, or a re-run ``ref2``/``proj2``).

    Returns:
        The side's output (``impl``, ``main``, ``resume``, ...) plus ``secs``; or ``crash`` (the
        tail of its stderr) and ``rc`` if the side died without writing one.
    """
    work = runner.runs / spec["name"] / side
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spec_path, out = work / "spec.json", work / "out.json"
    spec_path.write_text(json.dumps(spec))
    cmd, env = _side_command(runner, side, "run", str(spec_path), str(out), str(work))
    if side.startswith("ref"):
        cmd.append("--reference")
    t = time.time()
    with open(work / "stderr.txt", "w") as ef:
        try:
            rc: int | str = subprocess.run(cmd, cwd=work, env=env, stdout=ef, stderr=ef,
                                           timeout=SIDE_TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    secs = time.time() - t
    if not out.exists():
        return {"crash": (work / "stderr.txt").read_text()[-3000:], "rc": rc, "secs": secs}
    res = json.loads(out.read_text())
    res["secs"] = secs
    return res


def _first_diff(a: Any, b: Any) -> dict | None:
    """Where two id lists first differ, with a few ids of each from there."""
    if not isinstance(a, list) or not isinstance(b, list):
        return None
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    if n == len(a) == len(b):
        return None
    return {"index": n, "ref": a[n:n + 8], "proj": b[n:n + 8], "ref_len": len(a),
            "proj_len": len(b)}


def _same_exception(ref_err: dict, proj_err: dict) -> bool:
    """Whether the project raised what the reference raised, for a caller.

    That is: at the same stage, and an instance of the reference's exception type (by name,
    along the project's MRO). A subclass is the same for any ``except`` written against the
    reference: e.g. an unknown ``shuffle_algo`` raises ``KeyError`` from the reference's table
    and the project's ``UnknownAlgorithmError``, a ``KeyError`` and a ``ValueError``.
    """
    mro = proj_err.get("mro") or [proj_err["type"]]
    return ref_err["stage"] == proj_err["stage"] and ref_err["type"] in mro


def compare_rank(phase: str, r: dict, p: dict, strict_messages: bool = False) -> list[dict]:
    """Compare one rank's records.

    Exception messages are not compared by default: they are not API, and the project words
    some on purpose (e.g. per-stream batching of a stream left without samples names the stream
    where the reference fails inside NumPy). With ``strict_messages``, messages of the same
    exception must also be alike (``difflib`` ratio >= 0.5), as the first version did.

    Args:
        phase: ``main`` or ``resume``, for the report.
        r: The reference's record of the rank.
        p: The project's record of the rank.
        strict_messages: Also compare the messages of matching exceptions.

    Returns:
        One dict per difference, with its ``field`` and both sides' values (empty: agreement).
    """
    out = []
    rank = r.get("rank")
    re_, pe = r.get("error"), p.get("error")
    if re_ or pe:
        if not re_ or not pe:
            out.append({"phase": phase, "rank": rank, "field": "error",
                        "ref": re_ and {k: re_[k] for k in ("stage", "type", "msg")},
                        "proj": pe and {k: pe[k] for k in ("stage", "type", "msg")},
                        "proj_tb": pe and pe.get("tb")})
        elif not _same_exception(re_, pe):
            out.append({"phase": phase, "rank": rank, "field": "error_type",
                        "ref": [re_["stage"], re_["type"], re_["msg"]],
                        "proj": [pe["stage"], pe["type"], pe["msg"]]})
        elif strict_messages:
            ratio = difflib.SequenceMatcher(None, re_["msg"], pe["msg"]).ratio()
            if ratio < 0.5:
                out.append({"phase": phase, "rank": rank, "field": "error_msg",
                            "ratio": round(ratio, 2), "ref": re_["msg"], "proj": pe["msg"]})
    for k in ("len", "size", "epoch_size", "state_dict", "end_state_dict", "streams_w",
              "ncn_after"):
        if r.get(k) != p.get(k):
            out.append({"phase": phase, "rank": rank, "field": k, "ref": r.get(k),
                        "proj": p.get(k)})
    ro, po = r.get("orders"), p.get("orders")
    if ro != po:
        if ro is None or po is None:
            out.append({"phase": phase, "rank": rank, "field": "orders",
                        "ref": ro is not None, "proj": po is not None})
        else:
            # Report the first epoch that differs only: later ones usually follow from it.
            for ep in range(max(len(ro), len(po))):
                a = ro[ep] if ep < len(ro) else None
                b = po[ep] if ep < len(po) else None
                if a != b:
                    d = _first_diff(a, b)
                    out.append({"phase": phase, "rank": rank, "field": f"order_ep{ep}",
                                "diff": d or {"ref": a is not None, "proj": b is not None}})
                    break
    return out


def _raised(rec: dict) -> bool:
    """Whether a rank raised by itself (not a timeout, not a failure of the harness)."""
    e = rec.get("error")
    return e is not None and e["type"] != "TIMEOUT" and e["stage"] != "harness"


def compare(ref: dict, proj: dict, strict_messages: bool = False) -> list[dict]:
    """Compare two sides' outputs of one spec, rank by rank, phase by phase.

    Args:
        ref: The reference's output (``run_side``).
        proj: The project's output.
        strict_messages: Also compare exception messages (see ``compare_rank``).

    Returns:
        The differences (empty: the sides agree).
    """
    if "crash" in ref or "crash" in proj:
        return [{"field": "crash", "ref": ref.get("crash"), "proj": proj.get("crash")}]
    diffs = []
    for phase in ("main", "resume"):
        a, b = ref.get(phase), proj.get(phase)
        if isinstance(a, list) and isinstance(b, list):
            a_raised = any(_raised(x) for x in a)
            b_raised = any(_raised(x) for x in b)
            for r, p in zip(a, b):
                # When one rank of a node raises, the reference's other ranks hang at a barrier
                # (timed out by side.py) or lose their gloo peers (a "harness" error). Such a
                # knocked-out rank is the same outcome as raising: it matches any error.
                r_knocked = "error" in r and not _raised(r) and a_raised
                p_knocked = "error" in p and not _raised(p) and b_raised
                if (r_knocked and "error" in p) or (p_knocked and "error" in r):
                    continue
                diffs += compare_rank(phase, r, p, strict_messages)
        elif a != b:
            diffs.append({"phase": phase, "field": "phase", "ref": str(a)[:200],
                          "proj": str(b)[:200]})
    return diffs


def _fields(diffs: list[dict]) -> list[str]:
    return sorted({d["field"] for d in diffs})


def run_spec(runner: Runner, spec: dict) -> tuple[dict, dict, list[dict]]:
    """Run a spec on both sides, one after the other, and compare.

    On a divergence both sides run again (unless ``runner.rerun`` is off): the reference has
    races of its own (e.g. end-of-epoch state dicts), so each difference is annotated with
    whether it came back and which fields each side changed between its two runs.

    Returns:
        The reference's output, the project's, and the differences.
    """
    spec = dict(spec)
    spec["data_dirs"] = ensure_data(runner, spec)
    ref = run_side(runner, "ref", spec)
    proj = run_side(runner, "proj", spec)
    ref_impl, proj_impl = ref.get("impl"), proj.get("impl")
    if ref_impl and proj_impl and ref_impl["path"] == proj_impl["path"]:
        raise SystemExit(f"both sides imported streaming from {ref_impl['path']}: set "
                         "BENCH_PROJECT_VENV or run me with the project's Python")
    diffs = compare(ref, proj, runner.strict_messages)
    if diffs and runner.rerun:
        ref2 = run_side(runner, "ref2", spec)
        proj2 = run_side(runner, "proj2", spec)
        again = _fields(compare(ref2, proj2, runner.strict_messages))
        for d in diffs:
            d["rerun"] = {"stable": again == _fields(diffs), "rerun_fields": again,
                          "ref_nondeterministic": _fields(compare(ref, ref2)),
                          "proj_nondeterministic": _fields(compare(proj, proj2))}
    if not diffs and not runner.keep:
        shutil.rmtree(runner.runs / spec["name"], ignore_errors=True)
    return ref, proj, diffs


def summary(res: dict) -> str:
    """One side's outcome in brief, on one line: its errors, or rank 0's len and epoch lengths."""
    if not res:
        return "-"
    if "crash" in res:
        return "CRASH"
    main = res.get("main") or []
    errs = {e["error"]["type"] + "(" + e["error"]["stage"] + ":" + e["error"]["msg"][:60] + ")"
            for e in main if "error" in e}
    if errs:
        return " ".join(("ERR:" + ",".join(sorted(errs))).split())
    return f"len={main[0].get('len')} ep={[len(o) for o in main[0].get('orders', [])]}"


def run_one(runner: Runner, path: str, show: bool) -> int:
    """``--spec``: run one spec file, print the differences; 1 if any."""
    spec = json.loads(Path(path).read_text())
    spec.setdefault("name", Path(path).stem)
    ref, proj, diffs = run_spec(runner, spec)
    if show:
        print(json.dumps({"ref": ref, "proj": proj})[:20000])
    if diffs:
        print(json.dumps(diffs, indent=1)[:20000])
    for side, res in (("ref", ref), ("proj", proj)):
        impl = res.get("impl") or {}
        print(f"{side:4} {res.get('secs', 0):5.1f}s streaming {impl.get('version')} "
              f"({impl.get('path')}): {summary(res)}")
    print(f"{spec['name']}: {'DIVERGENT ' + ','.join(_fields(diffs)) if diffs else 'SAME'}")
    return 1 if diffs else 0


def run_batch(runner: Runner, n: int, seed: int, start: int, budget: float) -> int:
    """Run random specs ``c<seed>_<start>`` onwards; one line each; 1 if any diverged."""
    runner.results.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    done = divergent = 0
    with open(runner.results / f"log_seed{seed}.txt", "a") as log:
        for i in range(start, start + n):
            if time.time() - t0 > budget:
                print(f"budget of {budget:.0f} s spent", flush=True)
                break
            spec = gen(random.Random(seed * 1000003 + i), f"c{seed}_{i}")
            t = time.time()
            try:
                ref, proj, diffs = run_spec(runner, spec)
            except Exception as e:  # a failure of the harness: record it, go on
                ref, proj, diffs = {}, {}, [{"field": "harness", "msg": repr(e)}]
            rec = {"spec": spec, "diffs": diffs, "ref_summary": summary(ref),
                   "proj_summary": summary(proj), "secs": time.time() - t}
            (runner.results / f"{spec['name']}.json").write_text(json.dumps(rec))
            fields = _fields(diffs)
            if diffs and "rerun" in diffs[0]:
                rr = diffs[0]["rerun"]
                fields.append("[stable]" if rr["stable"] else
                              f"[FLAKY ref_nd={rr['ref_nondeterministic']} "
                              f"proj_nd={rr['proj_nondeterministic']}]")
            line = (f"{spec['name']} {time.time() - t:5.1f}s ref[{summary(ref)}] "
                    f"{'DIFF ' + ','.join(fields) if diffs else 'ok'}")
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()
            done += 1
            divergent += bool(diffs)
    print(f"{done} configurations: {done - divergent} agree, {divergent} diverge "
          f"(records in {runner.results})")
    return 1 if divergent else 0


def coverage(runner: Runner) -> int:
    """``--coverage``: count which settings the recorded configurations exercised.

    Only configurations that got to iterate on the reference count per setting; the others are
    counted by their error (first 70 characters of the reference's summary).
    """
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    n = ok = 0
    for f in sorted(runner.results.glob("c*.json")):
        rec = json.loads(f.read_text())
        s = rec["spec"]
        n += 1
        if rec["ref_summary"].startswith(("ERR", "CRASH")):
            counts["_errors"][rec["ref_summary"][:70]] += 1
            continue
        ok += 1
        kw = s["kwargs"]
        rs, ck = s.get("resume"), s["main"].get("checkpoint")
        for key, value in {
            "nstreams": len(s["streams"]),
            "shuffle": kw.get("shuffle", False),
            "algo(shuffled)": kw.get("shuffle_algo", "py1e") if kw.get("shuffle") else "-",
            "batching": kw.get("batching_method", "random"),
            "partition": kw.get("partition_algo", "relaxed"),
            "sampling(method,granular)": (kw.get("sampling_method", "balanced"),
                                          kw.get("sampling_granularity", 1) > 1),
            "ncn": kw.get("num_canonical_nodes"),
            "repl": kw.get("replication"),
            "world(ranks,lws)": tuple(s["main"]["world"].values()),
            "workers": s["main"]["num_workers"],
            "epoch_size": type(kw.get("epoch_size")).__name__,
            "weights": tuple(sorted({k for st in s["streams"]
                                     for k in ("proportion", "repeat", "choose") if k in st})),
            "remote": tuple(st["remote"] for st in s["streams"]),
            "compression": tuple(d["compression"] for d in s["datasets"]),
            "batch_size": kw.get("batch_size"),
            "shuffle_block_size": kw.get("shuffle_block_size"),
            "resume": ("ck" if ck else "-", "resume" if rs else "-",
                       "diffworld" if rs and rs["world"] != s["main"]["world"] else ""),
        }.items():
            counts[key][value] += 1
    print(f"{n} configurations in {runner.results}, {ok} iterated on the reference")
    for key in sorted(counts):
        print(key, dict(counts[key].most_common()))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run; return the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10, help="random configurations to run")
    ap.add_argument("--seed", type=int, default=1, help="names the batch: configs c<seed>_<i>")
    ap.add_argument("--start", type=int, default=0, help="first index i")
    ap.add_argument("--budget", type=float, default=float("inf"),
                    help="start no configuration after this many seconds")
    ap.add_argument("--spec", help="run this one spec (JSON) instead of a random batch")
    ap.add_argument("--show", action="store_true", help="with --spec: print both outputs")
    ap.add_argument("--coverage", action="store_true",
                    help="summarise the settings the recorded results covered, run nothing")
    ap.add_argument("--work", type=Path,
                    default=Path(tempfile.gettempdir()) / "shardstream-differential",
                    help="data, runs and results go here (default: %(default)s)")
    ap.add_argument("--keep", action="store_true", help="keep the work of agreeing specs too")
    ap.add_argument("--no-rerun", action="store_true",
                    help="do not run both sides again on a divergence")
    ap.add_argument("--strict-messages", action="store_true",
                    help="matching exceptions must also have alike messages")
    a = ap.parse_args(argv)
    runner = Runner(ref_python=reference_python(), proj_python=project_python(),
                    work=a.work.resolve(), keep=a.keep, rerun=not a.no_rerun,
                    strict_messages=a.strict_messages)
    if a.coverage:
        return coverage(runner)
    for name, py in (("reference", runner.ref_python), ("project", runner.proj_python)):
        if not py.exists():
            raise SystemExit(f"no {name} interpreter at {py} (see REF_VENV / BENCH_PROJECT_VENV)")
    if a.spec:
        return run_one(runner, a.spec, a.show)
    return run_batch(runner, a.n, a.seed, a.start, a.budget)


if __name__ == "__main__":
    sys.exit(main())
