"""``streaming verify``: check a local dataset's files, sizes, hashes and sample counts."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", help="local dataset directory (holding index.json)")
    parser.add_argument("--split", default=None, help="sub-directory of DATASET to check")


def run(args: argparse.Namespace) -> int:
    import sys

    from streaming.format.check import verify_dataset

    problems, counts = verify_dataset(args.dataset, args.split, progress=None)
    for line in problems:
        print(line, file=sys.stderr)
    summary = (
        f"{counts['shards']} shards, {counts['samples']} samples, {counts['files']} files, "
        f"{counts['hashes']} hashes checked"
    )
    if problems:
        print(f"FAILED: {len(problems)} problem(s) in {args.dataset} ({summary})", file=sys.stderr)
        return 1
    print(f"OK: {args.dataset}: {summary}")
    return 0
