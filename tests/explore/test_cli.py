"""``streaming explore`` (streaming.explore.cli): the terminal view of a dataset."""

from __future__ import annotations

import argparse
import json

import pytest

from streaming.explore import cli


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory):
    from streaming import MDSWriter

    out = str(tmp_path_factory.mktemp("cli") / "ds")
    with MDSWriter(out=out, columns={"n": "int", "word": "str"}, compression="gz",
                   size_limit=200) as writer:
        for i in range(40):
            writer.write({"n": i, "word": f"w{i}"})
    return out


def test_summary_head_and_samples(small_dataset, capsys):
    assert run([small_dataset, "--head", "3", "--sample", "-1", "--shards", "0"]) == 0
    out = capsys.readouterr().out
    assert "40 samples in" in out and "more shards" not in out  # --shards 0 prints all
    assert "'w2'" in out and "sample 39" in out and "'w39'" in out


def test_json_summary(small_dataset, capsys):
    assert run([small_dataset, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["samples"] == 40 and summary["compressions"] == ["gz"]
    assert [c["name"] for c in summary["columns"]] == ["n", "word"]


def test_missing_dataset_raises_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="index.json"):
        run([str(tmp_path / "nothing")])
