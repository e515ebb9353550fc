# cython: language_level=3
"""Shuffle kernels that draw from a ``numpy.random.Generator``'s own bit generator.

Every draw goes through NumPy's C distribution functions (``random_interval``,
``random_bounded_uint64_fill``, ``random_uniform``) on the Generator's ``bitgen_t``, in the same
order as the NumPy calls of the reference algorithms, so results are bit-for-bit those of
``np.random.default_rng(seed)``. Callers validate arguments; kernels re-check the bounds that would
otherwise let bad input touch memory out of range.
"""

from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport floor
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc
from numpy.random cimport bitgen_t


cdef extern from "numpy/random/distributions.h":
    uint64_t random_interval(bitgen_t *bitgen_state, uint64_t max) nogil
    double random_uniform(bitgen_t *bitgen_state, double lower, double range) nogil
    void random_bounded_uint64_fill(bitgen_t *bitgen_state, uint64_t off, uint64_t rng,
                                    Py_ssize_t cnt, bint use_masked, uint64_t *out) nogil


cdef struct _Keyed:
    double key
    int64_t val


cdef bitgen_t *_bitgen(object rng) except NULL:
    """Borrow the ``bitgen_t`` of a ``numpy.random.Generator`` (kept alive by the caller)."""
    capsule = rng.bit_generator.capsule
    return <bitgen_t *>PyCapsule_GetPointer(capsule, "BitGenerator")


cdef inline void _fisher_yates(bitgen_t *bg, int64_t *x, Py_ssize_t n) noexcept nogil:
    # Generator.shuffle: for i = n-1 .. 1, swap x[i] with x[random_interval(i)].
    cdef Py_ssize_t i, j
    cdef int64_t t
    for i in range(n - 1, 0, -1):
        j = <Py_ssize_t>random_interval(bg, <uint64_t>i)
        t = x[i]
        x[i] = x[j]
        x[j] = t


cdef inline int64_t _integer(bitgen_t *bg, int64_t low, int64_t high) noexcept nogil:
    # Generator.integers(low, high) for a scalar int64: one bounded (Lemire) fill of size 1.
    cdef uint64_t out
    random_bounded_uint64_fill(bg, <uint64_t>low, <uint64_t>(high - 1 - low), 1, 0, &out)
    return <int64_t>out


cdef Py_ssize_t _check_spans(const int64_t[:] sizes, Py_ssize_t out_len) except -1:
    cdef Py_ssize_t k, total = 0
    for k in range(sizes.shape[0]):
        if sizes[k] < 0:
            raise ValueError(f"span {k} has a negative size ({sizes[k]})")
        total += sizes[k]
    if total != out_len:
        raise ValueError(f"spans hold {total} samples but the output holds {out_len}")
    return total


def shuffle_spans(rng, const int64_t[:] begins, const int64_t[:] sizes, int64_t[:] out):
    """Write each span's sample ids (``begin .. begin+size``) after the last, shuffling each.

    Draws exactly as ``for each span: a = np.arange(begin, begin+size); rng.shuffle(a)``.

    Args:
        rng (numpy.random.Generator): Generator to draw from (its state advances).
        begins (NDArray[np.int64]): First sample id of each span.
        sizes (NDArray[np.int64]): Number of samples of each span.
        out (NDArray[np.int64]): Destination, exactly ``sizes.sum()`` long.
    """
    if begins.shape[0] != sizes.shape[0]:
        raise ValueError("begins and sizes differ in length")
    _check_spans(sizes, out.shape[0])
    cdef bitgen_t *bg = _bitgen(rng)
    cdef Py_ssize_t k, i, n, pos = 0
    cdef int64_t b
    with rng.bit_generator.lock, nogil:
        for k in range(sizes.shape[0]):
            n = sizes[k]
            b = begins[k]
            for i in range(n):
                out[pos + i] = b + i
            _fisher_yates(bg, &out[pos], n)
            pos += n


def gather_shuffle_pieces(rng, const int64_t[:] src, const int64_t[:] starts,
                          const int64_t[:] sizes, int64_t[:] out):
    """Copy each piece ``src[start:start+size]`` after the last into ``out``, shuffling each.

    Draws exactly as ``rng.shuffle(piece)`` for each piece in order.

    Args:
        rng (numpy.random.Generator): Generator to draw from (its state advances).
        src (NDArray[np.int64]): Source sample ids.
        starts (NDArray[np.int64]): Offset of each piece in ``src``.
        sizes (NDArray[np.int64]): Length of each piece.
        out (NDArray[np.int64]): Destination, exactly ``sizes.sum()`` long.
    """
    if starts.shape[0] != sizes.shape[0]:
        raise ValueError("starts and sizes differ in length")
    _check_spans(sizes, out.shape[0])
    cdef Py_ssize_t k, i, n, s, pos = 0
    for k in range(sizes.shape[0]):
        if starts[k] < 0 or starts[k] + sizes[k] > src.shape[0]:
            raise ValueError(f"piece {k} ({starts[k]}+{sizes[k]}) is out of the source's range")
    cdef bitgen_t *bg = _bitgen(rng)
    with rng.bit_generator.lock, nogil:
        for k in range(sizes.shape[0]):
            n = sizes[k]
            s = starts[k]
            for i in range(n):
                out[pos + i] = src[s + i]
            _fisher_yates(bg, &out[pos], n)
            pos += n


def shuffle_blocks_py1br(rng, int64_t[:] ids, const int64_t[:] node_bounds,
                         const int64_t[:] stagger, int64_t low, int64_t high):
    """Shuffle each node's samples within staggered blocks of random size (algorithm ``py1br``).

    Per node: draw block sizes ``rng.integers(low, high)`` until the node is covered, then
    ``rng.shuffle`` each staggered block in order.

    Args:
        rng (numpy.random.Generator): Generator to draw from (its state advances).
        ids (NDArray[np.int64]): Sample ids, shuffled in place.
        node_bounds (NDArray[np.int64]): ``num_nodes + 1`` ascending offsets into ``ids``.
        stagger (NDArray[np.int64]): Per-node stagger, each in ``[0, low)``.
        low (int): Smallest block size (inclusive), positive.
        high (int): Largest block size (exclusive), above ``low``.
    """
    cdef Py_ssize_t num_nodes = node_bounds.shape[0] - 1
    cdef Py_ssize_t node
    if num_nodes < 0 or stagger.shape[0] < num_nodes:
        raise ValueError("node_bounds/stagger do not match")
    if not 0 < low < high:
        raise ValueError(f"bad block size range [{low}, {high})")
    for node in range(num_nodes):
        if not (0 <= node_bounds[node] <= node_bounds[node + 1] <= ids.shape[0]):
            raise ValueError("node_bounds must ascend within the ids")
        if not 0 <= stagger[node] < low:
            raise ValueError("stagger must lie in [0, low)")
    cdef bitgen_t *bg = _bitgen(rng)
    cdef int64_t start, stop, end, size, bstart, bstop, st
    cdef Py_ssize_t cap = 64, nblocks, b
    cdef int64_t *blocks = <int64_t *>malloc(2 * cap * sizeof(int64_t))
    cdef int64_t *grown
    if blocks == NULL:
        raise MemoryError()
    try:
        with rng.bit_generator.lock:
            for node in range(num_nodes):
                start = node_bounds[node]
                stop = node_bounds[node + 1]
                st = stagger[node]
                end = start
                nblocks = 0
                while end < stop:
                    size = _integer(bg, low, high)
                    bstart = end - st if end - st > start else start
                    bstop = end + size - st if end + size - st < stop else stop
                    if nblocks == cap:
                        grown = <int64_t *>malloc(4 * cap * sizeof(int64_t))
                        if grown == NULL:
                            raise MemoryError()
                        for b in range(2 * cap):
                            grown[b] = blocks[b]
                        free(blocks)
                        blocks = grown
                        cap *= 2
                    blocks[2 * nblocks] = bstart
                    blocks[2 * nblocks + 1] = bstop
                    nblocks += 1
                    end += bstop - bstart
                with nogil:
                    for b in range(nblocks):
                        _fisher_yates(bg, &ids[blocks[2 * b]], blocks[2 * b + 1] - blocks[2 * b])
    finally:
        free(blocks)


def spread_sort_py1e(rng, int64_t[:] ids, const int64_t[:] sizes, int64_t low, int64_t high):
    """Spread one canonical node's span samples by uniform shifts, then sort by position (``py1e``).

    ``ids`` holds the node's spans one after another (each already shuffled). Per span, draws
    ``rng.integers(low, high)`` as its block size and ``rng.uniform(lo, hi, size)`` as shifts of
    its samples' positions; ``ids`` is then reordered by ascending position (a bucket sort, since
    positions lie in ``[0, len(ids))``; ties, which have probability ~0, keep index order).

    Args:
        rng (numpy.random.Generator): Generator to draw from (its state advances).
        ids (NDArray[np.int64]): The canonical node's sample ids, reordered in place.
        sizes (NDArray[np.int64]): Size of each span, summing to ``len(ids)``.
        low (int): Smallest block size (inclusive), non-negative.
        high (int): Largest block size (exclusive), above ``low``.

    Returns:
        bool: Whether some span was larger than its block (so was not spread at all).
    """
    cdef Py_ssize_t n = ids.shape[0]
    _check_spans(sizes, n)
    if not 0 <= low < high:
        raise ValueError(f"bad block size range [{low}, {high})")
    if n == 0:
        return False
    cdef bitgen_t *bg = _bitgen(rng)
    cdef double *pos = <double *>malloc(n * sizeof(double))
    cdef _Keyed *sorted_ = <_Keyed *>malloc(n * sizeof(_Keyed))
    cdef int32_t *bucket = <int32_t *>malloc(n * sizeof(int32_t))
    cdef int32_t *heads = <int32_t *>malloc((n + 1) * sizeof(int32_t))
    cdef bint warn = False
    cdef Py_ssize_t k, i, off = 0, span, bkt, lo_i, j
    cdef int64_t block
    cdef double cutoff, lower, upper, fpos
    cdef _Keyed cur
    if n >= 0x7FFFFFFF:
        raise ValueError("a canonical node holds too many samples for this kernel (>= 2**31 - 1)")
    try:
        if pos == NULL or sorted_ == NULL or bucket == NULL or heads == NULL:
            raise MemoryError()
        with rng.bit_generator.lock, nogil:
            for i in range(n + 1):
                heads[i] = 0
            for k in range(sizes.shape[0]):
                span = sizes[k]
                block = _integer(bg, low, high)
                cutoff = (<double>block - <double>span) / 2.0
                if cutoff < 0:
                    cutoff = 0
                    warn = True
                # Python's max/min on (-cutoff, -offset) and (cutoff, room): same values.
                lower = -cutoff
                if -<double>off > lower:
                    lower = -<double>off
                upper = cutoff
                if <double>(n - off - span) < upper:
                    upper = <double>(n - off - span)
                for i in range(off, off + span):
                    fpos = <double>i + random_uniform(bg, lower, upper - lower)
                    pos[i] = fpos
                    # Bucket by floor(position); positions lie in [0, n - 1] up to rounding.
                    fpos = floor(fpos)
                    bkt = 0 if fpos < 0 else (n - 1 if fpos > n - 1 else <Py_ssize_t>fpos)
                    bucket[i] = <int32_t>bkt
                    heads[bkt + 1] += 1
                off += span
            for i in range(n):
                heads[i + 1] += heads[i]
            for i in range(n):
                j = heads[bucket[i]]
                sorted_[j].key = pos[i]
                sorted_[j].val = ids[i]
                heads[bucket[i]] = <int32_t>(j + 1)
            # heads[b] is now the end of bucket b; insertion-sort each (stable, tiny buckets).
            lo_i = 0
            for bkt in range(n):
                for i in range(lo_i + 1, heads[bkt]):
                    cur = sorted_[i]
                    j = i - 1
                    while j >= lo_i and sorted_[j].key > cur.key:
                        sorted_[j + 1] = sorted_[j]
                        j -= 1
                    sorted_[j + 1] = cur
                lo_i = heads[bkt]
            for i in range(n):
                ids[i] = sorted_[i].val
    finally:
        free(pos)
        free(sorted_)
        free(bucket)
        free(heads)
    return warn
