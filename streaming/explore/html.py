"""HTML views for notebooks: indexes, shards, samples and StreamingDatasets.

Every value that comes from a dataset is HTML-escaped. Images (Pillow images, or the encoded
bytes of ``jpeg``/``png`` columns) become inline base64 ``<img>`` thumbnails; arrays are
summarized by shape, dtype and their first few values; long strings are cut.

Objects display themselves through ``_repr_html_`` methods that call the ``render_*`` functions
here; :func:`render_html` picks the right one for any supported object.
"""

from __future__ import annotations

import base64
import html
import io
import json
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from streaming.explore._fmt import (
    format_bytes,
    format_count,
    is_ndarray,
    is_pil_image,
    summarize_array,
    truncate,
)

if TYPE_CHECKING:  # pragma: no cover
    from streaming.explore.index import IndexView, ShardInfo

__all__ = [
    "render_dataset",
    "render_html",
    "render_index",
    "render_sample",
    "render_samples",
    "render_shard_info",
    "render_value",
]

# Thumbnail bounding box, in pixels.
THUMBNAIL = (128, 128)
# Encoded images larger than this are not embedded raw when Pillow can't shrink them.
MAX_RAW_IMAGE_BYTES = 256 * 1024
# Rows of a shard table shown before eliding the middle.
MAX_SHARD_ROWS = 20
# Images of a list-of-images value shown inline.
MAX_LIST_IMAGES = 8

_IMAGE_ENCODINGS = {"jpeg": "image/jpeg", "png": "image/png"}

_STYLE = (
    "<style>"
    ".sstream{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px}"
    ".sstream table{border-collapse:collapse;margin:4px 0}"
    ".sstream th,.sstream td{border:1px solid #ddd;padding:2px 6px;text-align:left;"
    "vertical-align:top}"
    ".sstream th{background:rgba(127,127,127,.12)}"
    ".sstream td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".sstream .muted{color:#888}"
    ".sstream code{white-space:pre-wrap}"
    "</style>"
)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int] = frozenset()
           ) -> str:
    """An HTML table; cells are already-rendered HTML, headers are escaped here."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _wrap(title: str, *parts: str) -> str:
    return f'{_STYLE}<div class="sstream"><b>{_e(title)}</b>{"".join(parts)}</div>'


def _img_tag(data: bytes, mime: str, alt: str, caption: str) -> str:
    b64 = base64.b64encode(data).decode("ascii")
    return (
        f'<img src="data:{mime};base64,{b64}" alt="{_e(alt)}" '
        f'style="max-width:{THUMBNAIL[0]}px;max-height:{THUMBNAIL[1]}px"/>'
        f'<br/><span class="muted">{_e(caption)}</span>'
    )


def _pil_thumbnail(image: Any, alt: str) -> str:
    caption = f"{image.width}×{image.height} {image.mode}"
    thumb = image.copy()
    thumb.thumbnail(THUMBNAIL)
    if thumb.mode not in ("RGB", "RGBA", "L", "LA", "P", "1"):
        thumb = thumb.convert("RGBA" if "A" in thumb.mode else "RGB")
    out = io.BytesIO()
    thumb.save(out, format="PNG")
    return _img_tag(out.getvalue(), "image/png", alt, caption)


def _encoded_image(data: bytes, encoding: str) -> str:
    """A thumbnail of encoded jpeg/png bytes: shrunk by Pillow if present, else embedded."""
    try:
        from PIL import Image
    except ImportError:
        if len(data) > MAX_RAW_IMAGE_BYTES:
            return (
                f'<span class="muted">{_e(encoding)} image, {_e(format_bytes(len(data)))} '
                f"(install Pillow for a thumbnail)</span>"
            )
        return _img_tag(data, _IMAGE_ENCODINGS[encoding], encoding, f"{encoding}, "
                        f"{format_bytes(len(data))}")
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            return _pil_thumbnail(image, encoding)
    except Exception as err:  # a corrupt image is shown as such, not raised from a repr
        return f'<span class="muted">unreadable {_e(encoding)} image: {_e(err)}</span>'


def render_value(value: Any, encoding: str | None = None) -> str:
    """Render one sample value as an HTML fragment.

    Args:
        value (Any): The decoded value (or encoded bytes, for image columns read raw).
        encoding (str, optional): The column's encoding, used to recognize encoded images.

    Returns:
        str: Escaped HTML.
    """
    base = (encoding or "").split(":")[0]
    if is_pil_image(value):
        return _pil_thumbnail(value, base or "image")
    if isinstance(value, (bytes, bytearray, memoryview)) and base in _IMAGE_ENCODINGS:
        return _encoded_image(bytes(value), base)
    if isinstance(value, list) and value and all(is_pil_image(v) for v in value):
        shown = "".join(
            f'<span style="display:inline-block;margin-right:4px">{_pil_thumbnail(v, base)}</span>'
            for v in value[:MAX_LIST_IMAGES]
        )
        more = len(value) - MAX_LIST_IMAGES
        tail = f'<span class="muted">… {more} more</span>' if more > 0 else ""
        return shown + tail
    if is_ndarray(value):
        head, items = summarize_array(value)
        return f"<code>{_e(head)}</code><br/><code>{_e(items)}</code>"
    undecoded = getattr(value, "__sstream_undecoded__", None)
    if undecoded is not None:
        return f'<span class="muted">{_e(undecoded)}</span>'
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        more = "…" if len(data) > 16 else ""
        return f"<code>bytes[{len(data):,}] {_e(data[:16].hex())}{more}</code>"
    if isinstance(value, str):
        return _e(truncate(value))
    if isinstance(value, (dict, list)):
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            text = repr(value)
        return f"<code>{_e(truncate(text))}</code>"
    if hasattr(value, "item") and hasattr(value, "dtype"):  # a NumPy scalar
        value = value.item()
    return _e(truncate(str(value) if isinstance(value, (int, float)) else repr(value)))


def render_sample(
    sample: Mapping[str, Any],
    encodings: Mapping[str, str] | None = None,
    title: str = "sample",
) -> str:
    """Render one sample as a two-column table (column, value).

    Args:
        sample (Mapping[str, Any]): Column name to value.
        encodings (Mapping[str, str], optional): Column name to encoding.
        title (str): Heading.

    Returns:
        str: HTML.
    """
    encodings = encodings or {}
    rows = [
        (f"<b>{_e(k)}</b>", _e(encodings.get(k, "")), render_value(v, encodings.get(k)))
        for k, v in sample.items()
    ]
    return _wrap(title, _table(["column", "encoding", "value"], rows))


def render_samples(
    samples: Sequence[Mapping[str, Any]],
    encodings: Mapping[str, str] | None = None,
    first_index: int = 0,
    title: str | None = None,
) -> str:
    """Render samples as a table with one row per sample and one column per field.

    Args:
        samples (Sequence[Mapping[str, Any]]): The samples.
        encodings (Mapping[str, str], optional): Column name to encoding.
        first_index (int): Dataset index of the first sample, shown in the first column.
        title (str, optional): Heading.

    Returns:
        str: HTML.
    """
    encodings = encodings or {}
    names: list[str] = list(encodings)
    for sample in samples:
        names.extend(k for k in sample if k not in names)
    rows = [
        [_e(first_index + i)] + [
            render_value(s[n], encodings.get(n)) if n in s else "" for n in names
        ]
        for i, s in enumerate(samples)
    ]
    title = title or f"{len(samples):,} samples"
    return _wrap(title, _table(["#", *names], rows, numeric={0}))


def _summary_rows(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in pairs)
    return f"<table><tbody>{rows}</tbody></table>"


def _columns_table(columns: Sequence[Any]) -> str:
    rows = [(_e(c.name), _e(c.encoding), _e("variable" if c.size is None else c.size))
            for c in columns]
    return _table(["column", "encoding", "size (bytes)"], rows)


def _shard_rows(shards: Sequence[ShardInfo], hashes: Sequence[str]) -> list[list[str]]:
    rows = []
    for s in shards:
        rows.append([
            _e(s.index), _e(s.basename), _e(format_count(s.samples)),
            _e(format_count(s.first_sample)), _e(format_bytes(s.raw_bytes)),
            _e(s.zip_basename or "-"), _e(format_bytes(s.zip_bytes)), _e(s.compression or "-"),
            *(f"<code>{_e(s.raw_hashes.get(h, '-'))}</code>" for h in hashes),
        ])
    return rows


def render_index(index: IndexView, max_rows: int = MAX_SHARD_ROWS) -> str:
    """Render a dataset index: totals, column schema and the shard table (middle elided).

    Args:
        index (IndexView): The index.
        max_rows (int): Shard rows to show; beyond it the first and last halves are shown.

    Returns:
        str: HTML.
    """
    hashes = index.hash_algorithms
    pairs: list[tuple[str, Any]] = [
        ("location", index.url + (f" (split {index.split})" if index.split else "")),
        ("format", ", ".join(index.formats) or "-"),
        ("shards", format_count(index.num_shards)),
        ("samples", format_count(index.num_samples)),
        ("raw size", format_bytes(index.raw_bytes)),
        ("compressed size", format_bytes(index.zip_bytes)),
        ("compression", ", ".join(str(c) for c in index.compressions) or "-"),
        ("hashes", ", ".join(hashes) or "-"),
    ]
    if not index.consistent_schema:
        pairs.append(("schema", "differs between shards; showing shard 0's"))
    shards = index.shards
    headers = ["shard", "basename", "samples", "first sample", "raw", "zip basename", "zip",
               "compression", *(f"raw {h}" for h in hashes)]
    numeric = {0, 2, 3, 4, 6}
    if len(shards) <= max_rows:
        table = _table(headers, _shard_rows(shards, hashes), numeric)
    else:
        half = max(max_rows // 2, 1)
        rows = _shard_rows(shards[:half], hashes)
        hidden = len(shards) - 2 * half
        rows.append([f'<span class="muted">… {hidden:,} more shards …</span>']
                    + [""] * (len(headers) - 1))
        rows.extend(_shard_rows(shards[-half:], hashes))
        table = _table(headers, rows, numeric)
    return _wrap(
        "streaming dataset index",
        _summary_rows(pairs),
        "<b>columns</b>",
        _columns_table(index.columns),
        "<b>shards</b>",
        table,
    )


def render_shard_info(shard: ShardInfo, extra: str = "") -> str:
    """Render one shard's index entry (and optionally more HTML, e.g. its first samples).

    Args:
        shard (ShardInfo): The shard.
        extra (str): HTML appended after the shard's details.

    Returns:
        str: HTML.
    """
    pairs: list[tuple[str, Any]] = [
        ("format", shard.format),
        ("samples", format_count(shard.samples)),
        ("first sample", format_count(shard.first_sample)),
        ("raw file", f"{shard.basename} ({format_bytes(shard.raw_bytes)})"),
        ("compressed file", f"{shard.zip_basename} ({format_bytes(shard.zip_bytes)})"
         if shard.zip_basename else "-"),
        ("compression", shard.compression or "-"),
    ]
    if shard.meta_basename:
        pairs.append(("meta file", f"{shard.meta_basename} ({format_bytes(shard.meta_bytes)})"))
    for algo in shard.hashes:
        pairs.append((f"raw {algo}", shard.raw_hashes.get(algo, "-")))
        if shard.zip_basename:
            pairs.append((f"zip {algo}", shard.zip_hashes.get(algo, "-")))
    return _wrap(f"shard {shard.index}", _summary_rows(pairs), "<b>columns</b>",
                 _columns_table(shard.columns), extra)


def render_dataset(dataset: Any, max_rows: int = MAX_SHARD_ROWS) -> str:
    """Render a :class:`streaming.StreamingDataset` (or anything shaped like one).

    Shows the arguments that decide what is read and in which order, and one row per stream
    (remote, local, split, shards, samples, choose/repeat). Reads only attributes the dataset
    already holds: it never downloads anything.

    Args:
        dataset (StreamingDataset): The dataset.
        max_rows (int): Stream rows to show.

    Returns:
        str: HTML.
    """
    def get(name: str, default: Any = None) -> Any:
        try:
            return getattr(dataset, name, default)
        except Exception:  # a property that fails must not break the display
            return default

    pairs: list[tuple[str, Any]] = []
    for label, attr in (
        ("samples", "num_samples"), ("shards", "num_shards"), ("epoch size", "epoch_size"),
        ("batch size", "batch_size"), ("shuffle", "shuffle"), ("shuffle algo", "shuffle_algo"),
        ("shuffle seed", "shuffle_seed"), ("shuffle block size", "shuffle_block_size"),
        ("partition algo", "partition_algo"), ("num canonical nodes", "num_canonical_nodes"),
        ("sampling method", "sampling_method"), ("batching method", "batching_method"),
        ("predownload", "predownload"), ("cache limit", "cache_limit"),
    ):
        value = get(attr)
        if value is None and attr == "num_shards":
            shards = get("shards")
            value = len(shards) if shards is not None else None
        if value is not None:
            counted = attr in ("num_samples", "num_shards", "epoch_size")
            pairs.append((label, format_count(int(value)) if counted else value))
    streams = get("streams") or []
    offsets = get("sample_offset_per_stream")
    shards_per_stream = get("shards_per_stream")
    samples_per_stream = get("samples_per_stream")
    rows = []
    for i, stream in enumerate(list(streams)[:max_rows]):
        def sget(name: str, stream: Any = stream) -> Any:
            try:
                return getattr(stream, name, None)
            except Exception:
                return None
        n_shards = shards_per_stream[i] if shards_per_stream is not None else None
        n_samples = samples_per_stream[i] if samples_per_stream is not None else None
        rows.append([
            _e(i), _e(sget("remote") or "-"), _e(sget("local") or "-"), _e(sget("split") or "-"),
            _e(format_count(int(n_shards)) if n_shards is not None else "-"),
            _e(format_count(int(n_samples)) if n_samples is not None else "-"),
            _e(format_count(int(offsets[i])) if offsets is not None else "-"),
            _e(sget("proportion") if sget("proportion") is not None else "-"),
            _e(sget("repeat") if sget("repeat") is not None else "-"),
            _e(sget("choose") if sget("choose") is not None else "-"),
        ])
    parts = [_summary_rows(pairs)]
    if rows:
        parts += ["<b>streams</b>", _table(
            ["stream", "remote", "local", "split", "shards", "samples", "first sample",
             "proportion", "repeat", "choose"], rows, numeric={0, 4, 5, 6})]
        if len(streams) > max_rows:
            parts.append(f'<span class="muted">… {len(streams) - max_rows:,} more streams</span>')
    return _wrap(type(dataset).__name__, *parts)


def render_html(obj: Any) -> str:
    """Render any supported object: an index, shard, sample(s), a StreamingDataset or a dict.

    Args:
        obj (Any): The object.

    Returns:
        str: HTML.
    """
    method = getattr(obj, "_repr_html_", None)
    if method is not None and not isinstance(obj, type):
        out = method()
        if out is not None:
            return out
    if isinstance(obj, Mapping):
        return render_sample(obj)
    if hasattr(obj, "streams") and hasattr(obj, "num_samples"):
        return render_dataset(obj)
    return _wrap(type(obj).__name__, render_value(obj))
