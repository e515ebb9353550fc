"""``python -m streaming``: the command line (see ``streaming.cli``)."""

from streaming.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
