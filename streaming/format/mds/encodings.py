"""MDS column encodings: how one column value becomes bytes in a shard, and back.

The registry ``_encodings`` maps an encoding name to an :class:`Encoding` subclass, exactly as in
the reference, so users can register their own::

    from streaming.base.format.mds.encodings import Encoding, _encodings
    _encodings['my_type'] = MyEncoding

An encoding string is ``name`` or ``name:config`` (``ndarray:int32:2048``); ``config`` is handed
to the class's ``from_str``. Every built-in encoding writes the reference's bytes (the layouts are
described on each class). ``pkl`` is the one unsafe encoding: readers refuse shards containing it
unless ``allow_unsafe_types=True``. Image encodings need Pillow (extra ``image``), imported on
first use.
"""

from __future__ import annotations

import json
import math
import pickle
import struct
from decimal import Decimal
from io import BytesIO
from typing import Any, Sequence

import numpy as np
from numpy import typing as npt

__all__ = [
    "Encoding",
    "get_mds_encoded_size",
    "get_mds_encodings",
    "is_mds_encoding",
    "is_mds_encoding_safe",
    "mds_decode",
    "mds_encode",
]


class EncodingTypeError(AttributeError, TypeError):
    """A value of the wrong type was given to an encoding.

    An ``AttributeError`` for compatibility with the reference, and a ``TypeError`` because
    that is what it is.
    """


def _pil_image() -> Any:
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError(
            "Pillow is needed for image encodings (pil, jpeg, png, jpegarray, list[...]); "
            "install it with `pip install 'shardstream[image]'`"
        ) from err
    return Image


class Encoding:
    """Encodes and decodes between objects of a certain type and raw bytes.

    Subclasses implement :meth:`encode` and :meth:`decode`, and set ``size`` to the fixed
    encoded size in bytes when every value encodes to the same length (``None`` otherwise).
    """

    size: int | None = None  # Fixed size in bytes of encoded data (None if variable size).

    def encode(self, obj: Any) -> bytes:
        """Encode the given data from the original object to bytes.

        Args:
            obj (Any): Decoded object.

        Returns:
            bytes: Encoded data.
        """
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:
        """Decode the given data from bytes to the original object.

        Args:
            data (bytes): Encoded data.

        Returns:
            Any: Decoded object.
        """
        raise NotImplementedError

    @staticmethod
    def _validate(data: Any, expected_type: Any) -> None:
        if not isinstance(data, expected_type):
            raise EncodingTypeError(
                f"data should be of type {expected_type}, but instead, found as {type(data)}"
            )


class Bytes(Encoding):
    """Store bytes as they are."""

    def encode(self, obj: bytes) -> bytes:
        self._validate(obj, bytes)
        return obj

    def decode(self, data: bytes) -> bytes:
        return data


class Str(Encoding):
    """Store a str as UTF-8."""

    def encode(self, obj: str) -> bytes:
        self._validate(obj, str)
        return obj.encode("utf-8")

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8")


_INT64 = struct.Struct("<q")


class Int(Encoding):
    """Store a Python int as little-endian int64; decodes to ``int``."""

    size = 8

    def encode(self, obj: int) -> bytes:
        self._validate(obj, int)
        return np.int64(obj).tobytes()

    def decode(self, data: bytes) -> int:
        return _INT64.unpack_from(data)[0]


# Shape width code -> struct format character (uint8, uint16, uint32, uint64).
_SHAPE_CODES = "BHIQ"


class NDArray(Encoding):
    """Store a NumPy array; the dtype and the shape may each be fixed by the encoding string.

    ``ndarray``, ``ndarray:DTYPE`` or ``ndarray:DTYPE:D0,D1,...``. Layout, where the parts in
    brackets are written only when not fixed::

        [dtype code: u8] [ndim << 2 | shape width code: u8] [shape: ndim x uint{8,16,32,64}] values

    Values are the array's C-order bytes in little-endian order.

    Args:
        dtype (str, optional): The dtype, if fixed. Defaults to ``None``.
        shape (Tuple[int], optional): The shape, if fixed. Defaults to ``None``.
    """

    # Shape width code -> shape dtype.
    _int2shape_dtype = {0: "uint8", 1: "uint16", 2: "uint32", 3: "uint64"}
    _shape_dtype2int = {v: k for k, v in _int2shape_dtype.items()}

    # Value dtype code -> value dtype name.
    _int2value_dtype = {
        8: "uint8",
        9: "int8",
        16: "uint16",
        17: "int16",
        18: "float16",
        32: "uint32",
        33: "int32",
        34: "float32",
        64: "uint64",
        65: "int64",
        66: "float64",
    }
    _value_dtype2int = {v: k for k, v in _int2value_dtype.items()}
    _code2np = {k: np.dtype(v) for k, v in _int2value_dtype.items()}

    def __init__(self, dtype: str | None = None, shape: tuple[int, ...] | None = None):
        if dtype is not None and dtype not in self._value_dtype2int:
            raise ValueError(f"ndarray: unsupported dtype {dtype!r}")
        if shape is not None:
            shape = tuple(int(dim) for dim in shape)
            if not shape or any(dim < 1 for dim in shape):
                raise ValueError(f"ndarray: every dimension must be >= 1, got {shape}")
            # No array can hold more bytes than an npy_intp counts; an encoding string is
            # untrusted input, so say so here rather than let a size wrap downstream.
            itemsize = 1 if dtype is None else np.dtype(dtype).itemsize
            if math.prod(shape) * itemsize > np.iinfo(np.intp).max:
                raise ValueError(f"ndarray: shape {shape} is too large for any array")
        self.dtype = dtype
        self.shape = shape
        self._np_dtype = None if dtype is None else np.dtype(dtype)
        self.size = self._get_static_size(dtype, shape)
        # (dtype, shape) -> (header bytes, values writable from the array's memory as they are).
        self._heads: dict[tuple[Any, ...], tuple[bytes, bool]] = {}

    @classmethod
    def _get_static_size(cls, dtype: str | None, shape: tuple[int, ...] | None) -> int | None:
        if dtype is None or shape is None:
            return None
        # math.prod on Python ints: np.prod would wrap around in int64 for a huge shape.
        return math.prod(shape) * np.dtype(dtype).itemsize

    @classmethod
    def from_str(cls, text: str) -> NDArray:
        """Parse this encoding from the text after ``ndarray:``.

        Args:
            text (str): ``""``, ``"DTYPE"`` or ``"DTYPE:D0,D1,..."``.

        Returns:
            NDArray: The encoding.

        Raises:
            ValueError: Malformed text.
        """
        args = text.split(":") if text else []
        if len(args) > 2:
            raise ValueError(f"ndarray: malformed config {text!r}")
        dtype = args[0] if args else None
        shape = tuple(map(int, args[1].split(","))) if len(args) == 2 else None
        return cls(dtype, shape)

    @staticmethod
    def _rightsize_shape_dtype(shape: npt.NDArray[np.int64]) -> str:
        if len(shape) == 0:
            raise ValueError(
                "Attempting to encode a scalar with NDArray encoding. Please use a scalar encoding."
            )
        if shape.min() <= 0:
            raise ValueError("All dimensions must be greater than zero.")
        top = shape.max()
        if top < (1 << 8):
            return "uint8"
        if top < (1 << 16):
            return "uint16"
        if top < (1 << 32):
            return "uint32"
        return "uint64"

    def _head(self, dtype: np.dtype, shape: tuple[int, ...]) -> bytes:
        """Validate an array's dtype and shape; get the bytes written before its values."""
        code = self._value_dtype2int.get(dtype.name)
        if code is None:
            raise ValueError(f"Unsupported dtype: {dtype.name}.")
        if self.dtype is not None and dtype.name != self.dtype:
            raise ValueError(f"Wrong dtype: expected {self.dtype}, got {dtype.name}.")
        if 0 in shape:
            raise ValueError("Attempting to encode a numpy array with 0 elements.")
        parts = []
        if self.dtype is None:
            parts.append(bytes((code,)))
        if self.shape is None:
            ndim = len(shape)
            if ndim >= 64:
                raise ValueError(f"Array has too many axes: maximum 63, got {ndim}.")
            dims = np.array(shape, np.int64)
            shape_dtype = self._rightsize_shape_dtype(dims)
            parts.append(bytes(((ndim << 2) | self._shape_dtype2int[shape_dtype],)))
            parts.append(dims.astype(shape_dtype).tobytes())
        elif shape != self.shape:
            raise ValueError(f"Wrong shape: expected {self.shape}, got {shape}.")
        return b"".join(parts)

    def encode(self, obj: npt.NDArray) -> bytes:
        dtype = obj.dtype
        if dtype is self._np_dtype and obj.shape == self.shape:
            return obj.tobytes()  # the hot path: fully static column, native dtype
        head = self._head(dtype, obj.shape)
        if not dtype.isnative and dtype.itemsize > 1:
            # Values are stored little-endian; a byte-swapped array would decode as garbage.
            obj = obj.astype(dtype.newbyteorder("<"))
        return head + obj.tobytes()

    def encode_parts(self, obj: npt.NDArray) -> tuple[Any, ...]:
        """Encode an array as buffers whose concatenation is ``encode(obj)``, without copying.

        The header of each (dtype, shape) seen is validated and built once; a C-contiguous
        native-order array is returned as a byte view of its own memory.

        Args:
            obj (npt.NDArray): The array.

        Returns:
            Tuple[Any, ...]: ``(header bytes, byte view)``, or ``(encode(obj),)``.
        """
        if type(obj) is np.ndarray:
            key = (obj.dtype, obj.shape)
            known = self._heads.get(key)
            if known is None:
                dtype = obj.dtype
                known = (self._head(dtype, obj.shape), dtype.isnative or dtype.itemsize == 1)
                if len(self._heads) < 1024:  # bounds the cache for ragged arrays
                    self._heads[key] = known
            if known[1]:
                try:
                    return known[0], memoryview(obj).cast("B")
                except TypeError:  # not C-contiguous
                    pass
        return (self.encode(obj),)

    def decode(self, data: bytes) -> npt.NDArray:
        if self.size is not None:  # fully static column
            return np.frombuffer(data, self._np_dtype).reshape(self.shape)
        index = 0
        if self._np_dtype is not None:
            dtype = self._np_dtype
        else:
            code = data[index]
            index += 1
            dtype = self._code2np.get(code)
            if dtype is None:
                raise ValueError(f"ndarray: unknown dtype code {code}")
        if self.shape is not None:
            shape: Any = self.shape
        else:
            byte = data[index]
            index += 1
            ndim = byte >> 2
            code = _SHAPE_CODES[byte & 3]
            end = index + ndim * (1 << (byte & 3))
            if end > len(data):
                raise ValueError("ndarray: data too short for its shape header")
            shape = struct.unpack_from(f"<{ndim}{code}", data, index)
            index = end
        return np.frombuffer(data, dtype, offset=index).reshape(shape)


class Scalar(Encoding):
    """Store a NumPy scalar type; decodes to a NumPy scalar.

    Args:
        dtype (type): The NumPy scalar type.
    """

    def __init__(self, dtype: type) -> None:
        self.dtype = dtype
        self._np_dtype = np.dtype(dtype)
        self.size = self._np_dtype.itemsize

    def encode(self, obj: Any) -> bytes:
        return self.dtype(obj).tobytes()

    def decode(self, data: bytes) -> Any:
        return np.frombuffer(data, self._np_dtype, 1)[0]


class UInt8(Scalar):
    """Store uint8."""

    def __init__(self) -> None:
        super().__init__(np.uint8)


class UInt16(Scalar):
    """Store uint16."""

    def __init__(self) -> None:
        super().__init__(np.uint16)


class UInt32(Scalar):
    """Store uint32."""

    def __init__(self) -> None:
        super().__init__(np.uint32)


class UInt64(Scalar):
    """Store uint64."""

    def __init__(self) -> None:
        super().__init__(np.uint64)


class Int8(Scalar):
    """Store int8."""

    def __init__(self) -> None:
        super().__init__(np.int8)


class Int16(Scalar):
    """Store int16."""

    def __init__(self) -> None:
        super().__init__(np.int16)


class Int32(Scalar):
    """Store int32."""

    def __init__(self) -> None:
        super().__init__(np.int32)


class Int64(Scalar):
    """Store int64."""

    def __init__(self) -> None:
        super().__init__(np.int64)


class Float16(Scalar):
    """Store float16."""

    def __init__(self) -> None:
        super().__init__(np.float16)


class Float32(Scalar):
    """Store float32."""

    def __init__(self) -> None:
        super().__init__(np.float32)


class Float64(Scalar):
    """Store float64."""

    def __init__(self) -> None:
        super().__init__(np.float64)


class StrEncoding(Encoding):
    """Base class for numbers stored as their decimal text (arbitrary precision)."""


class StrInt(StrEncoding):
    """Store an int as its decimal digits."""

    def encode(self, obj: int) -> bytes:
        self._validate(obj, int)
        return str(obj).encode("utf-8")

    def decode(self, data: bytes) -> int:
        return int(data.decode("utf-8"))


class StrFloat(Encoding):
    """Store a float as its ``str()`` text."""

    def encode(self, obj: float) -> bytes:
        self._validate(obj, float)
        return str(obj).encode("utf-8")

    def decode(self, data: bytes) -> float:
        return float(data.decode("utf-8"))


class StrDecimal(Encoding):
    """Store a Decimal as its ``str()`` text."""

    def encode(self, obj: Decimal) -> bytes:
        self._validate(obj, Decimal)
        return str(obj).encode("utf-8")

    def decode(self, data: bytes) -> Decimal:
        return Decimal(data.decode("utf-8"))


_PIL_HEAD = struct.Struct("<III")


class PIL(Encoding):
    """Store a PIL image raw: ``[width: u32] [height: u32] [len(mode): u32] [mode] [pixels]``."""

    def encode(self, obj: Any) -> bytes:
        self._validate(obj, _pil_image().Image)
        mode = obj.mode.encode("utf-8")
        width, height = obj.size
        return _PIL_HEAD.pack(width, height, len(mode)) + mode + obj.tobytes()

    def decode(self, data: bytes) -> Any:
        width, height, mode_size = _PIL_HEAD.unpack_from(data)
        start = _PIL_HEAD.size + mode_size
        if start > len(data):
            raise ValueError("pil: data too short for its header")
        mode = bytes(data[_PIL_HEAD.size : start]).decode("utf-8")
        return _pil_image().frombytes(mode, (width, height), bytes(data[start:]))


class JPEG(Encoding):
    """Store a PIL image as JPEG (an image opened from a JPEG file is stored as that file)."""

    def encode(self, obj: Any) -> bytes:
        self._validate(obj, _pil_image().Image)
        from PIL.JpegImagePlugin import JpegImageFile

        filename = getattr(obj, "filename", None) if isinstance(obj, JpegImageFile) else None
        if filename:
            try:
                with open(filename, "rb") as fp:
                    return fp.read()
            except FileNotFoundError:
                pass  # the file went away: encode the pixels instead
        out = BytesIO()
        obj.save(out, format="JPEG")
        return out.getvalue()

    def decode(self, data: bytes) -> Any:
        return _pil_image().open(BytesIO(data))


class PNG(Encoding):
    """Store a PIL image as PNG."""

    def encode(self, obj: Any) -> bytes:
        self._validate(obj, _pil_image().Image)
        out = BytesIO()
        obj.save(out, format="PNG")
        return out.getvalue()

    def decode(self, data: bytes) -> Any:
        return _pil_image().open(BytesIO(data))


class Pickle(Encoding):
    """Store any picklable object. Unsafe: decoding can run arbitrary code."""

    def encode(self, obj: Any) -> bytes:
        return pickle.dumps(obj)

    def decode(self, data: bytes) -> Any:
        return pickle.loads(data)


class JSON(Encoding):
    """Store JSON-serializable data as JSON text (NumPy arrays become lists)."""

    def encode(self, obj: Any) -> bytes:
        if isinstance(obj, np.ndarray):
            obj = obj.tolist()
        return json.dumps(obj).encode("utf-8")

    def decode(self, data: bytes) -> Any:
        return json.loads(bytes(data).decode("utf-8"))


def _u32_array(values: Sequence[int]) -> bytes:
    return np.array(values, np.uint32).tobytes()


class List(Encoding):
    """Store a list of values of one element encoding.

    Layout: ``[0: u32] [count: u32] [sizes: count x u32] [elements]``.
    """

    def underlying_encoder(self) -> Encoding:
        """Get the encoding of the list elements.

        Returns:
            Encoding: The element encoding.
        """
        raise NotImplementedError

    def encode(self, obj: list) -> bytes:
        self._validate(obj, list)
        coder = self.underlying_encoder()
        elements = [coder.encode(element) for element in obj]
        head = struct.pack("<II", 0, len(elements))
        return b"".join([head, _u32_array([len(e) for e in elements]), *elements])

    def decode(self, data: bytes) -> list:
        (count,) = struct.unpack_from("<I", data, 4)
        start = 8 + 4 * count
        if start > len(data):
            raise ValueError("list: data too short for its element count")
        sizes = np.frombuffer(data, np.uint32, count, 8).tolist()
        if start + sum(sizes) > len(data):
            raise ValueError("list: element sizes run past the end of the data")
        coder = self.underlying_encoder()
        out = []
        for size in sizes:
            out.append(coder.decode(data[start : start + size]))
            start += size
        return out


class PILList(List):
    """Store a list of PIL images (raw)."""

    def underlying_encoder(self) -> Encoding:
        return PIL()


class JPEGList(List):
    """Store a list of PIL images as JPEGs."""

    def underlying_encoder(self) -> Encoding:
        return JPEG()


class PNGList(List):
    """Store a list of PIL images as PNGs."""

    def underlying_encoder(self) -> Encoding:
        return PNG()


class JPEGArray(Encoding):
    """Store a sequence of already-encoded JPEG byte strings; decodes to PIL images.

    Layout: ``[count: u32] [sizes: count x u32] [images]``.
    """

    def encode(self, obj: Sequence[bytes]) -> bytes:
        head = struct.pack("<I", len(obj)) + _u32_array([len(x) for x in obj])
        return b"".join([head, *obj])

    def decode(self, data: bytes) -> list:
        if len(data) < 4:
            raise ValueError("Input data is too short to contain valid jpeg arrays")
        (count,) = struct.unpack_from("<I", data)
        if count <= 0:
            raise ValueError("Negative number of images decoded")
        start = 4 + 4 * count
        if len(data) < start:
            raise ValueError("Data is too short w.r.t the number of images decoded")
        coder = JPEG()
        out = []
        for size in np.frombuffer(data, np.uint32, count, 4).tolist():
            out.append(coder.decode(data[start : start + size]))
            start += size
        return out


# Encodings (name -> class). Users may add their own Encoding subclasses here.
_encodings: dict[str, type[Encoding]] = {
    "bytes": Bytes,
    "str": Str,
    "int": Int,
    "ndarray": NDArray,
    "uint8": UInt8,
    "uint16": UInt16,
    "uint32": UInt32,
    "uint64": UInt64,
    "int8": Int8,
    "int16": Int16,
    "int32": Int32,
    "int64": Int64,
    "float16": Float16,
    "float32": Float32,
    "float64": Float64,
    "str_int": StrInt,
    "str_float": StrFloat,
    "str_decimal": StrDecimal,
    "pil": PIL,
    "jpeg": JPEG,
    "jpeg_array": JPEGArray,
    "jpegarray": JPEGArray,
    "png": PNG,
    "list[pil]": PILList,
    "list[jpeg]": JPEGList,
    "list[png]": PNGList,
    "pkl": Pickle,
    "json": JSON,
}

_unsafe_encodings = {"pkl"}

# Encoding string -> (class it was built from, coder). Rebuilt when `_encodings` changes.
_coders: dict[str, tuple[type, Encoding]] = {}


def get_mds_encodings() -> set[str]:
    """List supported encodings.

    Returns:
        Set[str]: Encoding names.
    """
    return set(_encodings)


def get_coder(encoding: str) -> Encoding | None:
    """Get the object that encodes/decodes a column of this encoding.

    Args:
        encoding (str): The encoding, ``name`` or ``name:config``.

    Returns:
        Encoding, optional: The coder, or ``None`` if the encoding is not supported.
    """
    if not isinstance(encoding, str):
        return None
    name, sep, config = encoding.partition(":")
    cls = _encodings.get(name)
    if cls is None:
        return None
    cached = _coders.get(encoding)
    if cached is not None and cached[0] is cls:
        return cached[1]
    if sep:
        from_str = getattr(cls, "from_str", None)
        if from_str is None:
            return None
        try:
            coder = from_str(config)
        except (ValueError, AssertionError, TypeError):
            return None
    else:
        coder = cls()
    _coders[encoding] = (cls, coder)
    return coder


def unsupported_reason(encoding: str) -> str:
    """Say why :func:`get_coder` finds no coder for an encoding (for error messages).

    Args:
        encoding (str): An encoding :func:`get_coder` returned ``None`` for.

    Returns:
        str: The reason, e.g. what the encoding class's ``from_str`` objected to.
    """
    if not isinstance(encoding, str):
        return f"an encoding is a str, not {type(encoding).__name__}"
    name, sep, config = encoding.partition(":")
    cls = _encodings.get(name)
    if cls is None:
        return f"no encoding is named {name!r}"
    if sep:
        from_str = getattr(cls, "from_str", None)
        if from_str is None:
            return f"encoding {name!r} takes no configuration"
        try:
            from_str(config)
        except (ValueError, AssertionError, TypeError) as err:
            return str(err) or f"bad configuration {config!r}"
    return "unknown reason"


def _need_coder(encoding: str) -> Encoding:
    coder = get_coder(encoding)
    if coder is None:
        raise ValueError(f"Unsupported encoding: {encoding}.")
    return coder


def is_mds_encoding(encoding: str) -> bool:
    """Get whether the given encoding is supported.

    Args:
        encoding (str): Encoding.

    Returns:
        bool: Whether the encoding is valid.
    """
    return get_coder(encoding) is not None


def is_mds_encoding_safe(encoding: str) -> bool:
    """Get whether the given encoding is safe (does not allow arbitrary code execution).

    Args:
        encoding (str): Encoding.

    Returns:
        bool: Whether the encoding is safe.
    """
    return encoding not in _unsafe_encodings


def mds_encode(encoding: str, obj: Any) -> bytes:
    """Encode the given data from the original object to bytes.

    A ``bytes`` value is taken as already encoded and returned as is, whatever the encoding.

    Args:
        encoding (str): Encoding.
        obj (Any): Decoded object.

    Returns:
        bytes: Encoded data.

    Raises:
        ValueError: Unsupported encoding.
    """
    if isinstance(obj, bytes):
        return obj
    return _need_coder(encoding).encode(obj)


def mds_decode(encoding: str, data: bytes) -> Any:
    """Decode the given data from bytes to the original object.

    Args:
        encoding (str): Encoding.
        data (bytes): Encoded data.

    Returns:
        Any: Decoded object.

    Raises:
        ValueError: Unsupported encoding.
    """
    return _need_coder(encoding).decode(data)


def get_mds_encoded_size(encoding: str) -> int | None:
    """Get the fixed size of all encodings of this type, or None if N/A.

    Args:
        encoding (str): Encoding.

    Returns:
        Optional[int]: Size of encoded data.

    Raises:
        ValueError: Unsupported encoding.
    """
    return _need_coder(encoding).size
