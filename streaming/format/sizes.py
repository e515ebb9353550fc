"""Human-readable byte sizes (``"64mb"``) as used by ``size_limit`` arguments."""

from __future__ import annotations

from typing import Union

__all__ = ["bytes_to_int"]

# Binary units, as the reference: "kb" is 1024 bytes.
_UNITS = {
    "kb": 1 << 10,
    "mb": 1 << 20,
    "gb": 1 << 30,
    "tb": 1 << 40,
    "pb": 1 << 50,
    "eb": 1 << 60,
    "zb": 1 << 70,
    "yb": 1 << 80,
}


def bytes_to_int(bytes_str: Union[int, float, str]) -> int:
    """Convert a human-readable byte size to an integer.

    Args:
        bytes_str (int | float | str): A number, or text like ``"100"``, ``"100b"``,
            ``"1.5kb"``, ``"64mb"`` (case-insensitive, binary units).

    Returns:
        int: The size in bytes.

    Raises:
        ValueError: Unparseable text or unknown suffix.
    """
    if isinstance(bytes_str, (int, float)):
        return int(bytes_str)
    text = bytes_str.lower().strip()
    supported = ["b", *_UNITS]
    for suffix, scale in _UNITS.items():
        if text.endswith(suffix):
            try:
                return int(float(text[: -len(suffix)]) * scale)
            except ValueError:
                raise ValueError(
                    f"Unsupported value/suffix {text}. Supported suffix are {supported}."
                ) from None
    if text.endswith("b") and text[:-1].isdigit():
        return int(text[:-1])
    if text.isdigit():
        return int(text)
    raise ValueError(f"Unsupported value/suffix {text}. Supported suffix are {supported}.")
