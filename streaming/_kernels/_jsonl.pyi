"""Type stubs for the compiled JSON Lines scanner (src/_jsonl.pyx)."""

from typing import Any, Sequence

KIND_INT: int
KIND_FLOAT: int
KIND_STR: int
KIND_INT_LIST: int
KIND_FLOAT_LIST: int

def scan_jsonl(
    buf: Any, keys: list[bytes], kinds: Sequence[int]
) -> tuple[int, list[Any], list[bool]] | None: ...
