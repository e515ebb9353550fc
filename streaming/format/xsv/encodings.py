"""Column types of the CSV/TSV/XSV shard formats: ``str``, ``int`` and ``float`` as text."""

from __future__ import annotations

from typing import Any

from streaming.format.json.encodings import Encoding as _TypedEncoding
from streaming.format.json.encodings import EncodingTypeError

__all__ = ["EncodingTypeError", "is_xsv_encoding", "xsv_decode", "xsv_encode"]


class Encoding(_TypedEncoding):
    """An XSV column type: a Python type, and how its values turn into text and back."""

    @classmethod
    def encode(cls, obj: Any) -> str:
        """Encode a value as text.

        Args:
            obj (Any): Decoded object.

        Returns:
            str: Encoded data in string form.

        Raises:
            EncodingTypeError: ``obj`` is not an instance of the encoding's type.
        """
        cls._validate(obj, cls.python_type)
        return str(obj)

    @classmethod
    def decode(cls, obj: str) -> Any:
        """Decode text back to the value.

        Args:
            obj (str): Encoded data in string form.

        Returns:
            Any: Decoded object.
        """
        return cls.python_type(obj)


class Str(Encoding):
    """Store str."""

    python_type = str


class Int(Encoding):
    """Store int."""

    python_type = int


class Float(Encoding):
    """Store float (written with ``str()``, i.e. the shortest round-tripping repr)."""

    python_type = float


_encodings: dict[str, type[Encoding]] = {"str": Str, "int": Int, "float": Float}


def is_xsv_encoding(encoding: str) -> bool:
    """Get whether the given encoding is supported by the XSV formats.

    Args:
        encoding (str): Encoding.

    Returns:
        bool: Whether encoding is supported.
    """
    return encoding in _encodings


def xsv_encode(encoding: str, value: Any) -> str:
    """Encode a value as the text stored in an XSV shard.

    Args:
        encoding (str): Encoding name.
        value (Any): Object to encode.

    Returns:
        str: Data in string form.

    Raises:
        KeyError: Unknown encoding.
        EncodingTypeError: The value has the wrong type (an ``AttributeError`` and a
            ``ValueError``).
    """
    return _encodings[encoding].encode(value)


def xsv_decode(encoding: str, value: str) -> Any:
    """Decode the text stored in an XSV shard back to the value.

    Args:
        encoding (str): Encoding name.
        value (str): Object to decode.

    Returns:
        Any: Decoded object.
    """
    return _encodings[encoding].decode(value)
