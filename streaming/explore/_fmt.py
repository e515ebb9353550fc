"""Small text formatters shared by the HTML and terminal views."""

from __future__ import annotations

import sys
from typing import Any

# Longest string shown in full in a table cell; longer ones are cut with a note of their length.
MAX_TEXT = 200
# Array elements shown in an ndarray summary.
MAX_ARRAY_ITEMS = 8


def format_bytes(n: int | None) -> str:
    """Human-readable byte count: ``1.5 MiB``; ``-`` for ``None``."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def format_count(n: int | None) -> str:
    """Integer with thousands separators; ``-`` for ``None``."""
    return "-" if n is None else f"{n:,}"


def truncate(text: str, limit: int = MAX_TEXT) -> str:
    """Cut ``text`` to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} chars)"


def is_pil_image(value: Any) -> bool:
    """Whether ``value`` is a Pillow image, without importing Pillow when nobody else has."""
    module = sys.modules.get("PIL.Image")
    return module is not None and isinstance(value, module.Image)


def is_ndarray(value: Any) -> bool:
    """Whether ``value`` is a NumPy array, without importing NumPy when nobody else has."""
    module = sys.modules.get("numpy")
    return module is not None and isinstance(value, module.ndarray)


def summarize_array(value: Any) -> tuple[str, str]:
    """``("ndarray shape=(2, 3) dtype=float32", "[0.0, 1.0, …]")`` for an array."""
    flat = value.reshape(-1)
    if value.dtype.kind in "fc":  # short, like NumPy prints them, not float64 reprs
        head = ", ".join(f"{x.item():.6g}" for x in flat[:MAX_ARRAY_ITEMS])
    else:
        head = ", ".join(repr(x.item()) for x in flat[:MAX_ARRAY_ITEMS])
    more = ", …" if flat.size > MAX_ARRAY_ITEMS else ""
    return f"ndarray shape={tuple(value.shape)} dtype={value.dtype}", f"[{head}{more}]"


def summarize_value(value: Any) -> str:
    """A one-line text rendering of a sample value for terminals."""
    if is_pil_image(value):
        return f"<image {value.width}x{value.height} {value.mode}>"
    if is_ndarray(value):
        head, items = summarize_array(value)
        return f"{head} {items}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return f"bytes[{len(data):,}] {data[:16].hex()}{'…' if len(data) > 16 else ''}"
    if isinstance(value, str):
        return repr(truncate(value, 60))
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):
        return repr(value.item())
    if isinstance(value, list) and value and all(is_pil_image(v) for v in value):
        return f"<{len(value)} images>"
    return truncate(repr(value), 60)
