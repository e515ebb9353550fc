"""The benchmark runner's best-of-N keeps the best figure and every run's, in order."""

from __future__ import annotations

import pathlib
import runpy

import pytest
from hypothesis import given
from hypothesis import strategies as st

# benchmarks/ is scripts, not a package: take the function from the runner's namespace.
_RUN = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
best_of = runpy.run_path(str(_RUN))["best_of"]


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
