"""Deterministic MDS test samples and a type-exact JSON description of decoded values.

Shared by ``oracles/cases/mds.py`` (run in the reference venv) and ``tests/format`` (run in the
project venv): both build the same samples from a seed with ``random.Random`` (stable across
Python and NumPy versions) and compare decoded values through :func:`describe`, which records
types, dtypes, shapes and bytes exactly.
"""

from __future__ import annotations

import base64
import random
from decimal import Decimal
from typing import Any

import numpy as np

SCHEMAS: dict[str, dict[str, str]] = {
    "scalars": {
        "i": "int",
        "i8": "int8",
        "i16": "int16",
        "i32": "int32",
        "i64": "int64",
        "u8": "uint8",
        "u16": "uint16",
        "u32": "uint32",
        "u64": "uint64",
        "f16": "float16",
        "f32": "float32",
        "f64": "float64",
        "si": "str_int",
        "sf": "str_float",
        "sd": "str_decimal",
    },
    "text": {
        "text": "str",
        "blob": "bytes",
        "meta": "json",
        "obj": "pkl",
        "\u00fcnicode name": "str",
    },
    "arrays": {
        "dyn": "ndarray",
        "typed": "ndarray:int32",
        "fixed": "ndarray:float32:3,4",
        "bytes16": "ndarray:uint8:16",
        "wide": "ndarray:uint16",
    },
    "tokens": {"tokens": "ndarray:int32:64"},
    "images": {
        "pil": "pil",
        "jpeg": "jpeg",
        "png": "png",
        "jarr": "jpegarray",
        "lpil": "list[pil]",
        "ljpeg": "list[jpeg]",
        "lpng": "list[png]",
    },
}

_DTYPES = ["uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32",
           "uint64", "int64", "float64"]
_CHARS = "abc xyz\u00e9\u4e2d\U0001f600\"'\\\n\t{}"


def _text(rng: random.Random, top: int) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.randrange(0, top)))


def _array(rng: random.Random, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape))
    kind = np.dtype(dtype).kind
    if kind == "f":
        values = [rng.uniform(-1e3, 1e3) for _ in range(count)]
    elif kind == "u":
        values = [rng.randrange(0, 1 << min(8 * np.dtype(dtype).itemsize, 62)) for _ in range(count)]
    else:
        bits = min(8 * np.dtype(dtype).itemsize - 1, 62)
        values = [rng.randrange(-(1 << bits), 1 << bits) for _ in range(count)]
    return np.array(values, dtype=dtype).reshape(shape)


def _image(rng: random.Random, mode: str = "RGB") -> Any:
    from PIL import Image

    width, height = rng.randrange(1, 9), rng.randrange(1, 9)
    bands = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
    raw = bytes(rng.randrange(256) for _ in range(width * height * bands))
    return Image.frombytes(mode, (width, height), raw)


def _jpeg_bytes(rng: random.Random) -> bytes:
    from io import BytesIO

    out = BytesIO()
    _image(rng).save(out, format="JPEG")
    return out.getvalue()


def _value(rng: random.Random, encoding: str, i: int) -> Any:
    if encoding == "int":
        return rng.choice([0, i, -i * 7919, rng.randrange(-(2**63), 2**63)])
    if encoding in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(encoding)
        return rng.choice([int(info.min), int(info.max), rng.randrange(int(info.min), int(info.max))])
    if encoding in ("float16", "float32", "float64"):
        return rng.choice([0.0, -1.5, rng.uniform(-1e4, 1e4)])
    if encoding == "str_int":
        return rng.choice([0, -(10**30) - i, rng.randrange(-(2**70), 2**70)])
    if encoding == "str_float":
        return rng.choice([0.0, 1e-300, -rng.random() * 1e10, float(i) / 7])
    if encoding == "str_decimal":
        return Decimal(rng.choice(["0", "-1.50", "3.14159265358979323846264338327950288", f"{i}e-7"]))
    if encoding == "str":
        return _text(rng, 30) if i % 5 else ""
    if encoding == "bytes":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))) if i % 4 else b""
    if encoding == "json":
        return rng.choice([None, i, {"k": [i, "v\u00e9", 1.5, None, True]}, [], _text(rng, 8)])
    if encoding == "pkl":
        return rng.choice([{"a": (i, "x")}, [1, 2.5, None], frozenset({i}), bytearray(b"raw"), "s"])
    if encoding == "ndarray":
        dtype = rng.choice(_DTYPES)
        ndim = rng.randrange(1, 4)
        shape = tuple(rng.randrange(1, 5) for _ in range(ndim))
        return _array(rng, dtype, shape)
    if encoding == "ndarray:int32":
        return _array(rng, "int32", (rng.randrange(1, 20),))
    if encoding == "ndarray:float32:3,4":
        return _array(rng, "float32", (3, 4))
    if encoding == "ndarray:uint8:16":
        return _array(rng, "uint8", (16,))
    if encoding == "ndarray:uint16":
        # Dimensions past 255 need a uint16 shape header.
        return _array(rng, "uint16", (rng.choice([1, 300]), rng.randrange(1, 3)))
    if encoding == "ndarray:int32:64":
        return _array(rng, "int32", (64,))
    if encoding == "pil":
        return _image(rng, rng.choice(["RGB", "L", "RGBA"]))
    if encoding in ("jpeg", "png"):
        return _image(rng)
    if encoding == "jpegarray":
        return [_jpeg_bytes(rng) for _ in range(rng.randrange(1, 3))]
    if encoding in ("list[pil]", "list[jpeg]", "list[png]"):
        return [_image(rng) for _ in range(rng.randrange(0, 3))]
    raise ValueError(encoding)


def make_samples(schema: str, count: int, seed: int) -> list[dict[str, Any]]:
    """Build ``count`` samples of a named schema, deterministically from ``seed``."""
    rng = random.Random(seed)
    columns = SCHEMAS[schema]
    return [{name: _value(rng, enc, i) for name, enc in sorted(columns.items())}
            for i in range(count)]


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def describe(value: Any) -> Any:
    """Describe a decoded value as JSON, exactly (type, dtype, shape, bytes)."""
    if isinstance(value, np.ndarray):
        return {"t": "ndarray", "dtype": value.dtype.str, "shape": list(value.shape),
                "data": _b64(value.tobytes())}
    if isinstance(value, np.generic):
        return {"t": f"numpy.{type(value).__name__}", "data": _b64(value.tobytes())}
    if isinstance(value, bool) or value is None:
        return {"t": type(value).__name__, "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": str(value)}
    if isinstance(value, float):
        return {"t": "float", "v": value.hex()}
    if isinstance(value, Decimal):
        return {"t": "Decimal", "v": str(value)}
    if isinstance(value, str):
        return {"t": "str", "v": value}
    if isinstance(value, bytes):
        return {"t": "bytes", "v": _b64(value)}
    if isinstance(value, bytearray):
        return {"t": "bytearray", "v": _b64(value)}
    if isinstance(value, (list, tuple)):
        return {"t": type(value).__name__, "v": [describe(v) for v in value]}
    if isinstance(value, frozenset):
        return {"t": "frozenset", "v": sorted(describe(v)["v"] for v in value)}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[k, describe(v)] for k, v in value.items()]}
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover
        Image = None
    if Image is not None and isinstance(value, Image.Image):
        return {"t": "image", "mode": value.mode, "size": list(value.size),
                "format": value.format, "data": _b64(value.tobytes())}
    raise TypeError(f"cannot describe {type(value)}")
