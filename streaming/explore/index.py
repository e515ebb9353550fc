"""A dataset's ``index.json`` as tables: shards, columns and totals, fetched without any shard.

:func:`open_index` reads one ``index.json`` (a local path or any URL that
:func:`streaming.storage.filesystem.resolve` serves) and returns an :class:`IndexView`: the shard
table as a pyarrow Table or pandas DataFrame, the column schema, and totals, with rich displays
for notebooks (``_repr_html_``) and terminals (``__repr__``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from streaming.optional import import_optional

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import pyarrow

__all__ = [
    "ColumnInfo",
    "IndexView",
    "ShardInfo",
    "index_url",
    "open_index",
    "parse_shards",
    "read_index_json",
]

INDEX_BASENAME = "index.json"


@dataclass(frozen=True)
class ColumnInfo:
    """One column of a dataset's schema.

    Attributes:
        name (str): Column name.
        encoding (str): How values are encoded (e.g. ``"int"``, ``"jpeg"``,
            ``"ndarray:float32:3,32,32"``).
        size (int | None): Fixed encoded size in bytes, or ``None`` when values vary in size.
    """

    name: str
    encoding: str
    size: int | None = None


@dataclass(eq=False)
class ShardInfo:
    """What ``index.json`` says about one shard.

    Attributes:
        index (int): Position of the shard in the index.
        format (str): ``"mds"``, ``"json"``, ``"csv"``, ``"tsv"`` or ``"xsv"``.
        samples (int): Number of samples in the shard.
        first_sample (int): Dataset-wide index of the shard's first sample.
        basename (str): File name of the uncompressed shard data, relative to the split dir.
        raw_bytes (int): Size of the uncompressed data file.
        zip_basename (str | None): File name of the compressed data file, if compressed.
        zip_bytes (int | None): Size of the compressed data file, if compressed.
        compression (str | None): Compression name (``"zstd:7"``), if any.
        hashes (tuple[str, ...]): Hash algorithms recorded for the shard files.
        raw_hashes (dict[str, str]): Hash values of the uncompressed data file.
        zip_hashes (dict[str, str]): Hash values of the compressed data file.
        meta_basename (str | None): Metadata file of a JSON/XSV shard (``*.meta``), if any.
        meta_bytes (int | None): Size of that metadata file.
        columns (tuple[ColumnInfo, ...]): The shard's column schema.
        config (dict): The shard's entry in ``index.json``, unchanged.
    """

    index: int
    format: str
    samples: int
    first_sample: int
    basename: str
    raw_bytes: int
    zip_basename: str | None
    zip_bytes: int | None
    compression: str | None
    hashes: tuple[str, ...]
    raw_hashes: dict[str, str] = field(repr=False)
    zip_hashes: dict[str, str] = field(repr=False)
    meta_basename: str | None
    meta_bytes: int | None
    columns: tuple[ColumnInfo, ...] = field(repr=False)
    config: dict[str, Any] = field(repr=False)

    @property
    def stored_bytes(self) -> int:
        """Bytes the shard occupies in storage (compressed form when there is one)."""
        data = self.zip_bytes if self.zip_bytes is not None else self.raw_bytes
        return data + (self.meta_bytes or 0)

    def _repr_html_(self) -> str:
        from streaming.explore.html import render_shard_info

        return render_shard_info(self)


def _file_info(obj: Any) -> tuple[str, int, dict[str, str]] | None:
    # Already checked by streaming.format.index.validate_shard.
    if obj is None:
        return None
    return obj["basename"], obj["bytes"], dict(obj["hashes"])


def _columns(
    obj: dict[str, Any], where: str, memo: dict[Any, tuple[ColumnInfo, ...]]
) -> tuple[ColumnInfo, ...]:
    """The shard's schema; shards with the same schema share one tuple (``memo``)."""
    if "column_names" in obj:
        names = obj.get("column_names") or []
        encodings = obj.get("column_encodings") or []
        sizes = obj.get("column_sizes") or [None] * len(names)
        key: Any = (tuple(names), tuple(encodings), tuple(sizes))
        found = memo.get(key)
        if found is not None:
            return found
        if not (len(names) == len(encodings) == len(sizes)):
            raise ValueError(
                f"{where}: column_names, column_encodings and column_sizes differ in length"
            )
        columns = tuple(ColumnInfo(str(n), str(e), s) for n, e, s in zip(names, encodings, sizes))
    elif isinstance(obj.get("columns"), dict):  # JSON shards: {name: encoding}
        key = tuple(obj["columns"].items())
        found = memo.get(key)
        if found is not None:
            return found
        columns = tuple(ColumnInfo(str(n), str(e), None) for n, e in key)
    else:
        return ()
    memo[key] = columns
    return columns


def parse_shards(obj: Any, source: str = INDEX_BASENAME) -> list[ShardInfo]:
    """Turn a decoded ``index.json`` into validated :class:`ShardInfo` records.

    Each entry is checked by :func:`streaming.format.index.validate_shard` (types, sizes, file
    names that would escape the dataset directory, known compression).

    Args:
        obj (Any): The decoded JSON document.
        source (str): Where it came from, for error messages.

    Returns:
        List[ShardInfo]: One record per shard, in index order.

    Raises:
        ValueError: The document is not a version-2 index, or a shard entry is malformed.
    """
    from streaming.format.index import validate_shard

    if not isinstance(obj, dict) or not isinstance(obj.get("shards"), list):
        raise ValueError(f"{source}: not a streaming index (expected an object with 'shards')")
    if obj.get("version") != 2:
        raise ValueError(
            f"{source}: unsupported streaming data version {obj.get('version')!r}; expected 2"
        )
    shards: list[ShardInfo] = []
    first = 0
    memo: dict[Any, tuple[ColumnInfo, ...]] = {}
    for i, entry in enumerate(obj["shards"]):
        where = f"{source}: shard {i}"
        validate_shard(entry, where)
        raw = _file_info(entry["raw_data"])
        zipped = _file_info(entry.get("zip_data"))
        meta = _file_info(entry.get("raw_meta"))
        assert raw is not None  # validate_shard requires raw_data
        shards.append(
            ShardInfo(
                index=i,
                format=entry["format"],
                samples=entry["samples"],
                first_sample=first,
                basename=raw[0],
                raw_bytes=raw[1],
                zip_basename=zipped[0] if zipped else None,
                zip_bytes=zipped[1] if zipped else None,
                compression=entry["compression"],
                hashes=tuple(entry["hashes"]),
                raw_hashes=raw[2],
                zip_hashes=zipped[2] if zipped else {},
                meta_basename=meta[0] if meta else None,
                meta_bytes=meta[1] if meta else None,
                columns=_columns(entry, where, memo),
                config=entry,
            )
        )
        first += entry["samples"]
    return shards


def index_url(url: str, split: str | None = None) -> str:
    """The URL of a dataset's ``index.json``.

    Args:
        url (str): Dataset root (local path or URL), or the index file itself.
        split (str, optional): Sub-directory holding the split, if any.

    Returns:
        str: The URL or path of ``index.json``.
    """
    from streaming.storage.filesystem import join_url

    url = os.fspath(url)
    if url.rstrip("/").endswith("/" + INDEX_BASENAME) or url == INDEX_BASENAME:
        if split:
            raise ValueError(f"{url}: pass either an index.json path or split={split!r}, not both")
        return url
    return join_url(url, split, INDEX_BASENAME) if split else join_url(url, INDEX_BASENAME)


def read_index_json(url: str) -> Any:
    """Fetch and decode one ``index.json`` (a single read; no listing, no other file).

    Args:
        url (str): Path or URL of the index file.

    Returns:
        Any: The decoded JSON document.

    Raises:
        FileNotFoundError: There is no index at ``url``.
        ValueError: The file is not valid JSON.
    """
    from streaming.storage.filesystem import one_request_options, resolve

    fs, path = resolve(url)
    try:
        data = fs.cat_file(path, **one_request_options(fs, "cat_file"))
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{url}: no index.json there (is the path or split right?)") from e
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{url}: index.json is not valid JSON ({e})") from e


class IndexView:
    """A dataset index as tables, for exploring in a notebook or a terminal.

    Build it with :func:`open_index`. Displays as an HTML summary in Jupyter and as text in a
    terminal; the full shard table is :meth:`to_arrow` / :meth:`to_pandas`.

    Args:
        url (str): Dataset root (local path or URL).
        split (str, optional): Split sub-directory, if any.
        shards (Sequence[ShardInfo]): The parsed shard entries.
    """

    def __init__(self, url: str, split: str | None, shards: Sequence[ShardInfo]) -> None:
        self.url = url
        self.split = split
        self.shards: list[ShardInfo] = list(shards)
        self._starts: list[int] | None = None  # first_sample of each shard, for bisection

    # ---- totals -------------------------------------------------------------------------

    @property
    def num_shards(self) -> int:
        """Number of shards."""
        return len(self.shards)

    @property
    def num_samples(self) -> int:
        """Number of samples across all shards."""
        return sum(s.samples for s in self.shards)

    @property
    def raw_bytes(self) -> int:
        """Total uncompressed size of the shard data (and metadata) files."""
        return sum(s.raw_bytes + (s.meta_bytes or 0) for s in self.shards)

    @property
    def zip_bytes(self) -> int | None:
        """Total compressed size, or ``None`` if no shard is compressed."""
        sizes = [s.zip_bytes for s in self.shards if s.zip_bytes is not None]
        return sum(sizes) if sizes else None

    @property
    def stored_bytes(self) -> int:
        """Total bytes in storage (compressed form of each shard when it has one)."""
        return sum(s.stored_bytes for s in self.shards)

    @property
    def formats(self) -> list[str]:
        """Distinct shard formats, in order of first appearance."""
        return list(dict.fromkeys(s.format for s in self.shards))

    @property
    def compressions(self) -> list[str | None]:
        """Distinct compression settings, in order of first appearance."""
        return list(dict.fromkeys(s.compression for s in self.shards))

    @property
    def hash_algorithms(self) -> list[str]:
        """Distinct hash algorithms recorded for the shards."""
        return list(dict.fromkeys(h for s in self.shards for h in s.hashes))

    @property
    def columns(self) -> list[ColumnInfo]:
        """The column schema (of the first shard; see :attr:`consistent_schema`)."""
        return list(self.shards[0].columns) if self.shards else []

    @property
    def consistent_schema(self) -> bool:
        """Whether every shard has the same columns, encodings and sizes."""
        first = self.shards[0].columns if self.shards else ()
        # Equal schemas share one tuple (see _columns), so identity settles most shards.
        return all(s.columns is first or s.columns == first for s in self.shards)

    def summary(self) -> dict[str, Any]:
        """The dataset totals as a plain dict (JSON-friendly).

        Returns:
            Dict[str, Any]: ``url``, ``split``, ``shards``, ``samples``, ``raw_bytes``,
            ``zip_bytes``, ``stored_bytes``, ``formats``, ``compressions``, ``hashes``,
            ``columns`` (list of ``{name, encoding, size}``) and ``consistent_schema``.
        """
        return {
            "url": self.url,
            "split": self.split,
            "shards": self.num_shards,
            "samples": self.num_samples,
            "raw_bytes": self.raw_bytes,
            "zip_bytes": self.zip_bytes,
            "stored_bytes": self.stored_bytes,
            "formats": self.formats,
            "compressions": self.compressions,
            "hashes": self.hash_algorithms,
            "columns": [
                {"name": c.name, "encoding": c.encoding, "size": c.size} for c in self.columns
            ],
            "consistent_schema": self.consistent_schema,
        }

    # ---- tables ---------------------------------------------------------------------------

    def to_arrow(self) -> pyarrow.Table:
        """The shard table: one row per shard.

        Columns: ``shard``, ``basename``, ``format``, ``samples``, ``first_sample``,
        ``raw_bytes``, ``zip_basename``, ``zip_bytes``, ``compression``, ``hashes`` (the
        algorithm names, comma separated) and, for each algorithm, ``raw_<algo>`` and
        ``zip_<algo>`` with the recorded hash values.

        Returns:
            pyarrow.Table: The shard table.
        """
        import pyarrow as pa

        shards = self.shards
        algos = self.hash_algorithms
        data: dict[str, Any] = {
            "shard": pa.array([s.index for s in shards], pa.int64()),
            "basename": pa.array([s.basename for s in shards], pa.string()),
            "format": pa.array([s.format for s in shards], pa.string()),
            "samples": pa.array([s.samples for s in shards], pa.int64()),
            "first_sample": pa.array([s.first_sample for s in shards], pa.int64()),
            "raw_bytes": pa.array([s.raw_bytes for s in shards], pa.int64()),
            "zip_basename": pa.array([s.zip_basename for s in shards], pa.string()),
            "zip_bytes": pa.array([s.zip_bytes for s in shards], pa.int64()),
            "compression": pa.array([s.compression for s in shards], pa.string()),
            "hashes": pa.array([",".join(s.hashes) for s in shards], pa.string()),
        }
        for algo in algos:
            data[f"raw_{algo}"] = pa.array([s.raw_hashes.get(algo) for s in shards], pa.string())
            data[f"zip_{algo}"] = pa.array([s.zip_hashes.get(algo) for s in shards], pa.string())
        return pa.table(data)

    def to_pandas(self) -> pandas.DataFrame:
        """The shard table (see :meth:`to_arrow`) as a pandas DataFrame.

        Returns:
            pandas.DataFrame: The shard table.

        Raises:
            ImportError: pandas is not installed.
        """
        require_pandas("IndexView.to_pandas()")
        return self.to_arrow().to_pandas()

    def columns_to_arrow(self) -> pyarrow.Table:
        """The column schema as a table: ``name``, ``encoding``, ``size``.

        Returns:
            pyarrow.Table: One row per column.
        """
        import pyarrow as pa

        cols = self.columns
        return pa.table(
            {
                "name": pa.array([c.name for c in cols], pa.string()),
                "encoding": pa.array([c.encoding for c in cols], pa.string()),
                "size": pa.array([c.size for c in cols], pa.int64()),
            }
        )

    def shard_of_sample(self, sample: int) -> ShardInfo:
        """The shard holding a dataset-wide sample index.

        Args:
            sample (int): Sample index (negative counts from the end).

        Returns:
            ShardInfo: The shard.

        Raises:
            IndexError: The sample index is out of range.
        """
        import bisect

        total = self.num_samples
        if sample < 0:
            sample += total
        if not 0 <= sample < total:
            raise IndexError(f"{self.url}: sample {sample} out of range (dataset has {total})")
        starts = self._starts
        if starts is None or len(starts) != len(self.shards):
            starts = self._starts = [s.first_sample for s in self.shards]
        pos = bisect.bisect_right(starts, sample) - 1
        # Empty shards share their start with the next one: step to the one that holds it.
        while self.shards[pos].samples == 0 or sample >= starts[pos] + self.shards[pos].samples:
            pos += 1
        return self.shards[pos]

    def open(self, cache_dir: str | None = None, **kwargs: Any) -> Any:
        """Open the dataset behind this index for reading samples (see :func:`open_dataset`).

        Args:
            cache_dir (str, optional): Where fetched shards go; a temporary directory if unset.
            **kwargs: Passed to :class:`streaming.explore.DatasetView`.

        Returns:
            DatasetView: The explorable dataset.
        """
        from streaming.explore.dataset import DatasetView

        return DatasetView(self, cache_dir=cache_dir, **kwargs)

    # ---- display --------------------------------------------------------------------------

    def _repr_html_(self) -> str:
        from streaming.explore.html import render_index

        return render_index(self)

    def __repr__(self) -> str:
        from streaming.explore.terminal import render_index_text

        return render_index_text(self)


def require_pandas(what: str) -> None:
    """Raise a clear ImportError naming pandas when it is missing.

    Args:
        what (str): The call that needs pandas, for the message.

    Raises:
        ImportError: pandas is not installed.
    """
    import_optional("pandas", f"{what} needs pandas, which is not installed; `pip install "
                              f"pandas`, or use to_arrow() which needs only pyarrow")


def open_index(url: str | os.PathLike, split: str | None = None) -> IndexView:
    """Read a dataset's ``index.json`` without touching any shard.

    Exactly one file is fetched: ``<url>/<split>/index.json``. Works for local paths and every
    URL scheme the storage layer serves (``s3://``, ``gs://``, ``hf://``, ...; ``s3://``
    honours ``S3_ENDPOINT_URL``).

    Args:
        url (str | PathLike): Dataset root, or the ``index.json`` file itself.
        split (str, optional): Split sub-directory, if any. Defaults to ``None``.

    Returns:
        IndexView: Shard table, column schema and totals.

    Raises:
        FileNotFoundError: There is no ``index.json`` at that location.
        ValueError: The index is not valid JSON or not a version-2 streaming index.
    """
    url = os.fspath(url)
    where = index_url(url, split)
    shards = parse_shards(read_index_json(where), source=where)
    root = url
    if root.rstrip("/").endswith(INDEX_BASENAME) and split is None:
        root = root.rstrip("/")[: -len(INDEX_BASENAME)].rstrip("/") or "."
    return IndexView(root, split, shards)
