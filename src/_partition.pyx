# cython: language_level=3
"""One worker's share of the ``orig`` partition, computed entry by entry without the full array."""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

import numpy as np


def orig_worker_ids(int64_t num_samples, int64_t ncn, int64_t pn, int64_t rpn, int64_t wpr,
                    int64_t bs, int64_t drop_first, int64_t node, int64_t rank, int64_t worker):
    """``get_partitions_orig(...)[node, rank, worker].ravel()`` by index arithmetic alone.

    Each entry of the worker is followed back through the dealing steps of the ``orig``
    algorithm: batches to workers, samples to ranks (the last few repeated to even them out),
    the interleaved canonical rows to nodes (after dropping ``drop_first``), and row columns to
    sample ids (short rows repeat their last id; padding columns repeat earlier ones).

    Args:
        num_samples (int): Dataset size.
        ncn (int): Canonical nodes.
        pn (int): Physical nodes.
        rpn (int): Ranks per node.
        wpr (int): Workers per rank.
        bs (int): Batch size.
        drop_first (int): Samples already seen, a multiple of ``pn``.
        node (int): The worker's node, in ``[0, pn)``.
        rank (int): The worker's rank of node, in ``[0, rpn)``.
        worker (int): The worker's index in its rank, in ``[0, wpr)``.

    Returns:
        NDArray[np.int64] | None: The worker's ids (``-1`` padding), or ``None`` for the corner
            cases the full algorithm handles specially (it warns, repeats whole rows, or rejects).
    """
    if min(ncn, pn, rpn, wpr, bs, num_samples) < 1 or drop_first < 0 or drop_first % pn:
        return None
    if not (0 <= node < pn and 0 <= rank < rpn and 0 <= worker < wpr):
        return None
    if num_samples > (1 << 62) // ncn or ncn > (1 << 31) or pn > (1 << 31):
        return None  # keep the index arithmetic far from int64 overflow
    if not (num_samples > ncn or (num_samples == ncn and ncn >= pn)):
        return None
    if (ncn < pn and pn % ncn) or (pn < ncn and ncn % pn):
        return None
    cdef int64_t per_cn = (num_samples + ncn - 1) // ncn
    cdef int64_t node_ratio = pn // ncn if ncn < pn else 0
    cdef int64_t padding = 0
    if node_ratio and per_cn % node_ratio:
        padding = node_ratio - per_cn % node_ratio
    cdef int64_t width = per_cn + padding
    cdef int64_t pad_src = padding + node_ratio - 1  # padding column k repeats k - pad_src
    if padding and width - padding - pad_src < 0:
        return None
    cdef int64_t stream = ncn * width - drop_first
    if stream < 0 or stream % pn:
        return None
    cdef int64_t per_node = stream // pn
    cdef int64_t overflow = per_node % rpn
    cdef int64_t underflow = rpn - overflow if overflow else 0
    if overflow and rpn + underflow - 1 > per_node:
        return None
    cdef int64_t per_rank = (per_node + underflow) // rpn
    cdef int64_t batches = (per_rank + wpr * bs - 1) // (wpr * bs)
    out_arr = np.empty(batches * bs, np.int64)
    cdef int64_t[::1] out = out_arr
    cdef int64_t f, j, q, t = 0, row = 0, col = 0, start, stop, b, i
    # Within a batch consecutive entries are rpn * pn stream entries apart: row and column are
    # stepped instead of divided (the divisions were most of the time); rows' first ids come
    # from a table when there are not too many rows.
    cdef int64_t step = rpn * pn, step_row = step % ncn, step_col = step // ncn
    cdef bint chained = False
    cdef int64_t *firsts = NULL
    if ncn <= (1 << 20):
        firsts = <int64_t *>malloc((ncn + 1) * sizeof(int64_t))
        if firsts == NULL:
            raise MemoryError()
        for row in range(ncn + 1):
            firsts[row] = row * num_samples // ncn
    try:
        with nogil:
            for b in range(batches):
                chained = False
                for i in range(bs):
                    f = b * bs + i
                    # Worker entry f is rank entry j (the rank's batches are dealt round-robin).
                    j = (b * wpr + worker) * bs + i
                    if j >= per_rank:
                        out[f] = -1
                        chained = False
                        continue
                    # Rank entry j is node entry q; entries past the node's share repeat earlier
                    # ones.
                    q = j * rpn + rank
                    if q >= per_node:
                        q -= rpn + underflow - 1
                        chained = False
                    # Node entry q is stream entry t, column t // ncn of canonical row t % ncn.
                    if chained:
                        row += step_row
                        col += step_col
                        if row >= ncn:
                            row -= ncn
                            col += 1
                    else:
                        t = drop_first + q * pn + node
                        row = t % ncn
                        col = t // ncn
                        chained = q + rpn < per_node
                    if firsts != NULL:
                        start = firsts[row]
                        stop = firsts[row + 1]
                    else:
                        start = row * num_samples // ncn
                        stop = (row + 1) * num_samples // ncn
                    if padding and col >= width - padding:
                        out[f] = start + col - pad_src - (
                            col - pad_src == per_cn - 1 and stop - start < per_cn
                        )
                    else:
                        out[f] = start + col - (col == per_cn - 1 and stop - start < per_cn)
    finally:
        free(firsts)
    return out_arr
