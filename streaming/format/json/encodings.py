"""Column types of the JSON shard format: ``str``, ``int`` and ``float`` (type checks only).

JSON shards store values as JSON text, so an encoding only checks that a value has the declared
Python type before it is written; nothing is converted.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EncodingTypeError", "is_json_encoded", "is_json_encoding"]


class EncodingTypeError(AttributeError, ValueError):
    """A value does not have the Python type its column's encoding declares.

    Subclasses ``AttributeError`` because the reference raises that, and ``ValueError`` because
    that is what the error is.
    """


class Encoding:
    """A JSON/XSV column type: the Python type its values must be instances of."""

    python_type: type = object

    @classmethod
    def is_encoded(cls, obj: Any) -> bool:
        """Check that ``obj`` has this encoding's Python type.

        Args:
            obj (Any): The value.

        Returns:
            bool: ``True`` (a mismatch raises instead).

        Raises:
            EncodingTypeError: ``obj`` is not an instance of the type.
        """
        return cls._validate(obj, cls.python_type)

    @staticmethod
    def _validate(data: Any, expected_type: Any) -> bool:
        if not isinstance(data, expected_type):
            raise EncodingTypeError(
                f"data should be of type {expected_type}, but instead, found as {type(data)}"
            )
        return True


class Str(Encoding):
    """Store str."""

    python_type = str


class Int(Encoding):
    """Store int (``bool`` passes too, being an ``int`` subclass, as in the reference)."""

    python_type = int


class Float(Encoding):
    """Store float (an ``int`` does not pass, as in the reference)."""

    python_type = float


_encodings: dict[str, type[Encoding]] = {"str": Str, "int": Int, "float": Float}


def is_json_encoded(encoding: str, value: Any) -> bool:
    """Check that a value has the Python type of a JSON column encoding.

    Args:
        encoding (str): The encoding (``str``, ``int`` or ``float``).
        value (Any): The value.

    Returns:
        bool: ``True`` (a mismatch raises instead).

    Raises:
        KeyError: Unknown encoding.
        EncodingTypeError: The value has the wrong type (an ``AttributeError`` and a
            ``ValueError``).
    """
    return _encodings[encoding].is_encoded(value)


def is_json_encoding(encoding: str) -> bool:
    """Get whether the given encoding is supported by the JSON format.

    Args:
        encoding (str): Encoding.

    Returns:
        bool: Whether encoding is supported.
    """
    return encoding in _encodings
