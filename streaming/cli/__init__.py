"""The ``streaming`` command line: one module per subcommand, registered in ``_COMMANDS``.

Each subcommand module defines ``add_arguments(parser)`` and ``run(args) -> int``; modules are
imported only when their subcommand runs so that ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand -> (module, one-line help).
_COMMANDS: dict[str, tuple[str, str]] = {
    "quickstart": ("streaming.cli.quickstart", "write a small MDS dataset and stream it back"),
    "convert": ("streaming.cli.convert", "convert JSONL/Parquet/CSV/TSV files to an MDS dataset"),
    "merge": ("streaming.cli.merge", "merge the index.json files of sub-datasets"),
    "verify": ("streaming.cli.verify", "check a dataset's files, hashes and sample counts"),
    "info": ("streaming.cli.info", "sum up a dataset: shards, samples, columns, sizes"),
    "explore": ("streaming.explore.cli", "describe a dataset's index, shards and samples"),
}


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv (list[str], optional): Arguments without the program name. Defaults to ``sys.argv``.

    Returns:
        int: The process exit code.
    """
    parser = argparse.ArgumentParser(
        prog="streaming",
        description="shardstream: write, convert, merge, verify and explore streaming datasets.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Arguments are declared by each module itself, imported lazily on dispatch; to show them in
    # `streaming NAME --help` we import it here only when NAME is the chosen command.
    chosen = (sys.argv[1:] if argv is None else argv)[:1]
    for name, (module, help_text) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(_module=module)
        if chosen == [name]:
            importlib.import_module(module).add_arguments(p)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(importlib.import_module(args._module).run(args) or 0)
    except (ValueError, OSError, KeyError) as err:
        print(f"streaming {args.command}: error: {err}", file=sys.stderr)
        return 1
