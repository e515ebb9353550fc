"""``streaming merge``: write a root ``index.json`` that joins the indexes of sub-datasets."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="root directory (or URL) holding the sub-datasets")
    parser.add_argument(
        "indexes", nargs="*", metavar="INDEX",
        help="sub-dataset index.json files or URLs, in order (default: every index.json below "
        "OUT, sorted by path)",
    )
    parser.add_argument("--remote", default=None, help="remote copy of OUT to upload the index to")
    parser.add_argument("--download-timeout", type=int, default=60)


def run(args: argparse.Namespace) -> int:
    import json
    import os

    from streaming.format.merge import merge_index
    from streaming.storage.filesystem import split_scheme

    if not split_scheme(args.out)[0] and not os.path.isdir(args.out):
        raise FileNotFoundError(f"{args.out}: no such directory")
    out = (args.out, args.remote) if args.remote else args.out
    if args.indexes:
        merge_index(list(args.indexes), out, True, args.download_timeout)
    else:
        merge_index(out, True, args.download_timeout)
    if split_scheme(args.out)[0]:
        print(f"merged the sub-dataset indexes into {args.out.rstrip('/')}/index.json")
        return 0
    path = os.path.join(args.out, "index.json")
    if not os.path.isfile(path):
        raise ValueError(f"{args.out}: found no sub-dataset index.json to merge")
    with open(path) as fp:
        shards = json.load(fp)["shards"]
    print(f"merged {len(shards)} shards ({sum(s['samples'] for s in shards)} samples) into {path}")
    return 0
