"""Stream weighting and per-epoch resampling: how many samples each stream and shard contribute.

``resolve_stream_weights`` turns the ``proportion``/``repeat``/``choose`` the user gave each
stream into every stream's derived weights (as ``StreamingDataset.__init__`` does);
``get_sampling`` spreads a stream's choose count over its shards; ``resample_streams`` expands
that into shuffle units and underlying sample ids. All equal the reference (MosaicML Streaming
0.13.0) bit for bit, drawing from ``np.random.default_rng`` in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "StreamWeights",
    "get_sampling",
    "resample_streams",
    "resolve_stream_weights",
]


def get_sampling(
    samples_per_shard: NDArray[np.int64],
    choose: int,
    granularity: int,
    seed: int,
    epoch: int,
    use_epoch: bool,
) -> NDArray[np.int64]:
    """Get how many samples to draw from each shard of the given stream.

    Whole repeats take every shard equally; the fractional remainder is filled by taking
    ``granularity``-sized picks of shards in a seeded random order.

    Args:
        samples_per_shard (NDArray[np.int64]): Array of underlying shard sizes.
        choose (int): How many samples to draw in total over all shards.
        granularity (int): How many samples to draw at a time from the same shard.
        seed (int): Seed for shuffling sampling granules.
        epoch (int): Which epoch we are sampling for.
        use_epoch (bool): Whether to factor epoch into the base seed, or use the same seed across
            epochs.

    Returns:
        NDArray[np.int64]: Array of ephemeral samples chosen per shard.

    Raises:
        ValueError: If ``choose``, ``seed`` or ``epoch`` is negative or ``granularity`` is not
            positive.
    """
    if choose < 0:
        raise ValueError(f"`choose` must be a non-negative integer, but got: {choose}.")
    if granularity <= 0:
        raise ValueError(f"`granularity` must be a positive integer, but got: {granularity}.")
    if seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer, but got: {seed}.")
    if epoch < 0:
        raise ValueError(f"`epoch` must be a non-negative integer, but got: {epoch}.")
    sizes = np.asarray(samples_per_shard, np.int64)
    num_samples = int(sizes.sum())
    if num_samples <= 0:
        raise ValueError("samples_per_shard: the stream has no samples to choose from")
    choose = int(choose)
    if not choose % num_samples:
        return sizes * choose // num_samples

    # Picks: each shard cut into granularity-sized pieces (the last one possibly smaller).
    picks_per_shard = (sizes + granularity - 1) // granularity
    pick_shard = np.repeat(np.arange(len(sizes)), picks_per_shard)
    pick_size = np.full(len(pick_shard), granularity, np.int64)
    pick_size[np.cumsum(picks_per_shard) - 1] = sizes - (picks_per_shard - 1) * granularity

    rng = np.random.default_rng(seed + epoch if use_epoch else seed)
    order = rng.permutation(int(picks_per_shard.sum()))

    # Take picks in that order until the remainder is covered; the last one only partly.
    need = choose % num_samples
    taken = np.cumsum(pick_size[order])
    last = int(np.searchsorted(taken, need))
    used = order[: last + 1]
    amounts = pick_size[used].copy()
    amounts[-1] -= int(taken[last]) - need
    per_shard = sizes * (choose // num_samples)
    np.add.at(per_shard, pick_shard[used], amounts)
    return per_shard


@dataclass(frozen=True, eq=False)
class StreamWeights:
    """Every stream's derived weights, as ``StreamingDataset`` stores them on its streams.

    Attributes:
        proportion (NDArray[np.float64]): Each stream's share of the epoch.
        repeat (NDArray[np.float64]): Each stream's samples drawn per underlying sample.
        choose (NDArray[np.int64]): Samples drawn from each stream per epoch.
        epoch_size (int): Samples per epoch over all streams.
    """

    proportion: NDArray[np.float64]
    repeat: NDArray[np.float64]
    choose: NDArray[np.int64]
    epoch_size: int


def _fill_shortfall(
    choose_per_epoch: int, proportion: NDArray[np.float64], seed: int
) -> NDArray[np.int64]:
    # Floor each stream's share; hand the leftover samples one each to random distinct streams.
    choose = (choose_per_epoch * proportion).astype(np.int64)
    shortfall = choose_per_epoch - int(choose.sum())
    indices = np.random.default_rng(seed).choice(len(proportion), shortfall, False)
    choose[indices] += 1
    return choose


def resolve_stream_weights(
    proportions: Sequence[float | None],
    repeats: Sequence[float | None],
    chooses: Sequence[int | None],
    samples_per_stream: Sequence[int] | NDArray[np.int64],
    epoch_size: int | None,
    seed: int,
) -> StreamWeights:
    """Derive each stream's proportion, repeat and choose count, as ``StreamingDataset`` does.

    Streams are weighted either relatively (every stream gives ``proportion``) or absolutely
    (each gives ``repeat``, ``choose`` or nothing); ``epoch_size`` applies to relative or
    unspecified weights only. Rounding leftovers go to randomly chosen streams (seeded by
    ``seed``).

    Args:
        proportions (Sequence[float | None]): Each stream's ``proportion`` as given, or ``None``.
        repeats (Sequence[float | None]): Each stream's ``repeat`` as given, or ``None``.
        chooses (Sequence[int | None]): Each stream's ``choose`` as given, or ``None``.
        samples_per_stream (Sequence[int]): Underlying samples of each stream.
        epoch_size (int, optional): Samples per epoch, if given (falsy means not given).
        seed (int): The dataset's shuffle seed.

    Returns:
        StreamWeights: The derived weights and the epoch size.

    Raises:
        ValueError: If a stream gives more than one weight or a negative one, relative and
            absolute weights are mixed, or ``epoch_size`` is given with absolute weights.
    """
    n = len(samples_per_stream)
    if not (len(proportions) == len(repeats) == len(chooses) == n) or not n:
        raise ValueError("streams: give one proportion/repeat/choose entry per stream")
    for p, r, c in zip(proportions, repeats, chooses):
        if (p is not None) + (r is not None) + (c is not None) > 1:
            raise ValueError(
                "At most one of `proportion`, `repeat`, and `choose` may be specified; the "
                "others are derived"
            )
        for name, value in (("proportion", p), ("repeat", r), ("choose", c)):
            if value is not None and value < 0:
                raise ValueError(f"`{name}` must be non-negative")
    relative = proportions[0] is not None
    unspecified = True
    for stream_id, (p, r, c) in enumerate(zip(proportions, repeats, chooses)):
        if relative != (p is not None):
            raise ValueError(
                f"Relative (`proportion`) and absolute (`repeat`, `choose`, none) stream weights "
                f"are incompatible with each other (error in stream {stream_id})"
            )
        if p is not None or r is not None or c is not None:
            unspecified = False

    samples = np.asarray(samples_per_stream, np.int64)
    if relative or (unspecified and epoch_size):
        total = int(epoch_size) if epoch_size else int(samples.sum())
        weights = np.array(proportions if relative else samples, np.float64)
        proportion = weights / weights.sum()
        choose = _fill_shortfall(total, proportion, seed)
        repeat = choose / samples
    else:
        if epoch_size:
            raise ValueError("Only provide `choose` when weighting streams relatively")
        choose = np.zeros(n, np.int64)
        for stream_id, (r, c) in enumerate(zip(repeats, chooses)):
            if r is not None:
                choose[stream_id] = int(r * samples[stream_id])
            elif c is not None:
                choose[stream_id] = c
            else:
                choose[stream_id] = samples[stream_id]
        repeat = choose / samples
        proportion = choose / choose.sum()
        total = int(choose.sum())
    return StreamWeights(proportion, repeat, choose, total)


def resample_streams(
    samples_per_shard: NDArray[np.int64],
    shards_per_stream: Sequence[int] | NDArray[np.int64],
    choose_per_stream: Sequence[int] | NDArray[np.int64],
    seed: int,
    epoch: int,
    sampling_method: str = "balanced",
    sampling_granularity: int = 1,
    shuffle: bool = False,
    stream_id: int | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Perform the up/down-sampling needed to generate the weighted epoch.

    Same result as ``StreamingDataset.resample_streams(epoch, stream_id)`` for a dataset with
    these shards, streams and settings.

    Args:
        samples_per_shard (NDArray[np.int64]): Samples of every shard, streams one after another.
        shards_per_stream (Sequence[int]): Number of shards of each stream.
        choose_per_stream (Sequence[int]): Samples to draw from each stream per epoch.
        seed (int): The dataset's shuffle seed.
        epoch (int): Which epoch this is for.
        sampling_method (str): ``balanced`` (new draws every epoch) or ``fixed``. Defaults to
            ``balanced``.
        sampling_granularity (int): Samples drawn at a time from one shard. Defaults to ``1``.
        shuffle (bool): Whether the dataset shuffles (with ``balanced``, the shard apportioning
            then also changes every epoch). Defaults to ``False``.
        stream_id (int, optional): Resample only this stream. Defaults to ``None`` (all).

    Returns:
        Tuple[NDArray[np.int64], NDArray[np.int64]]: Shuffle units (resampled shard pieces'
            sizes) and the underlying sample id of each resampled sample.

    Raises:
        ValueError: On an unknown ``sampling_method`` or a ``stream_id`` out of range.
    """
    units, ids = _resample(
        np.asarray(samples_per_shard, np.int64),
        np.asarray(shards_per_stream, np.int64),
        np.asarray(choose_per_stream, np.int64),
        seed,
        epoch,
        sampling_method,
        sampling_granularity,
        shuffle,
        stream_id,
        identity_as_none=False,
    )
    assert ids is not None
    return units, ids


def _resample(
    samples_per_shard: NDArray[np.int64],
    shards_per_stream: NDArray[np.int64],
    choose_per_stream: NDArray[np.int64],
    seed: int,
    epoch: int,
    sampling_method: str,
    sampling_granularity: int,
    shuffle: bool,
    stream_id: int | None,
    identity_as_none: bool,
) -> tuple[NDArray[np.int64], NDArray[np.int64] | None]:
    """``resample_streams``; with ``identity_as_none``, ``None`` stands for ``arange(total)``."""
    if sampling_method not in ("balanced", "fixed"):
        raise ValueError(
            f"Invalid sampling method: {sampling_method}. Must be one of `balanced` or `fixed`."
        )
    num_streams = len(shards_per_stream)
    if len(choose_per_stream) != num_streams or int(shards_per_stream.sum()) != len(
        samples_per_shard
    ):
        raise ValueError("shards_per_stream/choose_per_stream do not match samples_per_shard")
    if stream_id is not None and not 0 <= stream_id < num_streams:
        raise ValueError(f"stream_id {stream_id} is out of range for {num_streams} streams")
    balanced = sampling_method == "balanced"
    rng = np.random.default_rng(seed + epoch if balanced else seed)
    use_epoch = bool(shuffle) and balanced
    shard_offsets = np.concatenate([[0], np.cumsum(shards_per_stream)])
    sample_offsets = np.concatenate([[0], np.cumsum(samples_per_shard)]).astype(np.int64)
    streams = range(num_streams) if stream_id is None else [stream_id]

    unit_parts: list[NDArray[np.int64]] = []
    # Whole streams taken as they are stay ranges until we know the ids are needed at all.
    id_parts: list[NDArray[np.int64] | range] = []
    identity = True
    for sid in streams:
        first, end = int(shard_offsets[sid]), int(shard_offsets[sid + 1])
        sizes = samples_per_shard[first:end]
        choose = get_sampling(
            sizes, int(choose_per_stream[sid]), sampling_granularity, seed, epoch, use_epoch
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            full = np.where(sizes > 0, choose // np.maximum(sizes, 1), 0)
        rem = choose - full * sizes
        # Units per shard: ``full`` copies of its size, then the remainder if any.
        counts = full + (rem > 0)
        units = np.repeat(sizes, counts)
        units[np.cumsum(counts)[rem > 0] - 1] = rem[rem > 0]
        unit_parts.append(units)
        if np.array_equal(choose, sizes):
            id_parts.append(range(int(sample_offsets[first]), int(sample_offsets[end])))
            continue
        identity = False
        for k in range(end - first):
            shard = first + k
            base = int(sample_offsets[shard])
            size = int(sizes[k])
            if full[k]:
                id_parts.append(np.tile(np.arange(base, base + size, dtype=np.int64), int(full[k])))
            if rem[k]:
                partial = base + rng.choice(size, int(rem[k]), False)
                partial.sort()
                id_parts.append(partial.astype(np.int64))
    units = np.concatenate(unit_parts).astype(np.int64) if unit_parts else np.zeros(0, np.int64)
    if identity and identity_as_none and stream_id is None:
        return units, None
    if not id_parts:
        return units, np.zeros(0, np.int64)
    ids = np.empty(sum(len(part) for part in id_parts), np.int64)
    offset = 0
    for part in id_parts:
        n = len(part)
        ids[offset : offset + n] = (
            np.arange(part.start, part.stop) if isinstance(part, range) else part
        )
        offset += n
    return units, ids
