"""StreamingDataset's log records and warnings are the reference's (oracle: ``messages``)."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import pathlib
import re

import pytest

import streaming
from streaming.base.partition import get_partitions
from streaming.plan.partition import worker_partition

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "_messages_cases", _ROOT / "oracles" / "cases" / "_messages_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)

FIXTURE = json.loads((_ROOT / "oracles" / "fixtures" / "messages" / "messages.json").read_text())


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("messages-data")
    cases.write_datasets(streaming.MDSWriter, str(root))
    return str(root)


def _spaces(pairs):
    # Some of the reference's messages (warnings and logged warnings alike) carry its source's
    # indentation (a backslash inside a string literal); the words and their order must match.
    return [[kind, re.sub(r"\s+", " ", text)] for kind, text in pairs]


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_messages_match_reference(name, data_root, tmp_path):
    got = cases.run_case(name, streaming, data_root, str(tmp_path))
    want = FIXTURE[name]
    assert got.get("samples") == want.get("samples")
    assert got.get("error") == want.get("error")
    assert _spaces(got["logs"]) == _spaces(want["logs"])
    assert _spaces(got["warnings"]) == _spaces(want["warnings"])


def test_fixture_covers_every_message_kind():
    """The oracle saw the defaults announced, a logged warning and a Python warning."""
    logs = [text for case in FIXTURE.values() for _, text in case["logs"]]
    assert any("`predownload` was not specified" in t for t in logs)
    assert any("`num_canonical_nodes` was not specified" in t for t in logs)
    assert any("`shuffle_block_size` was not specified" in t for t in logs)
    assert any(level == "WARNING" for case in FIXTURE.values() for level, _ in case["logs"])
    assert sum(bool(case["warnings"]) for case in FIXTURE.values()) >= 2


def _notes(caplog):
    return [r.getMessage() for r in caplog.records if "repeated samples" in r.getMessage()]


def test_partitioning_notes_repeated_samples_once(caplog, data_root, tmp_path):
    """At DEBUG, as the reference: the count of repeated samples, a whole world's worth when the
    epoch divides evenly; once per planned epoch, whichever partition path planned it."""
    caplog.set_level(logging.DEBUG, logger="streaming")
    get_partitions("orig", 10, 1, 1, 2, 1)
    get_partitions("relaxed", 9, 2, 1, 2, 1)
    assert _notes(caplog) == [
        f"Using {n} repeated samples to ensure that the epoch size is divisible by the number of "
        f"total devices. This ensures that each device contributes the same number of samples "
        f"per global batch. " for n in (2, 1)]
    caplog.clear()
    # An elastic resume whose re-deal the one-worker path declines (drop_first not divisible by
    # the initial nodes): planned by the algorithm itself, noted once.
    worker_partition("relaxed", 100, 2, 3, 1, 1, 2, 1, 2, 0, 0, 0)
    assert [n.split()[1] for n in _notes(caplog)] == ["2"]
    caplog.clear()
    dataset = streaming.StreamingDataset(remote=os.path.join(data_root, "a"),
                                         local=str(tmp_path), batch_size=4)
    assert sum(1 for _ in dataset) == cases.NUM_SAMPLES
    assert [n.split()[1] for n in _notes(caplog)] == ["1"]
