"""An XSV index whose ``newline``/``separator`` do not match the data: a clear error naming the
shard, never a sample with columns silently dropped or cut (the reference cuts blindly)."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming import CSVWriter, XSVWriter
from streaming.format import reader_from_json
from streaming.local import LocalDataset

_COLUMNS = {"x": "int", "s": "str"}


def _patch_index(out: str, **changes) -> None:
    path = os.path.join(out, "index.json")
    with open(path) as f:
        index = json.load(f)
    for shard in index["shards"]:
        shard.update(changes)
    with open(path, "w") as f:
        json.dump(index, f)


@pytest.mark.parametrize(
    ("writer", "ext", "change", "problem"),
    [
        (lambda out: CSVWriter(out=out, columns=_COLUMNS), "csv", {"newline": "\r\n\r\n"},
         "header line .* does not name the index's columns"),
        (lambda out: XSVWriter(out=out, columns=_COLUMNS, separator="|"), "xsv",
         {"separator": ";"}, "header line .* does not name the index's columns"),
    ],
    ids=["newline", "separator"],
)
def test_wrong_delimiter_names_the_shard(tmp_path, writer, ext, change, problem) -> None:
    out = str(tmp_path)
    with writer(out) as w:
        w.write({"x": 12, "s": "hello"})
    _patch_index(out, **change)
    data = os.path.join(out, f"shard.00000.{ext}")
    with pytest.raises(ValueError, match=f"{data}: .*{problem}"):
        LocalDataset(out)[0]


@pytest.mark.parametrize("names", [["x", "s"], ["", "0"], ["s", "y"]])
def test_renamed_columns_name_the_shard(tmp_path, names) -> None:
    # The index's column names must be the data file's header line's: else every value would
    # come back under another name (or through another column's decoder).
    out = str(tmp_path)
    with CSVWriter(out=out, columns=_COLUMNS) as w:
        w.write({"x": 12, "s": "hello"})
    _patch_index(out, column_names=names)
    data = os.path.join(out, "shard.00000.csv")
    header = r"b's,x\n'"  # (as the message shows the bytes)
    with pytest.raises(ValueError, match=re.escape(f"{data}: the header line {header} does not "
                                                   f"name the index's columns {names}")):
        LocalDataset(out)[0]


def test_shards_without_columns_still_read(tmp_path) -> None:
    out = str(tmp_path)
    with CSVWriter(out=out, columns={}) as w:
        w.write({})
        w.write({})
    assert [LocalDataset(out)[i] for i in range(2)] == [{}, {}]


_delims = st.text("|;,\t\n\r:ab", min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(sep=st.sampled_from(["|", ";;", "\t"]), newline=st.sampled_from(["\n", "\r\n", "::"]),
       bad_sep=_delims, bad_newline=_delims,
       rows=st.lists(st.tuples(st.integers(-99, 99), st.text("xyz ", max_size=4)),
                     min_size=1, max_size=4))
def test_reader_never_drops_columns(sep, newline, bad_sep, bad_newline, rows) -> None:
    """Whatever the index says the delimiters are, a sample is either refused or has every
    column of the shard."""
    out = tempfile.mkdtemp()
    try:
        with XSVWriter(out=out, columns={"n": "int", "t": "str"}, separator=sep,
                       newline=newline) as w:
            for n, t in rows:
                w.write({"n": n, "t": t})
        with open(os.path.join(out, "index.json")) as f:
            entry = json.load(f)["shards"][0]
        entry.update(separator=bad_sep, newline=bad_newline)
        reader = reader_from_json(out, None, entry)
        for i, (n, t) in enumerate(rows):
            try:
                sample = reader[i]
            except ValueError:  # ours name the shard; a mangled int says what it could not parse
                continue
            assert set(sample) == {"n", "t"}
            if (bad_sep, bad_newline) == (sep, newline):
                assert sample == {"n": n, "t": t}
    finally:
        shutil.rmtree(out)
