"""JSON/CSV/TSV/XSV shard entries are untrusted: every malformed field raises a ValueError naming
the index file and the shard, and no basename can leave the dataset directory."""

from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming import CSVWriter, JSONWriter, TSVWriter, XSVWriter
from streaming.format import reader_from_json
from streaming.local import LocalDataset

WRITERS = {
    "json": lambda out: JSONWriter(out=out, columns={"x": "int", "s": "str"}),
    "csv": lambda out: CSVWriter(out=out, columns={"x": "int", "s": "str"}),
    "tsv": lambda out: TSVWriter(out=out, columns={"x": "int", "s": "str"}),
    "xsv": lambda out: XSVWriter(out=out, columns={"x": "int", "s": "str"}, separator="|"),
}
SAMPLES = [{"x": 12, "s": "hello"}, {"x": -3, "s": ""}]


def _write(out: str, fmt: str) -> dict:
    """Write a small dataset; return its one shard entry."""
    with WRITERS[fmt](out) as writer:
        for sample in SAMPLES:
            writer.write(sample)
    with open(os.path.join(out, "index.json")) as f:
        return json.load(f)["shards"][0]


@pytest.fixture(scope="module", params=sorted(WRITERS))
def entry(request, tmp_path_factory) -> tuple[str, dict]:
    out = str(tmp_path_factory.mktemp(request.param))
    return out, _write(out, request.param)


def _index_named(out: str) -> str:
    return rf"{os.path.join(out, 'index.json')}: \w+ shard 'shard\.00000\.\w+'"


@pytest.mark.parametrize("change, problem", [
    ({"newline": 5}, "newline must be a string"),
    ({"extra": 1}, r"unknown field\(s\) \['extra'\]"),
    ({"samples": -1}, "invalid sample count"),
    ({"samples": 2 ** 63}, "invalid sample count"),
    ({"samples": "2"}, "invalid sample count"),
    ({"hashes": None}, "hashes must be a list"),
    ({"raw_meta": None}, "raw_meta must not be null"),
    ({"raw_data": {"basename": "../evil", "bytes": 1, "hashes": {}}}, "must not contain"),
    ({"raw_meta": {"basename": "/etc/passwd", "bytes": 1, "hashes": {}}}, "must be relative"),
    ({"zip_meta": {"basename": "a/../../b", "bytes": 1, "hashes": {}}}, "must not contain"),
])
def test_bad_common_fields_name_index_and_shard(entry, change, problem) -> None:
    out, good = entry
    bad = {**good, **change}
    with pytest.raises(ValueError, match=f"{os.path.join(out, 'index.json')}.*{problem}"):
        reader_from_json(out, None, bad)


@pytest.mark.parametrize("fmt, change, problem", [
    ("json", {"columns": None}, "columns must be an object"),
    ("json", {"columns": {"x": 1}}, "columns must be an object"),
    ("json", {"newline": None}, "newline must be a string"),
    ("csv", {"column_encodings": None}, "column_encodings must be a list of strings"),
    ("csv", {"column_names": [1, 2]}, "column_names must be a list of strings"),
    ("csv", {"column_encodings": ["int", "bytes"]}, "bad columns"),
    ("csv", {"column_names": ["s"]}, "bad columns"),
    ("csv", {"column_names": ["s", "s"]}, "duplicate column names"),
    ("csv", {"newline": ""}, "separator and newline must be non-empty"),
    ("csv", {"separator": ","}, r"unknown field\(s\) \['separator'\]"),
    ("tsv", {"newline": 5}, "newline must be a string"),
    ("xsv", {"separator": ""}, "separator and newline must be non-empty"),
    ("xsv", {"separator": 7}, "separator must be a string"),
    ("xsv", {"columns": {}}, r"unknown field\(s\) \['columns'\]"),
    ("json", {"column_names": ["x"]}, r"unknown field\(s\) \['column_names'\]"),
])
def test_bad_format_fields_name_index_and_shard(tmp_path, fmt, change, problem) -> None:
    out = str(tmp_path)
    good = _write(out, fmt)
    with pytest.raises(ValueError, match=f"{_index_named(out)}: {problem}"):
        reader_from_json(out, None, {**good, **change})


@pytest.mark.parametrize("fmt, field", [
    ("json", "newline"), ("json", "columns"), ("csv", "newline"), ("csv", "column_names"),
    ("xsv", "separator"), ("tsv", "raw_meta"),
])
def test_missing_fields_name_index_and_shard(tmp_path, fmt, field) -> None:
    out = str(tmp_path)
    bad = _write(out, fmt)
    del bad[field]
    with pytest.raises(ValueError, match=f"{os.path.join(out, 'index.json')}.*{field}"):
        reader_from_json(out, None, bad)


@pytest.mark.parametrize("key", ["raw_data", "raw_meta"])
def test_unknown_file_fields_name_index_and_shard(tmp_path, key) -> None:
    out = str(tmp_path)
    bad = _write(out, "json")
    bad[key]["extra"] = 1
    with pytest.raises(ValueError, match=rf"{_index_named(out)}: {key}: unknown field\(s\)"):
        reader_from_json(out, None, bad)


def test_subclass_fields_follow_its_constructor(tmp_path) -> None:
    """The accepted fields are the reader's constructor arguments, so a subclass taking more
    (or ``**kwargs``) reads entries carrying them."""
    from streaming.format.json import JSONReader

    class Tagged(JSONReader):
        def __init__(self, *args, **kwargs) -> None:
            self.extra = {k: kwargs.pop(k) for k in list(kwargs) if k.startswith("x_")}
            super().__init__(*args, **kwargs)

    class Strict(JSONReader):
        def __init__(self, *, tag: str, **kwargs) -> None:
            super().__init__(**kwargs)
            self.tag = tag

    out = str(tmp_path)
    good = _write(out, "json")
    assert Tagged.from_json(out, None, {**good, "x_a": 1}).extra == {"x_a": 1}
    assert Strict.from_json(out, None, {**good, "tag": "b"})[1] == SAMPLES[1]
    with pytest.raises(ValueError, match=r"missing field\(s\) \['tag'\]"):
        Strict.from_json(out, None, good)


def test_zip_entries_may_be_absent(tmp_path) -> None:
    """Our readers always accepted entries without ``zip_data``/``zip_meta`` (no compression)."""
    out = str(tmp_path)
    good = _write(out, "csv")
    del good["zip_data"], good["zip_meta"]
    assert reader_from_json(out, None, good)[0] == SAMPLES[0]


def test_local_dataset_names_the_index(tmp_path) -> None:
    out = str(tmp_path)
    _write(out, "csv")
    path = os.path.join(out, "index.json")
    with open(path) as f:
        index = json.load(f)
    index["shards"][0]["column_encodings"] = None
    with open(path, "w") as f:
        json.dump(index, f)
    with pytest.raises(ValueError, match=f"{path}: csv shard 'shard.00000.csv': column_enc"):
        LocalDataset(out)


# Any JSON value in any field, or any extra field: a ValueError naming the index, or a reader
# that reads the samples back -- never a TypeError, KeyError or a crash.
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                               max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(["newline", "separator", "columns", "column_names",
                            "column_encodings", "samples", "hashes", "size_limit",
                            "compression", "raw_data", "raw_meta", "zip_data", "zip_meta",
                            "extra"]),
       value=_json, drop=st.booleans())
def test_any_field_value_is_read_or_refused_by_name(entry, key, value, drop) -> None:
    out, good = entry
    bad = copy.deepcopy(good)
    if drop:
        bad.pop(key, None)
    else:
        bad[key] = value
    try:
        reader = reader_from_json(out, None, bad)
    except ValueError as err:
        assert os.path.join(out, "index.json") in str(err) or "Unsupported" in str(err)
        return
    # Accepted: it is still a readable entry for the files on disk, or fails naming a file.
    try:
        got = [reader[i] for i in range(len(reader))]
    except (ValueError, FileNotFoundError) as err:
        assert out in str(err)
        return
    assert got == SAMPLES[: len(got)]
