"""The convert / merge / verify / info subcommands, each run as a real subprocess."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from streaming import MDSWriter


def _cli(*args: str, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "streaming", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def _rows(n: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "id": i,
            "text": f"line {i} " + "é" * int(rng.integers(0, 5)),
            "score": float(rng.random()),
            "tokens": rng.integers(0, 50_000, int(rng.integers(1, 300))).tolist(),
        }
        for i in range(n)
    ]


def _write_jsonl(path: pathlib.Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _reference_style_mds(out: pathlib.Path, rows: list[dict], **kwargs) -> None:
    """What a loop over MDSWriter.write makes of the rows (MDSWriter matches the reference)."""
    columns = {"id": "int64", "score": "float64", "text": "str", "tokens": "ndarray:int64"}
    with MDSWriter(out=str(out), columns=columns, **kwargs) as writer:
        for r in rows:
            writer.write({**r, "tokens": np.asarray(r["tokens"], np.int64)})


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_convert_jsonl_matches_a_write_loop_and_verifies(tmp_path) -> None:
    rows = _rows(400)
    src = tmp_path / "in.jsonl"
    _write_jsonl(src, rows)
    out = tmp_path / "out"
    res = _cli("convert", str(src), "-o", str(out), "--compression", "zstd",
               "--hashes", "xxh64,sha1", "--size-limit", "60kb", "--no-progress")
    assert res.returncode == 0, res.stderr
    assert "wrote 400 samples" in res.stdout
    ref = tmp_path / "ref"
    _reference_style_mds(ref, rows, compression="zstd", hashes=["sha1", "xxh64"],
                         size_limit="60kb")
    assert _tree(out) == _tree(ref)
    assert len(json.loads((out / "index.json").read_text())["shards"]) > 3

    res = _cli("verify", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("OK:") and "400 samples" in res.stdout

    res = _cli("info", str(out), "--json")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["samples"] == 400 and info["formats"] == ["mds"]
    assert info["columns"] == [
        {"id": "int64", "score": "float64", "text": "str", "tokens": "ndarray:int64"}
    ]
    assert info["hashes"] == ["sha1", "xxh64"] and info["compressions"] == ["zstd"]
    text = _cli("info", str(out)).stdout
    assert "samples:      400" in text


def test_convert_matches_reference_write_loop(oracles, tmp_path) -> None:
    import base64

    case = json.loads((oracles / "json_xsv" / "convert.json").read_text())
    src = tmp_path / "in.jsonl"
    src.write_text(case["jsonl"])
    out = tmp_path / "out"
    res = _cli("convert", str(src), "-o", str(out), "--no-progress",
               "--compression", case["compression"], "--hashes", ",".join(case["hashes"]),
               "--size-limit", case["size_limit"])
    assert res.returncode == 0, res.stderr
    theirs = {k: base64.b64decode(v) for k, v in case["files"].items()}
    assert len(theirs) >= 4  # several shards
    assert _tree(out) == theirs


def test_convert_parquet_csv_tsv_with_given_columns(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = _rows(50, seed=3)
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=17)
    res = _cli("convert", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "pq"),
               "--no-progress")
    assert res.returncode == 0, res.stderr
    ref = tmp_path / "ref"
    _reference_style_mds(ref, rows)
    assert _tree(tmp_path / "pq") == _tree(ref)

    flat = [{"id": r["id"], "score": r["score"], "text": r["text"]} for r in rows]
    for sep, ext in ((",", "csv"), ("\t", "tsv")):
        lines = [sep.join(["id", "score", "text"])]
        lines += [sep.join([str(r["id"]), repr(r["score"]), r["text"]]) for r in flat]
        (tmp_path / f"in.{ext}").write_text("\n".join(lines) + "\n")
        out = tmp_path / ext
        res = _cli("convert", str(tmp_path / f"in.{ext}"), "-o", str(out), "--no-progress",
                   "--columns", "id:int32,text:str,score:float64")
        assert res.returncode == 0, res.stderr
        mine = tmp_path / f"mine-{ext}"
        with MDSWriter(out=str(mine),
                       columns={"id": "int32", "text": "str", "score": "float64"}) as w:
            for r in flat:
                w.write({**r, "id": np.int32(r["id"])})
        assert _tree(out) == _tree(mine)


def test_convert_many_inputs_in_order_with_json_columns(tmp_path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.ndjson"
    _write_jsonl(a, [{"x": [1, [2]], "y": True}])
    _write_jsonl(b, [{"x": [3], "y": False}, {"x": [], "y": True}])
    out = tmp_path / "out"
    res = _cli("convert", str(a), str(b), "-o", str(out), "--no-progress",
               "--columns", '{"x": "json", "y": "json"}')
    assert res.returncode == 0, res.stderr
    from streaming import LocalDataset

    ds = LocalDataset(str(out))
    assert [ds[i] for i in range(len(ds))] == [
        {"x": [1, [2]], "y": True}, {"x": [3], "y": False}, {"x": [], "y": True}
    ]


@pytest.mark.parametrize(
    "content, columns, message",
    [
        (None, None, "no such file"),
        ('{"a": 1}\n{"a": 2.5}\n', "a:int64", "'a'"),
        ('{"a": "x"}\n', "a:int64", "'a'"),
        ('{"a": [1, 2]}\n{"a": []}\n', "a:ndarray:int64", "empty list"),
        ('{"a": 1}\n', "b:int64", "'b'"),
        ('{"a": 1}\n', "a:nonsense", "nonsense"),
        ('{"a": 1\n', None, "not valid JSON"),
        ('{"a": 300}\n', "a:uint8", "'a'"),
    ],
    ids=["missing", "float-in-int", "str-in-int", "empty-array", "no-column", "bad-encoding",
         "bad-json", "overflow"],
)
def test_convert_bad_input_fails_cleanly(tmp_path, content, columns, message) -> None:
    src = tmp_path / "in.jsonl"
    if content is not None:
        src.write_text(content)
    out = tmp_path / "out"
    args = ["convert", str(src), "-o", str(out), "--no-progress"]
    if columns:
        args += ["--columns", columns]
    res = _cli(*args)
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("streaming convert: error:") and message in lines[0], lines[0]
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["in.jsonl"] if content else [])


def test_convert_refuses_to_overwrite(tmp_path) -> None:
    src = tmp_path / "in.jsonl"
    _write_jsonl(src, [{"a": 1}])
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    res = _cli("convert", str(src), "-o", str(out), "--no-progress")
    assert res.returncode != 0 and "--overwrite" in res.stderr
    assert (out / "keep.txt").read_text() == "mine"
    res = _cli("convert", str(src), "-o", str(out), "--no-progress", "--overwrite")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["index.json", "shard.00000.mds"]


def test_merge_subcommand_and_verify_problems(tmp_path) -> None:
    root = tmp_path / "root"
    for k in range(3):
        _reference_style_mds(root / str(k), _rows(20, seed=k), hashes=["sha1"],
                             size_limit="20kb")
    res = _cli("merge", str(root))
    assert res.returncode == 0, res.stderr
    assert "60 samples" in res.stdout
    merged = json.loads((root / "index.json").read_text())
    assert sum(s["samples"] for s in merged["shards"]) == 60
    assert _cli("verify", str(root)).returncode == 0

    # List form: only the given parts, in the given order.
    res = _cli("merge", str(root), str(root / "2" / "index.json"), str(root / "0" / "index.json"))
    assert res.returncode == 0, res.stderr
    parts = [s["raw_data"]["basename"].split("/")[0]
             for s in json.loads((root / "index.json").read_text())["shards"]]
    assert parts == sorted(parts, key=lambda p: p != "2") and set(parts) == {"0", "2"}

    # Damage a shard: verify names the file and fails.
    shard = root / "0" / "shard.00000.mds"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    (root / "2" / "shard.00001.mds").unlink()
    res = _cli("verify", str(root))
    assert res.returncode == 1
    assert "0/shard.00000.mds: sha1 is" in res.stderr
    assert "missing 2/shard.00001.mds" in res.stderr

    # A sample count that disagrees with the index.
    idx = json.loads((root / "index.json").read_text())
    idx["shards"] = idx["shards"][-1:]
    idx["shards"][0]["samples"] += 1
    (root / "index.json").write_text(json.dumps(idx))
    res = _cli("verify", str(root))
    assert res.returncode == 1 and "index says" in res.stderr


def test_missing_dataset_errors(tmp_path) -> None:
    for cmd in ("verify", "info", "merge"):
        res = _cli(cmd, str(tmp_path / "nope"))
        assert res.returncode != 0
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"streaming {cmd}: error:"), res.stderr
    assert not (tmp_path / "nope").exists() or not os.listdir(tmp_path / "nope")
