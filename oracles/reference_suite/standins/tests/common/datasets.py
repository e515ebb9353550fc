"""Stand-ins for the reference's ``tests/common/datasets.py``: the small datasets its tests
write, with the columns, encodings and values those tests check."""

from __future__ import annotations

from typing import Any

import numpy as np

from streaming.base import MDSWriter


class SequenceDataset:
    """``size`` samples: a zero-padded id string and ``3 * index + offset``.

    Args:
        size (int): How many samples. Defaults to ``100``.
        column_names (List[str]): The two columns' names. Defaults to ``['id', 'sample']``.
        offset (int): Added to every id and value. Defaults to ``0``.
    """

    def __init__(self, size: int = 100, column_names: list[str] | None = None,
                 offset: int = 0) -> None:
        self.size = size
        self.offset = offset
        self.column_names = column_names or ["id", "sample"]
        self.column_encodings = ["str", "int"]
        self.column_sizes = [None, 8]
        self._index = 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict[str, Any]:
        if index >= self.size:
            raise IndexError("Index out of bound")
        id_name, value_name = self.column_names
        return {id_name: f"{index + self.offset:06}", value_name: 3 * index + self.offset}

    def __iter__(self) -> SequenceDataset:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._index >= self.size:
            raise StopIteration
        self._index += 1
        return self[self._index - 1]

    def get_sample_in_bytes(self, index: int) -> dict[str, bytes]:
        """Sample ``index`` with each value as the bytes MDS stores for it."""
        sample = self[index]
        id_name, value_name = self.column_names
        return {id_name: sample[id_name].encode("utf-8"),
                value_name: np.int64(sample[value_name]).tobytes()}


_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def _say(number: int) -> list[str]:
    """``number`` in English words."""
    if number < 0:
        return ["negative"] + _say(-number)
    if number < 20:
        return [_ONES[number]]
    if number < 100:
        return [_TENS[number // 10 - 2]] + ([_ONES[number % 10]] if number % 10 else [])
    for size, word in ((10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if number >= size:
            rest = number % size
            return _say(number // size) + [word] + (_say(rest) if rest else [])
    raise AssertionError("unreachable")


class NumberAndSayDataset:
    """``size`` random signed numbers (NumPy's global RNG, seeded) and their English words.

    Args:
        size (int): How many samples. Defaults to ``100``.
        column_names (List[str]): The two columns' names. Defaults to ``['number', 'words']``.
        seed (int): Seeds NumPy's global RNG. Defaults to ``987``.
    """

    def __init__(self, size: int = 100, column_names: list[str] | None = None,
                 seed: int = 987) -> None:
        self.size = size
        self.column_names = column_names or ["number", "words"]
        self.column_encodings = ["int", "str"]
        self.column_sizes = [8, None]
        self._index = 0
        self.seed = seed

    @property
    def seed(self) -> int:
        return self._seed

    @seed.setter
    def seed(self, value: int) -> None:
        self._seed = value
        np.random.seed(value)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> NumberAndSayDataset:
        return self

    def __next__(self) -> dict[str, Any]:
        if self._index >= self.size:
            raise StopIteration
        self._index += 1
        sign = 1 if np.random.random() < 0.8 else -1
        number = sign * int((10 ** np.random.uniform(1, 4) - 10) ** 2)
        number_name, words_name = self.column_names
        return {number_name: number, words_name: " ".join(_say(number))}


def write_mds_dataset(out_root: str, columns: dict[str, str], samples: Any, size_limit: int,
                      compression: str | None = None, hashes: list[str] | None = None) -> None:
    """Write ``samples`` as MDS to ``out_root``."""
    with MDSWriter(out=out_root, columns=columns, compression=compression, hashes=hashes,
                   size_limit=size_limit) as out:
        for sample in samples:
            out.write(sample)
