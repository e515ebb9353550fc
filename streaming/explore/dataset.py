"""Reading a few samples of a dataset for a look: fetch only the shards asked for.

:func:`open_dataset` reads ``index.json`` and returns a :class:`DatasetView`. Its
:meth:`~DatasetView.head`, :meth:`~DatasetView.sample` and :meth:`~DatasetView.to_arrow` fetch
(download, verify if asked, decompress) only the shards that hold the requested samples, into a
cache directory (a temporary one unless given), and decode them with the format's own readers
(:func:`streaming.format.reader_from_json`).

Pickle columns are left encoded (shown as their size) unless ``allow_unsafe_types=True``:
exploring an untrusted dataset must never run its code.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from streaming.explore.index import IndexView, ShardInfo, open_index, require_pandas

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import pyarrow

__all__ = ["DatasetView", "Sample", "Samples", "ShardView", "Undecoded", "open_dataset"]

# Samples shown by the rich display of a dataset or shard.
PREVIEW_ROWS = 5


class Undecoded:
    """A column value left in its encoded form (pickle, unless unsafe types are allowed).

    Attributes:
        encoding (str): The column's encoding.
        data (bytes): The encoded bytes.
    """

    __slots__ = ("encoding", "data")

    def __init__(self, encoding: str, data: bytes) -> None:
        self.encoding = encoding
        self.data = data

    @property
    def __sstream_undecoded__(self) -> str:  # read by the HTML renderer
        return (f"{self.encoding}: {len(self.data):,} bytes, not decoded "
                f"(open with allow_unsafe_types=True to unpickle)")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Undecoded) and other.encoding == self.encoding
                and other.data == self.data)

    def __hash__(self) -> int:
        return hash((self.encoding, self.data))

    def __repr__(self) -> str:
        return f"<undecoded {self.encoding}, {len(self.data):,} bytes>"


class Sample(dict):
    """One sample: a plain ``dict`` of column values that also displays itself richly.

    Attributes:
        index (int): The sample's index in the dataset.
        encodings (dict[str, str]): Column name to encoding.
    """

    def __init__(self, values: Mapping[str, Any], index: int, encodings: Mapping[str, str]
                 ) -> None:
        super().__init__(values)
        self.index = index
        self.encodings = dict(encodings)

    def _repr_html_(self) -> str:
        from streaming.explore.html import render_sample

        return render_sample(self, self.encodings, title=f"sample {self.index:,}")

    def __repr__(self) -> str:
        from streaming.explore.terminal import render_sample_text

        return render_sample_text(self, title=f"sample {self.index:,}")


class Samples(list):
    """Consecutive samples (a plain ``list`` of :class:`Sample`) shown as one table."""

    def __init__(self, samples: Sequence[Sample], encodings: Mapping[str, str]) -> None:
        super().__init__(samples)
        self.encodings = dict(encodings)

    @property
    def first_index(self) -> int:
        """Dataset index of the first sample (0 when empty)."""
        return self[0].index if self else 0

    def _repr_html_(self) -> str:
        from streaming.explore.html import render_samples

        return render_samples(self, self.encodings, first_index=self.first_index)

    def __repr__(self) -> str:
        from streaming.explore.terminal import render_samples_text

        return render_samples_text(self, first_index=self.first_index)


class ShardView:
    """One shard of an explored dataset: its index entry, and its samples on demand.

    Creating it fetches nothing; reading a sample fetches the whole shard once.

    Args:
        dataset (DatasetView): The dataset.
        info (ShardInfo): The shard's index entry.
    """

    def __init__(self, dataset: DatasetView, info: ShardInfo) -> None:
        self.dataset = dataset
        self.info = info

    def __len__(self) -> int:
        return self.info.samples

    def __getitem__(self, idx: int) -> Sample:
        if idx < 0:
            idx += self.info.samples
        if not 0 <= idx < self.info.samples:
            raise IndexError(f"shard {self.info.index} has {self.info.samples} samples, not {idx}")
        return self.dataset.sample(self.info.first_sample + idx)

    def head(self, n: int = PREVIEW_ROWS) -> Samples:
        """The first ``n`` samples of this shard.

        Args:
            n (int): How many. Defaults to ``5``.

        Returns:
            Samples: The samples.
        """
        start = self.info.first_sample
        return self.dataset.samples(start, start + min(n, self.info.samples))

    @property
    def is_local(self) -> bool:
        """Whether the shard is ready to read without another download."""
        return self.dataset._ready_dir(self.info) is not None

    def _repr_html_(self) -> str:
        from streaming.explore.html import render_samples, render_shard_info

        extra = ""
        if self.is_local and self.info.samples:  # never download from a repr
            rows = self.head()
            extra = render_samples(rows, rows.encodings, rows.first_index,
                                   title=f"first {len(rows)} samples")
        return render_shard_info(self.info, extra)

    def __repr__(self) -> str:
        from streaming.explore.terminal import render_shard_text

        return render_shard_text(self.info)


def _dataset_dir(url: str) -> str | None:
    """The local directory of a dataset root, or ``None`` if it is remote."""
    from streaming.storage.filesystem import is_local, resolve

    if not is_local(url):
        return None
    return resolve(url)[1]


class DatasetView:
    """A dataset opened for a look: its index, and any of its samples on demand.

    Build it with :func:`open_dataset` (or :meth:`IndexView.open`). Only the shards holding
    the samples asked for are fetched. Usable as a context manager; :meth:`close` removes the
    temporary cache directory (it is removed at garbage collection too).

    Args:
        index (IndexView): The dataset's index.
        cache_dir (str, optional): Where fetched shards are kept (``<cache_dir>/<split>/``).
            A temporary directory, deleted on :meth:`close`, if unset.
        allow_unsafe_types (bool): Unpickle ``pkl`` columns. Defaults to ``False``, which leaves
            them as :class:`Undecoded` bytes.
        validate_hash (str, optional): Hash algorithm to check each fetched file against the
            index (e.g. ``"xxh64"``). Defaults to ``None`` (no check).
        download_timeout (float): Seconds each download request may take. Defaults to ``60``.
    """

    def __init__(
        self,
        index: IndexView,
        cache_dir: str | None = None,
        *,
        allow_unsafe_types: bool = False,
        validate_hash: str | None = None,
        download_timeout: float = 60.0,
    ) -> None:
        self.index = index
        self.allow_unsafe_types = allow_unsafe_types
        self.validate_hash = validate_hash
        self.download_timeout = download_timeout
        self._source_dir = _dataset_dir(index.url)
        self._cache_dir = os.fspath(cache_dir) if cache_dir is not None else None
        self._temp_dir: str | None = None
        self._finalizer: weakref.finalize | None = None
        self._readers: dict[int, Any] = {}
        self._lock = threading.Lock()

    # ---- basics -------------------------------------------------------------------------

    @property
    def columns(self) -> list[str]:
        """Column names."""
        return [c.name for c in self.index.columns]

    @property
    def encodings(self) -> dict[str, str]:
        """Column name to encoding."""
        return {c.name: c.encoding for c in self.index.columns}

    @property
    def num_samples(self) -> int:
        """Number of samples in the dataset."""
        return self.index.num_samples

    def __len__(self) -> int:
        return self.index.num_samples

    @property
    def cache_dir(self) -> str:
        """The directory fetched shards go to (created on first use)."""
        if self._cache_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="streaming-explore-")
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._temp_dir, True)
            self._cache_dir = self._temp_dir
        return self._cache_dir

    def close(self) -> None:
        """Release the shard readers and delete the temporary cache directory, if one was made."""
        with self._lock:
            for reader in self._readers.values():
                close = getattr(reader, "close", None)
                if close is not None:
                    close()
            self._readers.clear()
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
            self._cache_dir = self._temp_dir = None

    def __enter__(self) -> DatasetView:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- shards -------------------------------------------------------------------------

    def shard(self, i: int) -> ShardView:
        """A view of shard ``i`` (nothing is fetched until a sample is read).

        Args:
            i (int): Shard index (negative counts from the end).

        Returns:
            ShardView: The shard.
        """
        n = self.index.num_shards
        if not -n <= i < n:
            raise IndexError(f"{self.index.url}: shard {i} out of range (dataset has {n})")
        return ShardView(self, self.index.shards[i])

    def _split_dir(self, root: str) -> str:
        return os.path.join(root, self.index.split) if self.index.split else root

    def _data_files(self, info: ShardInfo) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """``(raw file, zip file)`` pairs of a shard: data, plus metadata for JSON/XSV."""
        config = info.config
        pairs = [(config["raw_data"], config.get("zip_data"))]
        if config.get("raw_meta"):
            pairs.append((config["raw_meta"], config.get("zip_meta")))
        return pairs

    def _ready_dir(self, info: ShardInfo) -> str | None:
        """The root directory holding this shard's raw files, if some directory does."""
        roots = [r for r in (self._source_dir, self._cache_dir) if r is not None]
        for root in roots:
            split_dir = self._split_dir(root)
            if all(os.path.isfile(os.path.join(split_dir, raw["basename"]))
                   for raw, _ in self._data_files(info)):
                return root
        return None

    def _check_hash(self, data: bytes, file: dict[str, Any], where: str) -> None:
        algo = self.validate_hash
        if not algo:
            return
        from streaming.format.hashing import get_hash

        expected = file.get("hashes", {}).get(algo)
        if expected is None:
            raise ValueError(f"{where}: index.json records no {algo!r} hash for this file")
        actual = get_hash(algo, data)
        if actual != expected:
            raise ValueError(f"{where}: {algo} is {actual}, index.json says {expected}; the file "
                             f"is corrupt or stale")

    def _fetch(self, info: ShardInfo) -> str:
        """Make the shard's raw files present under the cache dir; return that root."""
        from streaming.format.shard_files import decompress_shard_data
        from streaming.storage.atomic import atomic_file
        from streaming.storage.download import download
        from streaming.storage.filesystem import join_url

        root = self.cache_dir
        split_dir = self._split_dir(root)
        for raw, zipped in self._data_files(info):
            target = os.path.join(split_dir, raw["basename"])
            if os.path.isfile(target):
                continue
            stored = zipped or raw
            source = (os.path.join(self._split_dir(self._source_dir), stored["basename"])
                      if self._source_dir is not None else None)
            if source is None or not os.path.isfile(source):
                remote = (join_url(self.index.url, self.index.split, stored["basename"])
                          if self.index.split else join_url(self.index.url, stored["basename"]))
                source = os.path.join(split_dir, stored["basename"])
                if not os.path.isfile(source):
                    download(remote, source, timeout=self.download_timeout)
            with open(source, "rb") as fp:
                data = fp.read()
            if len(data) != stored["bytes"]:
                raise ValueError(f"{source}: file has {len(data):,} bytes, index.json says "
                                 f"{stored['bytes']:,}")
            self._check_hash(data, stored, source)
            if zipped:
                data = decompress_shard_data(source, info.compression, data, raw["bytes"])
            if zipped or source != target:
                with atomic_file(target) as (fd, _):
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
            if zipped and source.startswith(split_dir + os.sep):
                os.remove(source)  # a downloaded zip served its purpose
        return root

    def _reader(self, info: ShardInfo) -> Any:
        from streaming.format import reader_from_json

        with self._lock:
            reader = self._readers.get(info.index)
            if reader is None:
                root = self._ready_dir(info) or self._fetch(info)
                reader = reader_from_json(root, self.index.split, info.config)
                self._readers[info.index] = reader
            return reader

    # ---- samples ------------------------------------------------------------------------

    def _decode(self, info: ShardInfo, local_idx: int) -> dict[str, Any]:
        reader = self._reader(info)
        if info.format != "mds":
            return reader.get_item(local_idx)
        from streaming.format.mds.encodings import is_mds_encoding_safe, mds_decode

        if self.allow_unsafe_types or all(is_mds_encoding_safe(c.encoding) for c in info.columns):
            return reader.get_item(local_idx)
        from streaming.explore.arrow import split_mds_sample

        parts = split_mds_sample(info, reader.get_sample_data(local_idx))
        return {
            c.name: (mds_decode(c.encoding, part) if is_mds_encoding_safe(c.encoding)
                     else Undecoded(c.encoding, part))
            for c, part in zip(info.columns, parts)
        }

    def _resolve(self, idx: int) -> int:
        total = self.num_samples
        if idx < 0:
            idx += total
        if not 0 <= idx < total:
            raise IndexError(f"{self.index.url}: sample {idx} out of range (dataset has {total:,})")
        return idx

    def sample(self, idx: int) -> Sample:
        """Sample ``idx`` of the dataset, fetching its shard if needed.

        Args:
            idx (int): Sample index (negative counts from the end).

        Returns:
            Sample: The sample (a dict).

        Raises:
            IndexError: ``idx`` is out of range.
        """
        idx = self._resolve(idx)
        info = self.index.shard_of_sample(idx)
        values = self._decode(info, idx - info.first_sample)
        return Sample(values, idx, _shard_encodings(info))

    def __getitem__(self, key: int | slice) -> Sample | Samples:
        if isinstance(key, slice):
            start, stop, step = key.indices(self.num_samples)
            rows = [self.sample(i) for i in range(start, stop, step)]
            return Samples(rows, self.encodings)
        return self.sample(int(key))

    def _iter_range(self, start: int, stop: int) -> Iterator[tuple[ShardInfo, int]]:
        """``(shard, local index)`` for samples ``start..stop``, shard by shard."""
        idx = start
        while idx < stop:
            info = self.index.shard_of_sample(idx)
            end = min(stop, info.first_sample + info.samples)
            for j in range(idx - info.first_sample, end - info.first_sample):
                yield info, j
            idx = end

    def samples(self, start: int = 0, stop: int | None = None) -> Samples:
        """Samples ``start`` (inclusive) to ``stop`` (exclusive), fetching only their shards.

        Args:
            start (int): First sample. Defaults to ``0``.
            stop (int, optional): End (exclusive), capped at the dataset size. Defaults to the
                dataset size.

        Returns:
            Samples: The samples (a list of dicts).
        """
        total = self.num_samples
        stop = total if stop is None else min(stop, total)
        start = max(0, start)
        rows = [Sample(self._decode(info, j), info.first_sample + j, _shard_encodings(info))
                for info, j in self._iter_range(start, stop)]
        return Samples(rows, self.encodings)

    def head(self, n: int = PREVIEW_ROWS) -> Samples:
        """The first ``n`` samples, fetching only the shards that hold them.

        Args:
            n (int): How many. Defaults to ``5``.

        Returns:
            Samples: The samples (a list of dicts).
        """
        return self.samples(0, n)

    def __iter__(self) -> Iterator[Sample]:
        for info, j in self._iter_range(0, self.num_samples):
            yield Sample(self._decode(info, j), info.first_sample + j, _shard_encodings(info))

    # ---- tables -------------------------------------------------------------------------

    def to_arrow(self, columns: Sequence[str] | None = None, limit: int | None = None,
                 progress: bool | None = None) -> pyarrow.Table:
        """The first ``limit`` samples as an Arrow table, fetching only the shards needed.

        Column types follow the encodings: numbers and strings map to Arrow's; fixed-shape
        ``ndarray`` columns become ``fixed_shape_tensor``; other arrays a struct of ``shape``
        and flat ``data`` (plus ``dtype`` when the column has none); ``jpeg``/``png`` columns
        keep their encoded image bytes (``binary``), ``pil`` images become PNG bytes, lists of
        images ``list<binary>``; ``json`` stays JSON text; ``pkl`` stays pickled bytes (never
        unpickled here). Each field's metadata records its ``encoding``.

        Args:
            columns (Sequence[str], optional): Columns to include. Defaults to all.
            limit (int, optional): Number of samples from the start. Defaults to all.
            progress (bool, optional): Show a progress bar (see
                :func:`streaming.explore.progress_bar`). ``None``: only for more than one shard.

        Returns:
            pyarrow.Table: One row per sample.

        Raises:
            KeyError: A requested column does not exist.
        """
        from streaming.explore.arrow import samples_to_table
        from streaming.explore.progress import progress_bar

        names = list(columns) if columns is not None else self.columns
        unknown = [n for n in names if n not in self.encodings]
        if unknown:
            raise KeyError(f"{self.index.url}: no column(s) {unknown}; columns are "
                           f"{self.columns}")
        stop = self.num_samples if limit is None else max(0, min(limit, self.num_samples))
        infos = [s for s in self.index.shards
                 if s.samples and s.first_sample < stop]
        # One shard is quick: a bar only for more, and only where bars show (see progress_bar).
        disable = (not progress) if progress is not None else (True if len(infos) <= 1 else None)
        batches = []
        bar = progress_bar(infos, desc="reading shards", unit="shard", disable=disable)
        for info in bar:
            end = min(stop, info.first_sample + info.samples) - info.first_sample
            reader = self._reader(info)
            batches.append(samples_to_table(info, reader, range(end), names))
        from streaming.explore.arrow import concat_tables, empty_table

        if not batches:
            return empty_table(self.index.columns, names)
        return concat_tables(batches)

    def to_pandas(self, columns: Sequence[str] | None = None, limit: int | None = None
                  ) -> pandas.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame.

        Args:
            columns (Sequence[str], optional): Columns to include. Defaults to all.
            limit (int, optional): Number of samples from the start. Defaults to all.

        Returns:
            pandas.DataFrame: One row per sample.

        Raises:
            ImportError: pandas is not installed.
        """
        require_pandas("DatasetView.to_pandas()")
        return self.to_arrow(columns, limit).to_pandas()

    # ---- display ------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        from streaming.explore.html import render_index, render_samples

        page = render_index(self.index)
        if self.num_samples:
            rows = self.head()
            page += render_samples(rows, rows.encodings, 0, title=f"first {len(rows)} samples")
        return page

    def __repr__(self) -> str:
        return repr(self.index)


def _shard_encodings(info: ShardInfo) -> dict[str, str]:
    return {c.name: c.encoding for c in info.columns}


def open_dataset(
    url: str | os.PathLike,
    split: str | None = None,
    cache_dir: str | None = None,
    *,
    allow_unsafe_types: bool = False,
    validate_hash: str | None = None,
    download_timeout: float = 60.0,
) -> DatasetView:
    """Open a dataset (local path or any supported URL) for exploring its samples.

    Reads ``index.json`` now; each shard is fetched the first time one of its samples is read.

    Args:
        url (str | PathLike): Dataset root, or its ``index.json``.
        split (str, optional): Split sub-directory, if any.
        cache_dir (str, optional): Where fetched shards are kept; a temporary directory
            (deleted by :meth:`DatasetView.close`) if unset.
        allow_unsafe_types (bool): Unpickle ``pkl`` columns. Defaults to ``False``.
        validate_hash (str, optional): Hash algorithm to check fetched files against.
        download_timeout (float): Seconds each download request may take. Defaults to ``60``.

    Returns:
        DatasetView: The dataset.

    Raises:
        FileNotFoundError: There is no ``index.json`` at that location.
        ValueError: The index is malformed.
    """
    return DatasetView(open_index(url, split), cache_dir, allow_unsafe_types=allow_unsafe_types,
                       validate_hash=validate_hash, download_timeout=download_timeout)
