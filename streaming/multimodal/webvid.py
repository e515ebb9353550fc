"""WebVid: short videos with captions, the video bytes either inside the shards or in files of
their own beside them (``content_path``), fetched as samples are read ("GI", in ``get_item``) or
ahead of them along the plan ("DT", as the reference's download thread does).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, wait
from typing import Any, Iterator

import numpy as np
from numpy.typing import NDArray

from streaming.constant import TICK  # noqa: F401 - the reference's module exposes it
from streaming.dataset import StreamingDataset
from streaming.dataset_classes import standard_args
from streaming.storage.download import CloudDownloader

__all__ = ["StreamingInsideWebVid", "StreamingOutsideGIWebVid", "StreamingOutsideDTWebVid"]


class StreamingInsideWebVid(StreamingDataset):
    """WebVid with each video's bytes inside its sample (a StreamingDataset as it is).

    The reference overrides ``get_item`` here to return the sample unchanged; not overriding it
    keeps the compiled iteration path, with the same samples.
    """


class _OutsideWebVid(StreamingDataset):
    """What the two outside-the-shards WebVid classes share (their arguments, ``get_item``)."""

    def __init__(self,
                 *,
                 remote: str | None = None,
                 local: str | None = None,
                 split: str | None = None,
                 download_retry: int = 2,
                 download_timeout: float = 60,
                 validate_hash: str | None = None,
                 keep_zip: bool = False,
                 epoch_size: int | None = None,
                 predownload: int | None = None,
                 cache_limit: int | None = None,
                 partition_algo: str = "orig",
                 num_canonical_nodes: int | None = None,
                 batch_size: int | None = None,
                 shuffle: bool = False,
                 shuffle_algo: str = "py1s",
                 shuffle_seed: int = 9176,
                 shuffle_block_size: int = 1 << 18,
                 extra_local: str | None = None,
                 extra_remote: str | None = None) -> None:
        super().__init__(**standard_args(locals()))
        self.download_timeout = download_timeout
        self.extra_local = extra_local
        self.extra_remote = extra_remote
        self._extra_downloader = CloudDownloader.get(extra_remote)

    def _fetch_extra(self, obj: dict[str, Any]) -> str | None:
        """Download the sample's video unless cached; its local path (``None`` if not outside)."""
        if not (self.extra_local and self.extra_remote):
            return None
        local = os.path.join(self.extra_local, obj["content_path"])
        if not os.path.exists(local):
            remote = os.path.join(self.extra_remote, obj["content_path"])
            self._extra_downloader.download(remote, local, self.download_timeout)
        return local

    def get_item(self, idx: int) -> Any:
        """Get sample by global index, blocking to load its shard and its video if missing.

        Args:
            idx (int): Sample index.

        Returns:
            Dict[str, Any]: The sample, with the video's bytes as ``content``.
        """
        obj = super().get_item(idx)
        local = self._fetch_extra(obj)
        if local is not None:
            with open(local, "rb") as file:
                obj["content"] = file.read()
        return obj


class StreamingOutsideGIWebVid(_OutsideWebVid):
    """WebVid with each video in a file of its own, downloaded when its sample is read.

    A sample's ``content_path`` names its video under ``extra_remote``, cached under
    ``extra_local``; the sample is returned with the video's bytes as ``content``.

    Takes the reference's older keyword set of :class:`~streaming.StreamingDataset` (see it for
    those arguments), with these defaults: ``partition_algo='orig'``, ``shuffle_algo='py1s'``,
    ``shuffle_block_size=1 << 18``.

    Args:
        extra_local (str, optional): Local directory the videos are cached in. Defaults to
            ``None``.
        extra_remote (str, optional): Remote directory the videos are downloaded from. Defaults
            to ``None``. Without both, samples are returned as stored (no ``content``).
    """


class StreamingOutsideDTWebVid(_OutsideWebVid):
    """WebVid with each video in a file of its own, downloaded ahead of its sample.

    As :class:`StreamingOutsideGIWebVid` (same arguments, same samples), but while iterating,
    the videos of the next ``predownload`` samples are downloaded in the prefetching threads
    (as far as those samples' shards are resident), as the reference's download thread does;
    the reach ahead grows to ``predownload`` over the epoch's first samples.
    """

    def _iter_overridden(self, sample_ids: NDArray[np.int64]) -> Iterator[Any]:
        if not (self.extra_local and self.extra_remote):
            yield from super()._iter_overridden(sample_ids)
            return
        ids = sample_ids.tolist()
        window = max(1, int(self.predownload or 1))
        fetching: dict[int, Future[Any]] = {}  # plan position -> its video's download
        looked = 0  # positions before this have had their video submitted
        try:
            with self._prefetching(sample_ids) as ahead:
                for position, sample_id in enumerate(ids):
                    ahead(position)
                    # The reach grows from this sample alone to the window, a few rows a
                    # sample, so the first sample does not wait for a window of rows to be
                    # read; and a row is read ahead only from a resident shard: waiting for
                    # one here would hold back the sample due now.
                    reach = position + 1 + min(window - 1, 2 * position)
                    while looked < min(len(ids), reach):
                        if looked > position and self.spanner[ids[looked]][0] not in self._ready:
                            break
                        obj = StreamingDataset.get_item(self, ids[looked])
                        fetching[looked] = self._pool.submit(self._fetch_extra, obj)
                        looked += 1
                    future = fetching.pop(position, None)
                    if future is not None:
                        wait([future])  # its failure is met again, and raised, by get_item
                    yield self[sample_id]
        finally:
            for future in fetching.values():
                future.cancel()
