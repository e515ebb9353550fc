"""JSON/XSV writers -> readers round trips, LocalDataset on reference datasets, bad input."""

from __future__ import annotations

import base64
import json
import pathlib
import shutil
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming import CSVWriter, JSONWriter, LocalDataset, TSVWriter, XSVWriter
from streaming.base.format.json.encodings import is_json_encoded, is_json_encoding
from streaming.base.format.xsv.encodings import is_xsv_encoding, xsv_decode, xsv_encode
from streaming.format import reader_from_json
from streaming.format.compression import decompress
from streaming.format.json import JSONReader

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "oracles" / "fixtures" / "json_xsv"

values = {
    "int": st.integers(-(2**70), 2**70),
    "float": st.floats(allow_nan=False),
    "str": st.text(),
}
schemas = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=4), st.sampled_from(sorted(values)),
    min_size=1, max_size=4,
)


def _samples(draw, schema, n, forbid=""):
    out = []
    for _ in range(n):
        row = {}
        for name, enc in schema.items():
            strategy = values[enc]
            if enc == "str" and forbid:
                # Lone surrogates cannot be UTF-8 encoded (the reference fails on them too).
                strategy = st.text(st.characters(blacklist_characters=forbid,
                                                 blacklist_categories=("Cs",)))
            row[name] = draw(strategy)
        out.append(row)
    return out


def _read(root: str) -> list[dict]:
    index = json.loads(pathlib.Path(root, "index.json").read_text())
    out = []
    for shard in index["shards"]:
        reader = reader_from_json(root, None, shard)
        out.extend(reader[i] for i in range(len(reader)))
    return out


@settings(max_examples=25, deadline=None)
@given(data=st.data(), schema=schemas, n=st.integers(0, 12),
       size_limit=st.sampled_from([None, 64, 400]), newline=st.sampled_from(["\n", "\r\n"]))
def test_json_round_trip(data, schema, n, size_limit, newline) -> None:
    samples = _samples(data.draw, schema, n)
    tmp = tempfile.mkdtemp()
    try:
        with JSONWriter(out=tmp, columns=schema, size_limit=size_limit, newline=newline) as w:
            for s in samples:
                w.write(s)
        assert _read(tmp) == samples
    finally:
        shutil.rmtree(tmp)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), schema=schemas, n=st.integers(0, 12),
       kind=st.sampled_from(["csv", "tsv", "xsv"]), size_limit=st.sampled_from([None, 64, 400]))
def test_xsv_round_trip(data, schema, n, kind, size_limit) -> None:
    sep = {"csv": ",", "tsv": "\t", "xsv": "::"}[kind]
    samples = _samples(data.draw, schema, n, forbid=sep + "\n:")
    tmp = tempfile.mkdtemp()
    try:
        kwargs = dict(out=tmp, columns=schema, size_limit=size_limit)
        writer = {"csv": CSVWriter, "tsv": TSVWriter}.get(kind)
        with (writer(**kwargs) if writer else XSVWriter(separator=sep, **kwargs)) as w:
            for s in samples:
                w.write(s)
        assert _read(tmp) == samples
    finally:
        shutil.rmtree(tmp)


@pytest.mark.parametrize("fmt", ["json", "csv", "tsv", "xsv"])
def test_local_dataset_reads_reference_datasets(fmt, tmp_path) -> None:
    cases = [c for c in json.loads((FIXTURES / "writers.json").read_text()) if c["format"] == fmt]
    for k, case in enumerate(cases):
        root = tmp_path / str(k)
        root.mkdir()
        for name, b64 in case["files"].items():
            (root / name).write_bytes(base64.b64decode(b64))
        # LocalDataset reads raw shards, as the reference's does.
        for shard in json.loads((root / "index.json").read_text())["shards"]:
            for raw, zipped in (("raw_data", "zip_data"), ("raw_meta", "zip_meta")):
                if shard[zipped]:
                    data = (root / shard[zipped]["basename"]).read_bytes()
                    (root / shard[raw]["basename"]).write_bytes(
                        decompress(shard["compression"], data)
                    )
        dataset = LocalDataset(str(root))
        assert len(dataset) == len(case["samples"])
        assert [dataset[i] for i in range(len(dataset))] == case["decoded"]


def test_encoding_registries() -> None:
    assert is_json_encoding("int") and not is_json_encoding("int64")
    assert is_xsv_encoding("float") and not is_xsv_encoding("bytes")
    assert is_json_encoded("int", True)  # bool is an int, as in the reference
    assert xsv_encode("float", 0.1) == "0.1" and xsv_decode("float", "0.1") == 0.1
    assert xsv_decode("int", xsv_encode("int", -(2**80))) == -(2**80)
    for bad in (lambda: is_json_encoded("float", 1), lambda: xsv_encode("int", "3")):
        with pytest.raises(ValueError):
            bad()


def test_writer_argument_errors(tmp_path) -> None:
    with pytest.raises(ValueError, match="not a JSON encoding"):
        JSONWriter(out=str(tmp_path / "a"), columns={"x": "int64"})
    with pytest.raises(ValueError, match="not an XSV encoding"):
        CSVWriter(out=str(tmp_path / "b"), columns={"x": "bytes"})
    with pytest.raises(ValueError, match="separator"):
        CSVWriter(out=str(tmp_path / "c"), columns={"a,b": "int"})
    assert not any((tmp_path / d).exists() for d in "abc")
    with CSVWriter(out=str(tmp_path / "d"), columns={"x": "str"}) as w:
        with pytest.raises(ValueError, match="separator"):
            w.write({"x": "a,b"})
        with pytest.raises(KeyError):
            w.write({"y": "a"})


def test_reader_rejects_corrupt_meta(tmp_path) -> None:
    with JSONWriter(out=str(tmp_path), columns={"x": "int"}) as w:
        for i in range(5):
            w.write({"x": i})
    shard = json.loads((tmp_path / "index.json").read_text())["shards"][0]
    meta = tmp_path / shard["raw_meta"]["basename"]
    good = meta.read_bytes()

    def fresh():
        return reader_from_json(str(tmp_path), None, shard)

    assert [fresh()[i] for i in range(5)] == [{"x": i} for i in range(5)]
    with pytest.raises(IndexError):
        fresh().get_item(5)
    meta.write_bytes(good[:10])
    with pytest.raises(ValueError, match="truncated"):
        fresh()[0]
    meta.write_bytes((7).to_bytes(4, "little") + good[4:])
    with pytest.raises(ValueError, match="index says"):
        fresh()[0]
    meta.write_bytes(good[:8] + (10**6).to_bytes(4, "little") + good[12:])
    with pytest.raises(ValueError, match="corrupt"):
        fresh()[0]
    with pytest.raises(ValueError, match="Expected to be `json`"):
        JSONReader.from_json(str(tmp_path), None, dict(shard, format="csv"))
    with pytest.raises(ValueError, match="version"):
        JSONReader.from_json(str(tmp_path), None, dict(shard, version=3))


@pytest.mark.parametrize("writer", [JSONWriter, CSVWriter, TSVWriter])
def test_streaming_dataset_reads_json_and_xsv(writer, tmp_path) -> None:
    from streaming import StreamingDataset

    remote = tmp_path / "remote"
    with writer(out=str(remote), columns={"x": "int", "s": "str"}, compression="zstd",
                hashes=["xxh64"], size_limit=200) as w:
        for i in range(50):
            w.write({"x": i, "s": f"v{i}"})
    dataset = StreamingDataset(remote=str(remote), local=str(tmp_path / "cache"), shuffle=True,
                               batch_size=4, validate_hash="xxh64")
    assert sorted(s["x"] for s in dataset) == list(range(50))
    assert dataset[7] == {"x": 7, "s": "v7"}


def test_verify_and_summarize_split_formats(tmp_path) -> None:
    from streaming.format.check import summarize_dataset, verify_dataset

    with TSVWriter(out=str(tmp_path), columns={"x": "int"}, compression="bz2",
                   hashes=["md5", "sha1"], size_limit=30) as w:
        for i in range(40):
            w.write({"x": i})
    problems, counts = verify_dataset(str(tmp_path))
    assert problems == [] and counts["samples"] == 40 and counts["shards"] > 2
    assert counts["files"] == 2 * counts["shards"] and counts["hashes"] == 2 * counts["files"]
    summary = summarize_dataset(str(tmp_path))
    assert summary["formats"] == ["tsv"] and summary["columns"] == [{"x": "int"}]
    index = json.loads((tmp_path / "index.json").read_text())
    index["shards"][1]["samples"] += 1
    (tmp_path / "index.json").write_text(json.dumps(index))
    problems, _ = verify_dataset(str(tmp_path))
    assert len(problems) == 1 and "shard.00001.tsv.meta.bz2" in problems[0]
