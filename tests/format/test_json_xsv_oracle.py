"""JSON/CSV/TSV/XSV writers and readers against the reference: same bytes, same samples."""

from __future__ import annotations

import base64
import json
import pathlib

import pytest

from streaming import CSVWriter, JSONWriter, TSVWriter, XSVWriter
from streaming.format.compression import decompress
from streaming.format.json import JSONReader
from streaming.format.xsv import CSVReader, TSVReader, XSVReader

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "oracles" / "fixtures" / "json_xsv"
CASES = json.loads((FIXTURES / "writers.json").read_text())
READERS = {"json": JSONReader, "csv": CSVReader, "tsv": TSVReader, "xsv": XSVReader}


def _write(case: dict, out: pathlib.Path) -> None:
    kwargs = dict(
        out=str(out),
        columns=case["columns"],
        compression=case["compression"],
        hashes=case["hashes"],
        size_limit=case["size_limit"],
    )
    if case["newline"] is not None:
        kwargs["newline"] = case["newline"]
    cls = {"json": JSONWriter, "csv": CSVWriter, "tsv": TSVWriter}.get(case["format"])
    writer = cls(**kwargs) if cls else XSVWriter(separator="|", **kwargs)
    with writer:
        for sample in case["samples"]:
            writer.write(sample)


def _files(root: pathlib.Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _read_all(root: pathlib.Path) -> list[dict]:
    """Decode every sample of a dataset directory through our readers."""
    index = json.loads((root / "index.json").read_text())
    out = []
    for shard in index["shards"]:
        for raw, zkey in (("raw_data", "zip_data"), ("raw_meta", "zip_meta")):
            if shard.get(zkey) and not (root / shard[raw]["basename"]).exists():
                data = (root / shard[zkey]["basename"]).read_bytes()
                (root / shard[raw]["basename"]).write_bytes(decompress(shard["compression"], data))
        reader = READERS[shard["format"]].from_json(str(root), None, shard)
        out.extend(reader[i] for i in range(len(reader)))
    return out


def test_fixture_covers_every_format_and_several_shards() -> None:
    assert {c["format"] for c in CASES} == set(READERS)
    assert any(
        len(json.loads(base64.b64decode(c["files"]["index.json"]))["shards"]) > 3 for c in CASES
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_writer_bytes_match_reference(case: dict, tmp_path: pathlib.Path) -> None:
    _write(case, tmp_path / "out")
    ours = _files(tmp_path / "out")
    theirs = {k: base64.b64decode(v) for k, v in case["files"].items()}
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name] == theirs[name], name


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_reference_dataset_reads_back(case: dict, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "ref"
    root.mkdir()
    for name, b64 in case["files"].items():
        (root / name).write_bytes(base64.b64decode(b64))
    decoded = _read_all(root)
    assert decoded == case["decoded"]
    # Every column type round-trips exactly (floats through repr), so reads equal the input.
    assert decoded == case["samples"]


def test_errors_match_reference_kinds(tmp_path: pathlib.Path) -> None:
    cases = json.loads((FIXTURES / "errors.json").read_text())
    for i, case in enumerate(cases):
        cls = JSONWriter if case["format"] == "json" else CSVWriter
        with cls(out=str(tmp_path / str(i)), columns=case["columns"]) as writer:
            assert case["error"] == "AttributeError"
            with pytest.raises(AttributeError) as info:
                writer.write(case["sample"])
            assert isinstance(info.value, ValueError)  # ours is also a ValueError
