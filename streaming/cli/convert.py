"""``streaming convert``: JSONL / Parquet / CSV / TSV files to an MDS dataset."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="input files, in order")
    parser.add_argument("-o", "--out", required=True, help="output directory (local)")
    parser.add_argument(
        "--columns",
        default=None,
        help="MDS columns: 'name:encoding,...' or a JSON object (default: inferred from the "
        "first input; other input columns are ignored when given)",
    )
    parser.add_argument(
        "--format", dest="kind", choices=["jsonl", "parquet", "csv", "tsv"], default=None,
        help="input format (default: from each file's extension)",
    )
    parser.add_argument("--compression", default=None, help="e.g. zstd, zstd:7, br, snappy")
    parser.add_argument("--hashes", default=None, help="comma-separated, e.g. sha1,xxh64")
    parser.add_argument("--size-limit", default="64mb", help="shard size limit (default 64mb)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None)
    progress.add_argument("--no-progress", dest="progress", action="store_false")


def parse_columns(text: str) -> dict[str, str]:
    """Parse ``--columns``: a JSON object, or ``name:encoding`` items separated by commas.

    Args:
        text (str): The option's value.

    Returns:
        Dict[str, str]: Column name -> encoding.

    Raises:
        ValueError: Malformed text.
    """
    text = text.strip()
    if text.startswith("{"):
        obj = json.loads(text)
        if not isinstance(obj, dict) or not all(isinstance(v, str) for v in obj.values()):
            raise ValueError(f"--columns: expected an object of name -> encoding, got {text}")
        return obj
    columns = {}
    for item in text.split(","):
        name, sep, encoding = item.strip().partition(":")
        if not sep or not name or not encoding:
            raise ValueError(f"--columns: expected name:encoding, got {item!r}")
        columns[name] = encoding
    return columns


def run(args: argparse.Namespace) -> int:
    from streaming.converters.files import convert_files

    columns = parse_columns(args.columns) if args.columns else None
    hashes = [h.strip() for h in args.hashes.split(",")] if args.hashes else None
    from streaming.explore.progress import progress_bar

    # --progress / --no-progress win; otherwise STREAMING_PROGRESS, then whether stderr is a tty.
    bar = progress_bar(desc="convert", unit=" rows", unit_scale=True,
                       disable=None if args.progress is None else not args.progress)
    try:
        result = convert_files(
            args.inputs,
            args.out,
            columns=columns,
            kind=args.kind,
            compression=args.compression,
            hashes=hashes,
            size_limit=args.size_limit,
            overwrite=args.overwrite,
            progress=bar.update,
        )
    except TypeError as err:  # MDSWriter's error for an unknown encoding
        raise ValueError(str(err)) from err
    finally:
        bar.close()
    cols = ", ".join(f"{k}:{v}" for k, v in result["columns"].items())
    print(f"wrote {result['samples']} samples in {result['shards']} shards to {args.out} ({cols})")
    return 0
