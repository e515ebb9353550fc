"""``streaming explore URL``: describe a dataset in the terminal without downloading it.

Prints the index summary, column schema and shard table (``index.json`` only); ``--head N`` and
``--sample I`` also read samples, fetching only the shards that hold them; ``--json`` prints the
totals as JSON for scripts.
"""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the subcommand's arguments.

    Args:
        parser (argparse.ArgumentParser): The subcommand's parser.
    """
    parser.add_argument("url", help="dataset directory or URL (s3://, gs://, hf://, ...)")
    parser.add_argument("--split", default=None, help="split sub-directory")
    parser.add_argument("--shards", type=int, default=10, metavar="N",
                        help="shard rows to print (default: 10; 0 for all)")
    parser.add_argument("--head", type=int, default=0, metavar="N",
                        help="also print the first N samples")
    parser.add_argument("--sample", type=int, action="append", default=[], metavar="I",
                        help="also print sample I (repeatable; negative counts from the end)")
    parser.add_argument("--json", action="store_true", help="print the totals as JSON")
    parser.add_argument("--allow-unsafe-types", action="store_true",
                        help="unpickle pkl columns (runs code from the dataset)")


def run(args: argparse.Namespace) -> int:
    """Run ``streaming explore``.

    Args:
        args (argparse.Namespace): Parsed arguments.

    Returns:
        int: Exit code.
    """
    from streaming.explore.dataset import DatasetView
    from streaming.explore.index import open_index
    from streaming.explore.terminal import render_index_text, render_samples_text

    index = open_index(args.url, args.split)
    if args.json:
        print(json.dumps(index.summary(), indent=2))
    else:
        rows = args.shards if args.shards > 0 else max(index.num_shards, 1)
        print(render_index_text(index, max_rows=rows))
    if args.head or args.sample:
        with DatasetView(index, allow_unsafe_types=args.allow_unsafe_types) as ds:
            if args.head:
                rows = ds.head(args.head)
                print()
                print(render_samples_text(rows, first_index=rows.first_index))
            for i in args.sample:
                print()
                print(repr(ds.sample(i)))
    return 0
