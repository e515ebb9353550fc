# cython: language_level=3, boundscheck=False, wraparound=False
"""Sample id -> shard kernels for the iteration setup (see ``streaming.spanner.Spanner``)."""

cimport numpy as cnp
from libc.stdint cimport int64_t

import numpy as np

cnp.import_array()


def first_visits(const int64_t[::1] ids not None, const int64_t[::1] starts not None,
                 const int64_t[::1] shard_of_start not None, Py_ssize_t num_samples,
                 Py_ssize_t num_shards):
    """Each shard that a sequence of sample ids visits, in order of first visit.

    Args:
        ids (int64 array): Global sample ids, each in ``[0, num_samples)``.
        starts (int64 array): First sample id of each non-empty shard, increasing, from 0.
        shard_of_start (int64 array): Shard id of each entry of ``starts``, each in
            ``[0, num_shards)``.
        num_samples (int): Samples in all shards.
        num_shards (int): Shards (empty ones included).

    Returns:
        Tuple[NDArray[np.int64], NDArray[np.int64]]: The shards, and the position in ``ids`` of
            each one's first visit. The scan stops once every non-empty shard has been seen.

    Raises:
        ValueError: A sample id is out of range, or the tables are inconsistent.
    """
    cdef Py_ssize_t n = ids.shape[0], m = starts.shape[0], i, lo, hi, mid, found = 0
    cdef int64_t sid, shard
    if shard_of_start.shape[0] != m:
        raise ValueError("first_visits: starts and shard_of_start differ in length")
    if m == 0 or starts[0] != 0:
        raise ValueError("first_visits: starts must begin at 0")
    for i in range(m):
        if shard_of_start[i] < 0 or shard_of_start[i] >= num_shards:
            raise ValueError(f"first_visits: shard id {shard_of_start[i]} out of range")
        if i and starts[i] <= starts[i - 1]:
            raise ValueError("first_visits: starts must increase")
    seen_arr = np.zeros(num_shards, np.uint8)
    cdef unsigned char[::1] seen = seen_arr
    out_shards = np.empty(m, np.int64)
    out_first = np.empty(m, np.int64)
    cdef int64_t[::1] shards_view = out_shards
    cdef int64_t[::1] first_view = out_first
    # A shuffled plan changes shard at almost every id: a binary search per id mispredicts at
    # every step. Instead a table of up to 2**16 entries gives the shard at the start of each
    # 2**shift ids, and few shards (usually none) start within one such stretch.
    cdef int shift = 0
    while (num_samples - 1) >> shift >= (1 << 16):
        shift += 1
    table_arr = np.empty(((num_samples - 1) >> shift) + 1, np.int64)
    cdef int64_t[::1] table = table_arr
    lo = 0
    for i in range(table.shape[0]):
        while lo + 1 < m and starts[lo + 1] <= (<int64_t>i << shift):
            lo += 1
        table[i] = lo
    lo = 0
    for i in range(n):
        sid = ids[i]
        if sid < 0 or sid >= num_samples:
            raise ValueError(f"first_visits: sample id {sid} at position {i} is out of range "
                             f"[0, {num_samples})")
        # The last start <= sid: from the table, then forward past shards starting before it.
        lo = table[sid >> shift]
        while lo + 1 < m and starts[lo + 1] <= sid:
            lo += 1
        shard = shard_of_start[lo]
        if not seen[shard]:
            seen[shard] = 1
            shards_view[found] = shard
            first_view[found] = i
            found += 1
            if found == m:
                break
    return out_shards[:found].copy(), out_first[:found].copy()
