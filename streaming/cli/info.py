"""``streaming info``: sum up a local dataset from its index (shards, samples, columns, sizes)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dataset", help="local dataset directory (holding index.json)")
    parser.add_argument("--split", default=None, help="sub-directory of DATASET")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    import json

    from streaming.format.check import format_summary, summarize_dataset

    summary = summarize_dataset(args.dataset, args.split)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0
