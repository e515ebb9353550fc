"""StreamingDataset's log records and warnings are the reference's (oracle: ``messages``)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re

import pytest

import streaming

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
    # Some of the reference's messages carry its source's indentation (a backslash inside a
    # string literal); the words and their order are what must match.
    return [[kind, re.sub(r"\s+", " ", text)] for kind, text in pairs]


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_messages_match_reference(name, data_root, tmp_path):
    got = cases.run_case(name, streaming, data_root, str(tmp_path))
    want = FIXTURE[name]
    assert got.get("samples") == want.get("samples")
    assert got.get("error") == want.get("error")
    assert got["logs"] == want["logs"]
    assert _spaces(got["warnings"]) == _spaces(want["warnings"])


def test_fixture_covers_every_message_kind():
    """The oracle saw the defaults announced, a logged warning and a Python warning."""
    logs = [text for case in FIXTURE.values() for _, text in case["logs"]]
    assert any("`predownload` was not specified" in t for t in logs)
    assert any("`num_canonical_nodes` was not specified" in t for t in logs)
    assert any("`shuffle_block_size` was not specified" in t for t in logs)
    assert any(level == "WARNING" for case in FIXTURE.values() for level, _ in case["logs"])
    assert sum(bool(case["warnings"]) for case in FIXTURE.values()) >= 2
