"""The benchmark runner: best-of-N keeps the best figure and every run's, in order; longer epochs
(``--epoch-repeat``) make the fresh-epoch iterate cases read their dataset N times."""

from __future__ import annotations

import argparse
import pathlib
import runpy
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

# benchmarks/ is scripts, not a package: take the function from the runner's namespace.
_BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
_RUNNER = runpy.run_path(str(_BENCH / "run.py"))
best_of = _RUNNER["best_of"]
run_worker = _RUNNER["run_worker"]


def _measures(results):
    it = iter(results)
    return lambda: next(it)


@given(st.lists(st.floats(0.001, 1e6, allow_nan=False), min_size=1, max_size=6), st.booleans())
def test_best_of_keeps_the_best_and_every_run(values, higher):
    results = [{"x": v, "i": i} for i, v in enumerate(values)]
    got = best_of(len(values), "x", higher, _measures(results))
    assert got["runs"] == values
    assert got["x"] == (max(values) if higher else min(values))
    # The kept result is that run's whole record (its other figures come with it).
    assert values[got["i"]] == got["x"]


def test_best_of_stops_at_an_error():
    first = best_of(3, "x", True, _measures([{"error": "boom"}]))
    assert first == {"error": "boom"}
    later = best_of(3, "x", True, _measures([{"x": 2.0}, {"error": "boom"}]))
    assert later == {"x": 2.0, "runs": [2.0]}


@pytest.mark.parametrize("n", [0, 1])
def test_best_of_runs_at_least_once(n):
    assert best_of(n, "x", False, _measures([{"x": 5.0}])) == {"x": 5.0, "runs": [5.0]}


def _iterate_cases(**args):
    ns = argparse.Namespace(quick=True, bench=["iterate"], **args)
    return [(label, params) for _, label, params in _RUNNER["plan_cases"](ns, None)]


def test_epoch_repeat_makes_only_the_fresh_epoch_cases_longer():
    plain = _iterate_cases(epoch_repeat=1)
    assert all("repeat" not in params for _, params in plain)
    assert any("persistent workers" in label for label, _ in plain)
    longer = _iterate_cases(epoch_repeat=3)
    fresh = [(label, params) for label, params in plain if "epoch" not in label and "+" not in label]
    assert len(longer) == len(fresh) == 12
    for (label, params), (label3, params3) in zip(fresh, longer):
        n = params["samples"]
        assert label3 == label.replace(f"({n})", f"({n} x 3)")
        assert params3 == {**params, "repeat": 3}


@pytest.mark.parametrize(
    "impl,mode,shuffle",
    [("project", "dl0", True), ("project", "direct", False), ("raw", "direct", True)],
)
def test_iterate_worker_reads_the_dataset_repeat_times(tmp_path, monkeypatch, impl, mode, shuffle):
    # The runner's own worker launch, with this interpreter's venv as the project's.
    for name in ("project", "raw"):
        monkeypatch.setitem(_RUNNER["VENVS"], name, pathlib.Path(sys.prefix))
    env = {"BENCH_TMP": str(tmp_path)}
    data = str(tmp_path / "text")
    made = run_worker("project", "prepare.py", {"kind": "text", "samples": 150, "out": data},
                      300, env)
    assert "error" not in made, made
    case = {"kind": "text", "samples": 150, "data": data, "mode": mode, "shuffle": shuffle}
    for repeat in (1, 3):
        got = run_worker(impl, "iterate.py", {**case, "repeat": repeat}, 300, env)
        assert "error" not in got, got
        assert got["samples"] == got["expected"] == 150 * repeat
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text"]  # every view removed
