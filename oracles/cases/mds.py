"""Oracle fixtures for the MDS format, compression codecs and hash algorithms.

Runs in the reference venv (see ``oracles/generate.py``). Writes:

- ``writers.json``: for each dataset case (schema x compression x hashes x size_limit), the
  arguments, every file the reference's ``MDSWriter`` wrote (base64), and every sample its
  ``MDSReader`` decodes back (through ``_mds_samples.describe``). Inputs are rebuilt from
  ``(schema, count, seed)`` by ``_mds_samples.make_samples``.
- ``codecs.json``: ``compress()`` output of every codec family on a few inputs, the md5 of
  zstd output on a 4 MB input (zstd's multithreaded path), ``get_hash()`` of every algorithm,
  ``get_compressions()``, ``get_hashes()``, ``get_mds_encodings()`` and ``bytes_to_int`` cases.

gzip stamps the current time into its header; generation pins it to ``GZIP_MTIME`` (tests do the
same), so the files are reproducible.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import json
import os
import pathlib
import shutil
import tempfile
import types

import numpy as np

GZIP_MTIME = 1_700_000_000.0

_spec = importlib.util.spec_from_file_location(
    "_mds_samples", pathlib.Path(__file__).with_name("_mds_samples.py")
)
samples_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(samples_mod)

ALL_HASHES = [
    "blake2b", "blake2s", "md5", "sha1", "sha224", "sha256", "sha384", "sha3_224", "sha3_256",
    "sha3_384", "sha3_512", "sha512", "xxh128", "xxh32", "xxh3_128", "xxh3_64", "xxh64",
]


def _cases() -> list[dict]:
    cases = []

    def add(name, schema, count, seed, compression=None, hashes=(), size_limit=1 << 26):
        cases.append({"name": name, "schema": schema, "count": count, "seed": seed,
                      "compression": compression, "hashes": sorted(hashes),
                      "size_limit": size_limit})

    small = {"scalars": "1kb", "text": "1kb", "arrays": 1024, "tokens": 1024, "images": "4kb"}
    for i, schema in enumerate(small):
        count = 8 if schema == "images" else 16
        add(f"{schema}-plain", schema, count, 100 + i)
        add(f"{schema}-small", schema, count, 200 + i, None, ["sha1", "xxh64"], small[schema])
    for i, algo in enumerate([None, "zstd", "zstd:7", "gz", "gz:1", "bz2", "br", "br:5", "snappy"]):
        add(f"text-{algo}", "text", 12, 300 + i, algo, [], 700)
    add("tokens-allhashes", "tokens", 6, 400, "zstd", ALL_HASHES, 600)
    # Every sample is bigger than the limit: the reference then writes an empty first shard.
    add("text-tiny-limit", "text", 5, 500, None, ["md5"], 40)
    add("arrays-one-shard", "arrays", 10, 501, "bz2", ["sha256"], None)
    return cases


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _write_case(case: dict, root: str) -> dict:
    from streaming import MDSWriter
    from streaming.base.compression import decompress
    from streaming.base.format import reader_from_json

    out = os.path.join(root, case["name"])
    samples = samples_mod.make_samples(case["schema"], case["count"], case["seed"])
    columns = samples_mod.SCHEMAS[case["schema"]]
    with MDSWriter(out=out, columns=columns, compression=case["compression"],
                   hashes=case["hashes"] or None, size_limit=case["size_limit"]) as writer:
        for sample in samples:
            writer.write(sample)
    files = {name: _b64(open(os.path.join(out, name), "rb").read())
             for name in sorted(os.listdir(out))}
    index = json.load(open(os.path.join(out, "index.json")))
    decoded = []
    for shard in index["shards"]:
        if shard["zip_data"]:
            zip_path = os.path.join(out, shard["zip_data"]["basename"])
            raw = decompress(shard["compression"], open(zip_path, "rb").read())
            with open(os.path.join(out, shard["raw_data"]["basename"]), "wb") as fp:
                fp.write(raw)
        reader = reader_from_json(out, None, shard)
        for i in range(reader.samples):
            sample = reader[i]
            decoded.append([[k, samples_mod.describe(v)] for k, v in sample.items()])
    return {**case, "columns": columns, "files": files, "decoded": decoded}


def _codecs() -> dict:
    from streaming.base.compression import compress, get_compressions
    from streaming.base.format.mds.encodings import get_mds_encodings
    from streaming.base.hashing import get_hash, get_hashes
    from streaming.base.util import bytes_to_int

    inputs = [b"", b"hello world", bytes(range(256)) * 40,
              (np.arange(5000, dtype=np.int32) % 97).tobytes()]
    algos = ["zstd", "zstd:1", "zstd:7", "zstd:22", "gz", "gz:0", "gz:5", "bz2", "bz2:1", "br",
             "br:0", "br:5", "snappy"]
    compressed = {algo: [_b64(compress(algo, data)) for data in inputs] for algo in algos}
    big = (np.arange(1_000_000, dtype=np.int32) % 1000).tobytes()
    zstd_big = {algo: hashlib.md5(compress(algo, big)).hexdigest() for algo in ("zstd:1", "zstd")}
    hashes = {algo: [get_hash(algo, data) for data in inputs] for algo in sorted(get_hashes())}
    sizes = {}
    for text in ["100", "100b", "1kb", "1.5KB", " 64mb ", "2gb", "1tb", 77, 3.9, "0.5kb"]:
        sizes[repr(text)] = bytes_to_int(text)
    bad_sizes = []
    for text in ["abc", "1xb", "-5", "kb", "1.2.3mb"]:
        try:
            bytes_to_int(text)
        except ValueError:
            bad_sizes.append(text)
    import zstd

    return {
        "inputs": [_b64(x) for x in inputs],
        "compressed": compressed,
        "zstd_big_md5": zstd_big,
        # zstd's bytes for large inputs change with libzstd's version (not its format).
        "zstd_library": zstd.ZSTD_version(),
        "hashes": hashes,
        "compressions": sorted(get_compressions()),
        "hash_names": sorted(get_hashes()),
        "encodings": sorted(get_mds_encodings()),
        "sizes": sizes,
        "bad_sizes": bad_sizes,
    }


def generate(outdir: pathlib.Path) -> None:
    gzip.time = types.SimpleNamespace(time=lambda: GZIP_MTIME)  # deterministic gzip headers
    root = tempfile.mkdtemp()
    try:
        cases = [_write_case(case, root) for case in _cases()]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    (outdir / "writers.json").write_text(json.dumps(cases, indent=0, sort_keys=True))
    (outdir / "codecs.json").write_text(json.dumps(_codecs(), indent=0, sort_keys=True))
