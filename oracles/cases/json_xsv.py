"""Oracle fixtures for the JSON/CSV/TSV/XSV formats, merge_index and dataframe_to_mds.

Runs in the reference venv (see ``oracles/generate.py``). Writes:

- ``writers.json``: for each case (format x columns x compression x hashes x size_limit x
  newline), the input samples, every file the reference's writer produced (base64) and the
  samples its readers decode back from those files.
- ``merge.json``: sub-datasets written by the reference and the ``index.json`` its
  ``merge_index`` produces from them, for both call forms.
- ``spark.json``: what ``dataframe_to_mds`` writes for a known partitioning of known rows: the
  per-partition MDS files (written by the reference's ``MDSWriter`` with the arguments that
  ``dataframe_to_mds`` passes) and the merged index.
- ``errors.json``: the reference's behaviour on values that do not fit their encodings.
- ``convert.json``: a JSONL file and the MDS dataset a loop over the reference's
  ``MDSWriter.write`` makes of it (what ``streaming convert`` must reproduce).
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import random
import shutil
import tempfile

import numpy as np

from streaming import CSVWriter, JSONWriter, MDSWriter, TSVWriter, XSVWriter
from streaming.base.compression import decompress
from streaming.base.format import reader_from_json
from streaming.base.util import merge_index

SCHEMAS = {
    "mixed": {"id": "int", "name": "str", "score": "float"},
    "text": {"text": "str"},
    "numbers": {"a": "int", "b": "float", "c": "int"},
}

# (compression, hashes, size_limit) combinations; gz is left out because gzip stamps mtime.
SETTINGS = [
    (None, [], None),
    (None, ["sha1", "xxh64"], 300),
    ("zstd:7", ["md5"], 256),
    ("bz2", [], 1 << 26),
    ("br:5", ["xxh3_64"], 500),
    ("snappy", ["sha256", "xxh128"], 200),
]


def _value(rng: random.Random, encoding: str, i: int):
    if encoding == "int":
        return rng.choice([i, -i * 7919, rng.randrange(-(2**40), 2**40), 0])
    if encoding == "float":
        return rng.choice([i / 3, -1.5e-7 * i, rng.random() * 1e6, 0.0, 1e22])
    chars = "abcdefghij klmnopqrstuvwxyz\u00e9\u4e2d\U0001f600\"'{}[]"
    return "".join(rng.choice(chars) for _ in range(rng.randrange(0, 24)))


def _samples(schema: dict[str, str], n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{k: _value(rng, enc, i) for k, enc in schema.items()} for i in range(n)]


def _files(root: str) -> dict[str, str]:
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            out[rel] = base64.b64encode(pathlib.Path(path).read_bytes()).decode()
    return dict(sorted(out.items()))


def _read_back(root: str) -> list[dict]:
    """Decode every sample with the reference's readers (decompressing zip files first)."""
    index = json.load(open(os.path.join(root, "index.json")))
    samples = []
    for shard in index["shards"]:
        for raw, zkey in (("raw_data", "zip_data"), ("raw_meta", "zip_meta")):
            if shard.get(zkey):
                data = pathlib.Path(root, shard[zkey]["basename"]).read_bytes()
                pathlib.Path(root, shard[raw]["basename"]).write_bytes(
                    decompress(shard["compression"], data)
                )
        reader = reader_from_json(root, None, shard)
        samples.extend(reader[i] for i in range(reader.samples))
    return samples


def _writer(fmt: str, out: str, columns, compression, hashes, size_limit, newline):
    kwargs = dict(
        out=out, columns=columns, compression=compression, hashes=hashes, size_limit=size_limit
    )
    if newline is not None:
        kwargs["newline"] = newline
    if fmt == "json":
        return JSONWriter(**kwargs)
    if fmt == "csv":
        return CSVWriter(**kwargs)
    if fmt == "tsv":
        return TSVWriter(**kwargs)
    return XSVWriter(separator="|", **kwargs)


def _writer_cases(tmp: str) -> list[dict]:
    cases = []
    seed = 0
    for fmt in ("json", "csv", "tsv", "xsv"):
        for schema_name, schema in SCHEMAS.items():
            for compression, hashes, size_limit in SETTINGS:
                seed += 1
                newline = "\r\n" if seed % 5 == 0 else None
                samples = _samples(schema, 20, seed)
                if fmt != "json":
                    # Separators and newlines must not occur in XSV values.
                    sep = {"csv": ",", "tsv": "\t", "xsv": "|"}[fmt]
                    for s in samples:
                        for k, v in s.items():
                            if isinstance(v, str):
                                s[k] = v.replace(sep, "_").replace("\n", "_").replace("\r", "_")
                out = os.path.join(tmp, f"case{seed}")
                with _writer(fmt, out, schema, compression, hashes, size_limit, newline) as w:
                    for s in samples:
                        w.write(s)
                files = _files(out)
                cases.append(
                    {
                        "name": f"{fmt}-{schema_name}-{compression}-{'+'.join(hashes)}-{size_limit}"
                        + ("-crlf" if newline else ""),
                        "format": fmt,
                        "columns": schema,
                        "compression": compression,
                        "hashes": hashes,
                        "size_limit": size_limit,
                        "newline": newline,
                        "samples": samples,
                        "files": files,
                        "decoded": _read_back(out),
                    }
                )
    return cases


def _merge_cases(tmp: str) -> list[dict]:
    cases = []
    # MDS and JSON sub-datasets under one root, written by the reference.
    for name, fmt in (("mds", "mds"), ("json", "json")):
        root = os.path.join(tmp, f"merge-{name}")
        parts = ["0", "1", "10", "2"]  # lexicographic vs numeric order matters for the root form
        for k, part in enumerate(parts):
            out = os.path.join(root, part)
            rows = _samples({"id": "int", "name": "str"}, 7 + 3 * k, 100 + k)
            if fmt == "mds":
                w = MDSWriter(
                    out=out,
                    columns={"id": "int64", "name": "str"},
                    compression="zstd" if k % 2 else None,
                    hashes=["sha1"] if k == 1 else None,
                    size_limit=120,
                )
            else:
                w = JSONWriter(out=out, columns={"id": "int", "name": "str"}, size_limit=150)
            with w:
                for r in rows:
                    w.write(r)
        subs = _files(root)
        # Form 1: a list of index files, in a deliberately unsorted order, with a duplicate.
        order = ["2", "0", "10", "1", "0"]
        merge_index([os.path.join(root, p, "index.json") for p in order], root)
        listed = pathlib.Path(root, "index.json").read_text()
        os.remove(os.path.join(root, "index.json"))
        # Form 1 with (local, remote) pairs whose local exists: no download.
        merge_index(
            [(os.path.join(root, p, "index.json"), f"s3://nowhere/{p}/index.json") for p in order[:2]],
            root,
        )
        pairs = pathlib.Path(root, "index.json").read_text()
        os.remove(os.path.join(root, "index.json"))
        case = {
            "name": name,
            "subdatasets": subs,
            "list_order": order,
            "merged_from_list": listed,
            "pairs_order": order[:2],
            "merged_from_pairs": pairs,
        }
        if fmt == "mds":
            # Form 2: the root. (For JSON shards the reference mistakes shard.*.json files for
            # indexes and fails; we merge only index.json files there.)
            merge_index(root)
            case["merged_from_root"] = pathlib.Path(root, "index.json").read_text()
        cases.append(case)
    return cases


def _spark_case(tmp: str) -> dict:
    """What dataframe_to_mds writes for rows 0..n-1 in ``parts`` equal contiguous partitions."""
    n, parts = 60, 3
    rng = np.random.default_rng(7)
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": i * 1000003,
                "name": f"row-{i}-" + "x" * int(rng.integers(0, 30)),
                "score": float(rng.random()),
                "tokens": rng.integers(-(2**31), 2**31, int(rng.integers(1, 20))).tolist(),
            }
        )
    # What Spark infers for these columns and what dataframe_to_mds maps them to.
    columns = {"id": "int64", "name": "str", "score": "float64", "tokens": "ndarray:int32"}
    root = os.path.join(tmp, "spark")
    index_files = []
    for p in range(parts):
        lo, hi = p * n // parts, (p + 1) * n // parts
        out = os.path.join(root, str(p))
        # dataframe_to_mds defaults compression to zstd and keeps worker locals for the merge.
        with MDSWriter(
            out=out, columns=columns, compression="zstd", size_limit=2000, keep_local=True
        ) as w:
            for r in rows[lo:hi]:
                w.write({**r, "tokens": np.asarray(r["tokens"], np.int32)})
        index_files.append((os.path.join(out, "index.json"), ""))
    merge_index(index_files, root, keep_local=True, download_timeout=60)
    return {
        "rows": rows,
        "partitions": parts,
        "columns": columns,
        "mds_kwargs": {"size_limit": 2000},
        "files": _files(root),
    }


def _convert_case(tmp: str) -> dict:
    """A JSONL file and what a loop over the reference's MDSWriter.write makes of it."""
    rng = np.random.default_rng(11)
    lines = []
    for i in range(120):
        row = {"id": i, "text": f"doc {i}", "tokens": rng.integers(0, 50257, int(rng.integers(1, 90))).tolist(),
               "score": float(rng.random())}
        lines.append(json.dumps(row))
    text = "\n".join(lines) + "\n"
    columns = {"id": "int64", "score": "float64", "text": "str", "tokens": "ndarray:int64"}
    out = os.path.join(tmp, "convert")
    with MDSWriter(out=out, columns=columns, compression="zstd", hashes=["sha1", "xxh64"],
                   size_limit="16kb") as w:
        for line in text.splitlines():
            obj = json.loads(line)
            w.write({**obj, "tokens": np.array(obj["tokens"], dtype=np.int64)})
    return {"jsonl": text, "columns": columns, "compression": "zstd", "hashes": ["sha1", "xxh64"],
            "size_limit": "16kb", "files": _files(out)}


def _error_cases() -> list[dict]:
    cases = []
    tmp = tempfile.mkdtemp()
    try:
        for fmt, columns, sample in [
            ("json", {"x": "int"}, {"x": 1.5}),
            ("json", {"x": "float"}, {"x": 1}),
            ("json", {"x": "str"}, {"x": 3}),
            ("csv", {"x": "int"}, {"x": "3"}),
            ("csv", {"x": "float"}, {"x": 2}),
        ]:
            out = os.path.join(tmp, f"e{len(cases)}")
            w = _writer(fmt, out, columns, None, [], None, None)
            try:
                w.write(sample)
                err = None
            except Exception as e:  # noqa: BLE001 - recording what the reference raises
                err = type(e).__name__
            w.finish()
            cases.append({"format": fmt, "columns": columns, "sample": sample, "error": err})
    finally:
        shutil.rmtree(tmp)
    return cases


def generate(outdir: pathlib.Path) -> None:
    tmp = tempfile.mkdtemp()
    try:
        dump = lambda name, obj: (outdir / name).write_text(json.dumps(obj, indent=0))  # noqa: E731
        dump("writers.json", _writer_cases(tmp))
        dump("merge.json", _merge_cases(tmp))
        dump("spark.json", _spark_case(tmp))
        dump("errors.json", _error_cases())
        dump("convert.json", _convert_case(tmp))
    finally:
        shutil.rmtree(tmp)
