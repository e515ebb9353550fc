# cython: language_level=3
"""Shuffle kernels that reproduce a ``numpy.random.Generator(PCG64)``'s draws bit for bit.

The hot loops step PCG64 inline (the same XSL-RR 128/64 generator NumPy uses, including its
buffering of the upper half of a 64-bit draw for the next 32-bit draw) instead of calling through
the bit generator's function pointers, which costs a third of the time per draw. The state is read
from and written back to the Generator through its public ``bit_generator.state``, so after a
kernel the Generator continues exactly as if NumPy had made the draws. Rare draws that go through
NumPy's more involved samplers (``Generator.integers``) call NumPy's own C function on a
``bitgen_t`` view of the inline state. Draw order matches the NumPy calls of the reference
algorithms (``Generator.shuffle`` = ``random_interval`` Fisher-Yates; ``Generator.uniform`` =
``low + (high - low) * next_double``). Callers validate arguments; kernels re-check the bounds
that would otherwise let bad input touch memory out of range.
"""

from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from numpy.random cimport bitgen_t

import numpy as np


cdef extern from "numpy/random/distributions.h":
    void random_bounded_uint64_fill(bitgen_t *bitgen_state, uint64_t off, uint64_t rng,
                                    Py_ssize_t cnt, bint use_masked, uint64_t *out) nogil


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* PCG64 (XSL-RR 128/64) as NumPy's PCG64: step, then output; 32-bit draws use the low half
       of a 64-bit draw and buffer the high half for the next 32-bit draw. */
    #define SS_MUL_HI 0x2360ED051FC65DA4ULL
    #define SS_MUL_LO 0x4385DF649FCCF645ULL
    #if defined(__SIZEOF_INT128__)
    typedef unsigned __int128 ss_u128;
    static inline ss_u128 ss_make(uint64_t hi, uint64_t lo) { return ((ss_u128)hi << 64) | lo; }
    static inline uint64_t ss_hi(ss_u128 a) { return (uint64_t)(a >> 64); }
    static inline uint64_t ss_lo(ss_u128 a) { return (uint64_t)a; }
    static inline ss_u128 ss_muladd(ss_u128 a, ss_u128 m, ss_u128 c) { return a * m + c; }
    #else
    typedef struct { uint64_t hi, lo; } ss_u128;
    static inline ss_u128 ss_make(uint64_t hi, uint64_t lo) { ss_u128 r; r.hi = hi; r.lo = lo; return r; }
    static inline uint64_t ss_hi(ss_u128 a) { return a.hi; }
    static inline uint64_t ss_lo(ss_u128 a) { return a.lo; }
    static inline ss_u128 ss_muladd(ss_u128 a, ss_u128 m, ss_u128 c) {
        /* a * m + c mod 2**128 from 32-bit limbs (compilers without __int128). */
        uint64_t a0 = a.lo & 0xFFFFFFFFULL, a1 = a.lo >> 32;
        uint64_t b0 = m.lo & 0xFFFFFFFFULL, b1 = m.lo >> 32;
        uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
        uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFULL) + (p10 & 0xFFFFFFFFULL);
        ss_u128 r;
        r.lo = (mid << 32) | (p00 & 0xFFFFFFFFULL);
        r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32) + a.hi * m.lo + a.lo * m.hi;
        uint64_t lo = r.lo + c.lo;
        r.hi += c.hi + (lo < r.lo);
        r.lo = lo;
        return r;
    }
    #endif
    typedef struct { ss_u128 s, inc; int has32; uint32_t u32; } ss_pcg;
    static inline void ss_set(ss_pcg *g, uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo) {
        g->s = ss_make(shi, slo);
        g->inc = ss_make(ihi, ilo);
    }
    static inline uint64_t ss_state_hi(ss_pcg *g) { return ss_hi(g->s); }
    static inline uint64_t ss_state_lo(ss_pcg *g) { return ss_lo(g->s); }
    static inline uint64_t ss_output(ss_u128 s) {
        uint64_t hi = ss_hi(s), x = hi ^ ss_lo(s);
        unsigned rot = (unsigned)(hi >> 58);
        return (x >> rot) | (x << ((64 - rot) & 63));
    }
    static inline uint64_t ss_next64(ss_pcg *g) {
        g->s = ss_muladd(g->s, ss_make(SS_MUL_HI, SS_MUL_LO), g->inc);
        return ss_output(g->s);
    }
    /* The next n 64-bit outputs into out, as n calls of ss_next64. One PCG step is a chain of
       dependent 128-bit multiplies; four interleaved chains, each jumping four steps
       (s -> M^4 s + (M^3 + M^2 + M + 1) inc), keep the multiplier busy. */
    static inline void ss_fill(ss_pcg *g, uint64_t *out, int64_t n) {
        int64_t k = 0;
        if (n >= 8) {
            ss_u128 m1 = ss_make(SS_MUL_HI, SS_MUL_LO), zero = ss_make(0, 0), one = ss_make(0, 1);
            ss_u128 m2 = ss_muladd(m1, m1, zero), m4 = ss_muladd(m2, m2, zero);
            /* c4 = inc * (1 + M + M^2 + M^3) */
            ss_u128 geo = ss_muladd(ss_muladd(m1, one, one), ss_muladd(m2, one, one), zero);
            ss_u128 c4 = ss_muladd(g->inc, geo, zero);
            ss_u128 s0 = ss_muladd(g->s, m1, g->inc);
            ss_u128 s1 = ss_muladd(s0, m1, g->inc);
            ss_u128 s2 = ss_muladd(s1, m1, g->inc);
            ss_u128 s3 = ss_muladd(s2, m1, g->inc);
            for (;;) {
                out[k] = ss_output(s0); out[k + 1] = ss_output(s1);
                out[k + 2] = ss_output(s2); out[k + 3] = ss_output(s3);
                k += 4;
                if (k + 4 > n) break;
                s0 = ss_muladd(s0, m4, c4); s1 = ss_muladd(s1, m4, c4);
                s2 = ss_muladd(s2, m4, c4); s3 = ss_muladd(s3, m4, c4);
            }
            g->s = s3;
        }
        for (; k < n; k++) out[k] = ss_next64(g);
    }
    static inline uint32_t ss_next32(ss_pcg *g) {
        if (g->has32) { g->has32 = 0; return g->u32; }
        uint64_t v = ss_next64(g);
        g->has32 = 1;
        g->u32 = (uint32_t)(v >> 32);
        return (uint32_t)v;
    }
    static inline double ss_next_double(ss_pcg *g) {
        return (double)(ss_next64(g) >> 11) * (1.0 / 9007199254740992.0);
    }
    /* NumPy's random_interval: smallest all-ones mask >= max, reject values above max. */
    static inline uint64_t ss_interval(ss_pcg *g, uint64_t max) {
        uint64_t mask = max, v;
        if (max == 0) return 0;
        mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4;
        mask |= mask >> 8; mask |= mask >> 16; mask |= mask >> 32;
        if (max <= 0xFFFFFFFFULL) {
            while ((v = (ss_next32(g) & mask)) > max) {}
        } else {
            while ((v = (ss_next64(g) & mask)) > max) {}
        }
        return v;
    }
    #if defined(__GNUC__) || defined(__clang__)
    static inline uint64_t ss_mask(uint64_t max) { return ~0ULL >> __builtin_clzll(max); }
    #else
    static inline uint64_t ss_mask(uint64_t max) {
        max |= max >> 1; max |= max >> 2; max |= max >> 4;
        max |= max >> 8; max |= max >> 16; max |= max >> 32;
        return max;
    }
    #endif
    /* Leave g as after `steps` 64-bit draws from state `before`. */
    static inline void ss_rewind(ss_pcg *g, ss_u128 before, int64_t steps) {
        g->s = before;
        while (steps-- > 0) g->s = ss_muladd(g->s, ss_make(SS_MUL_HI, SS_MUL_LO), g->inc);
    }
    #define SS_BLOCK 64
    /* Generator.shuffle of x[0..n): for i = n-1 .. 1, swap x[i], x[random_interval(i)]. The
       draws come first, into j[1..n): while i < 2**32, random_interval takes 32-bit words and
       rejects those above i after masking; the mask is fixed while i keeps its bit length, so the
       loop carries only i (rejection is arithmetic, not a branch). The swaps follow, free of the
       draws' dependency chain. j must hold n entries. */
    #define SS_DEFINE_FY(NAME, T) \
    static inline void NAME(ss_pcg *g, T *x, uint32_t *j, int64_t n) { \
        int64_t i = n - 1, k; \
        for (; i > (int64_t)0xFFFFFFFFLL; i--) { \
            k = (int64_t)ss_interval(g, (uint64_t)i); \
            T t = x[i]; x[i] = x[k]; x[k] = t; \
        } \
        if (i <= 0) return; \
        int64_t top = i, got = 0, used = 0; \
        int half = 0; \
        uint64_t buf[SS_BLOCK]; \
        ss_u128 before = g->s; \
        while (i > 0) { \
            uint64_t mask = ss_mask((uint64_t)i), low = mask >> 1; \
            while (i > (int64_t)low) { \
                uint32_t w; \
                if (g->has32) { g->has32 = 0; w = g->u32; } \
                else if (half) { half = 0; w = (uint32_t)(buf[used - 1] >> 32); } \
                else { \
                    if (used == got) { \
                        before = g->s; \
                        got = (i + 2) / 2 < SS_BLOCK ? (i + 2) / 2 : SS_BLOCK; \
                        ss_fill(g, buf, got); \
                        used = 0; \
                    } \
                    w = (uint32_t)buf[used++]; \
                    half = 1; \
                } \
                uint64_t v = (uint64_t)w & mask; \
                j[i] = (uint32_t)v; \
                i -= (int64_t)(v <= (uint64_t)i); \
            } \
        } \
        if (got) { \
            /* Take back the block's unused draws; NumPy keeps the last draw's high half. */ \
            if (used < got) ss_rewind(g, before, used); \
            g->has32 = half; \
            g->u32 = (uint32_t)(buf[used - 1] >> 32); \
        } \
        for (i = top; i > 0; i--) { \
            k = j[i]; \
            T t = x[i]; x[i] = x[k]; x[k] = t; \
        } \
    }
    SS_DEFINE_FY(ss_fisher_yates_i64, int64_t)
    SS_DEFINE_FY(ss_fisher_yates_i32, int32_t)
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
    static uint64_t ss_bg_next64(void *st) { return ss_next64((ss_pcg *)st); }
    static uint32_t ss_bg_next32(void *st) { return ss_next32((ss_pcg *)st); }
    static double ss_bg_next_double(void *st) { return ss_next_double((ss_pcg *)st); }
    """
    ctypedef struct ss_pcg:
        int has32
        uint32_t u32
    void ss_set(ss_pcg *g, uint64_t shi, uint64_t slo, uint64_t ihi, uint64_t ilo) nogil
    uint64_t ss_state_hi(ss_pcg *g) nogil
    uint64_t ss_state_lo(ss_pcg *g) nogil
    uint64_t ss_next64(ss_pcg *g) nogil
    uint32_t ss_next32(ss_pcg *g) nogil
    double ss_next_double(ss_pcg *g) nogil
    uint64_t ss_interval(ss_pcg *g, uint64_t max) nogil
    void ss_fill(ss_pcg *g, uint64_t *out, int64_t n) nogil
    ctypedef struct ss_keyed:
        double key
        int64_t val
    void ss_fine_sort(const ss_keyed *src, int64_t m, int64_t base, int64_t width,
                      ss_keyed *scratch, int32_t *fine, int64_t *out) nogil
    void ss_fisher_yates_i64(ss_pcg *g, int64_t *x, uint32_t *j, int64_t n) nogil
    void ss_fisher_yates_i32(ss_pcg *g, int32_t *x, uint32_t *j, int64_t n) nogil
    uint64_t ss_bg_next64(void *st) nogil
    uint32_t ss_bg_next32(void *st) nogil
    double ss_bg_next_double(void *st) nogil


cdef uint64_t _MASK64 = 0xFFFFFFFFFFFFFFFF


cdef struct _Rng:
    ss_pcg pcg
    bitgen_t bitgen  # NumPy-facing view of ``pcg`` for NumPy's own samplers


cdef int _load(object rng, _Rng *r) except -1:
    """Copy a PCG64 Generator's state into ``r`` (the caller writes it back with ``_store``)."""
    bit = rng.bit_generator
    if type(bit) is not np.random.PCG64:
        raise TypeError(f"shuffle kernels need a numpy Generator over PCG64, got {type(bit)}")
    st = bit.state
    s = int(st["state"]["state"])
    inc = int(st["state"]["inc"])
    ss_set(&r.pcg, <uint64_t>(s >> 64), <uint64_t>(s & _MASK64), <uint64_t>(inc >> 64),
           <uint64_t>(inc & _MASK64))
    r.pcg.has32 = 1 if st["has_uint32"] else 0
    r.pcg.u32 = <uint32_t>int(st["uinteger"])
    r.bitgen.state = &r.pcg
    r.bitgen.next_uint64 = ss_bg_next64
    r.bitgen.next_uint32 = ss_bg_next32
    r.bitgen.next_double = ss_bg_next_double
    r.bitgen.next_raw = ss_bg_next64
    return 0


cdef int _store(object rng, _Rng *r) except -1:
    bit = rng.bit_generator
    st = bit.state
    st["state"]["state"] = (int(ss_state_hi(&r.pcg)) << 64) | int(ss_state_lo(&r.pcg))
    st["has_uint32"] = int(r.pcg.has32)
    st["uinteger"] = int(r.pcg.u32)
    bit.state = st
    return 0


ctypedef ss_keyed _Keyed


cdef enum:
    # py1e sorts in two counting passes: by ``floor(position) >> _COARSE``, then by the unit within
    # that; the coarse buckets written concurrently (the shift window / 2**_COARSE) stay in cache.
    # _DRAWS: 64-bit draws made at a time for a span's shifts.
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


cdef inline int64_t _integer(_Rng *r, int64_t low, int64_t high) noexcept nogil:
    # Generator.integers(low, high) for a scalar int64: one bounded (Lemire) fill of size 1.
    cdef uint64_t out
    random_bounded_uint64_fill(&r.bitgen, <uint64_t>low, <uint64_t>(high - 1 - low), 1, 0, &out)
    return <int64_t>out


cdef Py_ssize_t _sum_spans(const int64_t[:] sizes) except -1:
    cdef Py_ssize_t k, total = 0
    for k in range(sizes.shape[0]):
        if sizes[k] < 0:
            raise ValueError(f"span {k} has a negative size ({sizes[k]})")
        total += sizes[k]
    return total


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
        rng (numpy.random.Generator): PCG64 generator to draw from (its state advances).
        begins (NDArray[np.int64]): First sample id of each span.
        sizes (NDArray[np.int64]): Number of samples of each span.
        out (NDArray[np.int64]): Destination, exactly ``sizes.sum()`` long.
    """
    if begins.shape[0] != sizes.shape[0]:
        raise ValueError("begins and sizes differ in length")
    _check_spans(sizes, out.shape[0])
    cdef _Rng r
    cdef Py_ssize_t k, i, n, pos = 0
    cdef int64_t b
    cdef uint32_t *j = _draw_space(_largest(sizes))
    try:
        with rng.bit_generator.lock:
            _load(rng, &r)
            with nogil:
                for k in range(sizes.shape[0]):
                    n = sizes[k]
                    b = begins[k]
                    for i in range(n):
                        out[pos + i] = b + i
                    ss_fisher_yates_i64(&r.pcg, &out[pos], j, n)
                    pos += n
            _store(rng, &r)
    finally:
        free(j)


def gather_shuffle_pieces(rng, const int64_t[:] src, const int64_t[:] starts,
                          const int64_t[:] sizes, int64_t[:] out):
    """Copy each piece ``src[start:start+size]`` after the last into ``out``, shuffling each.

    Draws exactly as ``rng.shuffle(piece)`` for each piece in order.

    Args:
        rng (numpy.random.Generator): PCG64 generator to draw from (its state advances).
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
    cdef _Rng r
    cdef uint32_t *j = _draw_space(_largest(sizes))
    try:
        with rng.bit_generator.lock:
            _load(rng, &r)
            with nogil:
                for k in range(sizes.shape[0]):
                    n = sizes[k]
                    s = starts[k]
                    for i in range(n):
                        out[pos + i] = src[s + i]
                    ss_fisher_yates_i64(&r.pcg, &out[pos], j, n)
                    pos += n
            _store(rng, &r)
    finally:
        free(j)


def shuffle_blocks_py1br(rng, int64_t[:] ids, const int64_t[:] node_bounds,
                         const int64_t[:] stagger, int64_t low, int64_t high):
    """Shuffle each node's samples within staggered blocks of random size (algorithm ``py1br``).

    Per node: draw block sizes ``rng.integers(low, high)`` until the node is covered, then
    ``rng.shuffle`` each staggered block in order.

    Args:
        rng (numpy.random.Generator): PCG64 generator to draw from (its state advances).
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
    cdef _Rng r
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
        with rng.bit_generator.lock:
            _load(rng, &r)
            with nogil:
                for node in range(num_nodes):
                    start = node_bounds[node]
                    stop = node_bounds[node + 1]
                    st = stagger[node]
                    end = start
                    nblocks = 0
                    while end < stop and nblocks < cap:
                        size = _integer(&r, low, high)
                        bstart = end - st if end - st > start else start
                        bstop = end + size - st if end + size - st < stop else stop
                        blocks[2 * nblocks] = bstart
                        blocks[2 * nblocks + 1] = bstop
                        nblocks += 1
                        end += bstop - bstart
                    for b in range(nblocks):
                        ss_fisher_yates_i64(&r.pcg, &ids[blocks[2 * b]], j,
                                            blocks[2 * b + 1] - blocks[2 * b])
            _store(rng, &r)
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


cdef int _spread_sort(_Rng *r, int64_t *ids, const int64_t *sizes, Py_ssize_t nspans,
                      Py_ssize_t n, int64_t low, int64_t high, _SortSpace *sp) noexcept nogil:
    """py1e for one node (``n <= sp.cap`` samples): returns 1 if some span outgrew its block,
    0 if not, -1 when out of memory."""
    cdef _Keyed *coarse = sp.coarse
    cdef Py_ssize_t *heads = sp.heads
    cdef Py_ssize_t nb = ((n - 1) >> _COARSE) + 1
    cdef int32_t fine[_FINE + 1]
    cdef uint64_t draws[_DRAWS]
    cdef int warn = 0
    cdef Py_ssize_t k, i, c, off = 0, span, b, j, start, end, m, most = 0
    cdef int64_t block
    cdef double cutoff, lower, upper, width, p
    if n == 0:
        return 0
    for b in range(nb + 1):
        heads[b] = 0
    # Two passes over the same draws: count samples per coarse bucket, then (from the saved
    # generator state) place them, which costs less than storing and re-reading the positions.
    cdef ss_pcg saved = r.pcg
    cdef int pass_
    for pass_ in range(2):
        if pass_ == 1:
            r.pcg = saved
            for b in range(nb):
                if heads[b + 1] > most:
                    most = heads[b + 1]
                heads[b + 1] += heads[b]
        off = 0
        for k in range(nspans):
            span = sizes[k]
            block = _integer(r, low, high)
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
            # Generator.uniform: lower + width * next_double, one 64-bit draw each.
            c = off
            while c < off + span:
                m = off + span - c if off + span - c < _DRAWS else _DRAWS
                ss_fill(&r.pcg, draws, m)
                if pass_ == 0:
                    for i in range(c, c + m):
                        p = <double>i + (lower + width * (
                            <double>(draws[i - c] >> 11) * (1.0 / 9007199254740992.0)))
                        heads[(_unit(p, n) >> _COARSE) + 1] += 1
                else:
                    # Stable scatter into coarse buckets; heads[b] ends as bucket b's end.
                    for i in range(c, c + m):
                        p = <double>i + (lower + width * (
                            <double>(draws[i - c] >> 11) * (1.0 / 9007199254740992.0)))
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


def spread_sort_py1e(rng, int64_t[:] ids, const int64_t[:] sizes, int64_t low, int64_t high):
    """Spread one canonical node's span samples by uniform shifts, then sort by position (``py1e``).

    ``ids`` holds the node's spans one after another (each already shuffled). Per span, draws
    ``rng.integers(low, high)`` as its block size and ``rng.uniform(lo, hi, size)`` as shifts of
    its samples' positions; ``ids`` is then reordered by ascending position, stably (ties, which
    have probability ~0, keep index order). Positions lie in ``[0, len(ids))``, so the sort is two
    counting passes (coarse bucket, then unit) and an insertion pass for samples sharing a unit.

    Args:
        rng (numpy.random.Generator): PCG64 generator to draw from (its state advances).
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
    cdef _SortSpace sp
    cdef _Rng r
    cdef int warn = 0
    _space_init(&sp, n)
    try:
        with rng.bit_generator.lock:
            _load(rng, &r)
            with nogil:
                warn = _spread_sort(&r, &ids[0], &sizes[0], sizes.shape[0], n, low, high, &sp)
            _store(rng, &r)
    finally:
        _space_free(&sp)
    if warn < 0:
        raise MemoryError()
    return warn == 1


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
        rng (numpy.random.Generator): PCG64 generator, after the span reorder (it advances).
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
    cdef _Rng r
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
        with rng.bit_generator.lock:
            _load(rng, &r)
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
                        ss_fisher_yates_i64(&r.pcg, &dst[place], j, sizes[k])
                        place += sizes[k]
                    if spread:
                        got = _spread_sort(&r, dst, &sizes[a], z - a, n, low, high, &sp)
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
            _store(rng, &r)
    finally:
        free(buf)
        free(j)
        _space_free(&sp)
    if bad == -2:
        raise MemoryError()
    if bad >= 0:
        raise ValueError(f"wanted place {want[bad]} (entry {bad}) is outside its node")
    return warn == 1
