"""Plain-text views for terminals: what ``repr()`` of an index, shard or sample prints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

from streaming.explore._fmt import format_bytes, format_count, summarize_value

if TYPE_CHECKING:  # pragma: no cover
    from streaming.explore.index import IndexView, ShardInfo

__all__ = [
    "format_table",
    "render_index_text",
    "render_sample_text",
    "render_samples_text",
    "render_shard_text",
    "render_text",
]

# Shard rows printed before eliding the middle.
MAX_SHARD_ROWS = 10
# Widest cell printed in a table.
MAX_CELL = 48


def _cell(value: Any) -> str:
    text = str(value).replace("\n", "\\n")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
                 right: Sequence[int] = ()) -> str:
    """Format rows as an aligned text table.

    Args:
        headers (Sequence[str]): Column headings.
        rows (Sequence[Sequence[Any]]): Cell values (converted with ``str``).
        right (Sequence[int]): Indexes of columns to right-align (numbers).

    Returns:
        str: The table, one line per row, no trailing newline.
    """
    cells = [[_cell(h) for h in headers]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells if i < len(r)) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        parts = [
            (c.rjust(widths[i]) if i in right else c.ljust(widths[i])) for i, c in enumerate(row)
        ]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _shard_row(s: ShardInfo) -> list[Any]:
    return [s.index, s.basename, format_count(s.samples), format_bytes(s.raw_bytes),
            format_bytes(s.zip_bytes), s.compression or "-"]


def render_index_text(index: IndexView, max_rows: int = MAX_SHARD_ROWS) -> str:
    """Describe an index for a terminal: totals, columns and the shard table (middle elided).

    Args:
        index (IndexView): The index.
        max_rows (int): Shard rows to show.

    Returns:
        str: Text.
    """
    where = index.url + (f" (split {index.split})" if index.split else "")
    zipped = index.zip_bytes
    lines = [
        f"streaming dataset index: {where}",
        f"  {format_count(index.num_samples)} samples in {format_count(index.num_shards)} "
        f"{'/'.join(index.formats) or '-'} shards, {format_bytes(index.raw_bytes)} raw"
        + (f", {format_bytes(zipped)} compressed" if zipped is not None else ""),
        f"  compression: {', '.join(c or 'none' for c in index.compressions) or '-'}; "
        f"hashes: {', '.join(index.hash_algorithms) or '-'}",
    ]
    if not index.consistent_schema:
        lines.append("  warning: the schema differs between shards; showing shard 0's")
    lines.append("")
    lines.append(format_table(
        ["column", "encoding", "size"],
        [[c.name, c.encoding, "variable" if c.size is None else c.size] for c in index.columns],
    ))
    lines.append("")
    shards = index.shards
    headers = ["shard", "basename", "samples", "raw", "zip", "compression"]
    if len(shards) <= max_rows:
        rows = [_shard_row(s) for s in shards]
    else:
        half = max(max_rows // 2, 1)
        rows = [_shard_row(s) for s in shards[:half]]
        rows.append(["…", f"{len(shards) - 2 * half:,} more shards", "", "", "", ""])
        rows += [_shard_row(s) for s in shards[-half:]]
    lines.append(format_table(headers, rows, right=(0, 2, 3, 4)))
    return "\n".join(lines)


def render_shard_text(shard: ShardInfo) -> str:
    """Describe one shard's index entry for a terminal.

    Args:
        shard (ShardInfo): The shard.

    Returns:
        str: Text.
    """
    lines = [
        f"shard {shard.index} ({shard.format}): {format_count(shard.samples)} samples from "
        f"#{format_count(shard.first_sample)}",
        f"  raw: {shard.basename} ({format_bytes(shard.raw_bytes)})",
    ]
    if shard.zip_basename:
        lines.append(f"  zip: {shard.zip_basename} ({format_bytes(shard.zip_bytes)}, "
                     f"{shard.compression})")
    if shard.meta_basename:
        lines.append(f"  meta: {shard.meta_basename} ({format_bytes(shard.meta_bytes)})")
    for algo in shard.hashes:
        lines.append(f"  {algo}: {shard.raw_hashes.get(algo, '-')}")
    return "\n".join(lines)


def render_sample_text(sample: Mapping[str, Any], title: str = "sample") -> str:
    """Describe one sample for a terminal, one line per column.

    Args:
        sample (Mapping[str, Any]): Column name to value.
        title (str): First line.

    Returns:
        str: Text.
    """
    width = max((len(k) for k in sample), default=0)
    return "\n".join([title] + [f"  {k.ljust(width)}  {summarize_value(v)}"
                                for k, v in sample.items()])


def render_samples_text(samples: Sequence[Mapping[str, Any]], first_index: int = 0) -> str:
    """Describe samples for a terminal as a table (one row per sample).

    Args:
        samples (Sequence[Mapping[str, Any]]): The samples.
        first_index (int): Dataset index of the first sample.

    Returns:
        str: Text.
    """
    names: list[str] = []
    for s in samples:
        names.extend(k for k in s if k not in names)
    rows = [[first_index + i] + [summarize_value(s[n]) if n in s else "" for n in names]
            for i, s in enumerate(samples)]
    return format_table(["#", *names], rows, right=(0,))


def render_text(obj: Any) -> str:
    """Describe any supported object for a terminal (what ``print(obj)`` would show).

    Args:
        obj (Any): An index, shard, sample (a mapping) or anything else (``repr``).

    Returns:
        str: Text.
    """
    from streaming.explore.index import IndexView, ShardInfo

    if isinstance(obj, IndexView):
        return render_index_text(obj)
    if isinstance(obj, ShardInfo):
        return render_shard_text(obj)
    if isinstance(obj, Mapping):
        return render_sample_text(obj)
    return repr(obj)
