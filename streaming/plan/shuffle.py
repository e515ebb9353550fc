"""Shuffle an epoch's sample ids across canonical nodes: ``naive, py1br, py1e, py1s, py2s``.

Each algorithm returns exactly the array of the reference implementation (MosaicML Streaming
0.13.0) for the same arguments, bit for bit: the random draws are made from
``np.random.default_rng(seed)`` and ``np.random.default_rng(seed + epoch)`` in the same order, by
compiled kernels (``streaming._kernels._shuffle``) that draw from the Generator's own bit
generator through NumPy's C API (its ``bitgen_t`` and NumPy's samplers on it). This equality is
guaranteed as long as NumPy keeps its ``Generator`` stream stable. py1e orders samples
by position with a stable sort, so positions that tie exactly (probability ~1e-9 per sample pair)
keep their index order, where the reference's unstable ``argsort`` is platform-defined.

``shuffle_places`` looks up one worker's places of the shuffle without holding the whole epoch's
shuffle for ``py1s``/``py1e``/``py1br``/``py2s`` (memory: about one canonical node); for
``naive`` the permutation is drawn (in int32 below ``2**31`` samples) down to the least place
wanted and looked up.

The assignment of shards to canonical nodes is fixed over a run (seeded by ``seed``); the order
within each canonical node changes every epoch (seeded by ``seed + epoch``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming._kernels import _plan, _shuffle
from streaming.plan.spec import get_algorithm

__all__ = [
    "algos",
    "divide_spans",
    "get_shuffle",
    "get_shuffle_naive",
    "get_shuffle_py1br",
    "get_shuffle_py1e",
    "get_shuffle_py1e_head",
    "get_shuffle_py1s",
    "get_shuffle_py2s",
    "shuffle_places",
]

_SMALL_BLOCK_WARNING = (
    "Shuffle block size was smaller than shard size for some shards. This will result in these "
    "shards not being shuffled with other shards. Set shuffle_block_size to a larger value for a "
    "higher quality shuffle."
)


def _as_sizes(shard_sizes: Sequence[int] | NDArray[np.int64]) -> NDArray[np.int64]:
    sizes = np.asarray(shard_sizes, dtype=np.int64).reshape(-1)
    if (sizes < 0).any():
        raise ValueError("shard_sizes: every shard size must be non-negative")
    return sizes


def _out_for(
    places: NDArray[np.int64], overwrite: bool, copy: bool = False
) -> NDArray[np.int64]:
    # The result array of a look-up: ``places`` itself when the caller gives it away (each place
    # is read before its value replaces it), else a new array (``copy``: holding the places).
    if overwrite and places.flags.writeable:
        return places
    return places.copy() if copy else np.empty(len(places), np.int64)


def _group(
    places: NDArray[np.int64], starts: NDArray[np.int64], out: NDArray[np.int64],
    columns: bool = False,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], Any]:
    # A worker's places grouped by the groups (nodes, spans or pieces) starting at ``starts``,
    # for the kernels that draw group by group: ``(places, out, want_bounds, order)``. The
    # partition's usual shapes cost no per-place look-up: ascending places (then padding) are
    # grouped as they are (places and out cut to the valid ones, the padding's results set to
    # -1; no order), and a share interleaving one ascending column per canonical node column
    # by column (``columns``: an order of the column count, which only ``shuffle_nodes``
    # walks); anything else through ``group_places``.
    ascending = _shuffle.ascending_bounds(places, starts)
    if ascending is not None:
        valid, want_bounds = ascending
        out[valid:] = -1
        return places[:valid], out[:valid], want_bounds, None
    grouped = _shuffle.strided_group(places, starts, out, columns=columns)
    if grouped is None:
        grouped = _shuffle.group_places(places, starts, out)
    return (places, out, *grouped)


def _check_args(num_canonical_nodes: int, seed: int, epoch: int) -> None:
    if int(num_canonical_nodes) < 1:
        raise ValueError(
            f"num_canonical_nodes must be a positive integer, got {num_canonical_nodes}"
        )
    if int(seed) + int(epoch) < 0 or int(seed) < 0:
        raise ValueError(f"seed ({seed}) and seed + epoch ({seed + epoch}) must be non-negative")


def _integers_range_error(low: int, high: int) -> ValueError:
    # The message NumPy's Generator.integers raises for an empty range.
    return ValueError("high <= 0" if low == 0 else "low >= high")


def divide_spans(
    spans: list[tuple[int, int]], num_samples: int, num_parts: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Divide the spans into discrete, equal sized partitions.

    Spans are taken in order and cut where they cross a part boundary
    (``num_samples * (part + 1) // num_parts``). Empty spans join the part being filled.

    Args:
        spans (List[Tuple[int, int]]): Spans ``(begin, end excl)`` to partition, in order.
        num_samples (int): Total number of samples across all spans.
        num_parts (int): Number of groupings to divide spans into.

    Returns:
        Tuple[List[Tuple[int, int]], List[Tuple[int, int]]]: The (possibly cut) spans, and for
            each part the ``(first, end excl)`` indices of its spans in that list.
    """
    out_spans: list[tuple[int, int]] = []
    super_spans: list[tuple[int, int]] = []
    index = 0
    so_far = 0
    begin_part = 0
    # Work on a copy of the current span so the caller's list is left untouched.
    cur = spans[0] if spans else (0, 0)
    for part in range(num_parts):
        part_end = num_samples * (part + 1) // num_parts
        while index < len(spans):
            size = cur[1] - cur[0]
            if part_end < so_far + size:
                if so_far < part_end:
                    split = part_end - so_far
                    out_spans.append((cur[0], cur[0] + split))
                    cur = (cur[0] + split, cur[1])
                    so_far += split
                break
            out_spans.append(cur)
            index += 1
            so_far += size
            if index < len(spans):
                cur = spans[index]
        super_spans.append((begin_part, len(out_spans)))
        begin_part = len(out_spans)
    return out_spans, super_spans


def _divide_spans_arrays(
    begins: NDArray[np.int64], sizes: NDArray[np.int64], num_samples: int, num_parts: int
) -> tuple[NDArray[np.int64], list[tuple[int, int]]]:
    """``divide_spans`` of spans with no empty one, in arrays: ``(begin, end)`` rows and the
    parts' ``(first, end)`` row ranges (no Python object per span: no garbage collection on
    the way).

    The cut spans run between consecutive cut points of the spans' concatenation: the spans'
    ends and the part boundaries (``num_samples * (part + 1) // num_parts``); a part ends at the
    cut points up to its boundary.
    """
    ends = np.cumsum(sizes)
    bounds = num_samples * np.arange(1, num_parts + 1, dtype=np.int64) // num_parts
    cuts = np.concatenate([ends, bounds[bounds > 0]])
    cuts.sort(kind="stable")
    cuts = cuts[np.concatenate([[True], cuts[1:] != cuts[:-1]])]  # distinct, last: num_samples
    starts = np.concatenate([[0], cuts[:-1]])
    which = np.searchsorted(ends, starts, side="right")  # the span each cut piece is from
    first = begins[which] + (starts - (ends[which] - sizes[which]))
    arr = np.stack([first, first + (cuts - starts)], axis=1)
    stops = np.searchsorted(cuts, bounds, side="right").tolist()
    return arr, list(zip([0] + stops[:-1], stops))


def _node_spans(
    shard_sizes: Sequence[int] | NDArray[np.int64], num_canonical_nodes: int, seed: int, epoch: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], list[tuple[int, int]], np.random.Generator, int]:
    """Shared first steps of py1br/py1e/py1s: check, order shards, cut at nodes, reorder per epoch.

    Returns the span begins and sizes in final order, each node's ``(first, end)`` span indices,
    the epoch generator (positioned after the span reorders) and the sample count.
    """
    sizes = _as_sizes(shard_sizes)
    _check_args(num_canonical_nodes, seed, epoch)
    ends = np.cumsum(sizes)
    begins = ends - sizes
    num_samples = int(ends[-1]) if len(ends) else 0

    # Fixed over the run: the order of shards (same draws as shuffling the list of spans).
    order = np.arange(len(sizes))
    np.random.default_rng(seed).shuffle(order)
    if num_samples and int(sizes.min()) > 0:
        arr, node_spans = _divide_spans_arrays(begins[order], sizes[order], num_samples,
                                               num_canonical_nodes)
    else:
        spans = list(zip(begins[order].tolist(), ends[order].tolist()))
        spans, node_spans = divide_spans(spans, num_samples, num_canonical_nodes)
        arr = np.array(spans, np.int64).reshape(-1, 2)

    # Unique to this epoch: the order of spans within each canonical node.
    epoch_rng = np.random.default_rng(seed + epoch)
    for first, end in node_spans:
        if end - first > 1:
            perm = np.arange(first, end)
            epoch_rng.shuffle(perm)
            arr[first:end] = arr[perm]
    return arr[:, 0].copy(), arr[:, 1] - arr[:, 0], node_spans, epoch_rng, num_samples


def get_shuffle_naive(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """Get the shuffled global ordering of samples for an epoch, shuffling all-to-all.

    Args:
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes (ignored).
        seed (int): Base random seed, which is held constant over an entire training run.
        epoch (int): Current epoch, which is added to the seed to get a different deterministic
            shuffle each epoch.
        block_size (int): Unit of shuffle (ignored). Defaults to ``1 << 18``.

    Returns:
        NDArray[np.int64]: 1:1 mapping of sample ID to shuffled sample ID.
    """
    sizes = _as_sizes(shard_sizes)
    return _shuffle.permutation(np.random.default_rng(seed + epoch), int(sizes.sum()))


def get_shuffle_py1s(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """Get the shuffled global ordering of samples for an epoch, shuffling within each shard.

    Args:
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes.
        seed (int): Base random seed, which is held constant over an entire training run.
        epoch (int): Current epoch, which is added to the seed to get a different deterministic
            shuffle each epoch.
        block_size (int): Unit of shuffle (ignored: the unit is the shard). Defaults to
            ``1 << 18``.

    Returns:
        NDArray[np.int64]: 1:1 mapping of sample ID to shuffled sample ID.
    """
    begins, span_sizes, node_spans, epoch_rng, num_samples = _node_spans(
        shard_sizes, num_canonical_nodes, seed, epoch
    )
    ids = np.empty(num_samples, np.int64)
    _shuffle.shuffle_nodes(epoch_rng, "py1s", begins, span_sizes, _bounds(node_spans), 0, 1, ids)
    return ids


def get_shuffle_py1br(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """Get the shuffled global ordering of samples for an epoch, shuffling in random-size blocks.

    Args:
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes.
        seed (int): Base random seed, which is held constant over an entire training run.
        epoch (int): Current epoch, which is added to the seed to get a different deterministic
            shuffle each epoch.
        block_size (int): Unit of shuffle; each block's size is drawn uniformly from
            ``[0.75 * block_size, 1.25 * block_size)``. Defaults to ``1 << 18``.

    Returns:
        NDArray[np.int64]: 1:1 mapping of sample ID to shuffled sample ID.

    Raises:
        ValueError: If ``block_size`` is too small to draw block sizes from (below 2).
    """
    begins, span_sizes, bounds, stagger, low, high, epoch_rng, num_samples = _py1br_setup(
        shard_sizes, num_canonical_nodes, seed, epoch, block_size
    )
    ids = np.empty(num_samples, np.int64)
    _shuffle.py1br_places(epoch_rng, begins, span_sizes, bounds, stagger, low, high, ids)
    return ids


def _py1br_setup(
    shard_sizes: Sequence[int] | NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
) -> tuple[
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    NDArray[np.int64],
    int,
    int,
    np.random.Generator,
    int,
]:
    """py1br's draws before its blocks: spans, their node bounds, the stagger; block range."""
    begins, span_sizes, node_spans, epoch_rng, num_samples = _node_spans(
        shard_sizes, num_canonical_nodes, seed, epoch
    )
    low, high = int(0.75 * block_size), int(1.25 * block_size)
    if low <= 0:
        raise _integers_range_error(0, low)
    stagger = epoch_rng.integers(0, low, (num_canonical_nodes,))
    if num_samples and low >= high:
        raise _integers_range_error(low, high)
    bounds = _bounds(node_spans)
    return begins, span_sizes, bounds, stagger, low, max(high, low + 1), epoch_rng, num_samples


def get_shuffle_py1e(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """Get the shuffled global ordering of samples for an epoch, spreading shard samples around.

    Each shard's samples are shuffled, then moved by uniform random shifts within a window of
    about ``block_size`` samples, staying inside their canonical node.

    Args:
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes.
        seed (int): Base random seed, which is held constant over an entire training run.
        epoch (int): Current epoch, which is added to the seed to get a different deterministic
            shuffle each epoch.
        block_size (int): Unit of shuffle, the width of the window each shard's samples spread
            over. Defaults to ``1 << 18``.

    Returns:
        NDArray[np.int64]: 1:1 mapping of sample ID to shuffled sample ID.

    Raises:
        ValueError: If a canonical node gets no samples (fewer samples than canonical nodes), or
            ``block_size`` is too small to draw block sizes from.
    """
    return _py1e_epoch(shard_sizes, num_canonical_nodes, seed, epoch, block_size, warn=True)


def _py1e_epoch(
    shard_sizes: Sequence[int] | NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
    warn: bool,
) -> NDArray[np.int64]:
    """``get_shuffle_py1e``, warning of spans that outgrew their block only if ``warn``."""
    begins, span_sizes, node_spans, epoch_rng, num_samples = _node_spans(
        shard_sizes, num_canonical_nodes, seed, epoch
    )
    ids = np.empty(num_samples, np.int64)
    _py1e_nodes(begins, span_sizes, node_spans, epoch_rng, num_canonical_nodes, block_size, ids,
                warn=warn)
    return ids


def get_shuffle_py1e_head(
    shard_sizes: Sequence[int] | NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
    until: int,
    place: int = 0,
) -> tuple[int, NDArray[np.int64]] | None:
    """The first sample ids of one canonical node of ``get_shuffle_py1e``'s epoch, for a
    fraction of the cost of the node (``_shuffle.py1e_head``: ~35 ms against ~0.25 s for a node
    of 1e7 samples).

    They are the samples the shuffle places below position ``until`` of the node: exactly
    ``get_shuffle_py1e(...)[start:start + len(head)]``, ``start`` being the node's first place.
    With one canonical node, the warning ``get_shuffle_py1e`` gives if a span outgrew its block
    is given here; with more, it is left to the epoch's plan (it depends on every node).

    Args:
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes.
        seed (int): Base random seed.
        epoch (int): Current epoch.
        block_size (int): Unit of shuffle (as ``get_shuffle_py1e``'s).
        until (int): Position bound: the head holds the samples placed below it.
        place (int): A place of the epoch: the head is its canonical node's. Defaults to ``0``.

    Returns:
        Optional[Tuple[int, NDArray[np.int64]]]: The node's first place and its head; ``None``
            where there is none to give: an epoch ``get_shuffle_py1e`` refuses (it raises,
            then), or draws that cannot be read ahead (see ``_shuffle.py1e_head``).
    """
    low, high = int(0.75 * block_size), int(1.25 * block_size)
    if low >= high or until < 0 or place < 0:
        return None
    begins, span_sizes, node_spans, epoch_rng, num_samples = _node_spans(
        shard_sizes, num_canonical_nodes, seed, epoch
    )
    bounds = _bounds(node_spans)
    if not len(span_sizes) or (np.diff(bounds) == 0).any():
        return None  # a node without samples: get_shuffle_py1e raises
    node_samples = np.add.reduceat(span_sizes, bounds[:-1])
    if not node_samples.all() or place >= num_samples:
        return None
    node = int(np.searchsorted(np.cumsum(node_samples), place, "right"))
    got = _shuffle.py1e_head(epoch_rng, begins, span_sizes, low, high, until, bounds, node)
    if got is None:
        return None
    head, outgrew = got
    if outgrew and num_canonical_nodes == 1:
        warnings.warn(_SMALL_BLOCK_WARNING, stacklevel=2)
    return int(node_samples[:node].sum()), head


def _py1e_nodes(
    begins: NDArray[np.int64],
    span_sizes: NDArray[np.int64],
    node_spans: list[tuple[int, int]],
    epoch_rng: np.random.Generator,
    num_canonical_nodes: int,
    block_size: int,
    out: NDArray[np.int64],
    want: NDArray[np.int64] | None = None,
    want_bounds: NDArray[np.int64] | None = None,
    order: NDArray[np.int32] | NDArray[np.int64] | None = None,
    exact: bool = True,
    warn: bool = True,
) -> None:
    """The py1e spread of every node (see ``_shuffle.shuffle_nodes``), raising as the reference
    (and warning as it does, if ``warn``)."""
    low, high = int(0.75 * block_size), int(1.25 * block_size)
    for first, end in node_spans:
        if not int(span_sizes[first:end].sum()):
            raise ValueError(
                f"The number of samples assigned to a canonical node is 0. This very likely "
                f"indicates that the number of samples in this stream is less than the number of "
                f"canonical nodes, which is {num_canonical_nodes}. Please check your index.json "
                f"file and ensure that your dataset has been written out correctly. If this was "
                f"intended, reduce num_canonical_nodes."
            )
        if low >= high:
            raise _integers_range_error(low, high)
    outgrew = _shuffle.shuffle_nodes(
        epoch_rng,
        "py1e",
        begins,
        span_sizes,
        _bounds(node_spans),
        low,
        high,
        out,
        want,
        want_bounds,
        order,
        exact=exact,
    )
    if outgrew and warn:
        warnings.warn(_SMALL_BLOCK_WARNING, stacklevel=3)


def _bounds(node_spans: list[tuple[int, int]]) -> NDArray[np.int64]:
    # Nodes' span ranges are consecutive: (first, end) pairs -> num_nodes + 1 bounds.
    return np.array([0] + [end for _, end in node_spans], np.int64)


def shuffle_places(
    algo: str,
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
    places: NDArray[np.int64] | Callable[[], NDArray[np.int64]],
    *,
    overwrite: bool = False,
) -> NDArray[np.int64]:
    """``get_shuffle(...)[places]`` (``-1`` places stay ``-1``), for one worker's share.

    For ``py1s`` and ``py1e`` the epoch's shuffle is never held whole: each canonical node is
    built in turn in reused scratch and only the wanted places are kept, so memory is one node's
    worth plus ``places``. A node holding none of the places is only drawn past (its draws are
    still made, in order, but neither laid out nor sorted; with NumPy's PCG64 its py1e shifts are
    jumped over), and nodes after the last one needed are not drawn at all. For these two, a
    share of a quarter of the epoch or more builds the whole shuffle and indexes it. ``py1br``
    and ``py2s`` work the same way at any share (``_shuffle.py1br_places``/``py2s_places``:
    blocks, shards and pieces without wanted places are only drawn past); ``naive`` draws the
    permutation down to the least wanted place only (Fisher-Yates fixes the places from the
    last one down, so the later draws cannot change them), then looks the places up
    (``_shuffle.permutation``).

    ``places`` may be given as a function computing them: for ``py1s`` and ``py1br`` it is
    called once a scout (``_shuffle.Scout``) is reading the epoch's first draws on a second
    core, so the places are computed meanwhile and the draws they do not need are jumped over.

    Args:
        algo (str): Which shuffling algorithm to use (``naive, py1br, py1e, py1s, py2s``).
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes.
        seed (int): Base random seed, which is held constant over an entire training run.
        epoch (int): Current epoch.
        block_size (int): Unit of shuffle.
        places (NDArray[np.int64] | Callable[[], NDArray[np.int64]]): Places of the shuffled
            epoch to look up, or ``-1``; or a function returning them.
        overwrite (bool): The caller gives ``places`` away: it may be reused for the result
            (saves a copy of an epoch-sized array). Defaults to ``False``.

    Returns:
        NDArray[np.int64]: The sample id at each place (``-1`` where the place is ``-1``).

    Raises:
        ValueError: If ``algo`` is unknown or a place is outside the epoch.
    """
    scout, spans, br_setup = None, None, None
    if callable(places):
        if algo == "py1s":
            spans = _node_spans(shard_sizes, num_canonical_nodes, seed, epoch)
            _, span_sizes, _, epoch_rng, _ = spans
            scout = _shuffle.Scout(epoch_rng, span_sizes)
        elif algo == "py1br":
            br_setup = _py1br_setup(shard_sizes, num_canonical_nodes, seed, epoch, block_size)
            scout = _py1br_scout(br_setup)
        try:
            places = places()
        except BaseException:
            if scout is not None:
                scout.stop()  # (not left reading on a core until it is collected)
            raise
    places = np.asarray(places, np.int64)
    if algo == "py1br":
        return _view_py1br(shard_sizes, num_canonical_nodes, seed, epoch, block_size, places,
                           overwrite, br_setup, scout)
    if algo in _VIEWS:
        return _VIEWS[algo](
            shard_sizes, num_canonical_nodes, seed, epoch, block_size, places, overwrite
        )
    # A share of a quarter of the epoch or more (a lone worker's is all of it) is cheaper to look
    # up in the whole shuffle than node by node; memory stays about one int64 array of the epoch.
    if algo not in ("py1s", "py1e") or 4 * len(places) >= int(np.sum(shard_sizes)):
        if scout is not None:
            scout.stop()
        full = get_shuffle(algo, shard_sizes, num_canonical_nodes, seed, epoch, block_size)
        if len(places) == len(full) and _plan.is_arange(places):
            return full  # a lone worker's places are the epoch in order: nothing to look up
        out = _out_for(places, overwrite, copy=True)
        _plan.compose_ids(out, full, None)
        return out
    begins, span_sizes, node_spans, epoch_rng, num_samples = spans or _node_spans(
        shard_sizes, num_canonical_nodes, seed, epoch
    )
    bounds = _bounds(node_spans)
    span_starts = np.concatenate([[0], np.cumsum(span_sizes)])
    out = _out_for(places, overwrite)
    # Grouped by span: py1s keeps a span's places as soon as it is shuffled. ``places`` stays
    # the kernel's list of places even when it is ``out`` (each is read before it is replaced).
    # Ascending places (then padding) are grouped as they are: only the spans' bounds are found.
    result = out
    places, out, want_bounds, order = _group(places, span_starts, out, columns=True)
    # epoch_rng is dropped afterwards (exact=False): nodes past the last one needed are not drawn.
    if algo == "py1s":
        _shuffle.shuffle_nodes(
            epoch_rng,
            "py1s",
            begins,
            span_sizes,
            bounds,
            0,
            1,
            out,
            places,
            want_bounds,
            order,
            exact=False,
            scout=scout,
        )
    else:
        _py1e_nodes(
            begins,
            span_sizes,
            node_spans,
            epoch_rng,
            num_canonical_nodes,
            block_size,
            out,
            places,
            want_bounds,
            order,
            exact=False,
        )
    return result


def _view_naive(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
    places: NDArray[np.int64],
    overwrite: bool,
) -> NDArray[np.int64]:
    # The permutation is drawn (in int32 below 2**31 samples) down to the least place wanted
    # (Fisher-Yates fixes its places from the last one down), then looked up.
    n = int(_as_sizes(shard_sizes).sum())
    _check_args(num_canonical_nodes, seed, epoch)
    if len(places) == n and _plan.is_arange(places):
        return get_shuffle_naive(shard_sizes, num_canonical_nodes, seed, epoch, block_size)
    out = _out_for(places, overwrite)
    return _shuffle.permutation(np.random.default_rng(seed + epoch), n, places, out, exact=False)


def _py1br_scout(setup: tuple[Any, ...]) -> Any:
    # A scout passing py1br's nodes from the setup's epoch generator while the places are
    # computed (_shuffle.Scout; a no-op when not worth it).
    begins, span_sizes, bounds, stagger, low, high, epoch_rng, num_samples = setup
    span_starts = np.concatenate([[0], np.cumsum(span_sizes)]).astype(np.int64)
    node_sizes = np.diff(span_starts[bounds])
    return _shuffle.Scout(epoch_rng, node_sizes, stagger=stagger, low=low, high=high)


def _view_py1br(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
    places: NDArray[np.int64],
    overwrite: bool,
    setup: tuple[Any, ...] | None = None,
    scout: Any = None,
) -> NDArray[np.int64]:
    # Places grouped by node; blocks drawn past where no place is wanted, nothing after the
    # last node needed drawn. ``setup`` and ``scout`` (started from its epoch generator while
    # the places were computed) are shuffle_places'.
    if setup is None:
        setup = _py1br_setup(shard_sizes, num_canonical_nodes, seed, epoch, block_size)
    begins, span_sizes, bounds, stagger, low, high, epoch_rng, num_samples = setup
    if len(places) == num_samples and _plan.is_arange(places):
        if scout is not None:
            scout.stop()  # every node is read: nothing to jump over
        ids = np.empty(num_samples, np.int64)
        _shuffle.py1br_places(epoch_rng, begins, span_sizes, bounds, stagger, low, high, ids)
        return ids
    span_starts = np.concatenate([[0], np.cumsum(span_sizes)])
    result = out = _out_for(places, overwrite)
    places, out, want_bounds, order = _group(places, span_starts[bounds], out)
    _shuffle.py1br_places(
        epoch_rng,
        begins,
        span_sizes,
        bounds,
        stagger,
        low,
        high,
        out,
        places,
        want_bounds,
        order,
        exact=False,
        scout=scout,
    )
    return result


def _view_py2s(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int,
    places: NDArray[np.int64],
    overwrite: bool,
) -> NDArray[np.int64]:
    # Places grouped by node; shards and pieces drawn past where no place is wanted, nothing
    # after the last node needed drawn.
    fixed_rng, epoch_rng, layout, num_samples = _py2s_setup(
        shard_sizes, num_canonical_nodes, seed, epoch
    )
    if len(places) == num_samples and _plan.is_arange(places):
        ids = np.empty(num_samples, np.int64)
        _shuffle.py2s_places(fixed_rng, epoch_rng, *layout, ids)
        return ids
    piece_starts = np.concatenate([[0], np.cumsum(layout[3])])
    result = out = _out_for(places, overwrite)
    places, out, want_bounds, order = _group(places, piece_starts[layout[4]], out)
    _shuffle.py2s_places(
        fixed_rng, epoch_rng, *layout, out, places, want_bounds, order, exact=False
    )
    return result


_VIEWS: dict[str, Callable[..., NDArray[np.int64]]] = {
    "naive": _view_naive,
    "py1br": _view_py1br,
    "py2s": _view_py2s,
}


def get_shuffle_py2s(
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """Get the shuffled global ordering of samples for an epoch, shuffling within shards twice.

    Samples are shuffled within each shard once for the run, then again each epoch after the
    shards (cut at canonical node boundaries) are reordered within each canonical node.

    Args:
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes.
        seed (int): Base random seed, which is held constant over an entire training run.
        epoch (int): Current epoch, which is added to the seed to get a different deterministic
            shuffle each epoch.
        block_size (int): Unit of shuffle (ignored: the unit is the shard). Defaults to
            ``1 << 18``.

    Returns:
        NDArray[np.int64]: 1:1 mapping of sample ID to shuffled sample ID.
    """
    fixed_rng, epoch_rng, layout, num_samples = _py2s_setup(
        shard_sizes, num_canonical_nodes, seed, epoch
    )
    ids = np.empty(num_samples, np.int64)
    _shuffle.py2s_places(fixed_rng, epoch_rng, *layout, ids)
    return ids


def _py2s_setup(
    shard_sizes: Sequence[int] | NDArray[np.int64], num_canonical_nodes: int, seed: int, epoch: int
) -> tuple[np.random.Generator, np.random.Generator, tuple[NDArray[np.int64], ...], int]:
    """py2s's run generator after the shard reorder, its epoch generator, and the layout:
    shards in run order (begins, sizes), pieces cut at nodes (starts, sizes), node bounds."""
    sizes = _as_sizes(shard_sizes)
    _check_args(num_canonical_nodes, seed, epoch)
    ends = np.cumsum(sizes)
    begins = ends - sizes
    num_samples = int(ends[-1]) if len(ends) else 0

    # Fixed over the run: shard order (each shard's samples are shuffled in the kernel).
    fixed_rng = np.random.default_rng(seed)
    order = np.arange(len(sizes))
    fixed_rng.shuffle(order)

    # Cut the laid-out shards at canonical node boundaries (spans are offsets into the layout).
    layout_ends = np.cumsum(sizes[order])
    spans = list(zip((layout_ends - sizes[order]).tolist(), layout_ends.tolist()))
    pieces, node_pieces = divide_spans(spans, num_samples, num_canonical_nodes)
    piece_arr = np.array(pieces, np.int64).reshape(-1, 2)
    layout = (
        begins[order],
        sizes[order],
        piece_arr[:, 0].copy(),
        piece_arr[:, 1] - piece_arr[:, 0],
        _bounds(node_pieces),
    )
    return fixed_rng, np.random.default_rng(seed + epoch), layout, num_samples


algos: dict[str, Callable[..., NDArray[np.int64]]] = {
    "py1br": get_shuffle_py1br,
    "py1e": get_shuffle_py1e,
    "py1s": get_shuffle_py1s,
    "py2s": get_shuffle_py2s,
    "naive": get_shuffle_naive,
}


def get_shuffle(
    algo: str,
    shard_sizes: NDArray[np.int64],
    num_canonical_nodes: int,
    seed: int,
    epoch: int,
    block_size: int = 1 << 18,
) -> NDArray[np.int64]:
    """Get the shuffled global ordering of samples for an epoch.

    The assignment of shards to nodes is fixed across epochs, but each grouping of shards is
    processed concurrently in a different order by each node's workers each epoch.

    Args:
        algo (str): Which shuffling algorithm to use (``naive, py1br, py1e, py1s, py2s``).
        shard_sizes (NDArray[np.int64]): Number of samples contained in each shard, in order.
        num_canonical_nodes (int): Number of canonical nodes.
        seed (int): Base random seed, which is held constant over an entire training run.
        epoch (int): Current epoch, which is added to the seed to get a different deterministic
            shuffle each epoch.
        block_size (int): Unit of shuffle. Defaults to ``1 << 18``.

    Returns:
        NDArray[np.int64]: 1:1 mapping of sample ID to shuffled sample ID.

    Raises:
        UnknownAlgorithmError: If ``algo`` is unknown (a ``KeyError``, as in the reference, and a
            ``ValueError``).
    """
    get = get_algorithm("shuffle_algo", algos, algo)
    return get(shard_sizes, num_canonical_nodes, seed, epoch, block_size)
