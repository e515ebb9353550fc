# cython: language_level=3
"""Shuffle kernels that make a ``numpy.random.Generator``'s draws in the reference's order.

Every draw comes from the Generator's own bit generator through NumPy's C API: the ``bitgen_t``
behind ``rng.bit_generator.capsule`` (its ``next_uint32`` function pointer, as NumPy's
``random_interval`` uses it) and NumPy's samplers on that ``bitgen_t``
(``random_bounded_uint64_fill`` for ``Generator.integers``, ``random_standard_uniform_fill``
for ``Generator.uniform``), with the bit generator's lock held, as NumPy's own methods do. So
after a kernel the Generator is exactly where NumPy's equivalent calls would leave it, for any
bit generator (the reference uses ``default_rng``, i.e. PCG64). Draw order matches the NumPy
calls of the reference algorithms (``Generator.shuffle`` = ``random_interval`` Fisher-Yates, here
all draws first and the swaps after; ``Generator.uniform`` = ``low + (high - low) * u``).

py1e sorts each node in two counting passes over the same draws; rather than storing the
positions, the first pass draws from a copy of the bit generator made through its public
``state`` and the second from the Generator itself. Callers validate arguments; kernels re-check
the bounds that would otherwise let bad input touch memory out of range.
"""

from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from numpy cimport npy_intp
from numpy.random cimport bitgen_t


cdef extern from "numpy/random/distributions.h":
    void random_bounded_uint64_fill(bitgen_t *bitgen_state, uint64_t off, uint64_t rng,
                                    npy_intp cnt, bint use_masked, uint64_t *out) nogil
    void random_standard_uniform_fill(bitgen_t *bitgen_state, npy_intp cnt, double *out) nogil


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include "numpy/random/distributions.h"
    #if defined(__GNUC__) || defined(__clang__)
    static inline uint64_t ss_mask(uint64_t max) { return ~0ULL >> __builtin_clzll(max); }
    #else
    static inline uint64_t ss_mask(uint64_t max) {
        max |= max >> 1; max |= max >> 2; max |= max >> 4;
        max |= max >> 8; max |= max >> 16; max |= max >> 32;
        return max;
    }
    #endif
    #define SS_WORDS 256
    /* Generator.shuffle of x[0..n): for i = n-1 .. 1, swap x[i], x[random_interval(i)]. While
       i < 2**32, random_interval masks 32-bit words (next_uint32) and rejects those above i; the
       mask is fixed while i keeps its bit length, so the loop carries only i (rejection is
       arithmetic, not a branch). Every remaining i takes at least one word, so words are fetched
       min(i, SS_WORDS) at a time in a tight loop without ever drawing one too many. All draws
       come first, into j[1..n) (j must hold n entries), and the swaps follow, free of the draws'
       dependency chain. */
    static inline void ss_fisher_yates_i64(bitgen_t *bg, int64_t *x, uint32_t *j, int64_t n) {
        int64_t i = n - 1, k;
        for (; i > (int64_t)0xFFFFFFFFLL; i--) {
            k = (int64_t)random_interval(bg, (uint64_t)i);
            int64_t t = x[i]; x[i] = x[k]; x[k] = t;
        }
        if (i <= 0) return;
        int64_t top = i, got = 0, used = 0;
        uint32_t words[SS_WORDS];
        uint32_t (*next32)(void *) = bg->next_uint32;
        void *st = bg->state;
        while (i > 0) {
            uint64_t mask = ss_mask((uint64_t)i), low = mask >> 1;
            while (i > (int64_t)low) {
                if (used == got) {
                    got = i < SS_WORDS ? i : SS_WORDS;
                    for (k = 0; k < got; k++) words[k] = next32(st);
                    used = 0;
                }
                uint64_t v = (uint64_t)words[used++] & mask;
                j[i] = (uint32_t)v;
                i -= (int64_t)(v <= (uint64_t)i);
            }
        }
        for (i = top; i > 0; i--) {
            k = j[i];
            int64_t t = x[i]; x[i] = x[k]; x[k] = t;
        }
    }
    /* Insertion sort by key of s[0..m) that is already ordered up to samples sharing a unit (a
       descent is ~1 sample in 5). The usual one-step move is a branch-free compare-exchange;
       only a sample moving two or more places takes the loop. Stable (strict > only). */
    typedef struct { double key; int64_t val; } ss_keyed;
    static inline void ss_settle(ss_keyed *s, int64_t m, int64_t *out) {
        /* The sample at k - 1 (pk, pv) and the key settled at k - 2 (lk) stay in registers, so
           no iteration waits on the previous one's stores. Values also go to out[0..m). */
        int64_t k, j, pv, vb, wv;
        double pk, kb, wk, lk = -1.0; /* positions are >= 0 */
        if (m < 1) return;
        pk = s[0].key; pv = s[0].val;
        for (k = 1; k < m; k++) {
            kb = s[k].key; vb = s[k].val;
            int sw = pk > kb;
            wk = sw ? kb : pk; wv = sw ? vb : pv;
            s[k - 1].key = wk; s[k - 1].val = wv;
            out[k - 1] = wv;
            if (sw & (lk > kb)) {
                for (j = k - 2; j >= 0 && s[j].key > kb; j--) { s[j + 1] = s[j]; out[j + 1] = s[j].val; }
                s[j + 1].key = kb; s[j + 1].val = vb; out[j + 1] = vb;
                wk = s[k - 1].key;
            }
            pk = sw ? pk : kb; pv = sw ? pv : vb;
            lk = wk;
        }
        s[m - 1].key = pk; s[m - 1].val = pv; out[m - 1] = pv;
    }
    /* Order one coarse bucket src[0..m) (positions in [base, base + width)) into out by unit,
       then settle within units. */
    static inline void ss_fine_sort(const ss_keyed *src, int64_t m, int64_t base, int64_t width,
                                    ss_keyed *scratch, int32_t *fine, int64_t *out) {
        int64_t k, u;
        memset(fine, 0, (size_t)(width + 1) * sizeof(int32_t));
        for (k = 0; k < m; k++) {
            u = (int64_t)src[k].key - base;
            u = u < 0 ? 0 : (u >= width ? width - 1 : u);
            fine[u + 1]++;
        }
        for (k = 0; k < width; k++) fine[k + 1] += fine[k];
        for (k = 0; k < m; k++) {
            u = (int64_t)src[k].key - base;
            u = u < 0 ? 0 : (u >= width ? width - 1 : u);
            scratch[fine[u]++] = src[k];
        }
        ss_settle(scratch, m, out);
    }
    """
    ctypedef struct ss_keyed:
        double key
        int64_t val
    void ss_fine_sort(const ss_keyed *src, int64_t m, int64_t base, int64_t width,
                      ss_keyed *scratch, int32_t *fine, int64_t *out) nogil
    void ss_fisher_yates_i64(bitgen_t *bg, int64_t *x, uint32_t *j, int64_t n) nogil


cdef bitgen_t *_bitgen(object bit) except NULL:
    """The ``bitgen_t`` of a NumPy bit generator (the caller keeps ``bit`` alive)."""
    try:
        capsule = bit.capsule
    except AttributeError:
        raise TypeError(
            f"shuffle kernels need a numpy.random.Generator, got bit generator {type(bit)}"
        ) from None
    return <bitgen_t *>PyCapsule_GetPointer(capsule, "BitGenerator")


cdef object _bit_generator(object rng):
    try:
        return rng.bit_generator
    except AttributeError:
        raise TypeError(f"shuffle kernels need a numpy.random.Generator, got {type(rng)}") from None


cdef object _copy_of(object bit):
    """A second bit generator of the same kind, for re-drawing a stretch (see ``_sync``)."""
    return type(bit)()


cdef int _sync(object copy, object bit) except -1:
    # Through the public state, so the copy's next draws are exactly ``bit``'s next draws.
    copy.state = bit.state
    return 0


ctypedef ss_keyed _Keyed


cdef enum:
    # py1e sorts in two counting passes: by ``floor(position) >> _COARSE``, then by the unit within
    # that; the coarse buckets written concurrently (the shift window / 2**_COARSE) stay in cache.
    # _DRAWS: uniform doubles drawn at a time for a span's shifts.
    _COARSE = 10
    _FINE = 1 << _COARSE
    _DRAWS = 256


cdef uint32_t *_draw_space(Py_ssize_t most) except NULL:
    """Scratch for the Fisher-Yates draws of a span of up to ``most`` samples."""
    if most > 0xFFFFFFFF:
        most = 0xFFFFFFFF
    cdef uint32_t *j = <uint32_t *>malloc((most + 1) * sizeof(uint32_t))
    if j == NULL:
        raise MemoryError()
    return j


cdef Py_ssize_t _largest(const int64_t[:] sizes):
    cdef Py_ssize_t k, most = 0
    for k in range(sizes.shape[0]):
        if sizes[k] > most:
            most = sizes[k]
    return most


cdef inline int64_t _integer(bitgen_t *bg, int64_t low, int64_t high) noexcept nogil:
    # Generator.integers(low, high) for a scalar int64: one bounded (Lemire) fill of size 1.
    cdef uint64_t out
    random_bounded_uint64_fill(bg, <uint64_t>low, <uint64_t>(high - 1 - low), 1, 0, &out)
    return <int64_t>out


cdef Py_ssize_t _sum_spans(const int64_t[:] sizes) except -1:
    cdef Py_ssize_t k, total = 0
    for k in range(sizes.shape[0]):
        if sizes[k] < 0:
            raise ValueError(f"span {k} has a negative size ({sizes[k]})")
        total += sizes[k]
    return total


cdef Py_ssize_t _check_spans(const int64_t[:] sizes, Py_ssize_t out_len) except -1:
    cdef Py_ssize_t total = _sum_spans(sizes)
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
    bit = _bit_generator(rng)
    cdef bitgen_t *bg = _bitgen(bit)
    cdef Py_ssize_t k, i, n, pos = 0
    cdef int64_t b
    cdef uint32_t *j = _draw_space(_largest(sizes))
    try:
        with bit.lock:
            with nogil:
                for k in range(sizes.shape[0]):
                    n = sizes[k]
                    b = begins[k]
                    for i in range(n):
                        out[pos + i] = b + i
                    ss_fisher_yates_i64(bg, &out[pos], j, n)
                    pos += n
    finally:
        free(j)


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
    bit = _bit_generator(rng)
    cdef bitgen_t *bg = _bitgen(bit)
    cdef uint32_t *j = _draw_space(_largest(sizes))
    try:
        with bit.lock:
            with nogil:
                for k in range(sizes.shape[0]):
                    n = sizes[k]
                    s = starts[k]
                    for i in range(n):
                        out[pos + i] = src[s + i]
                    ss_fisher_yates_i64(bg, &out[pos], j, n)
                    pos += n
    finally:
        free(j)


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
    bit = _bit_generator(rng)
    cdef bitgen_t *bg = _bitgen(bit)
    cdef int64_t start, stop, end, size, bstart, bstop, st
    # Blocks are at least ``low`` long except where clipped (at most two per node).
    cdef Py_ssize_t cap = 2, nblocks, b
    for node in range(num_nodes):
        cap += (node_bounds[node + 1] - node_bounds[node]) // low + 2
    cdef int64_t *blocks = <int64_t *>malloc(2 * cap * sizeof(int64_t))
    if blocks == NULL:
        raise MemoryError()
    cdef uint32_t *j = NULL
    try:
        j = _draw_space(high)
        with bit.lock:
            with nogil:
                for node in range(num_nodes):
                    start = node_bounds[node]
                    stop = node_bounds[node + 1]
                    st = stagger[node]
                    end = start
                    nblocks = 0
                    while end < stop and nblocks < cap:
                        size = _integer(bg, low, high)
                        bstart = end - st if end - st > start else start
                        bstop = end + size - st if end + size - st < stop else stop
                        blocks[2 * nblocks] = bstart
                        blocks[2 * nblocks + 1] = bstop
                        nblocks += 1
                        end += bstop - bstart
                    for b in range(nblocks):
                        ss_fisher_yates_i64(bg, &ids[blocks[2 * b]], j,
                                            blocks[2 * b + 1] - blocks[2 * b])
    finally:
        free(blocks)
        free(j)


cdef inline Py_ssize_t _unit(double p, Py_ssize_t n) noexcept nogil:
    # floor(position) clamped to [0, n - 1]: monotone in p, so bucketing by it keeps the order.
    # Truncation equals floor for p >= 0, and both clamp to 0 below.
    if p >= <double>(n - 1):
        return n - 1
    if p < 1.0:
        return 0
    return <Py_ssize_t>p


cdef struct _SortSpace:
    # Scratch for spreading and sorting one canonical node of up to ``cap`` samples.
    Py_ssize_t cap
    _Keyed *coarse
    Py_ssize_t *heads
    _Keyed *scratch
    Py_ssize_t scratch_cap


cdef int _space_init(_SortSpace *sp, Py_ssize_t cap) except -1:
    sp.cap = cap
    sp.coarse = <_Keyed *>malloc((cap + 1) * sizeof(_Keyed))
    sp.heads = <Py_ssize_t *>malloc((((cap + 1) >> _COARSE) + 2) * sizeof(Py_ssize_t))
    sp.scratch = NULL
    sp.scratch_cap = 0
    if sp.coarse == NULL or sp.heads == NULL:
        _space_free(sp)
        raise MemoryError()
    return 0


cdef void _space_free(_SortSpace *sp) noexcept:
    free(sp.coarse)
    free(sp.heads)
    free(sp.scratch)
    sp.coarse = NULL
    sp.heads = NULL
    sp.scratch = NULL


cdef int _spread_sort(bitgen_t *first, bitgen_t *again, int64_t *ids, const int64_t *sizes, Py_ssize_t nspans,
                      Py_ssize_t n, int64_t low, int64_t high, _SortSpace *sp) noexcept nogil:
    """py1e for one node (``n <= sp.cap`` samples): returns 1 if some span outgrew its block,
    0 if not, -1 when out of memory.

    ``first`` and ``again`` are two bit generators in the same state: the draws are made from
    each (counting, then placing), so ``again`` ends where NumPy would, and ``first`` is spent.
    """
    cdef _Keyed *coarse = sp.coarse
    cdef Py_ssize_t *heads = sp.heads
    cdef Py_ssize_t nb = ((n - 1) >> _COARSE) + 1
    cdef int32_t fine[_FINE + 1]
    cdef double draws[_DRAWS]
    cdef int warn = 0
    cdef Py_ssize_t k, i, c, off = 0, span, b, j, start, end, m, most = 0
    cdef int64_t block
    cdef double cutoff, lower, upper, width, p
    if n == 0:
        return 0
    for b in range(nb + 1):
        heads[b] = 0
    # Two passes over the same draws: count samples per coarse bucket, then place them, drawing
    # again from the second bit generator rather than storing and re-reading the positions.
    cdef bitgen_t *bg = first
    cdef int pass_
    for pass_ in range(2):
        if pass_ == 1:
            bg = again
            for b in range(nb):
                if heads[b + 1] > most:
                    most = heads[b + 1]
                heads[b + 1] += heads[b]
        off = 0
        for k in range(nspans):
            span = sizes[k]
            block = _integer(bg, low, high)
            cutoff = (<double>block - <double>span) / 2.0
            if cutoff < 0:
                cutoff = 0
                warn = 1
            # Python's max/min on (-cutoff, -offset) and (cutoff, room): same values.
            lower = -cutoff
            if -<double>off > lower:
                lower = -<double>off
            upper = cutoff
            if <double>(n - off - span) < upper:
                upper = <double>(n - off - span)
            width = upper - lower
            # Generator.uniform: lower + width * next_double (random_uniform), one draw each.
            c = off
            while c < off + span:
                m = off + span - c if off + span - c < _DRAWS else _DRAWS
                random_standard_uniform_fill(bg, m, draws)
                if pass_ == 0:
                    for i in range(c, c + m):
                        p = <double>i + (lower + width * draws[i - c])
                        heads[(_unit(p, n) >> _COARSE) + 1] += 1
                else:
                    # Stable scatter into coarse buckets; heads[b] ends as bucket b's end.
                    for i in range(c, c + m):
                        p = <double>i + (lower + width * draws[i - c])
                        b = _unit(p, n) >> _COARSE
                        j = heads[b]
                        coarse[j].key = p
                        coarse[j].val = ids[i]
                        heads[b] = j + 1
                c += m
            off += span
    if most > sp.scratch_cap:
        free(sp.scratch)
        sp.scratch = <_Keyed *>malloc(most * sizeof(_Keyed))
        if sp.scratch == NULL:
            sp.scratch_cap = 0
            return -1
        sp.scratch_cap = most
    cdef _Keyed *scratch = sp.scratch
    start = 0
    for b in range(nb):
        end = heads[b]
        ss_fine_sort(&coarse[start], end - start, b << _COARSE, _FINE, scratch, fine, &ids[start])
        start = end
    return warn


def shuffle_nodes(rng, str algo, const int64_t[:] begins, const int64_t[:] sizes,
                  const int64_t[:] node_spans, int64_t low, int64_t high, int64_t[:] out,
                  const int64_t[:] want=None, const int64_t[:] want_bounds=None):
    """Shuffle every canonical node of an epoch (``py1s`` or ``py1e``) in one pass.

    Node ``c`` holds spans ``node_spans[c] .. node_spans[c+1]`` (begins and sizes in final
    order); its samples occupy the next ``sum(sizes of its spans)`` places of the epoch. Draws as
    ``get_shuffle_py1s`` / ``get_shuffle_py1e`` after the span reorder.

    Without ``want``, ``out`` receives the whole epoch. With ``want`` (epoch places grouped by
    node: node ``c``'s are ``want[want_bounds[c]:want_bounds[c+1]]``), only those places are
    kept: ``out[k]`` = the epoch's value at place ``want[k]``, and each node is built in reused
    scratch, so memory stays at one node's worth.

    Args:
        rng (numpy.random.Generator): Generator, after the span reorder (it advances).
        algo (str): ``py1s`` or ``py1e``.
        begins (NDArray[np.int64]): First sample id of each span.
        sizes (NDArray[np.int64]): Size of each span.
        node_spans (NDArray[np.int64]): ``num_nodes + 1`` ascending span indices.
        low (int): ``py1e``: smallest block size (inclusive), non-negative.
        high (int): ``py1e``: largest block size (exclusive), above ``low``.
        out (NDArray[np.int64]): The epoch (``sizes.sum()`` long), or ``len(want)`` values.
        want (NDArray[np.int64], optional): Places to keep, grouped by node.
        want_bounds (NDArray[np.int64], optional): ``num_nodes + 1`` offsets into ``want``.

    Returns:
        bool: ``py1e``: whether some span outgrew its block (so was not spread).
    """
    cdef bint spread = algo == "py1e"
    if not spread and algo != "py1s":
        raise ValueError(f"shuffle_nodes: unknown algorithm {algo!r}")
    if begins.shape[0] != sizes.shape[0]:
        raise ValueError("begins and sizes differ in length")
    cdef Py_ssize_t num_nodes = node_spans.shape[0] - 1
    cdef Py_ssize_t total = _sum_spans(sizes)
    cdef Py_ssize_t c, c2, k, a, z, n, largest = 0, place, node_start = 0
    if num_nodes < 0 or node_spans[0] != 0 or node_spans[num_nodes] != sizes.shape[0]:
        raise ValueError("node_spans must run from 0 to the number of spans")
    for c in range(num_nodes):
        if node_spans[c + 1] < node_spans[c]:
            raise ValueError("node_spans must ascend")
        n = 0
        for k in range(node_spans[c], node_spans[c + 1]):
            n += sizes[k]
        if n > largest:
            largest = n
    if spread and not 0 <= low < high:
        raise ValueError(f"bad block size range [{low}, {high})")
    cdef bint pick = want is not None
    if pick:
        if want_bounds is None or want_bounds.shape[0] != num_nodes + 1:
            raise ValueError("want_bounds must have num_nodes + 1 entries")
        if want_bounds[0] != 0 or want_bounds[num_nodes] != want.shape[0]:
            raise ValueError("want_bounds must run from 0 to len(want)")
        if out.shape[0] != want.shape[0]:
            raise ValueError("out must hold one value per wanted place")
        for c in range(num_nodes):
            if want_bounds[c + 1] < want_bounds[c]:
                raise ValueError("want_bounds must ascend")
    elif out.shape[0] != total:
        raise ValueError(f"spans hold {total} samples but the output holds {out.shape[0]}")
    cdef int64_t *buf = NULL
    cdef uint32_t *j = NULL
    cdef _SortSpace sp
    sp.coarse = NULL
    sp.heads = NULL
    sp.scratch = NULL
    bit = _bit_generator(rng)
    cdef bitgen_t *bg = _bitgen(bit)
    copy = _copy_of(bit) if spread else None
    cdef bitgen_t *copy_bg = _bitgen(copy) if spread else NULL
    cdef int warn = 0, got
    cdef int64_t *dst
    cdef Py_ssize_t bad = -1
    try:
        j = _draw_space(_largest(sizes))
        if pick:
            buf = <int64_t *>malloc((largest + 1) * sizeof(int64_t))
            if buf == NULL:
                raise MemoryError()
        if spread:
            _space_init(&sp, largest)
        with bit.lock:
            with nogil:
                for c in range(num_nodes):
                    a = node_spans[c]
                    z = node_spans[c + 1]
                    n = 0
                    for k in range(a, z):
                        n += sizes[k]
                    dst = buf if pick else &out[node_start]
                    place = 0
                    for k in range(a, z):
                        for c2 in range(sizes[k]):
                            dst[place + c2] = begins[k] + c2
                        ss_fisher_yates_i64(bg, &dst[place], j, sizes[k])
                        place += sizes[k]
                    if spread:
                        with gil:
                            _sync(copy, bit)
                        got = _spread_sort(copy_bg, bg, dst, &sizes[a], z - a, n, low, high, &sp)
                        if got < 0:
                            bad = -2
                            break
                        warn |= got
                    if pick:
                        for k in range(want_bounds[c], want_bounds[c + 1]):
                            place = want[k] - node_start
                            if place < 0 or place >= n:
                                bad = k
                                break
                            out[k] = buf[place]
                        if bad >= 0:
                            break
                    node_start += n
    finally:
        free(buf)
        free(j)
        _space_free(&sp)
    if bad == -2:
        raise MemoryError()
    if bad >= 0:
        raise ValueError(f"wanted place {want[bad]} (entry {bad}) is outside its node")
    return warn == 1
