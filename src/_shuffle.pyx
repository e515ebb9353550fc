# cython: language_level=3
"""Shuffle kernels that make a ``numpy.random.Generator``'s draws in the reference's order.

Two ways to draw, with the same results and the Generator left in the same state:

- Generic (any NumPy bit generator): every draw through NumPy's C API, the ``bitgen_t`` behind
  ``rng.bit_generator.capsule`` (its ``next_uint32``, as NumPy's ``random_interval`` uses it)
  and NumPy's samplers on it (``random_bounded_uint64_fill`` for ``Generator.integers``,
  ``random_standard_uniform_fill`` for ``Generator.uniform``).
- PCG64 (what the reference's ``default_rng`` is; ``shuffle_nodes`` only): raw outputs of a
  copy of the bit generator, made a chunk at a time through its ``next_uint64``, read from a
  buffer with NumPy PCG64's conversions (``next_uint32``: low half, then the buffered high half;
  ``next_double``: ``(raw >> 11) * 2**-53``); NumPy's samplers run on a ``bitgen_t`` over that
  buffer. Raws that are not needed (the shifts of a node whose places are not wanted) are
  jumped over with ``PCG64.advance``; at the end the Generator itself is advanced by the raws
  read and its buffered half restored (``state``). No PCG64 stepping is written here. With
  much to read and a second core allowed, a helper thread makes raws ahead from more copies
  (py1e, py1s, py2s; for a py1e view, in windows about where it will read them: ``ss_win``);
  for naive and py1br a helper thread instead makes the draws themselves
  (block sizes and Fisher-Yates indices, which do not depend on the ids) into a draw queue
  while the caller lays out ids and swaps (``ss_jq``).

Both hold the bit generator's lock while drawing, as NumPy's own methods do. Draw order matches
the NumPy calls of the reference algorithms (``Generator.shuffle`` = ``random_interval``
Fisher-Yates, here all draws first and the swaps after; ``Generator.uniform`` =
``low + (high - low) * u``). py1e draws each node's positions once and sorts them stably by
coarse bucket (span by span, then gathered), then by unit. Callers validate arguments; kernels
re-check the bounds that would otherwise let bad input touch memory out of range.
"""

from cpython.pycapsule cimport PyCapsule_GetPointer
cimport cython
from libc.stdint cimport int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.math cimport log10, sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from numpy cimport npy_intp
from numpy.random cimport bitgen_t

import os

import numpy as np

from streaming._kernels import _plan


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
                for (j = k - 2; j >= 0 && s[j].key > kb; j--) {
                    s[j + 1] = s[j];
                    out[j + 1] = s[j].val;
                }
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
    /* ---- PCG64 fast path: NumPy's raw 64-bit outputs read from a buffer ----
       The raw outputs come from NumPy's PCG64 (a copy of the caller's bit generator, stepped
       only through its bitgen_t next_uint64, a chunk at a time in a tight loop); only the
       conversions NumPy's PCG64 makes of them are reproduced here: next_uint32 = low half, then
       the buffered high half (has_uint32 / uinteger), next_double = (raw >> 11) * 2**-53. Raws
       nobody reads are jumped over with NumPy's PCG64.advance (r->jump). The caller then
       advances its own bit generator by exactly the raws read (PCG64.advance) and restores the
       buffered half. With much to read and a second core, a helper thread makes the raws ahead
       (ss_pref, below). */
    #include <pthread.h>
    #include <sched.h>
    #include <time.h>
    /* Every helper thread is started with ss_spawn: on another core than the caller's. The
       scheduler may place a new thread on its creator's core and move it only at a later
       balancing, milliseconds on; this VM's guest kernel (booted with sched_vcpu_pack) often
       did. Sharing one core, the two sides each ran in 4 ms slices and the side waiting for
       the other spun. Started on the caller's other cores, measured in fresh processes (the
       last worker's view at 1e7, 24 alternated runs each): py2s 26.9-27.0 ms median against
       34.3-35.3 at nc=8, 29.9-30.2 against 37.9-39.2 at nc=64; py1e (nc=8) 39.6-41.6 against
       42.7-43.9; naive (nc=64) 40.8-43.2 against 72.3-85.5. Once running, the thread may use
       every core the caller may (the caller's mask is restored), so the scheduler can still
       move it. Any failure falls back to a plain pthread_create. */
    typedef struct { void *(*fn)(void *); void *arg; cpu_set_t all; } ss_spawn_args;
    static void *ss_spawn_main(void *p) {
        ss_spawn_args a = *(ss_spawn_args *)p;
        free(p);
        (void)pthread_setaffinity_np(pthread_self(), sizeof a.all, &a.all);
        return a.fn(a.arg);
    }
    static int ss_spawn(pthread_t *th, void *(*fn)(void *), void *arg) {
        cpu_set_t all, other;
        pthread_attr_t at;
        ss_spawn_args *a = NULL;
        int rc = -1, cpu = sched_getcpu();
        if (cpu >= 0 && cpu < CPU_SETSIZE && sched_getaffinity(0, sizeof all, &all) == 0 &&
                CPU_COUNT(&all) >= 2 && CPU_ISSET(cpu, &all) &&
                (a = (ss_spawn_args *)malloc(sizeof *a)) != NULL && pthread_attr_init(&at) == 0) {
            a->fn = fn;
            a->arg = arg;
            a->all = all;
            other = all;
            CPU_CLR(cpu, &other);
            rc = pthread_attr_setaffinity_np(&at, sizeof other, &other);
            if (rc == 0) rc = pthread_create(th, &at, ss_spawn_main, a);
            pthread_attr_destroy(&at);
        }
        if (rc == 0) return 0;
        free(a);  /* (NULL when it was never made) */
        return pthread_create(th, NULL, fn, arg);
    }
    static inline int64_t ss_now_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
    }
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    #include <math.h>
    #include <stdlib.h>
    #include <sys/mman.h>
    #define SR_CHUNK 8192
    /* The chunk made after a jump, doubling from there: what is read between two jumps is often
       a word or two (py1e's block size between the shifts it jumps over, span after span), and a
       full chunk would be made only for the next jump to pass over most of it. */
    #define SR_AFTER_JUMP 4
    typedef struct ss_raw {
        const uint64_t *buf;
        int64_t pos, end, taken;     /* taken: raws of the chunks read before this one */
        int has_half;
        uint32_t half;
        bitgen_t *src;
        uint64_t *own;               /* the chunk */
        int64_t own_next;            /* size of the next chunk (grows to SR_CHUNK) */
        int64_t pending;             /* raws to jump over before the next chunk */
        void (*jump)(void *ctx, int64_t m);
        void *jump_ctx;
        struct ss_pref *pref;        /* a helper thread making raws ahead, or NULL */
        struct ss_win *win;          /* raws made ahead in windows (ss_win), or NULL */
        int64_t src_at;              /* the index src is at (its own chunks: past the last) */
        int64_t jump_ns;             /* what jumping costs now: the last jump's time (the GIL's
                                        wait included), less the reads made instead since */
    } ss_raw;
    /* A jump is NumPy's PCG64.advance, a Python call: it waits for the GIL, up to the switch
       interval (5 ms) when another Python thread is busy, where reading and dropping a span's
       raws takes ~SS_RAW_NS ns a raw. Raws are read instead of jumped over while reading them
       costs less than the last jump did (0: the default; 1: always read; 2: always jump; tests). */
    #define SS_RAW_NS 3
    static int ss_jump_mode = 0;
    static int64_t ss_jump_reads = 0;  /* skips read instead of jumped (atomic; tests) */
    static int64_t ss_raws_made = 0;   /* raws made by readers' own chunks (atomic; tests) */
    static int64_t ss_win_raws = 0;    /* raws readers took from windows (ss_win; tests) */
    static void ss_pref_refill(ss_raw *r);

    /* 0 on success, -1 out of memory. */
    static int ss_raw_init(ss_raw *r, bitgen_t *src, int has_half, uint32_t half) {
        memset(r, 0, sizeof(*r));
        r->src = src; r->has_half = has_half; r->half = half; r->own_next = 64;
        r->own = (uint64_t *)malloc(SR_CHUNK * sizeof(uint64_t));
        return r->own == NULL ? -1 : 0;
    }

    static void ss_raw_close(ss_raw *r) {
        free(r->own);
        r->own = NULL;
    }

    static int ss_win_serve(ss_raw *r, int64_t at);
    static void ss_refill(ss_raw *r) {
        if (r->pref != NULL) { ss_pref_refill(r); return; }
        int64_t at = r->taken + r->end + r->pending;  /* the index needed next */
        if (r->win != NULL && ss_win_serve(r, at)) return;
        r->taken = at;
        r->pos = 0;
        r->pending = 0;
        if (at != r->src_at) {  /* jumped over, or made in a window */
            int64_t t0 = ss_now_ns();
            r->jump(r->jump_ctx, at - r->src_at);
            r->jump_ns = ss_now_ns() - t0;
            r->src_at = at;
        }
        /* Chunks start small so that short calls do not draw far ahead. */
        int64_t m = r->own_next, k;
        uint64_t (*next64)(void *) = r->src->next_uint64;
        void *st = r->src->state;
        for (k = 0; k < m; k++) r->own[k] = next64(st);
        __atomic_add_fetch(&ss_raws_made, m, __ATOMIC_RELAXED);
        r->src_at += m;
        r->own_next = m * 2 < SR_CHUNK ? m * 2 : SR_CHUNK;
        r->buf = r->own;
        r->end = m;
    }

    /* Pass over m raws: jumped (PCG64.advance, through r->jump) when they are not buffered;
       read and dropped if there is no jump. */
    static void ss_raw_skip(ss_raw *r, int64_t m) {
        int64_t step = r->end - r->pos;
        if (m <= step) { r->pos += m; return; }
        r->pos = r->end;
        m -= step;
        if (r->jump != NULL) {
            if (r->pref != NULL || ss_jump_mode == 2
                    || (ss_jump_mode == 0 && m * SS_RAW_NS >= r->jump_ns)) {
                r->pending += m;
                r->own_next = SR_AFTER_JUMP;
                return;
            }
            /* Cheaper to read: and once four times as much has been read as the last jump
               took, jump again (to learn whether the GIL is still slow to come). */
            int64_t paid = m * SS_RAW_NS / 4;
            r->jump_ns = r->jump_ns > paid ? r->jump_ns - paid : 0;
            __atomic_add_fetch(&ss_jump_reads, 1, __ATOMIC_RELAXED);
        }
        while (m > 0) {
            ss_refill(r);
            step = r->end < m ? r->end : m;
            r->pos = step;
            m -= step;
        }
    }
    static inline uint64_t ss_next64(ss_raw *r) {
        if (r->pos == r->end) ss_refill(r);
        return r->buf[r->pos++];
    }
    static inline uint32_t ss_next32(ss_raw *r) {
        if (r->has_half) { r->has_half = 0; return r->half; }
        uint64_t v = ss_next64(r);
        r->has_half = 1;
        r->half = (uint32_t)(v >> 32);
        return (uint32_t)v;
    }
    static inline double ss_next_double(ss_raw *r) {
        return (double)(ss_next64(r) >> 11) * (1.0 / 9007199254740992.0);
    }
    static uint64_t ss_cb64(void *st) { return ss_next64((ss_raw *)st); }
    static uint32_t ss_cb32(void *st) { return ss_next32((ss_raw *)st); }
    static double ss_cbd(void *st) { return ss_next_double((ss_raw *)st); }
    /* A bitgen_t over the reader, so NumPy's own samplers (random_bounded_uint64_fill) convert
       its raws exactly as they would the bit generator's. */
    static inline void ss_raw_bitgen(ss_raw *r, bitgen_t *bg) {
        bg->state = r; bg->next_uint64 = ss_cb64; bg->next_uint32 = ss_cb32;
        bg->next_double = ss_cbd; bg->next_raw = ss_cb64;
    }
    static inline int64_t ss_raw_used(const ss_raw *r) { return r->taken + r->pos + r->pending; }

    /* ---- Raws made ahead on a second core ----
       A helper thread fills sub-blocks of SP_RAWS raws ahead of the reader, each at an absolute
       raw index, from copies of the bit generator. The reader takes the sub-block holding the
       index it needs; if the helper is still filling it, the reader fills the next unclaimed
       sub-block meanwhile (work-stealing), and if there is no room for that, the raws it needs
       itself, so it never waits for a helper that may not be running. Only the reader moves a
       copy to another index (PCG64.advance needs the GIL): the helper fills only from a copy
       already at its next index (its own, or the one the reader just filled up to there), so
       it never waits for the GIL. Every filled sub-block holds exactly the raws at its
       indices, whoever filled it and whatever the jumps. Started when a second core is allowed
       (_second_core); switched off once waiting for it has cost the reader more than
       1/SP_WAIT_SHARE of its time (a helper without a core of its own). */
    #define SP_SLOTS 4
    #define SP_RAWS 32768            /* the slots fill a 1 MB L2 (measured best of 8K-64K) */
    #define SP_BYTES ((size_t)(SP_SLOTS + 1) * SP_RAWS * sizeof(uint64_t))
    #define SP_STEAL (SP_RAWS / 2)   /* the reader also consumes: it fills a smaller share */
    #define SP_GENS 3                /* the helper holds at most one, the reader one */
    #define SP_POLL_NS 100000        /* the helper polls this long for a copy, then sleeps */
    /* How a helper that lacks a core is told from a slow one: by what waiting for it costs the
       reader, in time. A sub-block takes 50 us on a fast day and 160-200 us on a slow one
       (NumPy's next64 at 1.5-6 ns), a PAUSE 10-140 cycles, and a vCPU stops for tens of us now
       and then; a helper sharing the reader's core loses whole time slices (ms). The rule it
       replaces (three slow fills, stalls of 1,000 polls (~18 us here) or sightings on the
       reader's core, each within 20 ms of the last) switched the helper off in most 1e8 plans
       on a slow day; keeping it there takes py1br 0.76-0.94x of the time. */
    #define SP_STALL_NS 200000       /* no progress for this long: the helper is not running */
    #define SP_WAIT_SHARE 8          /* stalls past 1/8 of the reader's time (and more than two
                                        of them: one is a blip): the helper is off */
    /* Polls while waiting for a helper: the clock is read every 64th (~1 us); true once there
       has been no progress for SP_STALL_NS since *t0 (0: not yet timed; set here). */
    static inline int ss_stalled(int spin, int64_t *t0) {
        if ((spin & 63) != 63) return 0;
        int64_t t = ss_now_ns();
        if (*t0 == 0) { *t0 = t; return 0; }
        return t - *t0 > SP_STALL_NS;
    }
    #if defined(__SSE2__)
    #define SS_PAUSE() _mm_pause()
    #else
    #define SS_PAUSE() ((void)0)
    #endif
    enum { SP_FREE, SP_FILLING, SP_READY };
    typedef struct ss_pref {
        pthread_mutex_t mu;
        pthread_cond_t cv;
        pthread_t th;
        int started, stop;
        uint64_t *bufs;              /* SP_SLOTS sub-blocks, then the reader's own */
        int64_t start[SP_SLOTS];     /* absolute index of each slot's first raw */
        int64_t size[SP_SLOTS];      /* and its raws */
        int state[SP_SLOTS];
        int stale[SP_SLOTS];         /* filling, but the reader is past it: free when done */
        int64_t done[SP_SLOTS];      /* raws the helper has filled so far (atomic) */
        int64_t next;                /* first index nobody has claimed */
        int64_t floor;               /* the reader's index: the helper stays near it */
        bitgen_t *gen[SP_GENS];      /* the copies, */
        void *ctx[SP_GENS];          /* their PCG64 (for the jump), */
        int64_t at[SP_GENS];         /* the index each is at */
        int busy[SP_GENS];
        int h_gen;                   /* the copy the helper holds, or -1 */
        int h_idle;                  /* the helper waits for a copy at next */
        int h_wait;                  /* the helper waits (for a slot or a copy) */
        int off;                     /* the helper stalled: the reader goes on alone */
        int64_t t0;                  /* when the helper started */
        int64_t stalled;             /* the reader's time lost to stalls (SP_STALL_NS each) */
        void (*jump)(void *ctx, int64_t m);
    } ss_pref;

    /* Tests: helpers' raws made, and helpers switched off, in this process (atomic); a delay
       the helper spins for every SP_STEP raws (a slow machine's raws: 0, the default). */
    static int64_t ss_pref_made = 0, ss_pref_offs = 0, ss_pref_delay_ns = 0;
    /* With done: publish progress every SP_STEP raws (the reader reads behind it), and stop
       early when *stop is set (the rest is never read). Returns the raws made. */
    #define SP_STEP 512
    static int64_t ss_fill(bitgen_t *g, uint64_t *out, int64_t m, int64_t *done,
                           const int *stop) {
        uint64_t (*next64)(void *) = g->next_uint64;
        void *st = g->state;
        for (int64_t k = 0; k < m; k++) {
            out[k] = next64(st);
            if (done != NULL && (k & (SP_STEP - 1)) == SP_STEP - 1) {
                if (ss_pref_delay_ns) {
                    int64_t until = ss_now_ns() + ss_pref_delay_ns;
                    while (ss_now_ns() < until) SS_PAUSE();
                }
                __atomic_store_n(done, k + 1, __ATOMIC_RELEASE);
                if (__atomic_load_n(stop, __ATOMIC_RELAXED)) return k + 1;
            }
        }
        if (done != NULL) __atomic_store_n(done, m, __ATOMIC_RELEASE);
        return m;
    }

    /* A free copy, preferably one at index at (under the lock; there is always one). */
    static int ss_pref_take(ss_pref *p, int64_t at) {
        int g = -1;
        for (int k = 0; k < SP_GENS; k++) {
            if (p->busy[k]) continue;
            if (g < 0 || p->at[k] == at) g = k;
        }
        p->busy[g] = 1;
        return g;
    }

    /* The reader fills out with [at, at + m) from copy g (taken; released here). Returns with
       the lock held. */
    static void ss_pref_fill(ss_pref *p, int g, uint64_t *out, int64_t at, int64_t m) {
        if (p->at[g] != at) p->jump(p->ctx[g], at - p->at[g]);
        ss_fill(p->gen[g], out, m, NULL, NULL);
        pthread_mutex_lock(&p->mu);
        p->at[g] = at + m;
        p->busy[g] = 0;
    }

    static void *ss_pref_main(void *arg) {
        ss_pref *p = (ss_pref *)arg;
        int k, s, g;
        /* The helper's slots are fresh memory: their pages are faulted in here, on the helper's
           core, before it fills any. Nobody else writes a slot before the helper first claims
           one (the reader steals only beside a slot the helper fills). */
        for (size_t b = 0; b < (size_t)SP_SLOTS * SP_RAWS * sizeof(uint64_t); b += 4096) {
            if (__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) break;
            ((volatile char *)p->bufs)[b] = 0;
        }
        int64_t idle_since = 0;      /* when the helper began to wait for a copy, or 0 */
        pthread_mutex_lock(&p->mu);
        while (!p->stop) {
            s = g = -1;
            if (p->next < p->floor + SP_SLOTS * SP_RAWS)
                for (k = 0; k < SP_SLOTS && s < 0; k++) if (p->state[k] == SP_FREE) s = k;
            if (s >= 0) {
                if (p->h_gen >= 0 && p->at[p->h_gen] != p->next) {
                    p->busy[p->h_gen] = 0;  /* the reader claimed past it: give it back */
                    p->h_gen = -1;
                }
                if (p->h_gen < 0)
                    for (k = 0; k < SP_GENS && p->h_gen < 0; k++)
                        if (!p->busy[k] && p->at[k] == p->next) { p->busy[k] = 1; p->h_gen = k; }
                g = p->h_gen;
            }
            p->h_idle = s >= 0 && g < 0;
            if (p->h_idle) {
                /* The reader brings a copy at next on its next refill (after a steal, ~30 us;
                   a slot is read in ~20 us): poll for it a while. Sleeping instead cost the
                   helper ~100 us a wait in wake-ups on this VM, about half of its time in a
                   py1br view (nc=64, 1e7: ~110 waits), the reader then making the raws. */
                int64_t t = ss_now_ns();
                if (idle_since == 0) idle_since = t;
                if (t - idle_since < SP_POLL_NS) {
                    pthread_mutex_unlock(&p->mu);
                    for (k = 0; k < 64; k++) SS_PAUSE();
                    pthread_mutex_lock(&p->mu);
                    continue;
                }
            }
            idle_since = 0;
            if (g < 0) {
                p->h_wait = 1;
                pthread_cond_wait(&p->cv, &p->mu);
                p->h_wait = 0;
                continue;
            }
            int64_t at = p->next;
            p->next += SP_RAWS;
            p->state[s] = SP_FILLING; p->start[s] = at; p->size[s] = SP_RAWS; p->stale[s] = 0;
            __atomic_store_n(&p->done[s], 0, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&p->mu);
            int64_t made = ss_fill(p->gen[g], p->bufs + (int64_t)s * SP_RAWS, SP_RAWS,
                                   &p->done[s], &p->stop);
            __atomic_add_fetch(&ss_pref_made, made, __ATOMIC_RELAXED);
            pthread_mutex_lock(&p->mu);
            p->at[g] = at + made;  /* less when stopped early: the copy goes back to the pool */
            /* Stopped early, it stays filling: the reader reads only what is done. The reader
               polls: no signal. */
            if (p->stale[s]) p->state[s] = SP_FREE;
            else if (__atomic_load_n(&p->done[s], __ATOMIC_RELAXED) == SP_RAWS)
                p->state[s] = SP_READY;
        }
        if (p->h_gen >= 0) p->busy[p->h_gen] = 0;
        p->h_gen = -1;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }

    static void ss_pref_refill(ss_raw *r) {
        ss_pref *p = r->pref;
        int64_t at = r->taken + r->end + r->pending;  /* the index needed next */
        int k, s, f, g;
        r->pending = 0;
        pthread_mutex_lock(&p->mu);
        p->floor = at;
        for (k = 0; k < SP_SLOTS; k++) {
            if (p->state[k] == SP_FREE || p->start[k] + p->size[k] > at) continue;
            if (p->state[k] == SP_READY) p->state[k] = SP_FREE;
            else p->stale[k] = 1;
        }
        if (p->next < at) p->next = at;
        for (;;) {
            s = f = -1;
            int64_t after = INT64_MAX;  /* the first slot starting past at */
            for (k = 0; k < SP_SLOTS; k++) {
                if (p->state[k] == SP_FREE) { if (f < 0) f = k; continue; }
                if (p->stale[k]) continue;
                if (p->start[k] <= at && at < p->start[k] + p->size[k]) s = k;
                else if (p->start[k] > at && p->start[k] < after) after = p->start[k];
            }
            if (s >= 0 && p->state[s] == SP_READY) {
                r->buf = p->bufs + (int64_t)s * SP_RAWS + (at - p->start[s]);
                r->end = p->start[s] + p->size[s] - at;
                break;
            }
            if (s >= 0) {
                /* The helper is filling it: read what it has filled (also once it stopped), */
                int64_t done = __atomic_load_n(&p->done[s], __ATOMIC_ACQUIRE);
                if (at < p->start[s] + done) {
                    r->buf = p->bufs + (int64_t)s * SP_RAWS + (at - p->start[s]);
                    r->end = p->start[s] + done - at;
                    break;
                }
                /* or wait for more while it makes progress (it runs), */
                if (f < 0 && !p->off) {
                    pthread_mutex_unlock(&p->mu);
                    int64_t seen = done, t0 = 0;
                    for (int spin = 0; seen == done && !ss_stalled(spin, &t0); spin++) {
                        SS_PAUSE();
                        seen = __atomic_load_n(&p->done[s], __ATOMIC_ACQUIRE);
                    }
                    pthread_mutex_lock(&p->mu);
                    if (seen != done) continue;
                    /* Stalled: the reader fills this sub-block's rest itself (below); once
                       stalls have cost it too much, a core this busy is left to it alone. */
                    p->stalled += SP_STALL_NS;
                    if (p->stalled > 2 * SP_STALL_NS
                            && p->stalled * SP_WAIT_SHARE > ss_now_ns() - p->t0) {
                        __atomic_add_fetch(&ss_pref_offs, 1, __ATOMIC_RELAXED);
                        p->off = 1;
                        __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
                        pthread_cond_broadcast(&p->cv);
                    }
                }
            }
            if (s >= 0 && f >= 0 && !p->off) {
                /* or fill the first unclaimed raws meanwhile. */
                int64_t ahead = p->next;
                p->next += SP_STEAL;
                p->state[f] = SP_FILLING; p->start[f] = ahead; p->size[f] = SP_STEAL;
                p->stale[f] = 0;
                g = ss_pref_take(p, ahead);
                pthread_mutex_unlock(&p->mu);
                ss_pref_fill(p, g, p->bufs + (int64_t)f * SP_RAWS, ahead, SP_STEAL);
                p->state[f] = SP_READY;
                continue;
            }
            /* Nobody has it (or the helper does not run): fill it here, up to the next slot or
               the end of the one being filled. */
            int64_t m = s >= 0 ? p->start[s] + p->size[s] - at : SP_RAWS;
            if (after - at < m) m = after - at;
            if (s < 0 && p->next < at + m) p->next = at + m;
            g = ss_pref_take(p, at);
            pthread_mutex_unlock(&p->mu);
            ss_pref_fill(p, g, p->bufs + (int64_t)SP_SLOTS * SP_RAWS, at, m);
            r->buf = p->bufs + (int64_t)SP_SLOTS * SP_RAWS;
            r->end = m;
            break;
        }
        if (p->h_idle && !p->off) {
            /* The helper waits for a copy at next: move one there (the helper never jumps). */
            for (k = 0, g = -1; k < SP_GENS; k++) if (!p->busy[k] && p->at[k] == p->next) g = k;
            if (g < 0) {
                int64_t to = p->next;
                g = ss_pref_take(p, to);
                pthread_mutex_unlock(&p->mu);
                p->jump(p->ctx[g], to - p->at[g]);
                pthread_mutex_lock(&p->mu);
                p->at[g] = to;
                p->busy[g] = 0;
            }
        }
        if (p->h_wait) pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        r->taken = at;
        r->pos = 0;
    }

    /* Start the helper with SP_GENS copies at the reader's start (ctx for jump). 0 when it
       runs; otherwise the reader goes on alone. */
    static int ss_pref_start(ss_raw *r, bitgen_t **gen, void **ctx) {
        ss_pref *p = (ss_pref *)calloc(1, sizeof(ss_pref));
        if (p == NULL) return -1;
        /* Not populated here (fresh pages cost the reader's core ~0.5 ms a MB): the helper
           faults its slots in itself before it fills any (ss_pref_main), the reader its own. */
        void *bufs = mmap(NULL, SP_BYTES, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (bufs == MAP_FAILED) { free(p); return -1; }
        p->bufs = (uint64_t *)bufs;
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv, NULL);
        for (int k = 0; k < SP_SLOTS; k++) { p->start[k] = -1; p->state[k] = SP_FREE; }
        /* The reader's buffered raws (none yet, or a first chunk) come before the helper's. */
        p->next = p->floor = r->taken + r->end + r->pending;
        for (int k = 0; k < SP_GENS; k++) {
            p->gen[k] = gen[k]; p->ctx[k] = ctx[k]; p->at[k] = p->next;
        }
        p->h_gen = -1;
        p->t0 = ss_now_ns();
        p->jump = r->jump;
        r->pref = p;
        if (ss_spawn(&p->th, ss_pref_main, p) != 0) {
            r->pref = NULL;
            pthread_mutex_destroy(&p->mu); pthread_cond_destroy(&p->cv);
            munmap(p->bufs, SP_BYTES); free(p);
            return -1;
        }
        p->started = 1;
        return 0;
    }

    /* Tell a helper thread to stop (its flag set under its mutex, its condition broadcast)
       and join it; *started is cleared. */
    static void ss_stop_join(pthread_mutex_t *mu, pthread_cond_t *cv, int *stop, pthread_t th,
                             int *started) {
        pthread_mutex_lock(mu);
        __atomic_store_n(stop, 1, __ATOMIC_RELAXED);
        pthread_cond_broadcast(cv);
        pthread_mutex_unlock(mu);
        pthread_join(th, NULL);
        *started = 0;
    }

    /* Stop and join the helper. The reader's buffer stays valid until ss_pref_free. */
    static void ss_pref_stop(ss_raw *r) {
        ss_pref *p = r->pref;
        if (p == NULL || !p->started) return;
        ss_stop_join(&p->mu, &p->cv, &p->stop, p->th, &p->started);
    }

    static void ss_pref_free(ss_raw *r) {
        ss_pref *p = r->pref;
        if (p == NULL) return;
        ss_pref_stop(r);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        munmap(p->bufs, SP_BYTES);
        free(p);
        r->pref = NULL;
    }

    /* ---- Raws made ahead in windows, on a second core ----
       A py1e view passes the nodes before the one it wants: each node's Fisher-Yates words are
       read (their count depends on the words: only the reader can count them) and its shifts
       jumped over. Where a node's words start is known only once the nodes before are counted,
       but closely (the count's spread is ~440 raws a node of 1.25M samples), and raws are the
       same whoever makes them: a helper thread makes, for each node, the raws from a little
       before its expected start to a little past its expected end (a window), from a copy of
       the bit generator moved there in advance, while the reader counts the nodes before it.
       The reader then reads a node's words from its window, just behind the helper if need be;
       an index outside every window (a count far off what was expected) or ahead of the helper
       it makes itself, so it never depends on the helper, and the helper leaves a window the
       reader is ahead in for the next one: the two share the making. At most SW_LIVE windows
       are kept at a time (a node's is cut in pieces of at most 2 MB), in buffers made once. */
    #define SW_LIVE 3
    static void *ss_alloc(size_t bytes);
    static int ss_win_wait = 0;        /* tests: the reader always waits for the helper */
    #define SW_NEAR 16384            /* raws the reader may be ahead of the helper and wait */
    enum { SW_NONE, SW_FILLING, SW_FILLED };
    typedef struct ss_win {
        pthread_t th;
        int started, stop;
        int64_t n;
        int64_t cur;                 /* the first window the reader is not past (atomic; the
                                        reader's to move) */
        int64_t *start, *len;        /* each window's first raw index and its raws */
        bitgen_t **gen;              /* copies at each window's start (the caller's) */
        uint64_t **buf;              /* each window's raws: one of the pool's buffers */
        uint64_t *pool[SW_LIVE];     /* window k fills pool[k % SW_LIVE], made once (huge
                                        pages where the kernel allows: fresh pages cost) */
        int64_t most;                /* raws of the longest window */
        int64_t *done;               /* raws made in each window so far (atomic) */
        int *state;                  /* SW_* (atomic; the helper's to change) */
        int *quit;                   /* the helper stops filling a window the reader is
                                        ahead in (atomic) */
        int64_t at;                  /* the index the reader last needed (atomic) */
        int off;                     /* the helper stalled: the reader no longer waits for it */
        int over;                    /* the helper is done (atomic) */
    } ss_win;

    static void *ss_win_main(void *arg) {
        ss_win *w = (ss_win *)arg;
        for (int64_t k = 0; k < w->n; k++) {
            while (!__atomic_load_n(&w->stop, __ATOMIC_RELAXED)
                   && k - __atomic_load_n(&w->cur, __ATOMIC_ACQUIRE) >= SW_LIVE) {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
            }
            if (__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) break;
            /* (Window k - SW_LIVE, which used this buffer, is passed: the reader reads from it
               no more, and this thread filled it before this one.) */
            uint64_t **slot = &w->pool[k % SW_LIVE];
            if (*slot == NULL) *slot = (uint64_t *)ss_alloc((size_t)w->most * sizeof(uint64_t));
            if (*slot == NULL) break;
            /* A window the reader is in or past already is left to it. (Should it move in
               just after this check, the window is made for nothing, which is harmless.) */
            if (__atomic_load_n(&w->cur, __ATOMIC_ACQUIRE) > k
                    || (!ss_win_wait && __atomic_load_n(&w->at, __ATOMIC_RELAXED) > w->start[k])) {
                __atomic_store_n(&w->quit[k], 1, __ATOMIC_RELAXED);
                continue;
            }
            w->buf[k] = *slot;  /* (published by the release stores of state and done) */
            __atomic_store_n(&w->state[k], SW_FILLING, __ATOMIC_RELEASE);
            ss_fill(w->gen[k], w->buf[k], w->len[k], &w->done[k], &w->quit[k]);
            __atomic_store_n(&w->state[k], SW_FILLED, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&w->over, 1, __ATOMIC_RELEASE);
        return NULL;
    }

    /* Serve the reader's next raws (from index at) out of a window: 1 if served. */
    static int ss_win_serve(ss_raw *r, int64_t at) {
        ss_win *w = r->win;
        __atomic_store_n(&w->at, at, __ATOMIC_RELAXED);
        int64_t k = w->cur;
        while (k < w->n && w->start[k] + w->len[k] <= at) k++;
        /* (Windows before k are passed: their buffers can take later windows.) */
        if (k != w->cur) __atomic_store_n(&w->cur, k, __ATOMIC_RELEASE);
        if (k >= w->n || at < w->start[k]) return 0;
        int64_t off = at - w->start[k];
        int64_t done = __atomic_load_n(&w->done[k], __ATOMIC_ACQUIRE);
        /* Just ahead of the helper: wait while it makes progress (it publishes every SP_STEP
           raws, ~2 us). A window it has not started, an index far ahead of it, or a helper
           that shows no progress for SP_STALL_NS (its core is busy): not waited for. */
        int64_t seen = done, t0 = 0;
        for (int spin = 0; done <= off && (ss_win_wait || (off - done < SW_NEAR && !w->off));
             spin++) {
            int st = __atomic_load_n(&w->state[k], __ATOMIC_ACQUIRE);
            if (ss_win_wait && st == SW_NONE && !__atomic_load_n(&w->quit[k], __ATOMIC_RELAXED)
                    && !__atomic_load_n(&w->over, __ATOMIC_ACQUIRE)) {
                SS_PAUSE();  /* (tests: the helper will come to it) */
                continue;
            }
            if (st != SW_FILLING) break;
            if (!ss_win_wait && ss_stalled(spin, &t0)) { w->off = 1; break; }
            SS_PAUSE();
            done = __atomic_load_n(&w->done[k], __ATOMIC_ACQUIRE);
            if (done != seen) { seen = done; spin = 0; t0 = 0; }
        }
        if (done <= off) {
            /* Ahead of the helper: the reader makes the rest of this window, the helper moves
               on to the next one. */
            __atomic_store_n(&w->quit[k], 1, __ATOMIC_RELAXED);
            return 0;
        }
        __atomic_add_fetch(&ss_win_raws, done - off, __ATOMIC_RELAXED);
        r->buf = w->buf[k] + off;
        r->end = done - off;
        r->taken = at;
        r->pos = 0;
        r->pending = 0;
        return 1;
    }

    /* Start the helper over n windows (start, len: sorted, disjoint; gen: copies at each
       start, kept alive by the caller until ss_win_free). 0 when it runs. */
    static int ss_win_start(ss_raw *r, int64_t n, const int64_t *start, const int64_t *len,
                            bitgen_t **gen) {
        ss_win *w = (ss_win *)calloc(1, sizeof(ss_win));
        if (w == NULL) return -1;
        w->n = n;
        w->start = (int64_t *)malloc((size_t)n * sizeof(int64_t));
        w->len = (int64_t *)malloc((size_t)n * sizeof(int64_t));
        w->gen = (bitgen_t **)malloc((size_t)n * sizeof(bitgen_t *));
        w->buf = (uint64_t **)calloc((size_t)n, sizeof(uint64_t *));
        w->done = (int64_t *)calloc((size_t)n, sizeof(int64_t));
        w->state = (int *)calloc((size_t)n, sizeof(int));
        w->quit = (int *)calloc((size_t)n, sizeof(int));
        if (!w->start || !w->len || !w->gen || !w->buf || !w->done || !w->state || !w->quit)
            goto fail;
        memcpy(w->start, start, (size_t)n * sizeof(int64_t));
        memcpy(w->len, len, (size_t)n * sizeof(int64_t));
        memcpy(w->gen, gen, (size_t)n * sizeof(bitgen_t *));
        for (int64_t k = 0; k < n; k++) if (len[k] > w->most) w->most = len[k];
        if (ss_spawn(&w->th, ss_win_main, w) != 0) goto fail;
        w->started = 1;
        r->win = w;
        return 0;
    fail:
        free(w->start); free(w->len); free(w->gen); free(w->buf); free(w->done); free(w->state);
        free(w->quit); free(w);
        return -1;
    }

    /* Stop and join the helper, free the windows. The reader must not read from them after
       this: call it when the reader is done (or moved on to its own chunks). */
    static void ss_win_free(ss_raw *r) {
        ss_win *w = r->win;
        if (w == NULL) return;
        __atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED);
        for (int64_t k = 0; k < w->n; k++) __atomic_store_n(&w->quit[k], 1, __ATOMIC_RELAXED);
        if (w->started) pthread_join(w->th, NULL);
        for (int k = 0; k < SW_LIVE; k++) free(w->pool[k]);
        free(w->start); free(w->len); free(w->gen); free(w->buf); free(w->done); free(w->state);
        free(w->quit); free(w);
        r->win = NULL;
    }

    /* Fisher-Yates's expected 32-bit words for a span of n samples, and their variance: for
       i = n-1 .. 1, words until one masked to i's bit length is <= i, a geometric count with
       p = (i + 1) / 2**bits(i). Summed an octave at a time with the harmonic sums' expansions
       (exact sums below 64 terms). */
    static double ss_harm(double x) {  /* sum_{j=1}^{x} 1/j */
        double h = 0;
        if (x >= 64) return log(x) + 0.5772156649015329 + 1 / (2 * x) - 1 / (12 * x * x);
        for (int64_t j = 1; j <= (int64_t)x; j++) h += 1.0 / (double)j;
        return h;
    }
    static double ss_harm2(double x) {  /* sum_{j=1}^{x} 1/j**2 */
        double h = 0;
        if (x >= 64) return 1.6449340668482264 - 1 / x + 1 / (2 * x * x) - 1 / (6 * x * x * x);
        for (int64_t j = 1; j <= (int64_t)x; j++) h += 1.0 / ((double)j * (double)j);
        return h;
    }
    static void ss_fy_words_moments(int64_t n, double *mean, double *var) {
        double m = 0, v = 0;
        for (int b = 0; b < 62 && ((int64_t)1 << b) <= n - 1; b++) {
            int64_t lo = (int64_t)1 << b, hi = ((int64_t)1 << (b + 1)) - 1;
            if (hi > n - 1) hi = n - 1;
            double K = (double)((int64_t)1 << (b + 1));  /* mask + 1 */
            /* sums over j = i + 1 in [lo + 1, hi + 1] */
            double s1 = ss_harm((double)(hi + 1)) - ss_harm((double)lo);
            double s2 = ss_harm2((double)(hi + 1)) - ss_harm2((double)lo);
            m += K * s1;
            v += K * K * s2 - K * s1;
        }
        *mean = m; *var = v;
    }
    /* ---- Draws made ahead on a second core: a draw queue ----
       A shuffle's draws (the block sizes it draws, the Fisher-Yates indices it accepts) depend
       only on the generator, not on the ids being shuffled, so a producer can make them in
       order into a ring of 32-bit entries while the consumer makes the swaps from them. The
       producer is a resumable function over its own state (a reader and where it is in the
       draw sequence). A helper thread runs it on a second core; the consumer runs it itself
       when there is no helper, or after stopping one that makes no progress (the helper is
       joined first, so only one thread ever holds the producer's state). Every entry is the
       same whoever made it. */
    static void *ss_alloc(size_t bytes);
    #define SQ_STEP 2048             /* entries a producer call makes at most (~5 us) */
    #define SQ_SPIN 4000             /* polls of a full ring (the helper) or of a helper that
                                        shows no progress (the consumer), before yielding */
    #define SQ_WAKE (1 << 18)        /* entries ahead a sleeping consumer waits for */
    #define SQ_STALL_NS 20000000     /* no sign of the helper for this long: it is not running
                                        (compute threads here see gaps of up to ~9 ms now and
                                        then, and a fresh huge page can take ms) */
    /* Entries made into dst (at most room, room >= 1): 0 when a call only drew past (a node
       nobody wants), -1 once the sequence is over. */
    typedef int64_t (*ss_produce_fn)(void *ctx, uint32_t *dst, int64_t room);
    typedef struct ss_jq {
        uint32_t *ring;
        int64_t cap, mask;
        int64_t made, used;          /* entries made, and read by the consumer (atomic) */
        int64_t beat;                /* producer calls made by the helper (atomic) */
        int64_t faulted;             /* ring entries the helper has faulted in */
        int done;                    /* the sequence is over (atomic) */
        int stop, started, waits;    /* waits: the helper sleeps on cv, the ring full */
        int cwaits;                  /* the consumer sleeps on ccv until cwant are made */
        int64_t cwant;
        int helped, taken;           /* a helper started; the consumer took the producer over */
        int64_t stall;               /* tests: the helper sleeps 50 ms after this many calls */
        pthread_mutex_t mu;
        pthread_cond_t cv, ccv;
        pthread_t th;
        ss_produce_fn produce;
        void *ctx;
    } ss_jq;

    /* One producer call into the free room. 0: the sequence is over, 1: a call made, 2: the
       ring is full. */
    static int ss_jq_step(ss_jq *q) {
        int64_t made = q->made, used = __atomic_load_n(&q->used, __ATOMIC_ACQUIRE);
        int64_t room = q->cap - (made - used), at = made & q->mask;
        if (room <= 0) return 2;
        if (room > q->cap - at) room = q->cap - at;
        if (room > SQ_STEP) room = SQ_STEP;
        int64_t m = q->produce(q->ctx, q->ring + at, room);
        if (m < 0) { __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE); return 0; }
        __atomic_store_n(&q->made, made + m, __ATOMIC_RELEASE);
        return 1;
    }

    /* The helper made entries (or is over): wake the consumer if it sleeps for them (its
       store of cwaits and load of made, and this side's store of made and load of cwaits, are
       ordered by full fences: no wake-up is lost). */
    static inline void ss_jq_wake(ss_jq *q) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&q->cwaits, __ATOMIC_RELAXED)) return;
        if (q->made < __atomic_load_n(&q->cwant, __ATOMIC_RELAXED)
                && !__atomic_load_n(&q->done, __ATOMIC_RELAXED))
            return;
        pthread_mutex_lock(&q->mu);
        pthread_cond_broadcast(&q->ccv);
        pthread_mutex_unlock(&q->mu);
    }

    /* A native helper thread that needs the GIL (ss_pref's jumps, when it reads raws made
       ahead) keeps one Python thread state from its first need to its end: PyGILState_Ensure
       alone would make and free one per jump. Threads Python knows are left alone. The state is
       taken only when first needed, so a helper that never jumps never waits for the GIL. */
    static __thread int ss_tl_kept = 0;
    static __thread PyGILState_STATE ss_tl_gs;
    static __thread PyThreadState *ss_tl_ts = NULL;
    static void ss_tstate_keep(void) {
        if (ss_tl_kept || PyGILState_GetThisThreadState() != NULL) return;
        ss_tl_gs = PyGILState_Ensure();
        ss_tl_ts = PyEval_SaveThread();
        ss_tl_kept = 1;
    }
    static void ss_tstate_drop(void) {
        if (!ss_tl_kept) return;
        PyEval_RestoreThread(ss_tl_ts);
        PyGILState_Release(ss_tl_gs);
        ss_tl_kept = 0;
        ss_tl_ts = NULL;
    }

    static void *ss_jq_main(void *arg) {
        ss_jq *q = (ss_jq *)arg;
        int spins = 0;
        while (!__atomic_load_n(&q->stop, __ATOMIC_RELAXED)) {
            int64_t calls = __atomic_add_fetch(&q->beat, 1, __ATOMIC_RELAXED);
            if (q->stall > 0 && calls == q->stall) {
                struct timespec ts = {0, 50000000};
                nanosleep(&ts, NULL);
            }
            /* Fresh pages of the ring are faulted in here, on the helper's core. */
            int64_t end = (q->made & q->mask) + SQ_STEP;
            for (; q->faulted < end && q->faulted < q->cap; q->faulted += 1024)
                ((volatile uint32_t *)q->ring)[q->faulted] = 0;
            int s = ss_jq_step(q);
            ss_jq_wake(q);
            if (s == 0) break;
            if (s == 1) { spins = 0; continue; }
            if (++spins < SQ_SPIN) { SS_PAUSE(); continue; }
            /* The consumer is behind: sleep until it frees room (it signals when waits is set;
               both sides' store-then-load is sequentially consistent, so no wake-up is lost). */
            pthread_mutex_lock(&q->mu);
            __atomic_store_n(&q->waits, 1, __ATOMIC_SEQ_CST);
            while (!__atomic_load_n(&q->stop, __ATOMIC_RELAXED)
                   && q->made - __atomic_load_n(&q->used, __ATOMIC_SEQ_CST) >= q->cap)
                pthread_cond_wait(&q->cv, &q->mu);
            __atomic_store_n(&q->waits, 0, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&q->mu);
            spins = 0;
        }
        ss_tstate_drop();
        return NULL;
    }

    /* A queue of cap entries (a power of two) over produce(ctx); with help, a helper thread
       starts making them at once (if it cannot start, the consumer makes them). 0, or -1 out
       of memory. */
    static int ss_jq_open(ss_jq *q, int64_t cap, ss_produce_fn produce, void *ctx, int help,
                          int64_t stall) {
        memset(q, 0, sizeof(*q));
        q->stall = stall;
        q->ring = (uint32_t *)ss_alloc((size_t)cap * sizeof(uint32_t));
        if (q->ring == NULL) return -1;
        q->cap = cap; q->mask = cap - 1;
        q->produce = produce; q->ctx = ctx;
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&q->ccv, &ca);
        pthread_condattr_destroy(&ca);
        if (help && ss_spawn(&q->th, ss_jq_main, q) == 0) q->started = q->helped = 1;
        return 0;
    }

    /* Stop and join the helper: the producer is the consumer's from here on. */
    static void ss_jq_halt(ss_jq *q) {
        if (q->started) ss_stop_join(&q->mu, &q->cv, &q->stop, q->th, &q->started);
    }

    static void ss_jq_close(ss_jq *q) {
        ss_jq_halt(q);
        if (q->ring == NULL) return;
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        pthread_cond_destroy(&q->ccv);
        free(q->ring);
        q->ring = NULL;
    }

    /* The consumer has read the entries before pos: their room is the producer's again. */
    static inline void ss_jq_release(ss_jq *q, int64_t pos) {
        __atomic_store_n(&q->used, pos, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&q->waits, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&q->mu);
            pthread_cond_broadcast(&q->cv);
            pthread_mutex_unlock(&q->mu);
        }
    }

    /* The entries before pos read, and those up to upto (at most pos + cap) made, or the
       sequence over: returns the entries made (the consumer reads [pos, made)). Waits for a
       helper while it shows signs of life; one that shows none is stopped, and the rest is
       made here. */
    static int64_t ss_jq_need(ss_jq *q, int64_t pos, int64_t upto) {
        ss_jq_release(q, pos);
        if (upto > pos + q->cap) upto = pos + q->cap;
        int64_t made = __atomic_load_n(&q->made, __ATOMIC_ACQUIRE);
        if (made >= upto) return made;
        if (q->started) {
            for (int spin = 0; spin < SQ_SPIN; spin++) {
                if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE))
                    return __atomic_load_n(&q->made, __ATOMIC_ACQUIRE);
                made = __atomic_load_n(&q->made, __ATOMIC_ACQUIRE);
                if (made >= upto) return made;
                SS_PAUSE();
            }
            /* Sleep, leaving the core to the helper (and to a thread making raws for it),
               until SQ_WAKE more (or half the ring) are made: a wake-up costs tens of us, and
               what is left to swap once the helper is done is at most that much (measured,
               naive 1e7: 256K ~1 ms faster than 2M). Give up on the helper only when it shows
               no sign for long (it then has no core). */
            int64_t ahead = q->cap / 2 < SQ_WAKE ? q->cap / 2 : SQ_WAKE;
            int64_t want = pos + ahead > upto ? pos + ahead : upto;
            int64_t beat = __atomic_load_n(&q->beat, __ATOMIC_RELAXED), since = ss_now_ns();
            int stalled = 0;
            pthread_mutex_lock(&q->mu);
            __atomic_store_n(&q->cwant, want, __ATOMIC_RELAXED);
            __atomic_store_n(&q->cwaits, 1, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            for (;;) {
                if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE)
                        || __atomic_load_n(&q->made, __ATOMIC_ACQUIRE) >= want)
                    break;
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += 2000000;
                if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
                pthread_cond_timedwait(&q->ccv, &q->mu, &ts);
                int64_t b = __atomic_load_n(&q->beat, __ATOMIC_RELAXED), t = ss_now_ns();
                if (b != beat) { beat = b; since = t; }
                else if (t - since > SQ_STALL_NS) { stalled = 1; break; }
            }
            __atomic_store_n(&q->cwaits, 0, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&q->mu);
            made = __atomic_load_n(&q->made, __ATOMIC_ACQUIRE);
            if (!stalled) return made;
            ss_jq_halt(q);
            q->taken = 1;
            made = q->made;
        }
        while (made < upto && !q->done) {
            if (ss_jq_step(q) != 1) break;
            made = q->made;
        }
        return made;
    }
    /* The consumer is done (entries before pos read): the producer runs to the end of its
       sequence (draws no entry stands for, such as those of nodes nobody wants). */
    static void ss_jq_finish(ss_jq *q, int64_t pos) {
        for (;;) {
            int64_t made = ss_jq_need(q, pos, pos + q->cap);
            if (__atomic_load_n(&q->done, __ATOMIC_ACQUIRE) && made == pos) break;
            pos = made;  /* (entries nobody reads: none, by each producer's design) */
        }
        ss_jq_release(q, pos);
    }
    /* Entry pos (made). */
    static inline uint32_t ss_jq_at(const ss_jq *q, int64_t pos) { return q->ring[pos & q->mask]; }

    /* ---- Skipping a node nobody wants: only the number of words read matters ----
       Word k of a block read at i = i0 meets some i in [i0 - k, i0] (mask fixed), so a masked
       word <= i0 - (SS_BLOCK - 1) is accepted and one > i0 rejected whatever came before it:
       a block of such words moves i by its count of sure accepts, with no chain through i. A
       block holding a word in between (~SS_BLOCK**2 / (mask + 1) of them) is read word by word.
       SS_NO_SIMD (a build flag) takes the plain C path, to test it. */
    #define SS_BLOCK 16   /* words: SS_BLOCK / 2 raws, low halves first */
    /* The exact word-by-word reading of one block at i (mask fixed throughout). */
    static inline int64_t ss_block_exact(const uint64_t *raws, uint64_t mask, int64_t i) {
        for (int k = 0; k < SS_BLOCK / 2; k++) {
            i -= (int64_t)((raws[k] & mask) <= (uint64_t)i);
            i -= (int64_t)(((raws[k] >> 32) & mask) <= (uint64_t)i);
        }
        return i;
    }
    /* nb blocks from i, each read whole at this mask (the caller checks that i stays above
       low): returns i after them. Needs mask < 2**31 (signed 32-bit compares) and
       i >= SS_BLOCK. */
    static inline int64_t ss_skip_blocks(const uint64_t *raws, uint64_t mask, int64_t i,
                                         int64_t nb) {
    #if defined(__SSE2__) && !defined(SS_NO_SIMD)
        /* x86 is little-endian: 32-bit lane 2k is raws[k]'s low half. i stays in a vector so
           the chain from block to block is a few vector adds and compares. */
        const __m128i m = _mm_set1_epi32((int)mask), back = _mm_set1_epi32(SS_BLOCK - 2);
        __m128i iv = _mm_set1_epi32((int)i);
        for (int64_t b = 0; b < nb; b++, raws += SS_BLOCK / 2) {
            __m128i sure = _mm_sub_epi32(iv, back);  /* v < sure: accepted */
            __m128i v0 = _mm_and_si128(_mm_loadu_si128((const __m128i *)raws), m);
            __m128i v1 = _mm_and_si128(_mm_loadu_si128((const __m128i *)(raws + 2)), m);
            __m128i v2 = _mm_and_si128(_mm_loadu_si128((const __m128i *)(raws + 4)), m);
            __m128i v3 = _mm_and_si128(_mm_loadu_si128((const __m128i *)(raws + 6)), m);
            __m128i a0 = _mm_cmpgt_epi32(sure, v0), a1 = _mm_cmpgt_epi32(sure, v1);
            __m128i a2 = _mm_cmpgt_epi32(sure, v2), a3 = _mm_cmpgt_epi32(sure, v3);
            __m128i k0 = _mm_or_si128(a0, _mm_cmpgt_epi32(v0, iv));  /* v > i: rejected */
            __m128i k1 = _mm_or_si128(a1, _mm_cmpgt_epi32(v1, iv));
            __m128i k2 = _mm_or_si128(a2, _mm_cmpgt_epi32(v2, iv));
            __m128i k3 = _mm_or_si128(a3, _mm_cmpgt_epi32(v3, iv));
            __m128i known = _mm_and_si128(_mm_and_si128(k0, k1), _mm_and_si128(k2, k3));
            if (_mm_movemask_epi8(known) != 0xFFFF) {
                i = ss_block_exact(raws, mask, (int64_t)_mm_cvtsi128_si32(iv));
                iv = _mm_set1_epi32((int)i);
                continue;
            }
            __m128i s = _mm_add_epi32(_mm_add_epi32(a0, a1), _mm_add_epi32(a2, a3));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
            iv = _mm_add_epi32(iv, s);  /* accepts are -1 */
        }
        return (int64_t)_mm_cvtsi128_si32(iv);
    #else
        /* Without SSE2 a block test costs about what reading it word by word does. */
        for (int64_t b = 0; b < nb; b++, raws += SS_BLOCK / 2) i = ss_block_exact(raws, mask, i);
        return i;
    #endif
    }

    /* ---- Fisher-Yates draws a group at a time (x86-64 with AVX2, found at run time) ----
       As for skipping (ss_skip_blocks), a group of SS_GROUP words read from i = i0 meets i in
       [i0 - SS_GROUP + 1, i0] (mask fixed): a masked word <= i0 - SS_GROUP + 1 is accepted and
       one > i0 rejected whatever came before it. A group of such words only (all but
       ~SS_GROUP**2 / (mask + 1) of them) gives its accepted words in order, packed by a
       permutation per 8 words, with no chain through i from word to word; any other group is
       read word by word. ss_simd (tests: _set_simd) turns it off. */
    #define SS_GROUP 64   /* words: SS_GROUP / 2 raws, low halves first */
    /* The least mask groups are read at: below it most groups would not be sure (a group is
       not sure with probability ~SS_GROUP**2 / (mask + 1)). */
    #define SS_GROUP_MASK 0xFFFFu
    /* Whether words at this mask are read in groups (signed 32-bit compares: mask < 2**31). */
    #define SS_GROUPS_AT(mask) (ss_simd && (mask) >= SS_GROUP_MASK && (mask) <= 0x7FFFFFFFu)
    static int ss_simd = 0;
    static uint8_t ss_pack_lut[256][8];  /* lanes of mask m's set bits, in order */
    #if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(SS_NO_SIMD)
    #define SS_HAVE_AVX2 1
    #include <immintrin.h>
    static void ss_simd_init(void) {
        for (int m = 0; m < 256; m++) {
            int k = 0;
            for (int lane = 0; lane < 8; lane++)
                if (m >> lane & 1) ss_pack_lut[m][k++] = (uint8_t)lane;
            for (; k < 8; k++) ss_pack_lut[m][k] = 0;
        }
        __builtin_cpu_init();
        ss_simd = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
    }
    /* One group's words read at i: w[k] the masked words of its vector k, acc[k] the lanes
       of those surely accepted; returns whether every word is sure (accepted or rejected). */
    __attribute__((target("avx2,popcnt")))
    static inline int ss_group_read(const uint64_t *raws, __m256i m, int64_t i, __m256i *w,
                                    unsigned *acc) {
        const __m256i hi = _mm256_set1_epi32((int)i);
        const __m256i lo = _mm256_set1_epi32((int)(i - SS_GROUP + 1));
        __m256i unsure = _mm256_setzero_si256();
        for (int k = 0; k < SS_GROUP / 8; k++) {
            w[k] = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(raws + 4 * k)), m);
            __m256i over_lo = _mm256_cmpgt_epi32(w[k], lo);
            unsure = _mm256_or_si256(unsure,
                                     _mm256_andnot_si256(_mm256_cmpgt_epi32(w[k], hi), over_lo));
            acc[k] = ~(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(over_lo)) & 0xFFu;
        }
        return _mm256_testz_si256(unsure, unsure);
    }
    /* Groups from *pi into dst while each is sure: stops before the first that is not, or
       after most groups. The caller guarantees, for every group it allows: mask < 2**31
       (signed compares), i - SS_GROUP >= low (i keeps its mask), SS_GROUP / 2 raws at raws
       and SS_GROUP entries of room. Returns the entries made; *pi and *groups
       (in: most, out: done) move on. */
    __attribute__((target("avx2,popcnt")))
    static int64_t ss_fy_groups(const uint64_t *raws, uint32_t mask, int64_t *pi,
                                int64_t *groups, uint32_t *dst) {
        const __m256i m = _mm256_set1_epi32((int)mask);
        int64_t i = *pi, t = 0, g, most = *groups;
        for (g = 0; g < most; g++, raws += SS_GROUP / 2) {
            __m256i w[SS_GROUP / 8];
            unsigned acc[SS_GROUP / 8];
            if (!ss_group_read(raws, m, i, w, acc)) break;
            for (int k = 0; k < SS_GROUP / 8; k++) {
                __m256i idx = _mm256_cvtepu8_epi32(
                    _mm_loadl_epi64((const __m128i *)ss_pack_lut[acc[k]]));
                _mm256_storeu_si256((__m256i *)(dst + t), _mm256_permutevar8x32_epi32(w[k], idx));
                t += __builtin_popcount(acc[k]);
            }
            i = *pi - t;
        }
        *pi = i;
        *groups = g;
        return t;
    }
    /* ss_skip_blocks a group at a time (the count of words read is all that matters): ng
       groups from i, under the same guarantees as ss_fy_groups. A group that is not sure is
       read word by word. Returns i after them. */
    __attribute__((target("avx2,popcnt")))
    static int64_t ss_skip_groups(const uint64_t *raws, uint32_t mask, int64_t i, int64_t ng) {
        const __m256i m = _mm256_set1_epi32((int)mask);
        for (int64_t g = 0; g < ng; g++, raws += SS_GROUP / 2) {
            __m256i w[SS_GROUP / 8];
            unsigned acc[SS_GROUP / 8];
            if (ss_group_read(raws, m, i, w, acc)) {
                for (int k = 0; k < SS_GROUP / 8; k++) i -= __builtin_popcount(acc[k]);
                continue;
            }
            for (int b = 0; b < SS_GROUP / SS_BLOCK; b++)
                i = ss_block_exact(raws + b * (SS_BLOCK / 2), mask, i);
        }
        return i;
    }
    #else
    static void ss_simd_init(void) {}
    #endif

    /* Fisher-Yates's draws for n samples (n <= 2**32) from the reader, as
       ss_fisher_yates_i64 makes them: the mask is fixed while i keeps its bit length, so the
       loop carries only i (a compare and a subtract per word). The accepted draw for each i
       goes to j[i] unless j is NULL (a node nobody wants: only the count of words read matters,
       so whole blocks are read at once, ss_skip_blocks). The callers pass j as a constant or
       not, so each gets its own copy inlined. */
    #if defined(__GNUC__) || defined(__clang__)
    #define SS_ALWAYS_INLINE static inline __attribute__((always_inline))
    #else
    #define SS_ALWAYS_INLINE static inline
    #endif
    /* The reader's next 32-bit word (low half of a raw, then its high half, as NumPy's
       next_uint32 buffers it), for loops that keep the reader's fields in locals. */
    SS_ALWAYS_INLINE uint32_t ss_word(ss_raw *r, const uint64_t **buf, int64_t *pos,
                                      int64_t *end, int *hh, uint32_t *half) {
        if (*hh) {
            *hh = 0;
            return *half;
        }
        if (*pos == *end) {
            r->pos = *pos; ss_refill(r);
            *buf = r->buf; *pos = r->pos; *end = r->end;
        }
        uint64_t raw = (*buf)[(*pos)++];
        *hh = 1; *half = (uint32_t)(raw >> 32);
        return (uint32_t)raw;
    }
    SS_ALWAYS_INLINE void ss_fy_words(ss_raw *r, uint32_t *j, int64_t n) {
        int64_t i = n - 1;
        const uint64_t *buf = r->buf;
        int64_t pos = r->pos, end = r->end;
        int hh = r->has_half;
        uint32_t half = r->half;
        while (i > 0) {
            uint64_t mask = ss_mask((uint64_t)i), low = mask >> 1;
            /* Skipping: a block from i > least never reaches low (i falls by <= SS_BLOCK). */
            int64_t least = mask <= 0x7FFFFFFFu ? (int64_t)low + SS_BLOCK - 1 : INT64_MAX;
            while (i > (int64_t)low) {
    #ifdef SS_HAVE_AVX2
                /* Whole groups while i stays above low (as for blocks). */
                if (j == NULL && SS_GROUPS_AT(mask) && !hh
                        && i > (int64_t)low + SS_GROUP - 1 && end - pos >= SS_GROUP / 2) {
                    int64_t ng = (i - ((int64_t)low + SS_GROUP - 1) - 1) / SS_GROUP + 1;
                    int64_t room = (end - pos) / (SS_GROUP / 2);
                    ng = ng < room ? ng : room;
                    i = ss_skip_groups(buf + pos, (uint32_t)mask, i, ng);
                    pos += ng * (SS_GROUP / 2);
                    half = (uint32_t)(buf[pos - 1] >> 32);  /* (NumPy keeps it once used) */
                    continue;
                }
    #endif
                if (j == NULL && i > least && !hh && end - pos >= SS_BLOCK / 2) {
                    int64_t nb = (i - least - 1) / SS_BLOCK + 1;
                    int64_t room = (end - pos) / (SS_BLOCK / 2);
                    nb = nb < room ? nb : room;
                    i = ss_skip_blocks(buf + pos, mask, i, nb);
                    pos += nb * (SS_BLOCK / 2);
                    half = (uint32_t)(buf[pos - 1] >> 32);
                    continue;
                }
                uint32_t w = ss_word(r, &buf, &pos, &end, &hh, &half);
                uint64_t v = (uint64_t)w & mask;
                if (j != NULL) j[i] = (uint32_t)v;
                i -= (int64_t)(v <= (uint64_t)i);
            }
        }
        r->pos = pos; r->has_half = hh; r->half = half;
    }

    /* ss_fy_words for a drawn span (j given): a raw's two words in one step, the buffered
       half taken only where a mask starts (no test per word of which half is next, nor of j). */
    static inline void ss_fy_draws(ss_raw *r, uint32_t *j, int64_t n) {
        int64_t i = n - 1;
        const uint64_t *buf = r->buf;
        int64_t pos = r->pos, end = r->end;
        int hh = r->has_half;
        uint32_t half = r->half;
        while (i > 0) {
            uint64_t mask = ss_mask((uint64_t)i), v;
            int64_t low = (int64_t)(mask >> 1);
            if (hh) {
                hh = 0;
                v = (uint64_t)half & mask;
                j[i] = (uint32_t)v;
                i -= (int64_t)(v <= (uint64_t)i);
                continue;
            }
            while (i > low) {
                if (pos == end) {
                    r->pos = pos; ss_refill(r);
                    buf = r->buf; pos = r->pos; end = r->end;
                }
                uint64_t raw = buf[pos++];
                v = raw & mask;
                j[i] = (uint32_t)v;
                i -= (int64_t)(v <= (uint64_t)i);
                half = (uint32_t)(raw >> 32);
                if (i <= low) { hh = 1; break; }
                v = (uint64_t)half & mask;
                j[i] = (uint32_t)v;
                i -= (int64_t)(v <= (uint64_t)i);
            }
        }
        r->pos = pos; r->has_half = hh; r->half = half;
    }


    /* A draw queue's share of Fisher-Yates (ss_jq): up to room accepted draws from *pi down
       (i > 0 left), into dst, as ss_fisher_yates_i64 makes them (random_interval on bg without
       a reader); *pi moves on. Returns the draws made. */
    static int64_t ss_fy_produce(ss_raw *r, bitgen_t *bg, int64_t *pi, uint32_t *dst,
                                 int64_t room) {
        int64_t i = *pi, t = 0;
        if (room > i) room = i;
        if (room <= 0) return 0;
        if (r == NULL) {
            for (; t < room; t++, i--) dst[t] = (uint32_t)random_interval(bg, (uint64_t)i);
            *pi = i;
            return t;
        }
        const uint64_t *buf = r->buf;
        int64_t pos = r->pos, end = r->end;
        int hh = r->has_half;
        uint32_t half = r->half;
    #ifdef SS_HAVE_AVX2
        int plain = 0;  /* words to read one by one before groups are tried again */
    #endif
        while (t < room) {
            uint64_t mask = ss_mask((uint64_t)i), low = mask >> 1;
            int64_t stop = t + (i - (int64_t)low);  /* draws while i keeps its bit length */
            if (stop > room) stop = room;
            while (t < stop) {
    #ifdef SS_HAVE_AVX2
                /* Whole groups while i stays above low, with room and raws for them. */
                if (!plain && SS_GROUPS_AT(mask) && !hh && stop - t >= SS_GROUP
                        && end - pos >= SS_GROUP / 2) {
                    int64_t want = (stop - t) / SS_GROUP, raws = (end - pos) / (SS_GROUP / 2);
                    int64_t most = want < raws ? want : raws;
                    want = most;
                    t += ss_fy_groups(buf + pos, (uint32_t)mask, &i, &most, dst + t);
                    pos += most * (SS_GROUP / 2);
                    if (most) half = (uint32_t)(buf[pos - 1] >> 32);  /* (as NumPy keeps it) */
                    if (most < want) plain = SS_GROUP;  /* a group not sure: word by word */
                    continue;
                }
                if (plain > 0) plain--;
    #endif
                uint32_t w = ss_word(r, &buf, &pos, &end, &hh, &half);
                uint64_t v = (uint64_t)w & mask;
                int ok = v <= (uint64_t)i;
                dst[t] = (uint32_t)v;
                t += ok; i -= ok;
            }
        }
        r->pos = pos; r->has_half = hh; r->half = half;
        *pi = i;
        return t;
    }

    /* The words ss_fisher_yates_raw would read for n samples, read and dropped. */
    static void ss_fisher_yates_skip(ss_raw *r, int64_t n) {
        ss_fy_words(r, NULL, n);
    }

    /* Move the reader forward to raw index raw (raws read from its start) with the given
       buffered half: buffered raws are passed over, the rest jumped (r->jump). */
    static void ss_raw_seek(ss_raw *r, int64_t raw, int has_half, uint32_t half) {
        int64_t used = ss_raw_used(r);
        if (raw > used) ss_raw_skip(r, raw - used);
        r->has_half = has_half; r->half = half;
    }

    /* ---- Scouts: where each span's (py1s) or canonical node's (py1e) draws start ----
       py1s: started as soon as the epoch generator's state is known (before the worker's places
       are), on a second core: it reads the words of span after span from its own copy of the
       generator (as ss_fisher_yates_skip, reading all and keeping none) and records the raw
       index and buffered half at each span's start. The caller then jumps straight to the
       spans it wants among those, and reads on from the last one scouted.
       py1e (node_spans set): a view draws its wanted nodes whole, and only passes the others
       (ss_pass_node: words read, block sizes drawn, shifts jumped over); where a node's draws
       start depends on every word before it. The scout passes every node up to `limit`,
       recording where each one starts; the caller jumps to each wanted node once the scout has
       found it (ss_scout_wait), so the nodes it does not want cost it nothing (at nc=64 a
       worker wants 8 nodes of 64). */
    /* half: the reader's half word (NumPy keeps the last one even once used), + 2**32 while it is
       buffered. */
    typedef struct { int64_t raw; int64_t half; } ss_spanpos;
    /* Where the reader is: raws read from its start, and its half word. */
    static inline ss_spanpos ss_raw_tell(const ss_raw *r) {
        ss_spanpos p = {ss_raw_used(r), (int64_t)r->half | ((int64_t)r->has_half << 32)};
        return p;
    }
    static int ss_pass_node(ss_raw *r, bitgen_t *bg, const int64_t *sizes, int64_t nspans,
                            int spread, int64_t low, int64_t high);
    static void ss_br_pass(ss_raw *r, bitgen_t *bg, int64_t start, int64_t stop, int64_t st,
                           int64_t low, int64_t high, int64_t cap, int64_t *sizes,
                           int64_t *lens);
    typedef struct {
        pthread_t th;
        int started, stop, warn;     /* warn: py1e, a span passed outgrew its block */
        ss_raw r;
        bitgen_t rbg;                /* py1e and py1br: over r, for the block sizes */
        const int64_t *sizes;
        const int64_t *node_spans;   /* py1e: each node's spans; NULL: py1s, span by span */
        int64_t nspans, limit, low, high;
        ss_spanpos *pos;             /* limit + 1 */
        int64_t done;                /* spans (nodes) passed: pos[0 .. done] hold (atomic) */
        /* py1br (br_starts set): node k's samples are br_starts[k] .. br_starts[k + 1],
           staggered by br_stagger[k]; br_sizes and br_lens are scratch of br_cap blocks. */
        const int64_t *br_starts, *br_stagger;
        int64_t br_cap;
        int64_t *br_sizes, *br_lens;
    } ss_scout;
    static void *ss_scout_main(void *arg) {
        ss_scout *s = (ss_scout *)arg;
        for (int64_t k = 0; k < s->limit; k++) {
            if (__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) break;
            if (s->br_starts != NULL) {
                ss_br_pass(&s->r, &s->rbg, s->br_starts[k], s->br_starts[k + 1],
                           s->br_stagger[k], s->low, s->high, s->br_cap, s->br_sizes,
                           s->br_lens);
            } else if (s->node_spans == NULL) {
                ss_fisher_yates_skip(&s->r, s->sizes[k]);
            } else {
                int64_t a = s->node_spans[k];
                s->warn |= ss_pass_node(&s->r, &s->rbg, &s->sizes[a], s->node_spans[k + 1] - a,
                                        1, s->low, s->high);
            }
            s->pos[k + 1] = ss_raw_tell(&s->r);
            __atomic_store_n(&s->done, k + 1, __ATOMIC_RELEASE);
        }
        ss_tstate_drop();  /* the jumps' thread state (ss_tstate_keep), if one was made */
        return NULL;
    }
    /* 0 when the thread runs (s->r, sizes, limit, pos, and for py1e rbg, node_spans, low, high
       set up by the caller). */
    static int ss_scout_start(ss_scout *s) {
        s->pos[0] = ss_raw_tell(&s->r);
        if (ss_spawn(&s->th, ss_scout_main, s) != 0) return -1;
        s->started = 1;
        return 0;
    }
    /* Wait until the scout has found where span (node) c starts (c <= limit). */
    static void ss_scout_wait(ss_scout *s, int64_t c) {
        int spins = 0;
        while (__atomic_load_n(&s->done, __ATOMIC_ACQUIRE) < c) {
            if (++spins < 64) { sched_yield(); continue; }
            struct timespec ts = {0, 20000};
            nanosleep(&ts, NULL);
        }
    }
    /* Stop and join; returns the spans scouted. */
    static int64_t ss_scout_stop(ss_scout *s) {
        if (s->started) {
            __atomic_store_n(&s->stop, 1, __ATOMIC_RELAXED);
            pthread_join(s->th, NULL);
            s->started = 0;
        }
        return __atomic_load_n(&s->done, __ATOMIC_ACQUIRE);
    }
    static inline void ss_raw_seek_span(ss_raw *r, const ss_spanpos *p) {
        ss_raw_seek(r, p->raw, (int)(p->half >> 32), (uint32_t)p->half);
    }

    /* py1e's draws for a node whose places are not wanted: block sizes, and the shifts jumped. */
    static int ss_py1e_skip(ss_raw *r, bitgen_t *bg, const int64_t *sizes, int64_t nspans,
                            int64_t low, int64_t high) {
        int warn = 0;
        for (int64_t k = 0; k < nspans; k++) {
            uint64_t draw;
            random_bounded_uint64_fill(bg, (uint64_t)low, (uint64_t)(high - 1 - low), 1, 0, &draw);
            warn |= (int64_t)draw < sizes[k];  /* the span outgrew its block */
            ss_raw_skip(r, sizes[k]);
        }
        return warn;
    }

    /* Pass a node nobody wants: its spans' Fisher-Yates words read and dropped, then (py1e,
       spread) its block sizes drawn and its shifts jumped over. Returns 1 if a span outgrew its
       block, else 0. */
    static int ss_pass_node(ss_raw *r, bitgen_t *bg, const int64_t *sizes, int64_t nspans,
                            int spread, int64_t low, int64_t high) {
        int64_t k, n = 0;
        for (k = 0; k < nspans; k++) {
            ss_fisher_yates_skip(r, sizes[k]);
            n += sizes[k];
        }
        return spread && n ? ss_py1e_skip(r, bg, sizes, nspans, low, high) : 0;
    }

    /* ss_fisher_yates_i64 (n <= 2**32) with the words read from the reader: all draws
       first (into j[1..n)), then the swaps, free of the draws' dependency chain. */
    static inline void ss_fisher_yates_raw(ss_raw *r, int64_t *x, uint32_t *j, int64_t n) {
        int64_t i, k;
        if (n <= 1) return;
        ss_fy_draws(r, j, n);
        for (i = n - 1; i > 0; i--) {
            k = j[i];
            int64_t t = x[i]; x[i] = x[k]; x[k] = t;
        }
    }

    /* ss_fisher_yates_raw of a span's offsets 0 .. n - 1 in 16-bit (n <= 2**16) or 32-bit
       (n <= 2**32) entries: the same draws and swaps, on a quarter (half) of the memory of
       int64 ids (a 10,000-sample span's 20 KB stay in L1 through the random swaps). */
    static void ss_fisher_yates_raw_u16(ss_raw *r, uint16_t *x, uint32_t *j, int64_t n) {
        int64_t i, k;
        for (i = 0; i < n; i++) x[i] = (uint16_t)i;
        if (n <= 1) return;
        ss_fy_draws(r, j, n);
        for (i = n - 1; i > 0; i--) {
            k = j[i];
            uint16_t t = x[i]; x[i] = x[k]; x[k] = t;
        }
    }
    static void ss_fisher_yates_raw_u32(ss_raw *r, uint32_t *x, uint32_t *j, int64_t n) {
        int64_t i, k;
        for (i = 0; i < n; i++) x[i] = (uint32_t)i;
        if (n <= 1) return;
        ss_fy_draws(r, j, n);
        for (i = n - 1; i > 0; i--) {
            k = j[i];
            uint32_t t = x[i]; x[i] = x[k]; x[k] = t;
        }
    }

    /* ---- py1e: order one canonical node's samples by position ----
       Positions p = i + shift, the shift uniform in a window of about the block size around the
       span, so a span's samples land in ~window/2**shift coarse buckets. Scattering the
       whole node at once into its buckets writes to that many places far apart (cache and TLB
       misses); instead each span is bucketed on its own (it fits in L2), and each bucket is then
       gathered from the spans that reach it, span by span, and ordered by unit (ss_fine_sort).
       The gathered order is the samples' index order, so the sort is stable, as before. */
    /* Coarse buckets are 2**shift units: at least 2**10, and wide enough that a span puts
       ~16 samples in each bucket it reaches (else gathering is mostly per-piece overhead). */
    #define SS_COARSE_MIN 10
    #define SS_COARSE_MAX 16
    typedef struct {
        ss_keyed *runs;          /* n: each span's samples, grouped by bucket */
        double *keys;            /* a span's positions */
        uint32_t *bk;            /* a span's buckets */
        int64_t *meta;           /* per span: offset, first bucket, buckets, table base */
        int64_t *table;          /* per span: bucket starts within its run (+ the end) */
        int64_t *tot;            /* 3 per node bucket: samples, CSR of spans reaching it, cursor */
        int32_t *list;
        ss_keyed *gather, *scratch, *local;
        int32_t *fine;           /* the fine counts of a bucket */
        int64_t cap_fine;
        ss_keyed *gather2, *scratch2;  /* the second thread's */
        int32_t *fine2;
        int64_t cap_most2, cap_fine2;
        int64_t cap_n, cap_span, cap_bk, cap_local, cap_spans, cap_table, cap_nb, cap_list;
        int64_t cap_most;
    } ss_py1e_space;

    /* Scratch of a node's size is fresh memory on every call, and a page fault per 4 KB page
       costs more than the work on it (measured ~1.5-3 us a page here): large blocks ask for
       transparent huge pages. Free with free(). */
    static void *ss_alloc(size_t bytes) {
    #if defined(MADV_HUGEPAGE)
        if (bytes >= ((size_t)1 << 21)) {
            void *p = NULL;
            if (posix_memalign(&p, (size_t)1 << 21, bytes) != 0) return NULL;
            madvise(p, bytes, MADV_HUGEPAGE);
            return p;
        }
    #endif
        return malloc(bytes ? bytes : 1);
    }
    /* Grow *p to hold at least want items (keeping the first *cap). */
    static int ss_grow(void **p, int64_t *cap, int64_t want, size_t size) {
        if (want <= *cap) return 0;
        int64_t c = want + want / 2 + 16;
        void *q = ss_alloc((size_t)c * size);
        if (q == NULL) return -1;
        if (*p != NULL) memcpy(q, *p, (size_t)*cap * size);
        free(*p);
        *p = q; *cap = c;
        return 0;
    }
    static void ss_py1e_free(ss_py1e_space *s) {
        free(s->runs); free(s->keys); free(s->bk); free(s->meta); free(s->table);
        free(s->tot); free(s->list); free(s->local); free(s->fine);
        free(s->gather2); free(s->scratch2); free(s->fine2); free(s->gather); free(s->scratch);
        memset(s, 0, sizeof(*s));
    }
    static inline int64_t ss_unit(double p, int64_t n) {
        /* floor(p) clamped to [0, n - 1]: monotone in p, so bucketing by it keeps the order. */
        if (p >= (double)(n - 1)) return n - 1;
        if (p < 1.0) return 0;
        return (int64_t)p;
    }

    /* Nodes from this many samples gather and sort their buckets in two threads. */
    #define SS_PAR_MIN (1 << 18)
    typedef struct {
        ss_py1e_space *s;
        int64_t *ids, *ptr;
        int64_t b0, b1, out0, width;
        int shift;
        ss_keyed *gather, *scratch;
        int32_t *fine;
    } ss_gather_job;

    /* Gather buckets [b0, b1) (their places start at out0), each from the spans reaching it,
       and order them by unit into ids. */
    static void ss_gather_range(ss_gather_job *jb) {
        ss_py1e_space *s = jb->s;
        int64_t out = jb->out0, b, e, w;
        for (b = jb->b0; b < jb->b1; b++) {
            int64_t g = 0;
            for (e = jb->ptr[b]; e < jb->ptr[b + 1]; e++) {
                int64_t *meta = s->meta + 4 * s->list[e], *start = s->table + meta[3];
                w = b - meta[1];
                int64_t a = start[w], z = start[w + 1];
                if (z > a) {
                    memcpy(jb->gather + g, s->runs + meta[0] + a,
                           (size_t)(z - a) * sizeof(ss_keyed));
                    g += z - a;
                }
            }
            ss_fine_sort(jb->gather, g, b << jb->shift, jb->width, jb->scratch, jb->fine,
                         jb->ids + out);
            out += g;
        }
    }
    static void *ss_gather_thread(void *arg) {
        ss_gather_range((ss_gather_job *)arg);
        return NULL;
    }

    /* A py1e span's shift window: its block size drawn (NumPy's Generator.integers on bg), and
       the window [*lower, *lower + *width) its m samples at offset off are shifted in (half the
       block beyond the span on each side, inside the node of n). Returns 1 if the span outgrew
       its block (no shift), else 0. */
    static inline int ss_py1e_window(bitgen_t *bg, int64_t m, int64_t off, int64_t n,
                                     int64_t low, int64_t high, double *lower, double *width) {
        uint64_t draw;
        int warn = 0;
        random_bounded_uint64_fill(bg, (uint64_t)low, (uint64_t)(high - 1 - low), 1, 0, &draw);
        double cutoff = ((double)(int64_t)draw - (double)m) / 2.0;
        if (cutoff < 0) { cutoff = 0; warn = 1; }
        double lo = -cutoff, hi = cutoff;
        if (-(double)off > lo) lo = -(double)off;
        if ((double)(n - off - m) < hi) hi = (double)(n - off - m);
        *lower = lo;
        *width = hi - lo;
        return warn;
    }
    /* A node's coarse bucket width, 2**shift units (see SS_COARSE_MIN). */
    static inline int ss_py1e_shift(int64_t n, int64_t nspans, int64_t high) {
        int shift = SS_COARSE_MIN;
        int64_t avg = nspans ? n / nspans : n, need = 16 * (high / (avg > 0 ? avg : 1));
        while (shift < SS_COARSE_MAX && ((int64_t)1 << shift) < need) shift++;
        return shift;
    }
    /* s->gather and s->scratch hold at least want entries (gather keeping its first keep). 0,
       or -1 out of memory. */
    static int ss_gather_room(ss_py1e_space *s, int64_t want, int64_t keep) {
        if (want <= s->cap_most) return 0;
        ss_keyed *q = (ss_keyed *)ss_alloc((size_t)want * sizeof(ss_keyed));
        if (q == NULL) return -1;
        if (keep) memcpy(q, s->gather, (size_t)keep * sizeof(ss_keyed));
        free(s->gather); free(s->scratch);
        s->gather = q;
        s->scratch = (ss_keyed *)ss_alloc((size_t)want * sizeof(ss_keyed));
        s->cap_most = want;
        if (s->scratch == NULL) { s->cap_most = 0; return -1; }
        return 0;
    }

    /* One span of a py1e node (m samples at offset off, ids[off..off+m) its shuffled ids): its
       block size drawn (NumPy's Generator.integers on bg), its shifts (Generator.uniform: from
       the reader r when given, else NumPy's fill on bg), and its samples bucketed by coarse
       bucket (2**shift units) into s->local, in index order within a bucket, the buckets'
       starts at s->table + tpos (nwin + 1 entries; the table must hold 2 * nwin + 2 there, the
       rest is the bucketing's cursors). Bucketing in a buffer that stays in cache from span to
       span, then copying it out whole, beats scattering straight into node-sized runs (a miss
       on every line). Sets *bmin and *nwin (0 for an empty span); returns 1 if the span
       outgrew its block, 0 if not, -1 out of memory. */
    static int ss_py1e_bucket_span(ss_raw *r, bitgen_t *bg, const int64_t *ids, int64_t m,
                                   int64_t off, int64_t n, int64_t low, int64_t high, int shift,
                                   ss_py1e_space *s, int64_t tpos, int64_t *bmin_out,
                                   int64_t *nwin_out) {
        int64_t i, w;
        double lower, width;
        int warn = ss_py1e_window(bg, m, off, n, low, high, &lower, &width);
        *bmin_out = 0; *nwin_out = 0;
        if (m == 0) return warn;
        if (ss_grow((void **)&s->keys, &s->cap_span, m, sizeof(double)) ||
            ss_grow((void **)&s->bk, &s->cap_bk, m, sizeof(uint32_t)) ||
            ss_grow((void **)&s->local, &s->cap_local, m, sizeof(ss_keyed)))
            return -1;
        double *keys = s->keys;
        uint32_t *bk = s->bk;
        if (r != NULL) {
            for (i = 0; i < m; i++)
                keys[i] = (double)(off + i) + (lower + width * ss_next_double(r));
        } else {
            random_standard_uniform_fill(bg, m, keys);
            for (i = 0; i < m; i++) keys[i] = (double)(off + i) + (lower + width * keys[i]);
        }
        uint32_t bmin = 0xFFFFFFFFu, bmax = 0;
        for (i = 0; i < m; i++) {
            uint32_t v = (uint32_t)(ss_unit(keys[i], n) >> shift);
            bk[i] = v;
            bmin = v < bmin ? v : bmin;
            bmax = v > bmax ? v : bmax;
        }
        int64_t nwin = (int64_t)bmax - (int64_t)bmin + 1;
        if (ss_grow((void **)&s->table, &s->cap_table, tpos + 2 * nwin + 2, sizeof(int64_t)))
            return -1;
        int64_t *start = s->table + tpos, *cur = start + nwin + 1;
        memset(start, 0, (size_t)(nwin + 1) * sizeof(int64_t));
        for (i = 0; i < m; i++) start[bk[i] - bmin + 1]++;
        for (w = 0; w < nwin; w++) start[w + 1] += start[w];
        memcpy(cur, start, (size_t)nwin * sizeof(int64_t));
        ss_keyed *run = s->local;
        for (i = 0; i < m; i++) {
            int64_t d = cur[bk[i] - bmin]++;
            run[d].key = keys[i];
            run[d].val = ids[off + i];
        }
        *bmin_out = bmin; *nwin_out = nwin;
        return warn;
    }

    /* ss_py1e_node in scratch bounded by the block size, not the node (nodes far larger than
       their block: one canonical node of 1e8 samples held 1.6 GB of runs, 16 bytes a sample).
       A later span places no sample more than high/2 below its start, so once the spans up to
       offset off are bucketed, every bucket ending at or below off - high/2 - 1 has all its
       samples: it is gathered (span by span, in span order, as ss_py1e_node gathers it) and
       ordered into ids at once. Those places precede every id not yet read (a sample placed
       below p sits at a slot below p + high/2), so the node is ordered in place. Only the runs
       of spans still reaching an open bucket are kept, in a ring. The gather is on this
       thread only. Returns as ss_py1e_node, or -3 if the ring overflowed (a bug). */
    int ss_py1e_stream = 0;  /* 0: large nodes stream, 1: none, 2: all (tests) */
    #define SS_STREAM_MIN (1 << 22)
    static int ss_py1e_node_stream(ss_raw *r, bitgen_t *bg, int64_t *ids, const int64_t *sizes,
                                   int64_t nspans, int64_t n, int64_t low, int64_t high,
                                   ss_py1e_space *s) {
        int warn = 0;
        int64_t k, w, e, off = 0, tpos = 0, rt = 0, hs = 0, nextb = 0, outp = 0;
        if (n < 1) return 0;
        int shift = ss_py1e_shift(n, nspans, high);
        int64_t nb = ((n - 1) >> shift) + 1, width = (int64_t)1 << shift, reach = high / 2 + 1;
        /* A span's run is live until its last bucket is gathered: until the spans bucketed
           reach 2 * reach + width past its end; so the live runs never exceed that plus two
           spans. They are kept in a ring of that many entries (positions counted from the
           node's start, each at its position modulo the ring). */
        int64_t largest = 0;
        for (k = 0; k < nspans; k++) largest = sizes[k] > largest ? sizes[k] : largest;
        int64_t cap = 2 * reach + width + 2 * largest + 16;
        if (cap > n) cap = n;
        if (ss_grow((void **)&s->fine, &s->cap_fine, width + 1, sizeof(int32_t)) ||
            ss_grow((void **)&s->meta, &s->cap_spans, 4 * nspans, sizeof(int64_t)) ||
            ss_grow((void **)&s->runs, &s->cap_n, cap, sizeof(ss_keyed)))
            return -1;
        for (k = 0; k <= nspans; k++) {
            /* Buckets complete once the spans before k are bucketed (all, after the last). */
            int64_t bound = k < nspans ? off - reach : n + width;
            while (nextb < nb && ((nextb + 1) << shift) <= bound) {
                int64_t g = 0;
                for (e = hs; e < k; e++) {
                    int64_t *me = s->meta + 4 * e, *start = s->table + me[3];
                    w = nextb - me[1];
                    if (w < 0 || w >= me[2]) continue;
                    int64_t a = start[w], z = start[w + 1];
                    if (z <= a) continue;
                    if (g + (z - a) > s->cap_most
                            && ss_gather_room(s, 2 * (g + (z - a)) + 1024, g))
                        return -1;
                    int64_t at = (me[0] + a) % cap, first = z - a < cap - at ? z - a : cap - at;
                    memcpy(s->gather + g, s->runs + at, (size_t)first * sizeof(ss_keyed));
                    if (first < z - a)
                        memcpy(s->gather + g + first, s->runs,
                               (size_t)(z - a - first) * sizeof(ss_keyed));
                    g += z - a;
                }
                ss_fine_sort(s->gather, g, nextb << shift, width, s->scratch, s->fine, ids + outp);
                outp += g;
                nextb++;
            }
            /* Spans whose buckets are all gathered let go of their runs (from the oldest). */
            while (hs < k && s->meta[4 * hs + 1] + s->meta[4 * hs + 2] <= nextb) hs++;
            if (k == nspans) break;
            int64_t m = sizes[k], bmin, nwin;
            int got = ss_py1e_bucket_span(r, bg, ids, m, off, n, low, high, shift, s, tpos,
                                          &bmin, &nwin);
            if (got < 0) return -1;
            warn |= got;
            int64_t *meta = s->meta + 4 * k;
            meta[0] = rt; meta[1] = nextb; meta[2] = 0; meta[3] = tpos;
            if (m == 0) continue;
            ss_keyed *run = s->local;
            /* (the bound above makes this a bug) */
            if (rt + m - (hs < k ? s->meta[4 * hs] : rt) > cap) return -3;
            int64_t at = rt % cap, first = m < cap - at ? m : cap - at;
            memcpy(s->runs + at, run, (size_t)first * sizeof(ss_keyed));
            if (first < m) memcpy(s->runs, run + first, (size_t)(m - first) * sizeof(ss_keyed));
            meta[0] = rt; meta[1] = bmin; meta[2] = nwin;
            rt += m;
            tpos += nwin + 1;
            off += m;
        }
        return warn;
    }

    /* ids[0..n) holds the node's shuffled spans (sizes[0..nspans), n >= 1). Draws each span's
       block size (NumPy's Generator.integers on bg) and shifts (Generator.uniform: from the reader
       r when given, else NumPy's fill on bg), and orders ids by position (nodes far larger than
       their block: ss_py1e_node_stream). Returns 1 if a span outgrew its block, 0 if not, -1
       when out of memory. */
    static int ss_py1e_node(ss_raw *r, bitgen_t *bg, int64_t *ids, const int64_t *sizes,
                            int64_t nspans, int64_t n, int64_t low, int64_t high,
                            ss_py1e_space *s) {
        if (ss_py1e_stream == 2
                || (ss_py1e_stream == 0 && n >= SS_STREAM_MIN && n > high + high / 2))
            return ss_py1e_node_stream(r, bg, ids, sizes, nspans, n, low, high, s);
        int warn = 0;
        int64_t k, b, w, off = 0, tpos = 0, pairs = 0;
        int shift = ss_py1e_shift(n, nspans, high);
        int64_t nb = ((n - 1) >> shift) + 1, width = (int64_t)1 << shift;
        if (ss_grow((void **)&s->fine, &s->cap_fine, width + 1, sizeof(int32_t))) return -1;
        int32_t *fine = s->fine;
        if (ss_grow((void **)&s->runs, &s->cap_n, n, sizeof(ss_keyed)) ||
            ss_grow((void **)&s->meta, &s->cap_spans, 4 * nspans, sizeof(int64_t)) ||
            ss_grow((void **)&s->tot, &s->cap_nb, 3 * (nb + 1), sizeof(int64_t)))
            return -1;
        for (k = 0; k < nspans; k++) {
            int64_t m = sizes[k], bmin, nwin;
            int got = ss_py1e_bucket_span(r, bg, ids, m, off, n, low, high, shift, s, tpos,
                                          &bmin, &nwin);
            if (got < 0) return -1;
            warn |= got;
            int64_t *meta = s->meta + 4 * k;
            meta[0] = off; meta[1] = 0; meta[2] = 0; meta[3] = tpos;
            if (m == 0) continue;
            ss_keyed *run = s->local;
            memcpy(s->runs + off, run, (size_t)m * sizeof(ss_keyed));
            meta[1] = bmin; meta[2] = nwin;
            tpos += nwin + 1;
            pairs += nwin;
            off += m;
        }
        /* Spans reaching each bucket (CSR, in span order) and each bucket's size. */
        int64_t *tot = s->tot, *ptr = s->tot + (nb + 1), *cur = s->tot + 2 * (nb + 1);
        memset(tot, 0, (size_t)(nb + 1) * sizeof(int64_t));
        memset(ptr, 0, (size_t)(nb + 1) * sizeof(int64_t));
        for (k = 0; k < nspans; k++) {
            int64_t *meta = s->meta + 4 * k, *start = s->table + meta[3];
            for (w = 0; w < meta[2]; w++) {
                ptr[meta[1] + w + 1]++;
                tot[meta[1] + w] += start[w + 1] - start[w];
            }
        }
        int64_t most = 0;
        for (b = 0; b < nb; b++) {
            ptr[b + 1] += ptr[b];
            most = tot[b] > most ? tot[b] : most;
        }
        if (ss_grow((void **)&s->list, &s->cap_list, pairs + 1, sizeof(int32_t)))
            return -1;
        if (ss_gather_room(s, most, 0)) return -1;
        memcpy(cur, ptr, (size_t)nb * sizeof(int64_t));
        for (k = 0; k < nspans; k++) {
            int64_t *meta = s->meta + 4 * k;
            for (w = 0; w < meta[2]; w++) s->list[cur[meta[1] + w]++] = (int32_t)k;
        }
        /* Gather each bucket, span by span, and order it by unit into ids. Buckets are
           independent: a large node's second half goes to a second thread (own buffers). */
        ss_gather_job jobs[2];
        int64_t half = 0, bm = nb, acc = 0;
        if (n >= SS_PAR_MIN) {
            for (b = 0; b < nb; b++) {
                if (acc >= n / 2) { bm = b; half = acc; break; }
                acc += tot[b];
            }
        }
        for (int t = 0; t < 2; t++) {
            jobs[t].s = s; jobs[t].ids = ids; jobs[t].shift = shift; jobs[t].width = width;
            jobs[t].ptr = ptr;
        }
        jobs[0].b0 = 0; jobs[0].b1 = bm; jobs[0].out0 = 0;
        jobs[0].gather = s->gather; jobs[0].scratch = s->scratch; jobs[0].fine = fine;
        jobs[1].b0 = bm; jobs[1].b1 = nb; jobs[1].out0 = half;
        if (bm < nb) {
            if (s->cap_most2 < most) {
                free(s->gather2); free(s->scratch2);
                s->gather2 = (ss_keyed *)ss_alloc((size_t)most * sizeof(ss_keyed));
                s->scratch2 = (ss_keyed *)ss_alloc((size_t)most * sizeof(ss_keyed));
                s->cap_most2 = most;
                if (s->gather2 == NULL || s->scratch2 == NULL) { s->cap_most2 = 0; return -1; }
            }
            if (ss_grow((void **)&s->fine2, &s->cap_fine2, width + 1, sizeof(int32_t))) return -1;
            jobs[1].gather = s->gather2; jobs[1].scratch = s->scratch2; jobs[1].fine = s->fine2;
            pthread_t th;
            if (ss_spawn(&th, ss_gather_thread, &jobs[1]) == 0) {
                ss_gather_range(&jobs[0]);
                pthread_join(th, NULL);
            } else {
                ss_gather_range(&jobs[0]);
                ss_gather_range(&jobs[1]);
            }
        } else {
            ss_gather_range(&jobs[0]);
        }
        return warn;
    }

    /* ---- py1e head: the first places of one canonical node's order, without ordering it ----
       Every span's Fisher-Yates words are read and none kept (where each span's draws start
       is recorded, and the block sizes and shifts start after the last); then every block size
       is drawn, and the shifts read of the spans that can place a sample below `until` (the
       others' jumped over). Only those spans are shuffled, from their recorded start on a
       second reader r2 over the same stream (started where r was), and their samples placed
       below `until` ordered as ss_py1e_node orders a node (by unit, then settled by position;
       ties keep index order). Every other sample is placed at `until` or later, so these are
       exactly the node order's first places. The node is `node` of node_spans (the nodes
       before it are passed: words read, block sizes drawn, shifts jumped over). Returns how
       many (their ids in *out, malloc'd; NULL for none), -1 when out of memory; *warn as
       ss_py1e_node's, for the nodes up to this one. */
    static int64_t ss_py1e_head(ss_raw *r, bitgen_t *bg, ss_raw *r2, const int64_t *begins,
                                const int64_t *sizes, const int64_t *node_spans, int64_t node,
                                int64_t low, int64_t high, int64_t until, int64_t **out,
                                int *warn) {
        int64_t k, i, e, n = 0, off = 0, cnt = 0, cap = 0, largest = 0, got = -1, c;
        *out = NULL; *warn = 0;
        for (c = 0; c < node; c++)  /* the nodes before */
            *warn |= ss_pass_node(r, bg, &sizes[node_spans[c]], node_spans[c + 1] - node_spans[c],
                                  1, low, high);
        begins += node_spans[node];
        sizes += node_spans[node];
        int64_t nspans = node_spans[node + 1] - node_spans[node];
        ss_spanpos *pos = (ss_spanpos *)malloc((size_t)(nspans + 1) * sizeof(ss_spanpos));
        int64_t *first = (int64_t *)malloc((size_t)(nspans + 1) * sizeof(int64_t));
        ss_keyed *sel = NULL, *scratch = NULL;
        uint32_t *x = NULL, *j = NULL;
        int32_t *fine = NULL;
        if (pos == NULL || first == NULL) goto done;
        for (k = 0; k < nspans; k++) n += sizes[k];
        if (until > n) until = n;
        for (k = 0; k < nspans; k++) {
            pos[k] = ss_raw_tell(r);
            ss_fisher_yates_skip(r, sizes[k]);
        }
        for (k = 0; k < nspans; k++) {
            int64_t m = sizes[k];
            double lower, width;
            *warn |= ss_py1e_window(bg, m, off, n, low, high, &lower, &width);
            first[k] = cnt;
            if (m > 0 && (double)off + lower < (double)until) {
                for (i = 0; i < m; i++) {
                    double key = (double)(off + i) + (lower + width * ss_next_double(r));
                    if (key < (double)until) {
                        if (cnt == cap) {
                            int64_t c = cap ? 2 * cap : 4096;
                            ss_keyed *q = (ss_keyed *)realloc(sel, (size_t)c * sizeof(ss_keyed));
                            if (q == NULL) goto done;
                            sel = q; cap = c;
                        }
                        sel[cnt].key = key; sel[cnt].val = i;
                        cnt++;
                    }
                }
                if (cnt > first[k] && m > largest) largest = m;
            } else {
                ss_raw_skip(r, m);
            }
            off += m;
        }
        first[nspans] = cnt;
        if (cnt == 0) { got = 0; goto done; }
        x = (uint32_t *)malloc((size_t)largest * sizeof(uint32_t));
        j = (uint32_t *)malloc((size_t)(largest + 1) * sizeof(uint32_t));
        scratch = (ss_keyed *)malloc((size_t)cnt * sizeof(ss_keyed));
        fine = (int32_t *)malloc((size_t)(until + 1) * sizeof(int32_t));
        *out = (int64_t *)malloc((size_t)cnt * sizeof(int64_t));
        if (x == NULL || j == NULL || scratch == NULL || fine == NULL || *out == NULL) goto done;
        for (k = 0; k < nspans; k++) {
            if (first[k + 1] == first[k]) continue;
            ss_raw_seek_span(r2, &pos[k]);
            ss_fisher_yates_raw_u32(r2, x, j, sizes[k]);
            for (e = first[k]; e < first[k + 1]; e++)
                sel[e].val = begins[k] + (int64_t)x[sel[e].val];
        }
        ss_fine_sort(sel, cnt, 0, until, scratch, fine, *out);
        got = cnt;
    done:
        if (got < 0) { free(*out); *out = NULL; }
        free(pos); free(first); free(sel); free(scratch); free(x); free(j); free(fine);
        return got;
    }

    """
    ctypedef struct ss_keyed:
        double key
        int64_t val
    void ss_fine_sort(const ss_keyed *src, int64_t m, int64_t base, int64_t width,
                      ss_keyed *scratch, int32_t *fine, int64_t *out) nogil
    void ss_fisher_yates_i64(bitgen_t *bg, int64_t *x, uint32_t *j, int64_t n) nogil
    ctypedef struct ss_raw:
        int has_half
        uint32_t half
        int64_t pending
        void (*jump)(void *ctx, int64_t m) noexcept nogil
        void *jump_ctx
    int ss_raw_init(ss_raw *r, bitgen_t *src, int has_half, uint32_t half) nogil
    void ss_raw_close(ss_raw *r) nogil
    int ss_pref_start(ss_raw *r, bitgen_t **gen, void **ctx) nogil
    void ss_pref_stop(ss_raw *r) nogil
    void ss_pref_free(ss_raw *r) nogil
    void ss_raw_bitgen(ss_raw *r, bitgen_t *bg) nogil
    ctypedef int64_t (*ss_produce_fn)(void *ctx, uint32_t *dst, int64_t room) noexcept nogil
    int ss_simd
    void ss_simd_init()
    ctypedef struct ss_jq:
        int helped
        int taken
    int ss_jq_open(ss_jq *q, int64_t cap, ss_produce_fn produce, void *ctx, int help,
                   int64_t stall) nogil
    void ss_tstate_keep() nogil
    void ss_jq_close(ss_jq *q) nogil
    int64_t ss_raw_used(const ss_raw *r) nogil
    int ss_jump_mode
    int64_t ss_jump_reads
    int64_t ss_raws_made
    int64_t ss_win_raws
    int64_t ss_pref_made
    int64_t ss_pref_offs
    int64_t ss_pref_delay_ns
    int ss_win_wait
    double ss_next_double(ss_raw *r) nogil
    void ss_fisher_yates_raw(ss_raw *r, int64_t *x, uint32_t *j, int64_t n) nogil
    void ss_fisher_yates_skip(ss_raw *r, int64_t n) nogil
    void ss_fisher_yates_raw_u16(ss_raw *r, uint16_t *x, uint32_t *j, int64_t n) nogil
    void ss_fisher_yates_raw_u32(ss_raw *r, uint32_t *x, uint32_t *j, int64_t n) nogil
    ctypedef struct ss_spanpos:
        int64_t raw
        int64_t half
    ctypedef struct ss_scout:
        int started
        int warn
        ss_raw r
        bitgen_t rbg
        const int64_t *sizes
        const int64_t *node_spans
        int64_t nspans, limit, low, high
        ss_spanpos *pos
        const int64_t *br_starts
        const int64_t *br_stagger
        int64_t br_cap
        int64_t *br_sizes
        int64_t *br_lens
    int ss_scout_start(ss_scout *s) nogil
    void ss_scout_wait(ss_scout *s, int64_t c) nogil
    int64_t ss_scout_stop(ss_scout *s) nogil
    int ss_pass_node(ss_raw *r, bitgen_t *bg, const int64_t *sizes, int64_t nspans, int spread,
                     int64_t low, int64_t high) nogil
    void ss_raw_seek_span(ss_raw *r, const ss_spanpos *p) nogil
    int ss_win_start(ss_raw *r, int64_t n, const int64_t *start, const int64_t *len,
                     bitgen_t **gen) nogil
    void ss_win_free(ss_raw *r) nogil
    void ss_fy_words_moments(int64_t n, double *mean, double *var) nogil
    void *ss_alloc(size_t bytes) nogil
    int ss_py1e_skip(ss_raw *r, bitgen_t *bg, const int64_t *sizes, int64_t nspans, int64_t low,
                     int64_t high) nogil
    ctypedef struct ss_py1e_space:
        pass
    void ss_py1e_free(ss_py1e_space *s) nogil
    int ss_py1e_node(ss_raw *r, bitgen_t *bg, int64_t *ids, const int64_t *sizes, int64_t nspans,
                     int64_t n, int64_t low, int64_t high, ss_py1e_space *s) nogil
    int ss_py1e_stream
    int64_t ss_py1e_head(ss_raw *r, bitgen_t *bg, ss_raw *r2, const int64_t *begins,
                         const int64_t *sizes, const int64_t *node_spans, int64_t node,
                         int64_t low, int64_t high, int64_t until, int64_t **out,
                         int *warn) nogil


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
    """A second bit generator of the same kind (the raw path's producer of raws)."""
    return type(bit)()


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


ss_simd_init()


def _set_simd(bint on):
    """Tests only: whether Fisher-Yates draws may be read a group at a time (AVX2, where the
    CPU has it; see ss_fy_groups). Returns whether they were."""
    global ss_simd
    was = bool(ss_simd)
    if on:
        ss_simd_init()
    else:
        ss_simd = 0
    return was


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


cdef inline int64_t _br_most_blocks(int64_t n, int64_t low) noexcept nogil:
    # The most blocks py1br draws for a node of n samples: they are at least ``low`` long except
    # where clipped (the last, and those clipped at the node's start by a stagger near ``low``,
    # each reaching past twice the last's end: fewer than 64).
    return n // low + 66


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
    cdef Py_ssize_t cap = 2, nblocks, b
    for node in range(num_nodes):
        cap += _br_most_blocks(node_bounds[node + 1] - node_bounds[node], low)
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


def py1e_head(rng, const int64_t[::1] begins, const int64_t[::1] sizes, int64_t low,
              int64_t high, int64_t until, node_spans=None, int64_t node=0):
    """The first places of one canonical node's ``py1e`` order, without ordering the node.

    The epoch's spans are ``begins``/``sizes`` (in final order), node ``c`` holding spans
    ``node_spans[c] .. node_spans[c+1]``; places are ordered as ``shuffle_nodes(rng, "py1e",
    ...)`` orders them. Node ``node``'s samples placed below position ``until`` (counted from
    the node's first place) are exactly its order's first places: they are returned, for the
    cost of reading the draws of the nodes before it and of it (all Fisher-Yates words, read and
    dropped; block sizes drawn; shifts jumped over or read), shuffling only the node's spans
    that reach below ``until``, and ordering only what they place there. ``rng`` is left as it
    is (its draws are read from copies).

    Args:
        rng (numpy.random.Generator): Generator, after the span reorder.
        begins (NDArray[np.int64]): First sample id of each span.
        sizes (NDArray[np.int64]): Size of each span (non-negative).
        low (int): Smallest block size (inclusive), non-negative.
        high (int): Largest block size (exclusive), above ``low``.
        until (int): Position bound (non-negative; past the node's samples, the whole node).
        node_spans (NDArray[np.int64], optional): ``num_nodes + 1`` ascending span indices
            from 0 to the number of spans. Defaults to one node of every span.
        node (int): Which node. Defaults to ``0``.

    Returns:
        Optional[Tuple[NDArray[np.int64], bool]]: The node order's first places (as many as
            it places below ``until``) and whether some span of the nodes up to this one
            outgrew its block; ``None`` where the draws cannot be read ahead (a bit generator
            other than PCG64, or a span of more than ``2**32`` samples).

    Raises:
        ValueError: If the arguments do not match.
    """
    cdef Py_ssize_t k, nspans = sizes.shape[0]
    if begins.shape[0] != nspans:
        raise ValueError("begins and sizes differ in length")
    if node_spans is None:
        node_spans = np.array([0, nspans], np.int64)
    cdef const int64_t[::1] bounds = np.ascontiguousarray(node_spans, np.int64)
    if bounds.shape[0] < 2 or bounds[0] != 0 or bounds[bounds.shape[0] - 1] != nspans:
        raise ValueError("node_spans must run from 0 to the number of spans")
    for k in range(bounds.shape[0] - 1):
        if bounds[k + 1] < bounds[k]:
            raise ValueError("node_spans must ascend")
    if not 0 <= node < bounds.shape[0] - 1:
        raise ValueError(f"node {node} is not one of the {bounds.shape[0] - 1} nodes")
    if not 0 <= low < high:
        raise ValueError(f"bad block size range [{low}, {high})")
    if until < 0:
        raise ValueError(f"until must be non-negative, got {until}")
    for k in range(nspans):
        if sizes[k] < 0:
            raise ValueError(f"span {k} has a negative size ({sizes[k]})")
    bit = _bit_generator(rng)
    if not _raw_mode(bit, 0, _largest(sizes)):
        return None
    cdef ss_raw r, r2
    cdef bitgen_t rbg
    cdef int64_t *ids = NULL
    cdef int64_t got
    cdef int warn = 0
    memset(&r, 0, sizeof(r))
    memset(&r2, 0, sizeof(r2))
    first, second = _copy_of(bit), _copy_of(bit)
    with bit.lock:
        _raw_open(&r, bit, first)
        try:
            _raw_open(&r2, bit, second)
        except BaseException:
            ss_raw_close(&r)
            raise
    ss_raw_bitgen(&r, &rbg)
    try:
        with nogil:
            got = ss_py1e_head(&r, &rbg, &r2, &begins[0] if nspans else NULL,
                               &sizes[0] if nspans else NULL, &bounds[0], node, low, high,
                               until, &ids, &warn)
    finally:
        ss_raw_close(&r)
        ss_raw_close(&r2)
    if got < 0:
        raise MemoryError()
    cdef int64_t[::1] o
    try:
        out = np.empty(got, np.int64)
        o = out
        if got:
            memcpy(&o[0], ids, <size_t>got * sizeof(int64_t))
    finally:
        free(ids)
    return out, warn == 1


def shuffle_nodes(rng, str algo, const int64_t[:] begins, const int64_t[:] sizes,
                  const int64_t[:] node_spans, int64_t low, int64_t high, int64_t[:] out,
                  const int64_t[:] want=None, const int64_t[:] want_bounds=None,
                  order=None, bint exact=True, int _mode=0, Scout scout=None):
    """Shuffle every canonical node of an epoch (``py1s`` or ``py1e``) in one pass.

    Node ``c`` holds spans ``node_spans[c] .. node_spans[c+1]`` (begins and sizes in final
    order); its samples occupy the next ``sum(sizes of its spans)`` places of the epoch. Draws as
    ``get_shuffle_py1s`` / ``get_shuffle_py1e`` after the span reorder.

    Without ``want``, ``out`` receives the whole epoch. With ``want``, only the epoch's values
    at some places are kept, grouped by span: span ``s``'s are entries ``want_bounds[s] ..
    want_bounds[s+1]`` of the grouping. Entry ``e`` of the grouping is the place ``want[e]``,
    its value going to ``out[e]``; with ``order`` (see ``group_places``) it is the place
    ``want[order[e]]``, going to ``out[order[e]]`` (``want`` may then be ``out`` itself: each
    place is read just before its value overwrites it). py1s builds each span, py1e each node,
    in reused scratch, so memory stays at one node's worth.

    Args:
        rng (numpy.random.Generator): Generator, after the span reorder (it advances).
        algo (str): ``py1s`` or ``py1e``.
        begins (NDArray[np.int64]): First sample id of each span.
        sizes (NDArray[np.int64]): Size of each span.
        node_spans (NDArray[np.int64]): ``num_nodes + 1`` ascending span indices.
        low (int): ``py1e``: smallest block size (inclusive), non-negative.
        high (int): ``py1e``: largest block size (exclusive), above ``low``.
        out (NDArray[np.int64]): The epoch (``sizes.sum()`` long), or the kept values.
        want (NDArray[np.int64], optional): Places to keep: grouped by span, or any order with
            ``order``.
        want_bounds (NDArray[np.int64], optional): ``num_spans + 1`` offsets into the grouping.
        order (NDArray[np.int32] | NDArray[np.int64] | int, optional): The grouping: indices
            into ``want`` and ``out``, span by span; or a number of columns ``w`` (see
            ``strided_group``): the grouping is entries ``0 .. want_bounds[-1]`` of ``want`` as
            a row-major matrix of ``w`` columns, taken column by column (no order array).
        exact (bool): Leave ``rng`` exactly where NumPy's calls would. With ``want`` and
            ``exact=False``, the nodes after the last wanted place are not drawn (``rng`` is
            then left somewhere else). Defaults to ``True``.
        _mode (int): Tests only: 0 picks the path, 1 forces the generic ``bitgen_t`` path, 2
            the PCG64 raw path (needs a PCG64 generator), 3 the raw path with the raws made
            ahead on a helper thread.
        scout (Scout, optional): py1s with ``want``: a scout started from ``rng`` (in its state
            now) and these spans; it is stopped, and the spans it passed are jumped over.

    Returns:
        bool: ``py1e``: whether some span outgrew its block (so was not spread).

    Raises:
        ValueError: If the arguments do not match, or the scout was started from elsewhere.
    """
    cdef bint spread = algo == "py1e"
    if not spread and algo != "py1s":
        raise ValueError(f"shuffle_nodes: unknown algorithm {algo!r}")
    if begins.shape[0] != sizes.shape[0]:
        raise ValueError("begins and sizes differ in length")
    cdef Py_ssize_t num_nodes = node_spans.shape[0] - 1, num_spans = sizes.shape[0]
    cdef Py_ssize_t total = _sum_spans(sizes)
    cdef Py_ssize_t c, k, n, largest = 0
    if num_nodes < 0 or node_spans[0] != 0 or node_spans[num_nodes] != num_spans:
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
    cdef const int32_t[::1] order32 = None
    cdef const int64_t[::1] order64 = None
    cdef const int32_t *o32 = NULL
    cdef const int64_t *o64 = NULL
    cdef Py_ssize_t grouped = 0
    cdef ss_cols colsv
    cdef const ss_cols *cols = NULL
    if pick:
        if want_bounds is None or want_bounds.shape[0] != num_spans + 1:
            raise ValueError("want_bounds must have num_spans + 1 entries")
        grouped = want.shape[0]
        if isinstance(order, int):
            # Columns (see strided_group): want's first want_bounds[-1] entries, column by column.
            if want.shape[0] != out.shape[0]:
                raise ValueError("with order, want and out must be as long")
            grouped = want_bounds[num_spans]
            if order < 1 or not 0 <= grouped <= out.shape[0]:
                raise ValueError(f"bad columns ({order} over {grouped} entries)")
            colsv.w = order
            colsv.q = grouped // order
            colsv.rem = grouped % order
            cols = &colsv
        elif order is not None:
            order32, order64, grouped = _order_view(order)
            if want.shape[0] != out.shape[0]:
                raise ValueError("with order, want and out must be as long")
            if grouped:
                o32 = &order32[0] if order32 is not None else NULL
                o64 = &order64[0] if order64 is not None else NULL
            for k in range(grouped):
                n = _at(o32, o64, k)
                if not 0 <= n < out.shape[0]:
                    raise ValueError(f"order entry {k} ({n}) is outside out")
        elif out.shape[0] != want.shape[0]:
            raise ValueError("out must hold one value per wanted place")
        if want_bounds[0] != 0 or want_bounds[num_spans] != grouped:
            raise ValueError("want_bounds must run from 0 to the number of grouped places")
        for k in range(num_spans):
            if want_bounds[k + 1] < want_bounds[k]:
                raise ValueError("want_bounds must ascend")
    elif out.shape[0] != total:
        raise ValueError(f"spans hold {total} samples but the output holds {out.shape[0]}")
    bit = _bit_generator(rng)
    cdef bint raw = _raw_mode(bit, _mode, _largest(sizes))
    cdef bitgen_t *bg = _bitgen(bit)
    cdef Py_ssize_t last = num_nodes - 1
    if scout is not None:
        scout.check(bit, sizes)
        if spread or not pick or not raw:
            scout.stop()  # its positions are py1s's words, read from PCG64 raws
            scout = None
    if pick:
        # The last node to draw: the last with a wanted place, or with a span that may outgrow
        # its block (py1e's warning).
        last = _last_needed(spread, sizes, node_spans, want_bounds, low)
    cdef int64_t *buf = NULL
    cdef uint32_t *j = NULL
    cdef ss_py1e_space sp
    memset(&sp, 0, sizeof(sp))
    cdef int warn = 0
    cdef Py_ssize_t bad = -1
    try:
        j = _draw_space(_largest(sizes))
        if pick:
            # py1s keeps a span's places as soon as it is shuffled: scratch of one span, not of
            # a node (fresh memory costs a page fault per 4 KB, more than the work on it).
            buf = <int64_t *>ss_alloc(((largest if spread else _largest(sizes)) + 1)
                                      * sizeof(int64_t))
            if buf == NULL:
                raise MemoryError()
        with bit.lock:
            if raw:
                bad = _draw_nodes_raw(bit, spread, begins, sizes, node_spans, low, high, out,
                                      want, want_bounds, o32, o64, cols, last, exact, _mode, buf,
                                      j, &sp, &warn, scout)
            else:
                with nogil:
                    bad = _draw_nodes(NULL, bg, spread, begins, sizes, node_spans, low, high,
                                      out, want, want_bounds, o32, o64, cols, last, exact, buf,
                                      j, &sp, &warn, 0)
    finally:
        free(buf)
        free(j)
        ss_py1e_free(&sp)
    if bad == -2:
        raise MemoryError()
    if bad >= 0:
        n = _col_at(cols, bad, &k) if cols != NULL else _at(o32, o64, bad)
        raise ValueError(f"wanted place {want[n]} (entry {bad}) is outside its span")
    return warn == 1


ctypedef struct ss_cols:
    # A grouping with no order array: entries 0 .. m of ``want`` taken column by column, as a
    # matrix of w columns in row-major order (columns 0 .. rem have q + 1 rows, the rest q).
    Py_ssize_t w
    Py_ssize_t q
    Py_ssize_t rem


cdef inline Py_ssize_t _col_at(const ss_cols *c, Py_ssize_t e, Py_ssize_t *left) noexcept nogil:
    # The index of grouping entry e, and how many entries its column holds from e on.
    cdef Py_ssize_t big = c.rem * (c.q + 1), j, r
    if e < big:
        j = e // (c.q + 1)
        r = e - j * (c.q + 1)
        left[0] = c.q + 1 - r
    else:
        j = c.rem + (e - big) // c.q
        r = e - big - (j - c.rem) * c.q
        left[0] = c.q - r
    return r * c.w + j


cdef inline Py_ssize_t _col_step(const ss_cols *c, Py_ssize_t e, Py_ssize_t *i,
                                 Py_ssize_t *left) noexcept nogil:
    # The index of grouping entry e, entries taken in turn from ``left[0] = 0``: down a column
    # (i steps by w) until it ends, then from the top of the next one (_col_at).
    if left[0] == 0:
        i[0] = _col_at(c, e, left)
    else:
        i[0] += c.w
    left[0] -= 1
    return i[0]


cdef tuple _order_view(object order):
    """``order`` as a contiguous int32 or int64 view (the other None), and its length."""
    arr = np.asarray(order)
    if arr.ndim != 1 or arr.dtype not in (np.int32, np.int64):
        raise ValueError("order must be a 1-d int32 or int64 array")
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.int32:
        return arr, None, arr.shape[0]
    return None, arr, arr.shape[0]



cdef int _order_ptrs(object ord_arr, int32_t **o32, int64_t **o64) except -1:
    """Point ``o32`` or ``o64`` at a grouping's order (from ``_grouping``: contiguous int32 or
    int64, or None/empty: both stay NULL). The caller keeps ``ord_arr`` alive while using them."""
    cdef int32_t[::1] v32
    cdef int64_t[::1] v64
    if ord_arr is not None and len(ord_arr):
        if ord_arr.dtype == np.int32:
            v32 = ord_arr
            o32[0] = &v32[0]
        else:
            v64 = ord_arr
            o64[0] = &v64[0]
    return 0

cdef inline Py_ssize_t _at(const int32_t *o32, const int64_t *o64, Py_ssize_t e) noexcept nogil:
    # Entry e of the grouping: an index into want and out (the entry itself without order).
    if o32 != NULL:
        return o32[e]
    if o64 != NULL:
        return o64[e]
    return e


_PCG64 = None


cdef int _raw_mode(object bit, int mode, Py_ssize_t largest_span) except -1:
    """Whether to take the PCG64 raw path (1) or the generic ``bitgen_t`` path (0)."""
    global _PCG64
    if _PCG64 is None:
        from numpy.random import PCG64
        _PCG64 = PCG64
    cdef bint pcg = type(bit) is _PCG64
    if mode == 1:
        return 0
    if mode == 2 or mode == 3:
        if not pcg:
            raise ValueError("the raw path needs a PCG64 bit generator")
        return 1
    if mode != 0:
        raise ValueError(f"_mode must be 0, 1, 2 or 3, got {mode}")
    # Fisher-Yates past 2**32 samples draws 64-bit intervals: left to the generic path.
    return 1 if pcg and largest_span <= 0xFFFFFFFF else 0


cdef int _raw_open(ss_raw *r, object bit, object copy) except -1:
    # The copy starts where ``bit`` is; the reader starts with ``bit``'s buffered half, if any,
    # and jumps over raws with the copy's PCG64.advance (the caller keeps ``copy`` alive).
    state = bit.state
    copy.state = state
    if ss_raw_init(r, _bitgen(copy), <int>state["has_uint32"], <uint32_t>state["uinteger"]) < 0:
        ss_raw_close(r)
        raise MemoryError()
    r.jump = _jump
    r.jump_ctx = <void *>copy
    return 0


cdef int _raw_finish(ss_raw *r, object bit) except -1:
    """Put ``bit`` exactly where NumPy's calls would have: the raws read, then the half buffer."""
    cdef int64_t used = ss_raw_used(r)
    if used:
        bit.advance(used)
    state = bit.state
    state["has_uint32"] = r.has_half
    state["uinteger"] = r.half
    bit.state = state
    return 0


cdef Py_ssize_t _last_needed(bint spread, const int64_t[:] sizes, const int64_t[:] node_spans,
                             const int64_t[:] want_bounds, int64_t low):
    # A span no longer than ``low`` never outgrows its block (drawn from [low, high)).
    cdef Py_ssize_t c, k, last = -1
    for c in range(node_spans.shape[0] - 1):
        if want_bounds[node_spans[c + 1]] > want_bounds[node_spans[c]]:
            last = c
        elif spread:
            for k in range(node_spans[c], node_spans[c + 1]):
                if sizes[k] > low:
                    last = c
                    break
    return last


# Raws ahead from which a helper thread makes them on a second core (see ss_pref): below this,
# starting it costs more than it saves.
_helper_min_raws = 500_000


cdef bint _second_core():
    """Whether another core may be free: more than one allowed to us. (How busy they are is
    left to the helper, which stops itself when it is not running; the load average's count
    of running tasks was not a usable sign: right after NumPy's import its BLAS threads count.)"""
    return len(os.sched_getaffinity(0)) >= 2


cdef object _helper_copies(object bit, bint spread, const int64_t[:] sizes,
                           const int64_t[:] node_spans, Py_ssize_t nodes, int mode,
                           Py_ssize_t known):
    """The copies of ``bit`` (SP_GENS) for a helper thread, when the raws ahead are worth making
    on another core; else None."""
    if mode == 3:
        return [_copy_of(bit) for _ in range(3)]
    # py1e jumps over most raws of the nodes it skips (measured: no gain); a py1e view's
    # raws are made ahead in windows instead (_passed_windows).
    if mode != 0 or spread:
        return None
    cdef Py_ssize_t k
    cdef int64_t samples = 0
    # Spans a scout has passed are jumped over, not read.
    for k in range(known, node_spans[nodes] if nodes > 0 else 0):
        samples += sizes[k]
    # Fisher-Yates reads ~1.39 32-bit words a sample: ~0.7 raws.
    if samples * 7 // 10 < _helper_min_raws or not _second_core():
        return None
    return [_copy_of(bit) for _ in range(3)]


cdef void _jump(void *ctx, int64_t m) noexcept nogil:
    # The reader's jump over raws nobody reads: NumPy's own PCG64.advance on the copy.
    ss_tstate_keep()
    with gil:
        (<object>ctx).advance(m)


cdef Py_ssize_t _draw_nodes(ss_raw *r, bitgen_t *bg, bint spread, const int64_t[:] begins,
                            const int64_t[:] sizes, const int64_t[:] node_spans, int64_t low,
                            int64_t high, int64_t[:] out, const int64_t[:] want,
                            const int64_t[:] want_bounds, const int32_t *o32, const int64_t *o64,
                            const ss_cols *cols, Py_ssize_t last, bint exact, int64_t *buf,
                            uint32_t *j, ss_py1e_space *sp, int *warn,
                            Py_ssize_t from_span) noexcept nogil:
    """``shuffle_nodes``' draws, node by node (arguments checked): from the reader ``r`` (PCG64
    raws; ``bg`` is then a bitgen_t over it), or from ``bg`` itself when ``r`` is NULL.

    With a reader, a node (py1s: a span) with no wanted place is only drawn past (its shifts
    jumped). Without ``exact``, nodes after ``last`` are not drawn. Spans before ``from_span``
    (py1s with wanted places only: done from a scout's positions) are left out. Returns -1, -2
    (out of memory) or the entry of the grouping whose place is outside its span.
    """
    cdef bint pick = buf != NULL
    cdef Py_ssize_t c, k, e, a, a0, z, n, node_start = 0, skipped
    cdef int64_t *dst
    for c in range(node_spans.shape[0] - 1):
        if c > last and not exact:
            break
        a = node_spans[c]
        z = node_spans[c + 1]
        n = 0
        for k in range(a, z):
            n += sizes[k]
        if z <= from_span:
            node_start += n
            continue
        a0 = a if a >= from_span else from_span
        skipped = 0
        for k in range(a, a0):
            skipped += sizes[k]
        if pick and spread:
            # (Spans before a0 were checked and drawn already: their places may be overwritten.
            # py1s checks each span's places as it keeps them, _draw_span_kept.)
            e = _check_node_places(want, o32, o64, cols, want_bounds, sizes, a0, z,
                                   node_start + skipped)
            if e >= 0:
                return e
        if pick and r != NULL and want_bounds[z] == want_bounds[a0]:
            # (py1e: a0 == a, the spans before a0 being py1s's scouted ones)
            warn[0] |= ss_pass_node(r, bg, &sizes[a0], z - a0, spread, low, high)
            node_start += n
            continue
        if pick and not spread:
            e = _draw_spans_picked(r, bg, begins, sizes, a0, z, node_start + skipped, out, want,
                                   want_bounds, o32, o64, cols, buf, j)
            if e >= 0:
                return e
            node_start += n
            continue
        dst = buf if pick else &out[node_start]
        if _draw_node(r, bg, spread, begins, sizes, a, z, n, low, high, dst, j, sp, warn) < 0:
            return -2
        if pick:
            _keep_places(out, want, want_bounds, o32, o64, cols, buf, a, z, node_start)
        node_start += n
    return -1


cdef inline int _draw_node(ss_raw *r, bitgen_t *bg, bint spread, const int64_t[:] begins,
                           const int64_t[:] sizes, Py_ssize_t a, Py_ssize_t z, Py_ssize_t n,
                           int64_t low, int64_t high, int64_t *dst, uint32_t *j,
                           ss_py1e_space *sp, int *warn) noexcept nogil:
    # A node's spans (a .. z, n samples) shuffled into dst, then (py1e) spread and ordered.
    # Returns 0, or -1 out of memory.
    cdef Py_ssize_t k, place = 0
    cdef int got
    for k in range(a, z):
        _draw_span(r, bg, begins[k], sizes[k], &dst[place], j)
        place += sizes[k]
    if spread and n:
        got = ss_py1e_node(r, bg, dst, &sizes[a], z - a, n, low, high, sp)
        if got < 0:
            return -1
        warn[0] |= got
    return 0


cdef inline void _keep_places(int64_t[:] out, const int64_t[:] want,
                              const int64_t[:] want_bounds, const int32_t *o32,
                              const int64_t *o64, const ss_cols *cols, const int64_t *buf,
                              Py_ssize_t a, Py_ssize_t z, Py_ssize_t node_start) noexcept nogil:
    # The wanted places of a drawn node (spans a .. z, its values in buf from node_start on)
    # into out, through the grouping.
    cdef Py_ssize_t e, k = 0, left = 0
    if cols != NULL:
        for e in range(want_bounds[a], want_bounds[z]):
            _col_step(cols, e, &k, &left)
            out[k] = buf[want[k] - node_start]
    else:
        for e in range(want_bounds[a], want_bounds[z]):
            k = _at(o32, o64, e)
            out[k] = buf[want[k] - node_start]


cdef inline Py_ssize_t _check_node_places(const int64_t[:] want, const int32_t *o32,
                                          const int64_t *o64, const ss_cols *cols,
                                          const int64_t[:] want_bounds, const int64_t[:] sizes,
                                          Py_ssize_t a, Py_ssize_t z,
                                          int64_t span_start) noexcept nogil:
    # The first grouping entry of spans a .. z (the first starting at span_start) whose place
    # is outside its span, or -1.
    cdef Py_ssize_t k, e
    for k in range(a, z):
        e = _check_span(want, o32, o64, cols, want_bounds[k], want_bounds[k + 1], span_start,
                        sizes[k])
        if e >= 0:
            return e
        span_start += sizes[k]
    return -1


cdef inline Py_ssize_t _check_span(const int64_t[:] want, const int32_t *o32, const int64_t *o64,
                                   const ss_cols *cols, Py_ssize_t first, Py_ssize_t end,
                                   int64_t span_start, int64_t size) noexcept nogil:
    # The first entry of first .. end whose place is outside the span, or -1.
    cdef Py_ssize_t e, i = 0, left = 0
    cdef int64_t place
    if cols != NULL:
        for e in range(first, end):
            place = want[_col_step(cols, e, &i, &left)]
            if place < span_start or place >= span_start + size:
                return e
        return -1
    for e in range(first, end):
        place = want[_at(o32, o64, e)]
        if place < span_start or place >= span_start + size:
            return e
    return -1


cdef Py_ssize_t _draw_scouted(ss_raw *r, bitgen_t *bg, const int64_t[:] begins,
                              const int64_t[:] sizes, int64_t[:] out, const int64_t[:] want,
                              const int64_t[:] want_bounds, const int32_t *o32,
                              const int64_t *o64, const ss_cols *cols, int64_t *buf, uint32_t *j,
                              const ss_spanpos *pos, Py_ssize_t known) noexcept nogil:
    """py1s spans ``0 .. known`` whose words a scout found: the reader jumps to each wanted
    one and draws it, then to where span ``known`` starts. Returns -1 or the entry of the
    grouping whose place is outside its span."""
    cdef Py_ssize_t k, e
    cdef int64_t span_start = 0
    for k in range(known):
        if want_bounds[k + 1] > want_bounds[k]:
            ss_raw_seek_span(r, &pos[k])
            e = _draw_span_kept(r, bg, begins[k], sizes[k], span_start, want_bounds[k],
                                want_bounds[k + 1], out, want, o32, o64, cols, buf, j)
            if e >= 0:
                return e
        span_start += sizes[k]
    ss_raw_seek_span(r, &pos[known])
    return -1


cdef inline void _draw_span(ss_raw *r, bitgen_t *bg, int64_t begin, int64_t size, int64_t *dst,
                            uint32_t *j) noexcept nogil:
    # One span's ids laid out, then shuffled (Generator.shuffle's draws).
    cdef Py_ssize_t i
    for i in range(size):
        dst[i] = begin + i
    if r != NULL:
        ss_fisher_yates_raw(r, dst, j, size)
    else:
        ss_fisher_yates_i64(bg, dst, j, size)


cdef inline int64_t _kept(const uint16_t *x16, const uint32_t *x32, const int64_t *buf,
                          int64_t begin, int64_t p) noexcept nogil:
    # The id at offset p of a drawn span: as 16- or 32-bit offsets from begin, or as ids.
    if x16 != NULL:
        return begin + x16[p]
    if x32 != NULL:
        return begin + x32[p]
    return buf[p]


cdef inline Py_ssize_t _draw_span_kept(ss_raw *r, bitgen_t *bg, int64_t begin, int64_t size,
                                       Py_ssize_t span_start, Py_ssize_t a, Py_ssize_t z,
                                       int64_t[:] out, const int64_t[:] want,
                                       const int32_t *o32, const int64_t *o64,
                                       const ss_cols *cols, int64_t *buf,
                                       uint32_t *j) noexcept nogil:
    # One span drawn in buf (_draw_span), then its wanted places (grouping entries a .. z)
    # checked and kept: returns -1, or the first entry whose place is outside the span (the
    # span is drawn by then; the caller raises). From the reader the span is shuffled as
    # offsets in 16- or 32-bit entries (same draws and swaps on less memory; the raw path has
    # spans of at most 2**32 samples).
    cdef Py_ssize_t i, e, left = 0
    cdef int64_t p
    cdef uint16_t *x16 = NULL
    cdef uint32_t *x32 = NULL
    cdef const int64_t *wp
    cdef int64_t *op
    if r != NULL and size <= 0x10000:
        x16 = <uint16_t *>buf
        ss_fisher_yates_raw_u16(r, x16, j, size)
    elif r != NULL:
        x32 = <uint32_t *>buf
        ss_fisher_yates_raw_u32(r, x32, j, size)
    else:
        _draw_span(r, bg, begin, size, buf, j)
    if z <= a:
        return -1
    if cols != NULL:
        # Columns: the span's entries step down a column (a new one where it ends).
        i = 0
        for e in range(a, z):
            _col_step(cols, e, &i, &left)
            p = want[i] - span_start
            if p < 0 or p >= size:
                return e
            out[i] = _kept(x16, x32, buf, begin, p)
        return -1
    if x16 != NULL and want.strides[0] == sizeof(int64_t) and out.strides[0] == sizeof(int64_t):
        # The usual case, flat arrays: plain pointers (no stride multiply per entry).
        wp = &want[0]
        op = &out[0]
        for e in range(a, z):
            i = _at(o32, o64, e)
            p = wp[i] - span_start
            if p < 0 or p >= size:
                return e
            op[i] = begin + x16[p]
        return -1
    for e in range(a, z):
        i = _at(o32, o64, e)
        p = want[i] - span_start
        if p < 0 or p >= size:
            return e
        out[i] = _kept(x16, x32, buf, begin, p)
    return -1


cdef Py_ssize_t _draw_spans_picked(ss_raw *r, bitgen_t *bg, const int64_t[:] begins,
                                   const int64_t[:] sizes, Py_ssize_t a, Py_ssize_t z,
                                   Py_ssize_t span_start, int64_t[:] out, const int64_t[:] want,
                                   const int64_t[:] want_bounds, const int32_t *o32,
                                   const int64_t *o64, const ss_cols *cols, int64_t *buf,
                                   uint32_t *j) noexcept nogil:
    """py1s spans ``a .. z`` (first place ``span_start``), each shuffled in ``buf`` (one span)
    and its wanted places checked and kept at once; a span nobody wants is only drawn past
    (reader). Returns -1 or the entry of the grouping whose place is outside its span."""
    cdef Py_ssize_t k, e
    for k in range(a, z):
        if r != NULL and want_bounds[k + 1] == want_bounds[k]:
            ss_fisher_yates_skip(r, sizes[k])
        else:
            e = _draw_span_kept(r, bg, begins[k], sizes[k], span_start, want_bounds[k],
                                want_bounds[k + 1], out, want, o32, o64, cols, buf, j)
            if e >= 0:
                return e
        span_start += sizes[k]
    return -1


def _set_jump_mode(int mode):
    """Tests: whether raws nobody reads are jumped over (0: unless reading them is cheaper than
    the last jump, the default), always read (1) or always jumped over (2). Returns the old
    mode."""
    global ss_jump_mode
    cdef int old = ss_jump_mode
    if mode not in (0, 1, 2):
        raise ValueError(f"mode must be 0, 1 or 2, got {mode}")
    ss_jump_mode = mode
    return old


def _jump_reads():
    """Tests: how many skips were read instead of jumped over, in this process."""
    return ss_jump_reads


def _raws_made():
    """Tests: how many raws readers made in their own chunks (no helper), in this process."""
    return ss_raws_made


def _set_pref_delay(int64_t ns):
    """Tests: a delay the raws-ahead helper (``ss_pref``) spins for every 512 raws it makes,
    as on a machine where raws are slow (0: none, the default). Returns the old delay."""
    global ss_pref_delay_ns
    cdef int64_t old = ss_pref_delay_ns
    if ns < 0:
        raise ValueError(f"the delay must be >= 0, got {ns}")
    ss_pref_delay_ns = ns
    return old


def _pref_stats():
    """Tests: ``(raws the raws-ahead helpers made, helpers switched off)`` in this process."""
    return ss_pref_made, ss_pref_offs


def _set_window_mode(int mode):
    """Tests: py1e views' windows of raws made ahead (``ss_win``): 0 as worth it (the default),
    1 never, 2 always with the reader waiting for the helper, 3 as 2 with every window moved
    later, so that the reader starts each node 1,000 raws before its window.
    Returns the old mode."""
    global _window_mode, ss_win_wait
    cdef int old = _window_mode
    if mode not in (0, 1, 2, 3):
        raise ValueError(f"mode must be 0, 1, 2 or 3, got {mode}")
    _window_mode = mode
    ss_win_wait = mode >= 2
    return old


def _window_raws():
    """Tests: how many raws readers took from windows a helper made (``ss_win``), in this
    process (counted as served, so raws a reader then passes over count too)."""
    return ss_win_raws


def _set_py1e_stream(int mode):
    """Tests: which py1e nodes are ordered in scratch bounded by the block size (see
    ``ss_py1e_node_stream``): 0 large ones (the default), 1 none, 2 all. Returns the old mode."""
    global ss_py1e_stream
    cdef int old = ss_py1e_stream
    if mode not in (0, 1, 2):
        raise ValueError(f"mode must be 0, 1 or 2, got {mode}")
    ss_py1e_stream = mode
    return old


# py1e views: a node scout passes the nodes on a second core (see ss_scout): 0 never, 1 when
# worth it, 2 always (tests).
_py1e_node_scout = 1


cdef bint _nscout_worth(const int64_t[:] node_spans, const int64_t[:] want_bounds,
                        Py_ssize_t limit, int mode):
    """Whether a py1e view's nodes are worth scouting: with a second core, at least two wanted
    nodes among the first ``limit`` and at least two others (with one wanted node at the end,
    as a view of nc=8's last node, the caller would only wait for the scout)."""
    if mode != 0 or _py1e_node_scout == 0:
        return False
    if _py1e_node_scout == 2:
        return limit > 0
    cdef Py_ssize_t c, wanted = 0
    for c in range(limit):
        if want_bounds[node_spans[c + 1]] > want_bounds[node_spans[c]]:
            wanted += 1
    return wanted >= 2 and limit - wanted >= 2 and _second_core()


cdef Py_ssize_t _draw_nodes_scouted(ss_raw *r, bitgen_t *bg, ss_scout *ns,
                                    const int64_t[:] begins, const int64_t[:] sizes,
                                    const int64_t[:] node_spans, int64_t low, int64_t high,
                                    int64_t[:] out, const int64_t[:] want,
                                    const int64_t[:] want_bounds, const int32_t *o32,
                                    const int64_t *o64, const ss_cols *cols, int64_t *buf,
                                    uint32_t *j, ss_py1e_space *sp, int *warn) noexcept nogil:
    """:func:`_draw_nodes` of a py1e view (wanted places, a reader) with a node scout running:
    each wanted node is drawn where the scout found it starts; the others are left to the
    scout. The reader ends where the scout's last node ends. Returns -1, -2 (out of memory) or
    the entry of the grouping whose place is outside its span."""
    cdef Py_ssize_t c, k, e, a, z, n, node_start = 0
    for c in range(ns.limit):
        a = node_spans[c]
        z = node_spans[c + 1]
        n = 0
        for k in range(a, z):
            n += sizes[k]
        e = _check_node_places(want, o32, o64, cols, want_bounds, sizes, a, z, node_start)
        if e >= 0:
            return e
        if want_bounds[z] > want_bounds[a]:
            ss_scout_wait(ns, c)
            ss_raw_seek_span(r, &ns.pos[c])
            if _draw_node(r, bg, True, begins, sizes, a, z, n, low, high, buf, j, sp, warn) < 0:
                return -2
            _keep_places(out, want, want_bounds, o32, o64, cols, buf, a, z, node_start)
        node_start += n
    ss_scout_wait(ns, ns.limit)
    ss_raw_seek_span(r, &ns.pos[ns.limit])
    return -1


cdef Py_ssize_t _draw_nodes_raw(object bit, bint spread, const int64_t[:] begins,
                                const int64_t[:] sizes, const int64_t[:] node_spans,
                                int64_t low, int64_t high, int64_t[:] out,
                                const int64_t[:] want, const int64_t[:] want_bounds,
                                const int32_t *o32, const int64_t *o64, const ss_cols *cols,
                                Py_ssize_t last, bint exact, int mode, int64_t *buf, uint32_t *j,
                                ss_py1e_space *sp, int *warn, Scout scout) except -3:
    """:func:`_draw_nodes` from a PCG64 generator's raw outputs (its lock held): a reader over
    a copy of ``bit`` (and a helper thread making raws ahead when worth it); ``bit`` is then
    advanced to where NumPy's own calls would leave it. With a ``scout`` (py1s, wanted places),
    the spans it has passed are jumped to, not read."""
    cdef ss_raw r
    cdef bitgen_t rbg
    cdef Py_ssize_t k, bad = -1, known = 0, limit
    copy = _copy_of(bit)
    cdef bitgen_t *gens[3]
    cdef void *ctxs[3]
    _raw_open(&r, bit, copy)
    try:
        ss_raw_bitgen(&r, &rbg)
        if scout is not None and scout.s.pos != NULL:
            with nogil:
                known = ss_scout_stop(&scout.s)
                bad = _draw_scouted(&r, &rbg, begins, sizes, out, want, want_bounds, o32, o64,
                                    cols, buf, j, scout.s.pos, known)
            if bad >= 0:
                return bad
        limit = node_spans.shape[0] - 1 if exact else last + 1
        if spread and buf != NULL and _nscout_worth(node_spans, want_bounds, limit, mode):
            bad = _draw_nodes_with_scout(bit, &r, &rbg, begins, sizes, node_spans, low, high,
                                         out, want, want_bounds, o32, o64, cols, limit, buf, j,
                                         sp, warn)
            if bad != -3:
                return bad
        helpers = _helper_copies(bit, spread, sizes, node_spans, limit, mode, known)
        if helpers is not None:
            for k in range(3):
                # At the reader's next raw (past any jump it still owes).
                helpers[k].state = copy.state
                if r.pending:
                    helpers[k].advance(r.pending)
                gens[k] = _bitgen(helpers[k])
                ctxs[k] = <void *>helpers[k]
            ss_pref_start(&r, gens, ctxs)  # on failure the reader goes on alone
        elif spread and buf != NULL and mode == 0:
            windows = _passed_windows(&r, bit, sizes, node_spans, want_bounds, limit)
        with nogil:
            bad = _draw_nodes(&r, &rbg, spread, begins, sizes, node_spans, low, high, out, want,
                              want_bounds, o32, o64, cols, last, exact, buf, j, sp, warn, known)
    finally:
        with nogil:
            ss_win_free(&r)
            ss_pref_free(&r)
        ss_raw_close(&r)
        _raw_finish(&r, bit)
    return bad


# Fewer raws than this in a py1e view's windows: a helper costs more than it saves.
_window_min_raws = 500_000
# Raws in a window at most (2 MB, one huge page; a node's is cut in pieces): ss_win keeps
# SW_LIVE at a time. Its buffers are fresh memory on every view, which this VM backs at a cost
# that varies call to call: 8 MB pieces made a 1e7 view's first call ~4 ms slower (medians of
# 24 fresh processes: 57.5 against 53.5 ms) and added 12 MB to its peak. Each window costs
# ~10 us (a generator copy moved to its start): ~2 ms more at 1e8, nc=8 (~205 windows, ~51
# with 8 MB pieces).
_window_piece = 1 << 18
cdef int _window_mode = 0  # tests (_set_window_mode)


cdef object _passed_windows(ss_raw *r, object bit, const int64_t[:] sizes,
                            const int64_t[:] node_spans, const int64_t[:] want_bounds,
                            Py_ssize_t limit):
    """Start a helper making raws ahead for a py1e view (``ss_win``), about where the view will
    read them: for each node it passes after the first, its Fisher-Yates words (its shifts are
    jumped over), and for each node it wants, all of its raws (the first node's after its
    words). A window runs from the expected raws before it, less 8 standard deviations of
    their count, to its expected end plus as much. Returns the copies the helper makes them
    from (the caller keeps them until ``ss_win_free``), or None when not worth it."""
    cdef Py_ssize_t c, k, a, z
    cdef int64_t n, piece, size, at = 0
    cdef bint wanted
    cdef double m, v, fy_mean, fy_var, spread = 0.0, lo, hi, shift, prev_end = 0.0
    if _window_mode == 1 or (_window_mode == 0 and not _second_core()):
        return None
    starts, lens = [], []
    for c in range(limit):
        a, z = node_spans[c], node_spans[c + 1]
        fy_mean = fy_var = 0.0
        n = 0
        for k in range(a, z):
            ss_fy_words_moments(sizes[k], &m, &v)
            fy_mean += m
            fy_var += v
            n += sizes[k]
        # Raws: two words each; then a block size (a word) and the shifts (a raw a sample) per
        # span.
        fy_mean /= 2
        fy_var /= 4
        wanted = want_bounds[z] > want_bounds[a]
        if n and (c > 0 or wanted):
            shift = 8 * sqrt(spread) + 64 + 1000 if _window_mode == 3 else 0.0
            # A node passed: its words; one wanted: all its raws (words, block sizes, shifts),
            # for the first node only those after its words (the reader starts there at once).
            lo = at + shift - 8 * sqrt(spread) - 64 if c > 0 else fy_mean - 8 * sqrt(fy_var) - 64
            lo = max(lo, prev_end)
            hi = (at + shift + fy_mean + (n + (z - a) / 2.0 if wanted else 0.0)
                  + 8 * sqrt(spread + fy_var) + 64)
            piece = <int64_t>lo
            while piece < <int64_t>hi:  # in pieces: the helper keeps only a few at a time
                size = min(<int64_t>hi - piece, <int64_t>_window_piece)
                starts.append(piece)
                lens.append(size)
                piece += size
            prev_end = max(prev_end, float(int(hi)))
        at += <int64_t>(fy_mean + n + (z - a) / 2.0)
        spread += fy_var
    if not starts or (sum(lens) < _window_min_raws and _window_mode == 0):
        return None
    copies = []
    cdef bitgen_t **gens = <bitgen_t **>malloc(len(starts) * sizeof(bitgen_t *))
    if gens == NULL:
        return None
    cdef int64_t[::1] st = np.array(starts, np.int64), ln = np.array(lens, np.int64)
    try:
        state = bit.state
        for k in range(len(starts)):
            copy = _copy_of(bit)
            copy.state = state
            copy.advance(starts[k])
            copies.append(copy)
            gens[k] = _bitgen(copy)
        if ss_win_start(r, len(starts), &st[0], &ln[0], gens) != 0:
            return None
    finally:
        free(gens)
    return copies


cdef Py_ssize_t _draw_nodes_with_scout(object bit, ss_raw *r, bitgen_t *rbg,
                                       const int64_t[:] begins, const int64_t[:] sizes,
                                       const int64_t[:] node_spans, int64_t low, int64_t high,
                                       int64_t[:] out, const int64_t[:] want,
                                       const int64_t[:] want_bounds, const int32_t *o32,
                                       const int64_t *o64, const ss_cols *cols,
                                       Py_ssize_t limit, int64_t *buf, uint32_t *j,
                                       ss_py1e_space *sp, int *warn) except -4:
    """Start a node scout over the first ``limit`` nodes from ``bit``'s state (where the reader
    ``r`` starts) and draw the view with it (:func:`_draw_nodes_scouted`). Returns as that does,
    or -3 when no thread could be started (nothing drawn: the caller draws alone)."""
    cdef ss_scout ns
    cdef Py_ssize_t bad = -3
    memset(&ns, 0, sizeof(ns))
    copy = _copy_of(bit)
    _raw_open(&ns.r, bit, copy)
    try:
        ss_raw_bitgen(&ns.r, &ns.rbg)
        ns.sizes = &sizes[0]
        ns.node_spans = &node_spans[0]
        ns.limit = limit
        ns.low = low
        ns.high = high
        ns.pos = <ss_spanpos *>malloc((limit + 1) * sizeof(ss_spanpos))
        if ns.pos == NULL:
            raise MemoryError()
        if ss_scout_start(&ns) != 0:
            return -3
        with nogil:
            bad = _draw_nodes_scouted(r, rbg, &ns, begins, sizes, node_spans, low, high, out,
                                      want, want_bounds, o32, o64, cols, buf, j, sp, warn)
    finally:
        with nogil:
            ss_scout_stop(&ns)
        free(ns.pos)
        ss_raw_close(&ns.r)
    warn[0] |= ns.warn
    return bad


cdef class Scout:
    """A shuffle's Fisher-Yates words read ahead on a second core, from a copy of a generator,
    recording where each span's (py1s) or canonical node's (py1br) draws start (see
    ``ss_scout``): started before the worker's places are known, so that ``shuffle_nodes(...,
    scout=...)`` (py1s) or ``py1br_places(..., scout=...)`` jumps over what it has passed
    instead of reading it. It reads every raw itself (it never jumps), so it runs while the
    caller holds the GIL. Not started (a no-op) when not worth it: no second core, not a PCG64,
    spans past ``2**32`` samples, or too few samples.

    Args:
        rng (numpy.random.Generator): The generator the shuffle will draw from, in the state it
            will be in then (it is not advanced).
        sizes (NDArray[np.int64]): Size of each span, in the order drawn (py1s); with
            ``stagger``, the samples of each canonical node (py1br).
        stagger (NDArray[np.int64], optional): py1br: each node's stagger, in ``[0, low)``.
            Defaults to ``None`` (py1s).
        low (int): py1br: smallest block size (inclusive), positive. Defaults to ``0``.
        high (int): py1br: largest block size (exclusive), above ``low``. Defaults to ``0``.
        _limit (int): Tests only: scout at most this many spans (then stop). Defaults to all.
        _force (bool): Tests only: start whenever possible. Defaults to ``False``.
    """

    cdef ss_scout s
    cdef object copy, sizes_arr, state, key, br_arrs

    def __cinit__(self):
        memset(&self.s, 0, sizeof(self.s))

    def __init__(self, rng, sizes, *, stagger=None, int64_t low=0, int64_t high=0,
                 Py_ssize_t _limit=-1, bint _force=False):
        bit = _bit_generator(rng)
        arr = np.array(sizes, np.int64).reshape(-1)
        cdef Py_ssize_t n = arr.shape[0], k
        cdef int64_t cap = 2
        if stagger is not None:
            stagger = np.array(stagger, np.int64).reshape(-1)
            if not 0 < low < high <= (1 << 32):
                raise ValueError(f"bad block size range [{low}, {high})")
            if stagger.shape[0] < n or (stagger[:n] < 0).any() or (stagger[:n] >= low).any():
                raise ValueError("stagger must give each node a value in [0, low)")
        if not _force and not _scout_worth(bit, arr):
            return
        global _PCG64
        if _PCG64 is None:
            from numpy.random import PCG64
            _PCG64 = PCG64
        if type(bit) is not _PCG64 or (arr < 0).any():
            return
        if stagger is None and _largest(arr) > 0xFFFFFFFF:
            return
        cdef const int64_t[::1] view = arr
        with bit.lock:
            state = bit.state
        self.copy = _copy_of(bit)
        self.copy.state = state
        self.state = state
        self.sizes_arr = arr
        self.key = None if stagger is None else (stagger[:n].tobytes(), low, high)
        if ss_raw_init(&self.s.r, _bitgen(self.copy), <int>state["has_uint32"],
                       <uint32_t>state["uinteger"]) < 0:
            raise MemoryError()
        cdef const int64_t[::1] bst, bsg
        cdef int64_t[::1] bsz, bln
        if stagger is not None:
            # py1br: each node's blocks are drawn (their sizes from the reader) and read past.
            for k in range(n):
                cap = max(cap, _br_most_blocks(arr[k], low))
            starts = np.zeros(n + 1, np.int64)
            np.cumsum(arr, out=starts[1:])
            self.br_arrs = (starts, stagger, np.empty(cap, np.int64), np.empty(cap, np.int64))
            bst, bsg, bsz, bln = self.br_arrs
            self.s.br_starts = &bst[0]
            self.s.br_stagger = &bsg[0] if n else NULL
            self.s.br_cap = cap
            self.s.br_sizes = &bsz[0]
            self.s.br_lens = &bln[0]
            self.s.low = low
            self.s.high = high
            ss_raw_bitgen(&self.s.r, &self.s.rbg)
        self.s.pos = <ss_spanpos *>malloc((n + 1) * sizeof(ss_spanpos))
        if self.s.pos == NULL:
            raise MemoryError()
        self.s.sizes = &view[0] if n else NULL
        self.s.nspans = n
        self.s.limit = n if _limit < 0 or _limit > n else _limit
        if ss_scout_start(&self.s) != 0:
            free(self.s.pos)  # the caller reads on alone
            self.s.pos = NULL

    def stop(self):
        """Stop scouting (the thread is joined). Returns the number of spans scouted."""
        cdef int64_t done = 0
        if self.s.pos != NULL:
            with nogil:
                done = ss_scout_stop(&self.s)
        return done

    @property
    def running(self):
        """Whether a scout was started (and its positions are there to use)."""
        return self.s.pos != NULL

    @property
    def _joined(self):
        """Tests: whether its thread is stopped and joined (or was never started)."""
        return not self.s.started

    cdef int check(self, object bit, const int64_t[:] sizes, object key=None) except -1:
        # Its positions hold only for the spans (nodes, stagger, block sizes) and the generator
        # state it started from.
        if self.s.pos == NULL:
            return 0
        if (bit.state != self.state or key != self.key
                or not np.array_equal(np.asarray(sizes), self.sizes_arr)):
            raise ValueError("the scout was started for other spans or another generator state")
        return 0

    def __dealloc__(self):
        with nogil:
            ss_scout_stop(&self.s)
        ss_raw_close(&self.s.r)
        free(self.s.pos)
        self.s.pos = NULL


cdef bint _scout_worth(object bit, const int64_t[:] sizes):
    # As for the helper thread: enough raws to read (~0.7 a sample) and a second core.
    cdef Py_ssize_t k
    cdef int64_t samples = 0
    for k in range(sizes.shape[0]):
        samples += sizes[k]
    return samples * 7 // 10 >= _helper_min_raws and _second_core()


cdef inline Py_ssize_t _node_of(int64_t p, const int32_t[::1] table, int shift,
                                const int64_t[:] node_starts, Py_ssize_t num_nodes) noexcept nogil:
    # The last group starting at or before p: from the table (group * 2, + 1 if another group
    # starts inside the entry's places), then forward only there.
    cdef int32_t e = table[p >> shift]
    cdef Py_ssize_t lo = e >> 1
    if e & 1:
        while lo + 1 < num_nodes and node_starts[lo + 1] <= p:
            lo += 1
    return lo


def group_places(const int64_t[:] places, const int64_t[:] node_starts, int64_t[:] out):
    """Group an epoch's places by span (or node), for ``shuffle_nodes(..., places, want_bounds,
    order)``; ``out[k]`` is set to ``-1`` where ``places[k]`` is negative (padding).

    Args:
        places (NDArray[np.int64]): Places of the epoch, or negative for none.
        node_starts (NDArray[np.int64]): ``num_groups + 1`` ascending first places of each
            span (or node; the last: the number of places in the epoch).
        out (NDArray[np.int64]): As long as ``places`` (may be ``places`` itself).

    Returns:
        Tuple[NDArray[np.int64], NDArray[np.int32] | NDArray[np.int64]]: ``want_bounds``
            (``num_groups + 1`` offsets into ``order``) and ``order``: the indices in
            ``places`` of its non-negative places, group by group, in their order within
            ``places`` (int32 while ``places`` is shorter than ``2**31``: half the fresh memory,
            each page of which costs a fault).

    Raises:
        ValueError: If a place is past the epoch, or the arguments do not match.
    """
    cdef Py_ssize_t num_nodes = node_starts.shape[0] - 1, k, lo, valid = 0
    cdef Py_ssize_t n = places.shape[0]
    if num_nodes < 1 or node_starts[0] != 0:
        raise ValueError("node_starts must start at 0 and name at least one node")
    for k in range(num_nodes):
        if node_starts[k + 1] < node_starts[k]:
            raise ValueError("node_starts must ascend")
    if out.shape[0] != n:
        raise ValueError("out must be as long as places")
    cdef int64_t total = node_starts[num_nodes], p, most = -1
    for k in range(n):
        if places[k] > most:
            most = places[k]
    if most >= total:
        raise ValueError(f"place {most} is outside the epoch of {total}")
    # Places switch group every few entries: a binary search per place mispredicts. A table of
    # up to 2**16 entries gives the group at the start of each 2**shift places instead.
    cdef int shift = 0
    while total > 0 and (total - 1) >> shift >= (1 << 16):
        shift += 1
    if num_nodes >= (1 << 30):
        raise ValueError(f"too many groups ({num_nodes})")
    table_arr = np.empty(((total - 1) >> shift) + 1 if total > 0 else 1, np.int32)
    cdef int32_t[::1] table = table_arr
    lo = 0
    for k in range(table.shape[0]):
        while lo + 1 < num_nodes and node_starts[lo + 1] <= (<int64_t>k << shift):
            lo += 1
        table[k] = <int32_t>(2 * lo)
        if lo + 1 < num_nodes and node_starts[lo + 1] < (<int64_t>(k + 1) << shift):
            table[k] += 1
    bounds_arr = np.zeros(num_nodes + 1, np.int64)
    cdef int64_t[::1] bounds = bounds_arr
    # Places come in runs of one group (a lone canonical node's share is one run): a run's count
    # and cursor stay in a register, not a store and reload of the group's entry per place.
    cdef Py_ssize_t cur = -1, run = 0
    with nogil:
        for k in range(n):
            p = places[k]
            if p < 0:
                out[k] = -1
                continue
            lo = _node_of(p, table, shift, node_starts, num_nodes)
            if lo != cur:
                if cur >= 0:
                    bounds[cur + 1] += run
                cur = lo
                run = 0
            run += 1
        if cur >= 0:
            bounds[cur + 1] += run
        for k in range(num_nodes):
            bounds[k + 1] += bounds[k]
    valid = bounds[num_nodes]
    order_arr = np.empty(valid, np.int32 if n < (1 << 31) else np.int64)
    cdef int32_t[::1] order32 = order_arr if order_arr.dtype == np.int32 else None
    cdef int64_t[::1] order64 = order_arr if order_arr.dtype == np.int64 else None
    cdef int32_t *o32 = &order32[0] if order32 is not None and valid else NULL
    cdef int64_t *o64 = &order64[0] if order64 is not None and valid else NULL
    cursor_arr = bounds_arr[:num_nodes].copy()
    cdef int64_t[::1] cursor = cursor_arr
    cdef int64_t d = 0
    with nogil:
        cur = -1
        for k in range(n):
            p = places[k]
            if p >= 0:
                lo = _node_of(p, table, shift, node_starts, num_nodes)
                if lo != cur:
                    if cur >= 0:
                        cursor[cur] = d
                    cur = lo
                    d = cursor[cur]
                if o32 != NULL:
                    o32[d] = <int32_t>k
                else:
                    o64[d] = k
                d += 1
    return bounds_arr, order_arr



def ascending_bounds(const int64_t[:] places, const int64_t[:] node_starts):
    """``group_places`` without an order, when none is needed: if the places are ascending
    (non-decreasing) up to some ``m`` and negative from there on (padding at the end, as one
    worker's share of a lone canonical node is), the grouping is the identity over
    ``places[:m]`` and only its bounds are found (no pass per place but the check, no fresh
    order array).

    Args:
        places (NDArray[np.int64]): Places of the epoch, or negative for none.
        node_starts (NDArray[np.int64]): ``num_groups + 1`` ascending first places of each
            span (or node; the last: the number of places in the epoch).

    Returns:
        Tuple[int, NDArray[np.int64]] | None: ``m`` and ``want_bounds`` (``num_groups + 1``
            offsets into ``places[:m]``), or ``None`` if the places are not of that form.

    Raises:
        ValueError: If a place is past the epoch, or the groups do not ascend from 0.
    """
    cdef Py_ssize_t num_nodes = node_starts.shape[0] - 1, k, lo, hi, mid
    cdef Py_ssize_t n = places.shape[0], m = 0
    cdef bint ok = True
    if num_nodes < 1 or node_starts[0] != 0:
        raise ValueError("node_starts must start at 0 and name at least one node")
    for k in range(num_nodes):
        if node_starts[k + 1] < node_starts[k]:
            raise ValueError("node_starts must ascend")
    cdef int64_t total = node_starts[num_nodes], prev = 0
    with nogil:
        while m < n and places[m] >= prev:
            prev = places[m]
            m += 1
        for k in range(m, n):
            if places[k] >= 0:
                ok = False
                break
    if not ok:
        return None
    if m and places[m - 1] >= total:
        raise ValueError(f"place {places[m - 1]} is outside the epoch of {total}")
    bounds_arr = np.empty(num_nodes + 1, np.int64)
    cdef int64_t[::1] bounds = bounds_arr
    with nogil:
        # The first entry at or past each group's start (binary search: few groups, many places).
        lo = 0
        for k in range(num_nodes + 1):
            hi = m
            while lo < hi:
                mid = lo + (hi - lo) // 2
                if places[mid] < node_starts[k]:
                    lo = mid + 1
                else:
                    hi = mid
            bounds[k] = lo
        bounds[0] = 0
        bounds[num_nodes] = m
    return m, bounds_arr


def strided_group(const int64_t[:] places, const int64_t[:] node_starts, int64_t[:] out,
                  Py_ssize_t max_width=64, bint columns=False):
    """``group_places`` when the places are a few interleaved ascending runs: if they are
    non-negative up to some ``m`` and negative from there on (padding at the end), and every
    column ``places[j:m:w]`` is non-decreasing for the ``w`` at the first descent (a worker's
    share over several canonical nodes of the ``orig`` partition: one column per node), the
    grouping is found column by column (each group's rows by binary search, the order filled
    row by row) instead of place by place. Equal to ``group_places``' result, or ``None``
    (nothing written) when the places are not of that form or the grouping would cost more.

    Args:
        places (NDArray[np.int64]): Places of the epoch, or negative for none.
        node_starts (NDArray[np.int64]): ``num_groups + 1`` ascending first places of each
            span (or node; the last: the number of places in the epoch).
        out (NDArray[np.int64]): As long as ``places`` (may be ``places`` itself); set to
            ``-1`` at the padding.
        max_width (int): Most columns to consider. Defaults to 64.
        columns (bool): When the grouping is the columns one after another (each group within
            one column, the columns' groups in column order: the ``orig`` partition's shape),
            return the number of columns ``w`` instead of an order: ``shuffle_nodes`` then
            walks ``places[:m]`` column by column (no order array: its fresh pages cost more
            than the grouping). Defaults to ``False``.

    Returns:
        Tuple[NDArray[np.int64], NDArray[np.int32] | NDArray[np.int64] | int] | None: As
            ``group_places`` (or with ``columns``, possibly ``w`` for the order), or ``None``.

    Raises:
        ValueError: If the groups do not ascend from 0, or out is not as long as places.
    """
    cdef Py_ssize_t num_nodes = node_starts.shape[0] - 1, k, g, j, r, lo, hi, mid
    cdef Py_ssize_t n = places.shape[0], m = 0, w = 1, rows, rmin, rmax, used
    cdef bint ok = True
    if num_nodes < 1 or node_starts[0] != 0:
        raise ValueError("node_starts must start at 0 and name at least one node")
    for k in range(num_nodes):
        if node_starts[k + 1] < node_starts[k]:
            raise ValueError("node_starts must ascend")
    if out.shape[0] != n:
        raise ValueError("out must be as long as places")
    cdef int64_t total = node_starts[num_nodes], cost = 0
    cdef bint colmajor = True
    cdef Py_ssize_t lastcol = 0
    with nogil:
        # One pass: the first descent gives w; then each column ascends up to the padding.
        if n == 0 or places[0] < 0:
            ok = False
        else:
            while w < n and places[w] >= places[w - 1]:
                w += 1
            if w >= n or places[w] < 0 or w > max_width:
                ok = False  # ascending (ascending_bounds' case), or too many columns
        if ok:
            m = w
            while m < n and places[m] >= 0:
                if places[m] < places[m - w]:
                    ok = False
                    break
                m += 1
        if ok:
            for k in range(m, n):
                if places[k] >= 0:
                    ok = False
                    break
        if ok:
            # Each column's last place is its largest.
            for k in range(m - w, m):
                if places[k] >= total:
                    ok = False  # group_places raises
                    break
    if not ok:
        return None
    # first[g * w + j]: the first row of column j at or past group g's start.
    cdef Py_ssize_t *first = <Py_ssize_t *>malloc((num_nodes + 1) * w * sizeof(Py_ssize_t))
    if first == NULL:
        raise MemoryError()
    bounds_arr = np.empty(num_nodes + 1, np.int64)
    cdef int64_t[::1] bounds = bounds_arr
    order_arr = None
    cdef int32_t[::1] order32
    cdef int64_t[::1] order64
    cdef int32_t *o32 = NULL
    cdef int64_t *o64 = NULL
    cdef Py_ssize_t d = 0
    try:
        with nogil:
            for j in range(w):
                rows = (m - j + w - 1) // w
                lo = 0
                for g in range(num_nodes + 1):
                    hi = rows
                    while lo < hi:
                        mid = lo + (hi - lo) // 2
                        if places[mid * w + j] < node_starts[g]:
                            lo = mid + 1
                        else:
                            hi = mid
                    first[g * w + j] = lo
                first[j] = 0
                first[num_nodes * w + j] = rows
            # Bounds, and the rows each group's merge walks (one column: its own rows).
            bounds[0] = 0
            for g in range(num_nodes):
                used = 0
                rmin = m
                rmax = 0
                bounds[g + 1] = bounds[g]
                for j in range(w):
                    lo = first[g * w + j]
                    hi = first[(g + 1) * w + j]
                    if hi > lo:
                        used += 1
                        bounds[g + 1] += hi - lo
                        if lo < rmin:
                            rmin = lo
                        if hi > rmax:
                            rmax = hi
                if used > 1:
                    cost += (rmax - rmin) * w
                    colmajor = False
                elif used == 1:
                    cost += rmax - rmin
                    for j in range(w):
                        if first[(g + 1) * w + j] > first[g * w + j]:
                            if j < lastcol:
                                colmajor = False
                            lastcol = j
            if cost > 2 * m + 64:
                ok = False
        if not ok:
            return None
        if columns and colmajor:
            with nogil:
                for k in range(m, n):
                    out[k] = -1
            return bounds_arr, w
        order_arr = np.empty(m, np.int32 if n < (1 << 31) else np.int64)
        if m:
            if order_arr.dtype == np.int32:
                order32 = order_arr
                o32 = &order32[0]
            else:
                order64 = order_arr
                o64 = &order64[0]
        with nogil:
            for g in range(num_nodes):
                used = 0
                rmin = m
                rmax = 0
                for j in range(w):
                    lo = first[g * w + j]
                    hi = first[(g + 1) * w + j]
                    if hi > lo:
                        used += 1
                        mid = j
                        if lo < rmin:
                            rmin = lo
                        if hi > rmax:
                            rmax = hi
                if used == 1:
                    # One column: its rows in order.
                    k = rmin * w + mid
                    if o32 != NULL:
                        for r in range(rmin, rmax):
                            o32[d] = <int32_t>k
                            d += 1
                            k += w
                    else:
                        for r in range(rmin, rmax):
                            o64[d] = k
                            d += 1
                            k += w
                elif used > 1:
                    # Several columns: their entries merged by index (row, then column).
                    for r in range(rmin, rmax):
                        for j in range(w):
                            if first[g * w + j] <= r < first[(g + 1) * w + j]:
                                if o32 != NULL:
                                    o32[d] = <int32_t>(r * w + j)
                                else:
                                    o64[d] = r * w + j
                                d += 1
            for k in range(m, n):
                out[k] = -1
    finally:
        free(first)
    return bounds_arr, order_arr


# ---- Worker views of py1br and py2s, and naive's permutation (new kernels) ----
cdef extern from *:
    """
    /* A draw source: the reader r (PCG64 raws; bg is then a bitgen_t over it) or bg itself. */
    #if defined(__GNUC__) || defined(__clang__)
    #define SS_PREFETCH_W(p) __builtin_prefetch((p), 1, 0)
    #define SS_PREFETCH_R(p) __builtin_prefetch((p), 0, 3)
    #else
    #define SS_PREFETCH_W(p) ((void)0)
    #define SS_PREFETCH_R(p) ((void)0)
    #endif
    #define SS_VD 32  /* swaps ahead whose far end is prefetched (blocks outgrow the L2) */
    /* Generator.shuffle of x[0..n) (n <= 2**32 with a reader): all draws first (j[1..n)),
       then the swaps, each one's far end prefetched SS_VD swaps ahead. */
    static inline void ss_v_fy(ss_raw *r, bitgen_t *bg, int64_t *x, uint32_t *j, int64_t n) {
        int64_t i;
        if (n <= 1) return;
        if (r == NULL) { ss_fisher_yates_i64(bg, x, j, n); return; }
        ss_fy_words(r, j, n);
        for (i = n - 1; i > SS_VD; i--) {
            SS_PREFETCH_W(&x[j[i - SS_VD]]);
            int64_t k = j[i], t = x[i]; x[i] = x[k]; x[k] = t;
        }
        for (; i > 0; i--) {
            int64_t k = j[i], t = x[i]; x[i] = x[k]; x[k] = t;
        }
    }
    /* Fisher-Yates's draws for n samples, made and dropped (only counted from a reader). */
    static void ss_fy_drop(ss_raw *r, bitgen_t *bg, int64_t n) {
        if (r != NULL) { ss_fisher_yates_skip(r, n); return; }
        for (int64_t i = n - 1; i > 0; i--) random_interval(bg, (uint64_t)i);
    }
    static inline int64_t ss_v_integer(bitgen_t *bg, int64_t low, int64_t high) {
        uint64_t v;
        random_bounded_uint64_fill(bg, (uint64_t)low, (uint64_t)(high - 1 - low), 1, 0, &v);
        return (int64_t)v;
    }
    /* Entry e of a grouping: an index into want and out. */
    static inline int64_t ss_v_at(const int32_t *o32, const int64_t *o64, int64_t e) {
        return o32 != NULL ? (int64_t)o32[e] : o64 != NULL ? o64[e] : e;  /* none: in turn */
    }
    /* The last of m ascending (ties allowed) starts at or before p: starts[0] <= p. */
    static inline int64_t ss_v_seg(const int64_t *starts, int64_t m, int64_t p) {
        /* Branch-free (a conditional move a step): places come in no predictable order. The
           answer stays in base[0 .. n). */
        const int64_t *base = starts;
        while (m > 1) {
            int64_t half = m / 2;
            base = base[half] <= p ? base + half : base;
            m -= half;
        }
        return base - starts;
    }
    /* Reorder entries [ea, ez) of a grouping (o32 or o64, writable; places want[at(e)], each in
       [lo, hi)) in place by segment (the last of the m segment starts at or before the place),
       keeping no per-entry scratch (fresh memory costs a page fault per 4 KB): segment k's
       entries are then ea + cnt[k] .. ea + cnt[k+1]. nx holds m. Returns -1, or an entry whose
       place is outside [lo, hi). */
    static int64_t ss_v_bucket(const int64_t *want, int32_t *o32, int64_t *o64, int64_t ea,
                               int64_t ez, int64_t lo, int64_t hi, const int64_t *starts,
                               int64_t m, int64_t *cnt, int64_t *nx) {
        int64_t e, k;
        /* Places already ascending (a worker's share of a node usually is): the segments are
           runs of entries, found by binary search; nothing moves. */
        if (ez > ea && m >= 1) {
            int64_t prev = want[ss_v_at(o32, o64, ea)];
            for (e = ea + 1; e < ez; e++) {
                int64_t p = want[ss_v_at(o32, o64, e)];
                if (p < prev) break;
                prev = p;
            }
            if (e == ez && want[ss_v_at(o32, o64, ea)] >= lo && prev < hi) {
                cnt[0] = 0;
                for (k = 1; k < m; k++) {
                    int64_t a = ea, z = ez;  /* the first entry whose place is >= starts[k] */
                    while (a < z) {
                        int64_t mid = a + (z - a) / 2;
                        if (want[ss_v_at(o32, o64, mid)] < starts[k]) a = mid + 1; else z = mid;
                    }
                    cnt[k] = a - ea;
                }
                cnt[m] = ez - ea;
                return -1;
            }
        }
        memset(cnt, 0, (size_t)(m + 1) * sizeof(int64_t));
        for (e = ea; e < ez; e++) {
            int64_t p = want[ss_v_at(o32, o64, e)];
            if (p < lo || p >= hi) return e;
            cnt[ss_v_seg(starts, m, p) + 1]++;
        }
        for (k = 0; k < m; k++) cnt[k + 1] += cnt[k];
        if (m <= 1) return -1;
        if (o32 == NULL && o64 == NULL) return -4;  /* entries in turn must ascend (a bug) */
        memcpy(nx, cnt, (size_t)m * sizeof(int64_t));
        /* American flag sort: each swap puts one entry in its segment for good. */
        for (k = 0; k < m; k++) {
            while (nx[k] < cnt[k + 1]) {
                int64_t a = ea + nx[k];
                int64_t b = ss_v_seg(starts, m, want[ss_v_at(o32, o64, a)]);
                if (b == k) { nx[k]++; continue; }
                int64_t d = ea + nx[b]++;
                if (o32 != NULL) { int32_t t = o32[a]; o32[a] = o32[d]; o32[d] = t; }
                else { int64_t t = o64[a]; o64[a] = o64[d]; o64[d] = t; }
            }
        }
        return -1;
    }
    /* The ids at places [p0, p1) of spans a .. z laid out in order (span k: begins[k] ..,
       its first place starts[k]; starts[z] ends them). */
    #define SS_V_LAYOUT_AS(NAME, T)                                                          \
    static void NAME(const int64_t *begins, const int64_t *starts, int64_t a, int64_t z,      \
                     int64_t p0, int64_t p1, T *dst) {                                        \
        int64_t k = a + ss_v_seg(starts + a, z - a, p0), p = p0;                              \
        while (p < p1 && k < z) {                                                             \
            int64_t stop = starts[k + 1] < p1 ? starts[k + 1] : p1, b = begins[k] - starts[k]; \
            for (; p < stop; p++) *dst++ = (T)(b + p);                                        \
            k++;                                                                              \
        }                                                                                     \
    }
    SS_V_LAYOUT_AS(ss_v_layout, int64_t)
    SS_V_LAYOUT_AS(ss_v_layout32, int32_t)  /* ids below 2**31 */

    /* ---- py1br: per node, block sizes drawn, then each (staggered) block shuffled ----
       Blocks ascend by start (ties: several clipped at the node's start) and by end, each
       starting at or before the last's end; only the first few overlap (those clipped at the
       start), so a place's value is the last block covering it (the layout's past the last
       block's end: ends advance by lengths, overlaps included, so a node's tail may be left),
       and a block's samples before its shuffle are those of the last drawn block overlapping
       it (which covers every earlier overlap) and the layout. With places wanted, a block
       with none of them, and that no later needed block overlaps, is only drawn past; nodes
       after last are not drawn (unless exact). Returns -1, -2 (out of memory), -3 (the draw
       queue ran short: a bug), -4 (entries without an order out of turn: a bug) or an entry
       whose place is outside the epoch. */
    typedef struct {
        int64_t *a, *b;          /* two blocks' scratch (high entries each; int32_t if small) */
        int small;               /* every id below 2**31: blocks of int32_t (half the fresh
                                    pages, which cost more than the work on them here, and
                                    the swaps' far ends nearer) */
        int64_t *blocks;         /* 2 * cap: start, stop */
        int64_t cap;
        int64_t *bstarts;        /* cap + 1: the blocks' starts, then the last's end */
        int64_t *cnt;            /* cap + 2 */
        int64_t *nx;             /* cap + 1 */
        char *need;              /* cap */
    } ss_br_space;
    /* A consumer's place in a draw queue (pos: next entry; made: entries known made). short_:
       it asked for entries past the producer's end (a bug, never silent: the caller raises). */
    typedef struct { ss_jq *q; int64_t pos, made; int short_; } ss_jr;
    static inline int ss_jr_more(ss_jr *c) {
        if (c->pos < c->made) return 1;
        c->made = ss_jq_need(c->q, c->pos, c->pos + 2 * SQ_STEP);
        if (c->pos < c->made) return 1;
        c->short_ = 1;
        return 0;
    }
    static inline uint32_t ss_jr_next(ss_jr *c) {
        return ss_jr_more(c) ? ss_jq_at(c->q, c->pos++) : 0;
    }
    /* Fisher-Yates of x[0..n) of T (Generator.shuffle's swaps, i = n-1 .. 1; NAME_to: down
       to lo + 1 only) with the draws from the queue, each swap's far end prefetched
       (PREFETCH) PD swaps ahead. */
    #define SS_SWAP(T, x, a, k) do { T v_ = (x)[a]; (x)[a] = (x)[k]; (x)[k] = v_; } while (0)
    #define SS_JR_FY(NAME, T, PD, PREFETCH) SS_JR_FY_AS(NAME, T, PD, PREFETCH, SS_SWAP)
    #define SS_JR_FY_AS(NAME, T, PD, PREFETCH, SWAP)                                          \
    static void NAME##_to(ss_jr *c, T *x, int64_t n, int64_t lo) {                           \
        /* (the ring in locals: stores to x may alias the queue's fields) */                 \
        const uint32_t *ring = c->q->ring;                                                   \
        const int64_t mask = c->q->mask;                                                     \
        int64_t i = n - 1;                                                                   \
        while (i > lo && ss_jr_more(c)) {                                                    \
            int64_t cnt = c->made - c->pos, t, p = c->pos;                                   \
            if (cnt > i - lo) cnt = i - lo;                                                  \
            for (t = 0; t < cnt; t++, p++) {                                                 \
                if (t + PD < cnt) PREFETCH(&x[ring[(p + PD) & mask]]);                       \
                int64_t a = i - t, k = ring[p & mask];                                       \
                SWAP(T, x, a, k);                                                            \
            }                                                                                \
            c->pos += cnt; i -= cnt;                                                         \
        }                                                                                    \
    }                                                                                        \
    static inline void NAME(ss_jr *c, T *x, int64_t n) { NAME##_to(c, x, n, 0); }
    SS_JR_FY(ss_jr_fy, int64_t, SS_VD, SS_PREFETCH_W)
    SS_JR_FY(ss_jr_fy32, int32_t, SS_VD, SS_PREFETCH_W)
    /* Pass over m entries. */
    static void ss_jr_drop(ss_jr *c, int64_t m) {
        while (m > 0 && ss_jr_more(c)) {
            int64_t cnt = c->made - c->pos < m ? c->made - c->pos : m;
            c->pos += cnt; m -= cnt;
        }
    }
    /* A block of a node: from the blocks' end so far and its drawn size. */
    static inline void ss_br_block(int64_t end, int64_t size, int64_t st, int64_t start,
                                   int64_t stop, int64_t *b0, int64_t *b1) {
        *b0 = end - st > start ? end - st : start;
        *b1 = end + size - st < stop ? end + size - st : stop;
    }
    /* A node's blocks: sizes drawn until its samples [start, stop) are covered (at most cap;
       stagger st): sizes[k] as drawn, lens[k] the k-th staggered block's length. Returns how
       many. */
    static inline int64_t ss_br_blocks(bitgen_t *bg, int64_t start, int64_t stop, int64_t st,
                                       int64_t low, int64_t high, int64_t cap, int64_t *sizes,
                                       int64_t *lens) {
        int64_t end = start, b0, b1, nb = 0;
        while (end < stop && nb < cap) {
            int64_t size = ss_v_integer(bg, low, high);
            ss_br_block(end, size, st, start, stop, &b0, &b1);
            sizes[nb] = size; lens[nb] = b1 - b0;
            nb++;
            end += b1 - b0;
        }
        return nb;
    }
    /* A node's draws read and dropped: its block sizes, then each block's Fisher-Yates. */
    static void ss_br_pass(ss_raw *r, bitgen_t *bg, int64_t start, int64_t stop, int64_t st,
                           int64_t low, int64_t high, int64_t cap, int64_t *sizes,
                           int64_t *lens) {
        int64_t nb = ss_br_blocks(bg, start, stop, st, low, high, cap, sizes, lens);
        for (int64_t k = 0; k < nb; k++) ss_fy_drop(r, bg, lens[k]);
    }
    /* py1br's draws, in order, as a draw queue's producer: per node (up to last unless exact)
       its block sizes, then, if any of its places is wanted (want_bounds NULL: all), the
       entries [nb, size 0 .. nb-1] and each block's Fisher-Yates draws; a node with no wanted
       place has its blocks drawn past (counted) and no entries. Nodes a scout has passed
       (the first known; spos[c]: where node c's draws start, c <= known) are not read but
       jumped to when wanted (and, exact, to the end once the scout passed them all). */
    typedef struct {
        ss_raw *r;
        bitgen_t *bg;
        const int64_t *starts, *node_spans, *stagger, *want_bounds;
        int64_t nodes, last, low, high, cap;
        int exact;
        int64_t *sizes, *lens;   /* cap each: the node's drawn sizes, its blocks' lengths */
        const ss_spanpos *spos;  /* NULL: no scout */
        int64_t known;
        int64_t c, nb, hk, k, i;
        int phase;               /* 0: next node, 1: its sizes out, 2: its blocks' draws */
    } ss_br_src;
    static int64_t ss_br_produce(void *ctx, uint32_t *dst, int64_t room) {
        ss_br_src *s = (ss_br_src *)ctx;
        int64_t t = 0, k;
        while (t < room) {
            if (s->phase == 0) {
                int64_t c = s->c;
                int over = c >= s->nodes || (c > s->last && !s->exact);
                int wanted = !over && (s->want_bounds == NULL
                                       || s->want_bounds[c] < s->want_bounds[c + 1]);
                if (!over && !wanted && c < s->known) { s->c++; continue; }  /* scouted */
                if (s->spos != NULL && c <= s->known && (!over || s->exact))
                    ss_raw_seek_span(s->r, &s->spos[c]);
                if (over) return t ? t : -1;
                int64_t start = s->starts[s->node_spans[c]];
                int64_t stop = s->starts[s->node_spans[c + 1]];
                int64_t nb = ss_br_blocks(s->bg, start, stop, s->stagger[c], s->low, s->high,
                                          s->cap, s->sizes, s->lens);
                s->nb = nb;
                if (!wanted) {
                    for (k = 0; k < nb; k++) ss_fy_drop(s->r, s->bg, s->lens[k]);
                    s->c++;
                    return t;  /* (a sign of life between long calls) */
                }
                s->hk = -1;
                s->phase = 1;
            }
            if (s->phase == 1) {
                for (; t < room && s->hk < s->nb; s->hk++)
                    dst[t++] = (uint32_t)(s->hk < 0 ? s->nb : s->sizes[s->hk]);
                if (s->hk == s->nb) { s->phase = 2; s->k = 0; s->i = s->nb ? s->lens[0] - 1 : 0; }
                continue;
            }
            while (s->k < s->nb && s->i <= 0)
                if (++s->k < s->nb) s->i = s->lens[s->k] - 1;
            if (s->k >= s->nb) { s->phase = 0; s->c++; continue; }
            t += ss_fy_produce(s->r, s->bg, &s->i, dst + t, room - t);
        }
        return t;
    }
    /* A node's needed blocks in order, in scratch of T (LAYOUT lays ids out, FY shuffles), each
       starting from the last block's shuffled samples where they overlap; the wanted places'
       values read off each block once it is shuffled. */
    #define SS_BR_NEEDED(T, LAYOUT, FY) do {                                                 \
        T *cur = (T *)s->a, *nxt = (T *)s->b;                                                 \
        int64_t cs = 0, ce = 0;                                                               \
        for (k = 0; k < nb; k++) {                                                            \
            int64_t b0 = bl[2 * k], b1 = bl[2 * k + 1], len = b1 - b0;                        \
            if (!s->need[k]) { ss_jr_drop(&jr, len - 1); continue; }                          \
            int64_t from = b0;                                                                \
            if (ce > b0 && cs <= b0) {                                                        \
                int64_t keep = (ce < b1 ? ce : b1) - b0;                                      \
                memcpy(nxt, cur + (b0 - cs), (size_t)keep * sizeof(T));                       \
                from = b0 + keep;                                                             \
            }                                                                                 \
            if (from < b1) LAYOUT(begins, starts, a, z, from, b1, nxt + (from - b0));         \
            FY(&jr, nxt, len);                                                                \
            for (e = ea + s->cnt[k]; e < ea + s->cnt[k + 1]; e++) {                           \
                int64_t i = ss_v_at(o32, o64, e);                                             \
                out[i] = nxt[want[i] - b0];                                                   \
            }                                                                                 \
            T *t = cur; cur = nxt; nxt = t;                                                   \
            cs = b0; ce = b1;                                                                 \
        }                                                                                     \
    } while (0)
    static int64_t ss_py1br_run(ss_jq *q, const int64_t *begins,
                                const int64_t *starts, const int64_t *node_spans, int64_t nodes,
                                const int64_t *stagger, int64_t *out,
                                const int64_t *want, const int64_t *want_bounds,
                                int32_t *o32, int64_t *o64, int64_t last, int exact,
                                ss_br_space *s) {
        int64_t c, k, e, nb;
        ss_jr jr = {q, 0, 0, 0};
        for (c = 0; c < nodes; c++) {
            if (c > last && !exact) break;
            if (want != NULL && want_bounds[c] == want_bounds[c + 1]) continue;  /* drawn past */
            int64_t a = node_spans[c], z = node_spans[c + 1];
            int64_t start = starts[a], stop = starts[z], st = stagger[c], end = start;
            int64_t *bl = s->blocks;
            nb = (int64_t)ss_jr_next(&jr);
            for (k = 0; k < nb; k++) {
                ss_br_block(end, (int64_t)ss_jr_next(&jr), st, start, stop, &bl[2 * k],
                            &bl[2 * k + 1]);
                end += bl[2 * k + 1] - bl[2 * k];
            }
            if (want == NULL) {
                ss_v_layout(begins, starts, a, z, start, stop, out + start);
                for (k = 0; k < nb; k++)
                    ss_jr_fy(&jr, out + bl[2 * k], bl[2 * k + 1] - bl[2 * k]);
                continue;
            }
            int64_t ea = want_bounds[c], ez = want_bounds[c + 1];
            /* Segment nb: the places past the last block's end, which no block reaches (the
               ends advance by the blocks' lengths, overlaps included: the node's tail may keep
               its layout). */
            for (k = 0; k < nb; k++) s->bstarts[k] = bl[2 * k];
            s->bstarts[nb] = nb ? bl[2 * nb - 1] : start;
            e = ss_v_bucket(want, o32, o64, ea, ez, start, stop, s->bstarts, nb + 1, s->cnt,
                            s->nx);
            if (e != -1) return e;
            for (e = ea + s->cnt[nb]; e < ea + s->cnt[nb + 1]; e++) {
                int64_t i = ss_v_at(o32, o64, e);
                ss_v_layout(begins, starts, a, z, want[i], want[i] + 1, &out[i]);
            }
            int64_t minstart = INT64_MAX;
            for (k = nb - 1; k >= 0; k--) {
                s->need[k] = s->cnt[k + 1] > s->cnt[k] || minstart < bl[2 * k + 1];
                if (s->need[k] && bl[2 * k] < minstart) minstart = bl[2 * k];
            }
            if (s->small) SS_BR_NEEDED(int32_t, ss_v_layout32, ss_jr_fy32);
            else SS_BR_NEEDED(int64_t, ss_v_layout, ss_jr_fy);
        }
        ss_jq_finish(q, jr.pos);
        return jr.short_ ? -3 : -1;
    }

    /* ---- py2s: a fixed layout (shards in run order, each shuffled by the run's generator),
       cut into pieces at node boundaries; per node the epoch's generator orders its pieces,
       then shuffles each (the whole epoch; with places wanted see ss_py2s_view) ----
       fr/fbg draw the layout, er/ebg the epoch, node by node: node c is places [L0, L1) of the
       layout as of the epoch; the layout's values there are kept in fx (places [fxa, fxb), at
       most a node and a shard). Both generators end where NumPy's calls leave them. */
    typedef struct {
        int64_t *fx;             /* layout values: largest node + largest shard */
        int64_t *buf;            /* a piece (largest piece), or scratch for generic skips */
        uint32_t *j;             /* draws: largest shard, piece or piece count */
        int64_t *perm;           /* a node's piece order (largest piece count) */
        int64_t *pstarts;        /* its pieces' first places, in that order (+ 1) */
        int64_t *cnt, *nx;
    } ss_2s_space;
    static void ss_py2s_run(ss_raw *fr, bitgen_t *fbg, ss_raw *er, bitgen_t *ebg,
                            const int64_t *sbegins, const int64_t *ssizes, int64_t nshards,
                            const int64_t *pstart, const int64_t *psize,
                            const int64_t *node_pieces, int64_t nodes, int64_t *out,
                            ss_2s_space *s) {
        int64_t c, k, q, fs = 0, fpos = 0, fxa = 0, fxb = 0;
        for (c = 0; c < nodes; c++) {
            int64_t pa = node_pieces[c], pz = node_pieces[c + 1], m = pz - pa;
            if (pa == pz) continue;  /* no samples, no draws (one piece would draw none) */
            int64_t L0 = pstart[pa], L1 = pstart[pz - 1] + psize[pz - 1];
            /* The layout's values for [L0, L1): drop those before L0, draw shards up to L1. */
            if (L0 > fxa) {
                if (fxb > L0)
                    memmove(s->fx, s->fx + (L0 - fxa), (size_t)(fxb - L0) * sizeof(int64_t));
                fxa = L0;
                if (fxb < L0) fxb = L0;
            }
            while (fs < nshards && fpos < L1) {
                int64_t n = ssizes[fs], b = sbegins[fs], *dst = s->fx + (fpos - fxa);
                for (k = 0; k < n; k++) dst[k] = b + k;
                ss_v_fy(fr, fbg, dst, s->j, n);
                fpos += n; fxb = fpos; fs++;
            }
            /* The epoch: piece order, then each piece. */
            for (q = 0; q < m; q++) s->perm[q] = q;
            if (m > 1) ss_v_fy(er, ebg, s->perm, s->j, m);
            int64_t off = L0;
            for (q = 0; q < m; q++) {
                int64_t p = pa + s->perm[q], n = psize[p], *dst = out + off;
                if (n)  /* (an empty piece's node may have no layout buffer: fx NULL) */
                    memcpy(dst, s->fx + (pstart[p] - fxa), (size_t)n * sizeof(int64_t));
                ss_v_fy(er, ebg, dst, s->j, n);
                off += n;
            }
        }
        /* The layout's shards after the last node (empty ones: no draws), as NumPy makes. */
        for (; fs < nshards; fs++) ss_fy_drop(fr, fbg, ssizes[fs]);
    }

    /* ---- py2s with places wanted: the run's draws and the epoch's on two threads ----
       The layout (run generator) and the epoch's order (epoch generator) are independent
       streams. A second thread draws the layout's shards, keeping the values only in the
       ranges of the nodes with wanted places (fx, node c's at fxoff[c]); meanwhile the
       caller's thread draws the epoch's piece orders and pieces as permutations of positions,
       and writes each wanted place's layout position; the values are looked up once both are
       done. */
    typedef struct {
        ss_raw *r;
        bitgen_t *bg;
        const int64_t *sbegins, *ssizes;
        int64_t nshards;         /* shards to draw */
        const int64_t *L0, *L1;  /* each node's places (= its layout range) */
        const int64_t *fxoff;    /* node c's values at fx[fxoff[c] ..], or -1: not wanted */
        int64_t nodes;
        int64_t *fx, *scratch;   /* scratch: the largest shard */
        int32_t *fx32;           /* fx as int32 instead (every value below 2**31): half the
                                    fresh pages, which cost more than the copy here */
        uint32_t *j;
        int64_t look_split;      /* entries looked up on two threads from this many */
    } ss_2s_fixed;
    static void ss_py2s_fixed_run(ss_2s_fixed *f) {
        int64_t k, d = 0, ls = 0, i;
        for (k = 0; k < f->nshards; k++) {
            int64_t n = f->ssizes[k], le = ls + n, e;
            while (d + 1 < f->nodes && f->L1[d] <= ls) d++;
            int need = 0;
            for (e = d; e < f->nodes && (f->L0[e] < le || e == d); e++)
                if (f->fxoff[e] >= 0 && f->L1[e] > f->L0[e] && f->L0[e] < le && f->L1[e] > ls) {
                    need = 1;
                    break;
                }
            if (!need) {
                ss_fy_drop(f->r, f->bg, n);
            } else {
                int64_t b = f->sbegins[k];
                for (i = 0; i < n; i++) f->scratch[i] = b + i;
                ss_v_fy(f->r, f->bg, f->scratch, f->j, n);
                for (e = d; e < f->nodes && (f->L0[e] < le || e == d); e++) {
                    if (f->fxoff[e] < 0) continue;
                    int64_t a = f->L0[e] > ls ? f->L0[e] : ls, z = f->L1[e] < le ? f->L1[e] : le;
                    if (z <= a) continue;
                    if (f->fx32) {
                        int32_t *dst = f->fx32 + f->fxoff[e] + (a - f->L0[e]);
                        const int64_t *src = f->scratch + (a - ls);
                        for (i = 0; i < z - a; i++) dst[i] = (int32_t)src[i];
                    } else {
                        memcpy(f->fx + f->fxoff[e] + (a - f->L0[e]), f->scratch + (a - ls),
                               (size_t)(z - a) * sizeof(int64_t));
                    }
                }
            }
            ls = le;
        }
    }
    static void *ss_py2s_fixed_thread(void *arg) {
        ss_py2s_fixed_run((ss_2s_fixed *)arg);
        return NULL;
    }
    /* Entries ea .. ez of a node (out[i] holding each one's position in the node's layout)
       looked up in its layout values VALS, of T. A node's layout is MBs, and the entries'
       outputs are anywhere in the view's (tens of MB at 1e8): each output's line is fetched
       2 SS_VD entries ahead, the value's SS_VD ahead (its address read from the output, by then
       in cache), so the misses overlap. */
    #define SS_2S_LOOK_UP(T, VALS, EA, EZ) do {                                              \
        const T *vals = (VALS);                                                               \
        int64_t e_, ez_ = (EZ);                                                               \
        for (e_ = (EA); e_ < ez_; e_++) {                                                     \
            if (e_ + 2 * SS_VD < ez_) SS_PREFETCH_R(&out[ss_v_at(o32, o64, e_ + 2 * SS_VD)]); \
            if (e_ + SS_VD < ez_) SS_PREFETCH_R(&vals[out[ss_v_at(o32, o64, e_ + SS_VD)]]);   \
            int64_t i = ss_v_at(o32, o64, e_);                                                \
            out[i] = vals[out[i]];                                                            \
        }                                                                                     \
    } while (0)
    /* The look-ups of entries [e0, e1) (of the nodes up to last with layout values). */
    typedef struct {
        const ss_2s_fixed *f;
        const int64_t *want_bounds;
        int64_t *out;
        const int32_t *o32;
        const int64_t *o64;
        int64_t last, e0, e1;
    } ss_2s_look;
    static void ss_py2s_look(const ss_2s_look *L) {
        const ss_2s_fixed *f = L->f;
        const int32_t *o32 = L->o32;
        const int64_t *o64 = L->o64;
        int64_t *out = L->out, c;
        for (c = 0; c <= L->last && c < f->nodes; c++) {
            if (f->fxoff[c] < 0) continue;
            int64_t ea = L->want_bounds[c], ez = L->want_bounds[c + 1];
            if (ea < L->e0) ea = L->e0;
            if (ez > L->e1) ez = L->e1;
            if (ea >= ez) continue;
            if (f->fx32) SS_2S_LOOK_UP(int32_t, f->fx32 + f->fxoff[c], ea, ez);
            else SS_2S_LOOK_UP(int64_t, f->fx + f->fxoff[c], ea, ez);
        }
    }
    static void *ss_py2s_look_thread(void *arg) {
        ss_py2s_look((const ss_2s_look *)arg);
        return NULL;
    }
    /* The epoch's side (see ss_py2s_run for the draws) and the lookup. threads: 1 to draw the
       layout on a second thread. Returns -1, -4 (entries without an order out of turn: a
       bug) or a bad entry. */
    static int64_t ss_py2s_view(ss_2s_fixed *f, int threads, ss_raw *er, bitgen_t *ebg,
                                const int64_t *pstart, const int64_t *psize,
                                const int64_t *node_pieces, int64_t nodes, int64_t *out,
                                const int64_t *want, const int64_t *want_bounds,
                                int32_t *o32, int64_t *o64, int64_t last, int exact,
                                ss_2s_space *s) {
        int64_t c, q, e, bad = -1;
        pthread_t th;
        int started = threads && ss_spawn(&th, ss_py2s_fixed_thread, f) == 0;
        if (!started) ss_py2s_fixed_run(f);
        for (c = 0; c < nodes; c++) {
            if (c > last && !exact) break;
            int64_t pa = node_pieces[c], pz = node_pieces[c + 1], m = pz - pa;
            if (m == 0) continue;
            for (q = 0; q < m; q++) s->perm[q] = q;
            if (m > 1) ss_v_fy(er, ebg, s->perm, s->j, m);
            int64_t off = f->L0[c];
            for (q = 0; q < m; q++) { s->pstarts[q] = off; off += psize[pa + s->perm[q]]; }
            s->pstarts[m] = off;
            int64_t ea = want_bounds[c], ez = want_bounds[c + 1];
            if (ea == ez) {
                for (q = 0; q < m; q++) ss_fy_drop(er, ebg, psize[pa + s->perm[q]]);
                continue;
            }
            e = ss_v_bucket(want, o32, o64, ea, ez, f->L0[c], f->L1[c], s->pstarts, m, s->cnt,
                            s->nx);
            if (e != -1) { bad = e; break; }
            for (q = 0; q < m; q++) {
                int64_t p = pa + s->perm[q], n = psize[p], i;
                if (s->cnt[q + 1] == s->cnt[q]) { ss_fy_drop(er, ebg, n); continue; }
                for (i = 0; i < n; i++) s->buf[i] = i;
                ss_v_fy(er, ebg, s->buf, s->j, n);
                int64_t base = s->pstarts[q], src = pstart[p] - f->L0[c];
                int64_t e1 = ea + s->cnt[q + 1];
                for (e = ea + s->cnt[q]; e < e1; e++) {
                    /* The entries' places and outputs are anywhere in the view's arrays (tens
                       of MB at 1e8): fetched SS_VD entries ahead, so the misses overlap. */
                    if (e + SS_VD < e1) {
                        int64_t ia = ss_v_at(o32, o64, e + SS_VD);
                        SS_PREFETCH_R(&want[ia]);
                        SS_PREFETCH_W(&out[ia]);
                    }
                    i = ss_v_at(o32, o64, e);
                    out[i] = src + s->buf[want[i] - base];  /* within the node's layout */
                }
            }
        }
        if (started) pthread_join(th, NULL);
        if (bad != -1) return bad;
        /* The look-ups, half of them on a second thread where the layout was drawn on one. */
        int64_t e0 = want_bounds[0], e1 = want_bounds[last + 1 < nodes ? last + 1 : nodes];
        ss_2s_look mine = {f, want_bounds, out, o32, o64, last, e0, e1}, theirs = mine;
        int split = started && e1 - e0 >= f->look_split;
        if (split) {
            mine.e1 = theirs.e0 = e0 + (e1 - e0) / 2;
            split = ss_spawn(&th, ss_py2s_look_thread, &theirs) == 0;
            if (!split) mine.e1 = e1;
        }
        ss_py2s_look(&mine);
        if (split) pthread_join(th, NULL);
        return -1;
    }
    """
    ctypedef struct ss_br_space:
        int64_t *a
        int64_t *b
        int small
        int64_t *blocks
        int64_t cap
        int64_t *bstarts
        int64_t *cnt
        int64_t *nx
        char *need
    ctypedef struct ss_br_src:
        ss_raw *r
        bitgen_t *bg
        const int64_t *starts
        const int64_t *node_spans
        const int64_t *stagger
        const int64_t *want_bounds
        int64_t nodes, last, low, high, cap
        int exact
        int64_t *sizes
        int64_t *lens
        const ss_spanpos *spos
        int64_t known
    int64_t ss_br_produce(void *ctx, uint32_t *dst, int64_t room) noexcept nogil
    int64_t ss_py1br_run(ss_jq *q, const int64_t *begins, const int64_t *starts,
                         const int64_t *node_spans, int64_t nodes, const int64_t *stagger,
                         int64_t *out, const int64_t *want, const int64_t *want_bounds,
                         int32_t *o32, int64_t *o64, int64_t last, int exact,
                         ss_br_space *s) nogil
    ctypedef struct ss_2s_space:
        int64_t *fx
        int64_t *buf
        uint32_t *j
        int64_t *perm
        int64_t *pstarts
        int64_t *cnt
        int64_t *nx
    ctypedef struct ss_2s_fixed:
        ss_raw *r
        bitgen_t *bg
        const int64_t *sbegins
        const int64_t *ssizes
        int64_t nshards
        const int64_t *L0
        const int64_t *L1
        const int64_t *fxoff
        int64_t nodes
        int64_t *fx
        int64_t *scratch
        int32_t *fx32
        uint32_t *j
        int64_t look_split
    int64_t ss_py2s_view(ss_2s_fixed *f, int threads, ss_raw *er, bitgen_t *ebg,
                         const int64_t *pstart, const int64_t *psize, const int64_t *node_pieces,
                         int64_t nodes, int64_t *out, const int64_t *want,
                         const int64_t *want_bounds, int32_t *o32, int64_t *o64, int64_t last,
                         int exact, ss_2s_space *s) nogil
    void ss_py2s_run(ss_raw *fr, bitgen_t *fbg, ss_raw *er, bitgen_t *ebg,
                     const int64_t *sbegins, const int64_t *ssizes, int64_t nshards,
                     const int64_t *pstart, const int64_t *psize, const int64_t *node_pieces,
                     int64_t nodes, int64_t *out, ss_2s_space *s) nogil


cdef bint _ascending_groups(const int64_t[::1] want, object want_bounds, Py_ssize_t groups):
    """Whether the places of each group (``want_bounds``, checked by the caller) ascend."""
    cdef const int64_t[:] wb = np.ascontiguousarray(want_bounds, np.int64)
    cdef Py_ssize_t g, e, a, z
    if wb.shape[0] != groups + 1 or wb[0] != 0 or wb[groups] != want.shape[0]:
        return False  # (the caller raises)
    with nogil:
        for g in range(groups):
            a, z = wb[g], wb[g + 1]
            if a < 0 or z > want.shape[0]:
                return False
            for e in range(a + 1, z):
                if want[e] < want[e - 1]:
                    return False
    return True


cdef tuple _grouping(object want, object want_bounds, object order, Py_ssize_t groups,
                     Py_ssize_t out_len, Py_ssize_t total):
    """Check a grouping of wanted places (``group_places``' output over ``groups`` groups), or,
    without ``want``, that ``out`` holds the whole epoch. Returns ``want``, ``want_bounds`` and
    the order (contiguous and writable: the kernels reorder it within each group; ``None``: the
    entries in turn, their places ascending within each group) as arrays, and the most entries
    of a group; Nones without ``want``."""
    cdef const int64_t[:] wb
    cdef Py_ssize_t k, most = 0
    if want is None:
        if out_len != total:
            raise ValueError(f"the epoch holds {total} samples but the output holds {out_len}")
        return None, None, None, 0
    w = np.ascontiguousarray(want, np.int64)
    if want_bounds is None or len(want_bounds) != groups + 1:
        raise ValueError(f"want_bounds must have {groups + 1} entries")
    wb_arr = np.ascontiguousarray(want_bounds, np.int64)
    wb = wb_arr
    if order is None:
        if out_len != len(w):
            raise ValueError("out must hold one value per wanted place")
        # Places ascending within every group (a worker's share usually does) are taken in
        # turn, with no order array (an epoch share of fresh pages); others get one to sort.
        ord_arr = None if _ascending_groups(w, want_bounds, groups) else \
            np.arange(len(w), dtype=np.int32 if len(w) < (1 << 31) else np.int64)
    else:
        ord_arr = np.asarray(order)
        if ord_arr.ndim != 1 or ord_arr.dtype not in (np.int32, np.int64):
            raise ValueError("order must be a 1-d int32 or int64 array")
        if not ord_arr.flags.c_contiguous or not ord_arr.flags.writeable:
            ord_arr = ord_arr.copy()
        if len(w) != out_len:
            raise ValueError("with order, want and out must be as long")
        if len(ord_arr) and (ord_arr.min() < 0 or ord_arr.max() >= out_len):
            raise ValueError("an order entry is outside out")
    if wb[0] != 0 or wb[groups] != (len(w) if ord_arr is None else len(ord_arr)):
        raise ValueError("want_bounds must run from 0 to the number of grouped places")
    for k in range(groups):
        if wb[k + 1] < wb[k]:
            raise ValueError("want_bounds must ascend")
        most = wb[k + 1] - wb[k] if wb[k + 1] - wb[k] > most else most
    return w, wb_arr, ord_arr, most


cdef Py_ssize_t _last_wanted(object want, const int64_t[:] want_bounds, Py_ssize_t groups):
    cdef Py_ssize_t c
    if want is None:
        return groups - 1
    for c in range(groups - 1, -1, -1):
        if want_bounds[c + 1] > want_bounds[c]:
            return c
    return -1


cdef class _Reader:
    """A raw reader (``ss_raw``) over a copy of a PCG64 generator, or nothing (``r`` NULL: draws
    go to the generator's own ``bitgen_t``). ``close`` advances the generator to where NumPy's
    calls would have left it."""

    cdef ss_raw r
    cdef bitgen_t rbg
    cdef bitgen_t *bg
    cdef bint raw, opened
    cdef object bit, copy, helpers

    def __cinit__(self):
        memset(&self.r, 0, sizeof(self.r))

    cdef int open(self, object rng, int mode, Py_ssize_t largest) except -1:
        # Modes 3 and 4 (tests: helper threads forced; 4 also stalls a draw queue's helper) take
        # the raw path, or the generic one for other bit generators.
        global _PCG64
        self.bit = _bit_generator(rng)
        if mode >= 3:
            mode = 3
            _raw_mode(self.bit, 0, 0)  # imports PCG64
            if type(self.bit) is not _PCG64:
                mode = 1
        self.raw = _raw_mode(self.bit, mode, largest)
        self.bg = _bitgen(self.bit)
        if self.raw:
            self.copy = _copy_of(self.bit)
            _raw_open(&self.r, self.bit, self.copy)
            self.opened = True
            ss_raw_bitgen(&self.r, &self.rbg)
            self.bg = &self.rbg
        return 0

    cdef ss_raw *reader(self) noexcept nogil:
        return &self.r if self.raw else NULL

    cdef int help(self, int64_t raws, int mode) except -1:
        """With about ``raws`` raws to read (and a second core), a helper thread makes them
        ahead (``ss_pref``, as for py1s); modes 3 and 4 (tests) always."""
        cdef bitgen_t *gens[3]
        cdef void *ctxs[3]
        cdef int k
        if not self.raw or not self.opened or self.helpers is not None:
            return 0
        if mode < 3 and (mode != 0 or raws < _helper_min_raws or not _second_core()):
            return 0
        copies = [_copy_of(self.bit) for _ in range(3)]
        for k in range(3):
            copies[k].state = self.copy.state
            if self.r.pending:
                copies[k].advance(self.r.pending)
            gens[k] = _bitgen(copies[k])
            ctxs[k] = <void *>copies[k]
        self.helpers = copies
        ss_pref_start(&self.r, gens, ctxs)  # on failure the reader goes on alone
        return 0

    cdef int close(self, bint finish=True) except -1:
        """Close; with ``finish``, leave the generator where NumPy's calls would have (without:
        another reader read the same raws and more, and leaves it)."""
        if self.opened:
            self.opened = False
            with nogil:
                ss_pref_free(&self.r)
            ss_raw_close(&self.r)
            if finish:
                _raw_finish(&self.r, self.bit)
        return 0

    def __dealloc__(self):
        if self.opened:
            with nogil:
                ss_pref_free(&self.r)
            ss_raw_close(&self.r)


cdef int64_t _no_place = -1


cdef inline int64_t *_ptr64(const int64_t[::1] a) noexcept nogil:
    # An empty list of wanted places is not no list (the whole epoch): a pointer to nothing.
    if a is None:
        return NULL
    return <int64_t *>&a[0] if a.shape[0] else &_no_place


def py1br_places(rng, begins, sizes, node_spans, stagger, int64_t low, int64_t high,
                 int64_t[::1] out, want=None, want_bounds=None, order=None, bint exact=True,
                 int _mode=0, Scout scout=None):
    """py1br's shuffle of an epoch after the span reorder and the stagger draw, whole or at
    some places only.

    Per node (spans ``node_spans[c] .. node_spans[c+1]``, laid out in order): block sizes
    ``rng.integers(low, high)`` until the node is covered, then ``rng.shuffle`` of each staggered
    block in order, as ``get_shuffle_py1br``. Without ``want``, ``out`` receives the epoch. With
    ``want`` (places grouped by node, see ``group_places``: ``want_bounds`` has ``num_nodes + 1``
    entries), ``out`` receives the values at those places (``order``: as ``shuffle_nodes``); a
    block with none of them is only drawn past (with NumPy's PCG64: its words counted, not
    kept), a node with none has its blocks drawn past, and with ``exact=False`` nodes after the
    last wanted place are not drawn (``rng`` is then left elsewhere). Memory: two blocks.

    Args:
        rng (numpy.random.Generator): Generator after the stagger draw (it advances).
        begins (NDArray[np.int64]): First sample id of each span, in final order.
        sizes (NDArray[np.int64]): Size of each span.
        node_spans (NDArray[np.int64]): ``num_nodes + 1`` ascending span indices.
        stagger (NDArray[np.int64]): Per node, in ``[0, low)``.
        low (int): Smallest block size (inclusive), positive.
        high (int): Largest block size (exclusive), above ``low``.
        out (NDArray[np.int64]): The epoch, or the values at the wanted places.
        want, want_bounds, order: The wanted places, grouped by node (optional).
        exact (bool): Leave ``rng`` where NumPy's calls would. Defaults to ``True``.
        _mode (int): Tests only: 0 picks, 1 the generic path, 2 the raw path, 3 the raw path
            with a helper thread making the draws (a draw queue), 4 as 3 with a helper that
            stalls and is taken over (3 and 4: the generic path for other bit generators).
        scout (Scout, optional): A py1br scout started from ``rng`` (its node sizes, stagger
            and block sizes these): it is stopped, and the nodes it has passed are not read
            (jumped to where wanted). Defaults to ``None``.

    Raises:
        ValueError: If the arguments are inconsistent, a wanted place lies outside its node,
            or ``scout`` was started for other nodes or another generator state.
    """
    cdef const int64_t[::1] b = np.ascontiguousarray(begins, np.int64)
    cdef const int64_t[::1] sz = np.ascontiguousarray(sizes, np.int64)
    cdef const int64_t[::1] ns = np.ascontiguousarray(node_spans, np.int64)
    cdef const int64_t[::1] sg = np.ascontiguousarray(stagger, np.int64)
    if b.shape[0] != sz.shape[0]:
        raise ValueError("begins and sizes differ in length")
    cdef Py_ssize_t nodes = ns.shape[0] - 1, nspans = sz.shape[0], c, k
    if nodes < 0 or ns[0] != 0 or ns[nodes] != nspans:
        raise ValueError("node_spans must run from 0 to the number of spans")
    if not 0 < low < high:
        raise ValueError(f"bad block size range [{low}, {high})")
    if high > (1 << 32):
        raise ValueError(f"block sizes past 2**32 samples are not supported, got [{low}, {high})")
    if sg.shape[0] < nodes:
        raise ValueError("node_bounds/stagger do not match")
    for c in range(nodes):
        if ns[c + 1] < ns[c]:
            raise ValueError("node_spans must ascend")
        if not 0 <= sg[c] < low:
            raise ValueError("stagger must lie in [0, low)")
    total = _sum_spans(sz)
    starts_arr = np.zeros(nspans + 1, np.int64)
    np.cumsum(sz, out=starts_arr[1:])
    cdef const int64_t[::1] starts = starts_arr
    cdef int64_t largest = 0, n, cap = 2
    for c in range(nodes):
        n = starts[ns[c + 1]] - starts[ns[c]]
        largest = n if n > largest else largest
        cap = max(cap, _br_most_blocks(n, low))
    w_arr, wb_arr, ord_arr, most = _grouping(want, want_bounds, order, nodes, out.shape[0],
                                             total)
    cdef const int64_t[::1] w = w_arr
    cdef const int64_t[::1] wb = wb_arr
    cdef int32_t *o32 = NULL
    cdef int64_t *o64 = NULL
    _order_ptrs(ord_arr, &o32, &o64)
    cdef Py_ssize_t last = _last_wanted(want, wb, nodes)
    cdef int64_t room = high if high < largest else largest
    cdef int64_t known = 0, first = 0
    if scout is not None and scout.running:
        node_sizes = np.diff(starts_arr[np.asarray(ns)])
        scout.check(_bit_generator(rng), node_sizes,
                    (np.asarray(sg)[:nodes].tobytes(), low, high))
    cdef ss_br_space s
    memset(&s, 0, sizeof(s))
    cdef ss_br_src src
    memset(&src, 0, sizeof(src))
    cdef ss_jq q
    memset(&q, 0, sizeof(q))
    cdef int64_t drawn = starts[ns[last + 1]] if last >= 0 else 0  # draws: a sample each
    cdef int64_t c_end
    cdef _Reader rd = _Reader()
    cdef int64_t bad = -1
    bit = _bit_generator(rng)
    # A view's blocks hold sample ids: int32 unless there are 2**31 samples or more.
    s.small = want is not None and total < _PY1BR_BLOCK32_BELOW
    cdef size_t width = sizeof(int32_t) if s.small else sizeof(int64_t)
    try:
        s.a = <int64_t *>ss_alloc((room + 1) * width)
        s.b = <int64_t *>ss_alloc((room + 1) * width)
        s.blocks = <int64_t *>malloc(2 * cap * sizeof(int64_t))
        s.bstarts = <int64_t *>malloc((cap + 1) * sizeof(int64_t))
        s.cnt = <int64_t *>malloc((cap + 2) * sizeof(int64_t))
        s.need = <char *>malloc(cap)
        s.nx = <int64_t *>malloc((cap + 1) * sizeof(int64_t))
        s.cap = cap
        src.sizes = <int64_t *>malloc(cap * sizeof(int64_t))
        src.lens = <int64_t *>malloc(cap * sizeof(int64_t))
        if (s.a == NULL or s.b == NULL or s.blocks == NULL or s.bstarts == NULL
                or s.cnt == NULL or s.need == NULL or s.nx == NULL or src.sizes == NULL
                or src.lens == NULL):
            raise MemoryError()
        src.starts = &starts[0]
        src.node_spans = &ns[0]
        src.stagger = &sg[0] if nodes else NULL
        src.want_bounds = _ptr64(wb) if want is not None else NULL
        src.nodes = nodes
        src.last = last
        src.low = low
        src.high = high
        src.cap = cap
        src.exact = exact
        with bit.lock:
            rd.open(rng, _mode, room)
            try:
                src.r = rd.reader()
                src.bg = rd.bg
                if scout is not None and scout.running:
                    with nogil:
                        known = ss_scout_stop(&scout.s)
                    if src.r != NULL and known:
                        # The nodes it passed are read only where wanted. The reader starts
                        # at the first node it reads, so that the helpers' copies start there.
                        src.spos = scout.s.pos
                        src.known = known
                        c_end = last + 1
                        first = known if known < c_end else c_end
                        drawn = 0
                        for c in range(c_end):
                            if c >= known or want is None or wb[c] < wb[c + 1]:
                                if first > c:
                                    first = c
                                drawn += starts[ns[c + 1]] - starts[ns[c]]
                        with nogil:
                            ss_raw_seek_span(src.r, &src.spos[first])
                # Raws made ahead on a second core too (~0.7 a draw): while the queue's helper
                # counts the words of nodes nobody wants, the caller sleeps and leaves a core free.
                rd.help(drawn * 7 // 10, _mode)
                _open_queue(&q, ss_br_produce, &src, drawn, True, _mode, _PY1BR_RING)
                with nogil:
                    bad = ss_py1br_run(&q, &b[0] if nspans else NULL, &starts[0], &ns[0], nodes,
                                       &sg[0] if nodes else NULL,
                                       &out[0] if out.shape[0] else NULL, _ptr64(w),
                                       _ptr64(wb), o32, o64, last, exact, &s)
            finally:
                with nogil:
                    ss_jq_close(&q)
                _note_queue(&q)
                rd.close()
    finally:
        free(s.a); free(s.b); free(s.blocks); free(s.bstarts); free(s.cnt); free(s.need)
        free(s.nx); free(src.sizes); free(src.lens)
    if bad == -3:
        raise RuntimeError("py1br's draw queue ran short of the draws its shuffle reads (a bug)")
    if bad == -4:
        raise RuntimeError("py1br's wanted places, without an order, do not ascend (a bug)")
    if bad >= 0:
        raise ValueError(f"wanted place {w[_at(o32, o64, bad)]} (entry {bad}) is outside its node")


# py2s views look their entries up on two threads from this many (with the layout drawn on a
# second thread; a thread costs ~0.1 ms); tests lower it.
_py2s_look_split = 200_000


def py2s_places(fixed_rng, epoch_rng, shard_begins, shard_sizes, piece_starts, piece_sizes,
                node_pieces, int64_t[::1] out, want=None, want_bounds=None, order=None,
                bint exact=True, int _mode=0):
    """py2s's shuffle of an epoch after the run's shard reorder, whole or at some places only.

    The layout is the shards in run order (``shard_begins``/``shard_sizes``), each shuffled by
    ``fixed_rng`` in that order; it is cut into pieces (``piece_starts``/``piece_sizes``: offsets
    into it, consecutive, each inside one shard), node ``c`` holding pieces ``node_pieces[c] ..
    node_pieces[c+1]``. Per node ``epoch_rng`` shuffles the order of its pieces (as
    ``rng.shuffle(np.arange(m))`` when ``m > 1``), then each piece in that order, as
    ``get_shuffle_py2s``. Without ``want`` ``out`` receives the epoch; with ``want`` (grouped by
    node) the values at those places: shards overlapping no node with wanted places and pieces
    without them are only drawn past, and with ``exact=False`` nothing after the last node
    wanted is drawn (both generators are then left elsewhere). Memory: a node and a shard.

    Args:
        fixed_rng (numpy.random.Generator): The run's generator after the shard reorder.
        epoch_rng (numpy.random.Generator): The epoch's generator.
        shard_begins, shard_sizes (NDArray[np.int64]): The shards, in run order.
        piece_starts, piece_sizes (NDArray[np.int64]): The pieces, in layout order.
        node_pieces (NDArray[np.int64]): ``num_nodes + 1`` ascending piece indices.
        out (NDArray[np.int64]): The epoch, or the values at the wanted places.
        want, want_bounds, order: The wanted places, grouped by node (optional).
        exact (bool): Leave both generators where NumPy's calls would. Defaults to ``True``.
        _mode (int): Tests only: 0 picks, 1 the generic path, 2 the raw path, 3 the layout drawn
            on a second thread (raw path; generic for other bit generators).
    """
    cdef const int64_t[::1] sb = np.ascontiguousarray(shard_begins, np.int64)
    cdef const int64_t[::1] ss = np.ascontiguousarray(shard_sizes, np.int64)
    cdef const int64_t[::1] ps = np.ascontiguousarray(piece_starts, np.int64)
    cdef const int64_t[::1] pz = np.ascontiguousarray(piece_sizes, np.int64)
    cdef const int64_t[::1] npc = np.ascontiguousarray(node_pieces, np.int64)
    if sb.shape[0] != ss.shape[0] or ps.shape[0] != pz.shape[0]:
        raise ValueError("begins and sizes differ in length")
    cdef Py_ssize_t nodes = npc.shape[0] - 1, npieces = pz.shape[0], nshards = ss.shape[0]
    cdef Py_ssize_t c, k, q
    if nodes < 0 or npc[0] != 0 or npc[nodes] != npieces:
        raise ValueError("node_pieces must run from 0 to the number of pieces")
    total = _sum_spans(ss)
    if _sum_spans(pz) != total:
        raise ValueError("the pieces do not cover the shards")
    # Pieces are consecutive and each inside one shard.
    cdef int64_t pos = 0, shard_end = 0, largest_shard = 0, largest = 0, n, most_pieces = 0
    cdef int64_t most_piece = 0
    k = 0
    for q in range(npieces):
        if ps[q] != pos:
            raise ValueError(f"piece {q} does not start where the last ended")
        if pz[q]:
            while k < nshards and shard_end <= pos:
                shard_end += ss[k]
                k += 1
            if pos + pz[q] > shard_end:
                raise ValueError(f"piece {q} crosses a shard's end")
        pos += pz[q]
        most_piece = pz[q] if pz[q] > most_piece else most_piece
    for k in range(nshards):
        largest_shard = ss[k] if ss[k] > largest_shard else largest_shard
    for c in range(nodes):
        if npc[c + 1] < npc[c]:
            raise ValueError("node_pieces must ascend")
        n = 0
        for q in range(npc[c], npc[c + 1]):
            n += pz[q]
        largest = n if n > largest else largest
        most_pieces = npc[c + 1] - npc[c] if npc[c + 1] - npc[c] > most_pieces else most_pieces
    w_arr, wb_arr, ord_arr, most = _grouping(want, want_bounds, order, nodes, out.shape[0],
                                             total)
    cdef const int64_t[::1] w = w_arr
    cdef const int64_t[::1] wb = wb_arr
    cdef int32_t *o32 = NULL
    cdef int64_t *o64 = NULL
    _order_ptrs(ord_arr, &o32, &o64)
    cdef Py_ssize_t last = _last_wanted(want, wb, nodes)
    cdef int64_t draws = largest_shard if largest_shard > most_piece else most_piece
    draws = draws if draws > most_pieces else most_pieces
    cdef ss_2s_space s
    memset(&s, 0, sizeof(s))
    cdef _Reader fr = _Reader()
    cdef _Reader er = _Reader()
    cdef int64_t bad = -1
    fbit = _bit_generator(fixed_rng)
    ebit = _bit_generator(epoch_rng)
    if fbit is ebit:
        raise ValueError("fixed_rng and epoch_rng must be different generators")
    cdef bint pick = want is not None
    # With places: node ranges, where the wanted nodes' layout values go, shards to draw.
    cdef ss_2s_fixed f
    memset(&f, 0, sizeof(f))
    cum = np.zeros(npieces + 1, np.int64)
    np.cumsum(pz, out=cum[1:])
    node_starts = cum[np.asarray(npc)]
    cdef const int64_t[::1] L0 = node_starts[:nodes].copy()
    cdef const int64_t[::1] L1 = node_starts[1:].copy()
    fxoff_arr = np.full(nodes, -1, np.int64)
    cdef int64_t[::1] fxoff = fxoff_arr
    cdef int64_t fx_len = largest + largest_shard + 1, drawn = 0, nfixed = nshards
    cdef bint threads = False
    if pick:
        fx_len = 0
        for c in range(nodes):
            if wb[c + 1] > wb[c]:
                fxoff[c] = fx_len
                fx_len += L1[c] - L0[c]
        if not exact:
            # The shards starting before the last wanted node's end.
            nfixed = 0
            if last >= 0:
                while nfixed < nshards and drawn < L1[last]:
                    drawn += ss[nfixed]
                    nfixed += 1
        else:
            drawn = total
        threads = _mode == 3 or (_mode == 0 and drawn >= 200_000 and _second_core())
    # A view's layout values are sample ids: int32 unless there are 2**31 samples or more.
    cdef bint fx_small = pick and total < _PY2S_FX32_BELOW
    try:
        s.fx = <int64_t *>ss_alloc((fx_len + 1) * (sizeof(int32_t) if fx_small
                                                   else sizeof(int64_t)))
        s.buf = <int64_t *>ss_alloc((draws + 1) * sizeof(int64_t))
        s.perm = <int64_t *>malloc((most_pieces + 1) * sizeof(int64_t))
        s.pstarts = <int64_t *>malloc((most_pieces + 1) * sizeof(int64_t))
        s.cnt = <int64_t *>malloc((most_pieces + 1) * sizeof(int64_t))
        s.nx = <int64_t *>malloc((most_pieces + 1) * sizeof(int64_t))
        if (s.fx == NULL or s.buf == NULL or s.perm == NULL or s.pstarts == NULL
                or s.cnt == NULL or s.nx == NULL):
            raise MemoryError()
        s.j = _draw_space(draws)
        if pick:
            f.scratch = <int64_t *>ss_alloc((largest_shard + 1) * sizeof(int64_t))
            if f.scratch == NULL:
                raise MemoryError()
            f.j = _draw_space(largest_shard)
        with fbit.lock, ebit.lock:
            fr.open(fixed_rng, _mode, largest_shard)
            er.open(epoch_rng, _mode, most_piece if most_piece > most_pieces else most_pieces)
            try:
                if not pick:
                    # One helper (one spare core at most) for the epoch's draws (~0.7 raws a
                    # sample).
                    er.help(total * 7 // 10, _mode)
                    with nogil:
                        ss_py2s_run(fr.reader(), fr.bg, er.reader(), er.bg,
                                    &sb[0] if nshards else NULL, &ss[0] if nshards else NULL,
                                    nshards, &ps[0] if npieces else NULL,
                                    &pz[0] if npieces else NULL, &npc[0], nodes,
                                    &out[0] if out.shape[0] else NULL, &s)
                else:
                    f.r = fr.reader()
                    f.bg = fr.bg
                    f.sbegins = &sb[0] if nshards else NULL
                    f.ssizes = &ss[0] if nshards else NULL
                    f.nshards = nfixed
                    f.L0 = &L0[0] if nodes else NULL
                    f.L1 = &L1[0] if nodes else NULL
                    f.fxoff = &fxoff[0] if nodes else NULL
                    f.nodes = nodes
                    f.look_split = _py2s_look_split
                    if fx_small:
                        f.fx32 = <int32_t *>s.fx
                    else:
                        f.fx = s.fx
                    with nogil:
                        bad = ss_py2s_view(&f, threads, er.reader(), er.bg,
                                           &ps[0] if npieces else NULL,
                                           &pz[0] if npieces else NULL, &npc[0], nodes,
                                           &out[0] if out.shape[0] else NULL, _ptr64(w),
                                           _ptr64(wb), o32, o64, last, exact, &s)
            finally:
                fr.close()
                er.close()
    finally:
        free(s.fx); free(s.buf); free(s.perm); free(s.pstarts); free(s.cnt); free(s.nx)
        free(s.j); free(f.scratch); free(f.j)
    if bad == -4:
        raise RuntimeError("py2s's wanted places, without an order, do not ascend (a bug)")
    if bad >= 0:
        raise ValueError(f"wanted place {w[_at(o32, o64, bad)]} (entry {bad}) is outside its node")


cdef extern from *:
    """
    /* ---- naive: Generator.permutation(n) = arange(n) then Fisher-Yates, i = n-1 .. 1 ----
       The draws come through a draw queue (ss_jq): 32-bit words from the reader while i fits
       in 32 bits, masked and rejected as random_interval does (random_interval itself on bg
       without a reader), made by a helper thread on a second core while the caller swaps
       (after laying out arange(n) for the whole permutation; a looked-up one starts from
       zeros, below). The swaps prefetch the positions SS_PD draws ahead: over an
       epoch-sized array nearly every swap misses the caches, and the misses of independent
       swaps then overlap. Past 2**32 samples the first draws are random_interval's, made
       before the queue starts. */
    #define SS_PD 128
    /* The draws for i down to lo + 1 (lo 0: all of them). */
    typedef struct { ss_raw *r; bitgen_t *bg; int64_t i, lo; } ss_perm_src;
    static int64_t ss_perm_produce(void *ctx, uint32_t *dst, int64_t room) {
        ss_perm_src *s = (ss_perm_src *)ctx;
        if (s->i <= s->lo) return -1;
        return ss_fy_produce(s->r, s->bg, &s->i, dst, room < s->i - s->lo ? room : s->i - s->lo);
    }
    /* Read, then written, soon: into the L2 (measured here: better than into the L1 or
       non-temporal, 48-160 swaps ahead about alike). */
    #if defined(__GNUC__) || defined(__clang__)
    #define SS_PREFETCH_M(p) __builtin_prefetch((p), 1, 1)
    #else
    #define SS_PREFETCH_M(p) ((void)0)
    #endif
    SS_JR_FY(ss_jr_fy64, int64_t, SS_PD, SS_PREFETCH_M)
    /* arange(n) shuffled into x[0..n); q's producer is src, at min(n - 1, 2**32 - 1) (its
       helper already running if any). -1: the queue ran short. */
    static int ss_permutation(ss_jq *q, ss_perm_src *src, int64_t *x, int64_t n) {
        int64_t i;
        ss_jr jr = {q, 0, 0, 0};
        for (i = 0; i < n; i++) x[i] = i;
        for (i = n - 1; i > (int64_t)0xFFFFFFFFLL; i--) {
            int64_t b = (int64_t)random_interval(src->bg, (uint64_t)i);
            int64_t v = x[i]; x[i] = x[b]; x[b] = v;
        }
        ss_jr_fy64(&jr, x, i + 1);
        ss_jq_finish(q, jr.pos);
        return jr.short_ ? -1 : 0;
    }
    /* The same below 2**31 samples, for places to be looked up, in int32_t (half the memory,
       and each fresh page costs a fault) and held as offsets from arange(n), x[k] = value - k:
       zeros to start with, as fresh pages come (calloc), so nothing is laid out. Values and
       offsets of n < 2**31 samples fit in int32_t. */
    #define SS_SWAP_OFF(T, x, a, k) do {                                                   \
        T va_ = (x)[a] + (T)(a), vk_ = (x)[k] + (T)(k);                                      \
        (x)[a] = vk_ - (T)(a); (x)[k] = va_ - (T)(k);                                        \
    } while (0)
    SS_JR_FY_AS(ss_jr_fy32_off, int32_t, SS_PD, SS_PREFETCH_M, SS_SWAP_OFF)
    static int ss_permutation32_off(ss_jq *q, int32_t *x, int64_t n, int64_t lo) {
        ss_jr jr = {q, 0, 0, 0};
        ss_jr_fy32_off_to(&jr, x, n, lo);
        ss_jq_finish(q, jr.pos);
        return jr.short_ ? -1 : 0;
    }
    /* out[k] = the value at places[k] (all below n) of the offsets x (x[p] + p), -1 where the
       place is negative; the places' values prefetched ahead (x is epoch-sized). */
    static void ss_gather32_off(const int32_t *x, const int64_t *places, int64_t m,
                                int64_t *out) {
        int64_t k;
        for (k = 0; k < m; k++) {
            if (k + SS_PD < m && places[k + SS_PD] >= 0) __builtin_prefetch(&x[places[k + SS_PD]]);
            int64_t p = places[k];
            out[k] = p >= 0 ? (int64_t)x[p] + p : -1;
        }
    }
    """
    ctypedef struct ss_perm_src:
        ss_raw *r
        bitgen_t *bg
        int64_t i
        int64_t lo
    int64_t ss_perm_produce(void *ctx, uint32_t *dst, int64_t room) noexcept nogil
    int ss_permutation(ss_jq *q, ss_perm_src *src, int64_t *x, int64_t n) nogil
    int ss_permutation32_off(ss_jq *q, int32_t *x, int64_t n, int64_t lo) nogil
    void ss_gather32_off(const int32_t *x, const int64_t *places, int64_t m, int64_t *out) nogil

cdef extern from *:
    """
    /* ---- naive's looked-up permutation on two cores ----
       Fisher-Yates' steps i = n-1 .. b touch any place, but steps b-1 .. 1 touch places below
       b only, and move what is there whatever it is: so the later steps can run on an
       identity of b places (y) while the earlier ones run on the epoch (x), the two composed
       at the places wanted (place p < b holds x's value at y's p). The draws are one
       sequence (each side reads it through a draw queue of its own, ss_jq, without its
       helper): the caller makes the earlier steps' from one copy of the generator; a helper
       thread reads the same raws from a second copy and drops them (~1.5 ns a draw, where a
       swap over an epoch-sized array costs a cache miss, 5-8 ns), then makes the later steps'
       and swaps y. Each side first faults its arrays in at once (faulted one page at a time,
       in random order, by both threads together, the earlier steps took 11-14 ns each against
       8), and each looks up half of the places at the end. If the
       helper thread has not started by the time the caller is done with x, the caller does
       its work and all the look-ups (the same result, on one core). */
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23
    #endif
    typedef struct {
        ss_perm_src *mine;           /* the caller's draws, at i = n - 1 */
        ss_perm_src *theirs;         /* the helper's, at i = n - 1 too, to lo */
        int32_t *x;                  /* the epoch's places as offsets from arange(n) (zeros) */
        int32_t *y;                  /* places 0 .. b as offsets from arange(b) (zeros) */
        int64_t n, b, lo;
        const int64_t *places;       /* the places to look up, all below n */
        int64_t *out;
        int64_t m;
        int claimed;                 /* 0: nobody yet, 1: the helper, 2: the caller (atomic) */
        int x_done, y_done;          /* atomic */
        int short_;                  /* 1: the draws ran short (a bug), 2: out of memory */
    } ss_nsplit;

    /* One side's Fisher-Yates, through a draw queue of its own without a helper (the side
       makes its draws as it goes): drop draws first, then steps n - 1 .. lo + 1 of a. 0, -1:
       the draws ran short, -2: out of memory. */
    static int ss_nsplit_fy(ss_perm_src *src, int64_t drop, int32_t *a, int64_t n, int64_t lo) {
        ss_jq q;
        ss_jr jr = {&q, 0, 0, 0};
        if (ss_jq_open(&q, 1 << 14, ss_perm_produce, src, 0, 0) < 0) return -2;
        ss_jr_drop(&jr, drop);
        ss_jr_fy32_off_to(&jr, a, n, lo);
        ss_jq_finish(&q, jr.pos);
        ss_jq_close(&q);
        return jr.short_ ? -1 : 0;
    }

    /* Fault in a zeroed array's whole pages at once (where the kernel can: 5.14 on). */
    static void ss_populate(void *p, size_t bytes) {
        uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
        uintptr_t e = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
        if (e > a) (void)madvise((void *)a, e - a, MADV_POPULATE_WRITE);
    }

    /* Wait for the other side (balanced, it is a few ms at most); past a few thousand polls
       the core is offered to others while waiting (the other side may be sharing it). */
    static void ss_nsplit_wait(int *flag) {
        int polls = 0;
        while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
            if (++polls < 4096) SS_PAUSE();
            else sched_yield();
        }
    }
    static inline void ss_nsplit_short(ss_nsplit *s, int why) {
        if (why) __atomic_store_n(&s->short_, why == -2 ? 2 : 1, __ATOMIC_RELAXED);
    }

    /* out[k] for places[k], k in [k0, k1): y's places first, then x's, prefetched ahead. */
    static void ss_nsplit_look(ss_nsplit *s, int64_t k0, int64_t k1) {
        const int64_t *pl = s->places;
        int64_t *out = s->out, k, b = s->b;
        for (k = k0; k < k1; k++) {
            if (k + SS_PD < k1 && pl[k + SS_PD] >= 0 && pl[k + SS_PD] < b)
                __builtin_prefetch(&s->y[pl[k + SS_PD]]);
            int64_t p = pl[k];
            out[k] = p < 0 ? -1 : p >= b ? p : (int64_t)s->y[p] + p;
        }
        for (k = k0; k < k1; k++) {
            if (k + SS_PD < k1 && out[k + SS_PD] >= 0) __builtin_prefetch(&s->x[out[k + SS_PD]]);
            int64_t q = out[k];
            if (q >= 0) out[k] = (int64_t)s->x[q] + q;
        }
    }

    static void ss_nsplit_later(ss_nsplit *s) {
        ss_populate(s->x + s->n / 2, (size_t)(s->n - s->n / 2) * sizeof(int32_t));
        ss_populate(s->y, (size_t)s->b * sizeof(int32_t));
        ss_nsplit_short(s, ss_nsplit_fy(s->theirs, s->n - s->b, s->y, s->b, s->lo));
        __atomic_store_n(&s->y_done, 1, __ATOMIC_RELEASE);
    }

    static void *ss_nsplit_thread(void *arg) {
        ss_nsplit *s = (ss_nsplit *)arg;
        int none = 0;
        if (__atomic_compare_exchange_n(&s->claimed, &none, 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
            ss_nsplit_later(s);
            ss_nsplit_wait(&s->x_done);
            if (!s->short_) ss_nsplit_look(s, s->m / 2, s->m);
        }
        return NULL;
    }

    /* The earlier steps on x, the later ones on y (by a helper thread if help and it starts),
       then out. -1: the draws ran short. */
    static int ss_nsplit_run(ss_nsplit *s, int help) {
        pthread_t th;
        int started = help && ss_spawn(&th, ss_nsplit_thread, s) == 0;
        int none = 0;
        ss_populate(s->x, (size_t)(s->n / 2) * sizeof(int32_t));
        s->mine->lo = s->b - 1;  /* (its queue makes no draw past the earlier steps) */
        ss_nsplit_short(s, ss_nsplit_fy(s->mine, 0, s->x, s->n, s->b - 1));
        __atomic_store_n(&s->x_done, 1, __ATOMIC_RELEASE);
        if (__atomic_compare_exchange_n(&s->claimed, &none, 2, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
            ss_nsplit_later(s);
            if (!s->short_) ss_nsplit_look(s, s->m / 2, s->m);
        }
        ss_nsplit_wait(&s->y_done);
        if (!s->short_) ss_nsplit_look(s, 0, s->m / 2);
        if (started) pthread_join(th, NULL);
        return -s->short_;
    }
    """
    ctypedef struct ss_nsplit:
        ss_perm_src *mine
        ss_perm_src *theirs
        int32_t *x
        int32_t *y
        int64_t n
        int64_t b
        int64_t lo
        const int64_t *places
        int64_t *out
        int64_t m
    int ss_nsplit_run(ss_nsplit *s, int help) nogil


# Draws from which a draw queue's helper thread makes them on a second core (as the raws'
# helper, _helper_min_raws: ~0.7 raws a draw).
_queue_min_draws = 700_000
# The most entries of a helped queue's ring. naive's caller swaps from the start (its array
# is zeros, nothing to lay out), so a ring of fresh pages the helper faults in costs more than
# running far ahead gains (1e7, medians: 4M 48-50 ms, 1M 38-45, 512K 40-44, 256K 42-47);
# py1br's caller needs its block sizes only once its helper reaches a wanted node (64K-4M
# alike).
# The views of py1br (its blocks) and py2s (its wanted nodes' layout values) hold sample ids as
# int32 below this many samples (tests lower them to exercise the int64 paths).
_PY1BR_BLOCK32_BELOW = 1 << 31
_PY2S_FX32_BELOW = 1 << 31
_NAIVE_RING = 1 << 20
# naive's looked-up permutation runs on two cores from this many steps (see ss_nsplit; tests
# lower it), the caller taking a share of them (_naive_share). (1e7 samples, the last of 16
# workers' places: 34-40 ms a side on two cores, against 45-48 ms for all the swaps on one.)
_naive_split_min = 2_000_000
# Tests only: whether the two-core path starts its helper thread (else the caller does it all).
_naive_split_helper = True
_PY1BR_RING = 1 << 18
# The last draw queue's fate, for tests: (helper started, consumer took it over).
last_queue = (False, False)


def _naive_share(int64_t n):
    """The share of naive's steps its caller takes on two cores (the earlier ones, each a swap
    over the whole epoch of ``n``; the helper's later ones swap over the places below the split
    only, after dropping the caller's draws). The bigger the epoch, the more a swap over it
    costs against one over the helper's smaller array. Measured here over the last of 16
    workers' places at nc=64 (medians of alternated processes' later calls): 1e7 samples,
    0.55 best (36 ms; 0.45: 39, 0.6: 37); 3e7, 0.5 (132 ms; 0.45 and 0.55: 143); 1e8, 0.47
    against 0.55 in six pairs of processes, 604 against 646 ms (fastest 579 against 628);
    3e8, 0.45 (2.71 s; 0.4: 2.79, 0.5: 2.95, 0.55: 3.16)."""
    return min(0.55, max(0.45, 0.55 - 0.08 * log10(max(n, 1) / 1e7)))


cdef int _open_queue(ss_jq *q, ss_produce_fn produce, void *ctx, int64_t draws, bint can_help,
                     int mode, int64_t most) except -1:
    """Open a draw queue over ``produce``; a helper thread makes the draws when they are
    many, there is a second core and the producer may run on another thread (mode 3 and 4,
    tests: always, 4 with a helper that stalls)."""
    cdef bint help = can_help and (mode >= 3 or (
        mode == 0 and draws >= _queue_min_draws and _second_core()))
    # With a helper the ring holds up to ``most`` draws; alone, the caller makes 2 x SQ_STEP
    # at a time.
    cdef int64_t cap = 1 << 14
    if help:
        cap = 1 << 12
        while cap < draws and cap < most:
            cap <<= 1
    if ss_jq_open(q, cap, produce, ctx, help, 3 if mode == 4 else 0) < 0:
        raise MemoryError()
    return 0


cdef void _note_queue(ss_jq *q):
    global last_queue
    last_queue = (bool(q.helped), bool(q.taken))


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int64_t _scan_places(const int64_t[::1] places, int64_t n, int64_t *least) noexcept:
    """The first entry of ``places`` past the epoch of ``n`` (or -1), and (``least``) the least
    non-negative place (``n`` if none): where a permutation's draws may stop, as place ``p`` is
    final after Fisher-Yates' step ``i = p`` (place 0 after step 1)."""
    cdef Py_ssize_t k
    cdef int64_t p
    least[0] = n
    for k in range(places.shape[0]):
        p = places[k]
        if p >= n:
            return k
        if 0 <= p < least[0]:
            least[0] = p
    return -1


def permutation(rng, Py_ssize_t n, places=None, out=None, bint exact=True, int _mode=0):
    """``rng.permutation(n)`` (the same array, ``rng`` left in the same state), or its values at
    some places only.

    Args:
        rng (numpy.random.Generator): Generator to draw from (it advances).
        n (int): Number of samples, non-negative.
        places (NDArray[np.int64], optional): Places to look up (negative: ``-1`` out). The
            permutation is then built in int32 below ``2**31`` samples (half the memory), as
            offsets from ``arange(n)`` (zeros to start with: nothing to lay out), on two cores
            past ``_naive_split_min`` steps (see ``ss_nsplit``).
        out (NDArray[np.int64], optional): With ``places``: where the values go (as long; may
            be ``places`` itself). Defaults to a new array.
        exact (bool): Leave ``rng`` where ``rng.permutation(n)`` would. With ``places`` below
            ``2**31`` samples and ``exact=False``, the draws stop once the smallest place is
            final (Fisher-Yates fixes place ``i`` at its step ``i``, from ``n - 1`` down; later
            steps never touch it): a share of the epoch's last places is drawn in a fraction
            of the time, and ``rng`` is left somewhere else. Defaults to ``True``.
        _mode (int): Tests only: as ``shuffle_nodes`` (0 picks, 1 generic, 2 raw, 3 raw with
            a helper thread making the draws, 4 as 3 with a helper that stalls and is taken
            over; 3 and 4 take the generic path for other bit generators).

    Returns:
        NDArray[np.int64]: The permutation of ``0 .. n``, or its values at ``places``.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    cdef const int64_t[::1] pl = None
    cdef int64_t[::1] o
    cdef bint small = False
    if places is not None:
        pl = np.ascontiguousarray(places, np.int64)
        if out is None:
            out = np.empty(pl.shape[0], np.int64)
        o = out
        if o.shape[0] != pl.shape[0]:
            raise ValueError("out must be as long as places")
        small = n < (1 << 31)
    cdef int64_t lo = 0, steps = max(n - 1, 0), b = n, least = n, bad = -1
    if small:
        bad = _scan_places(pl, n, &least)
        if bad >= 0:
            raise ValueError(f"place {pl[bad]} is outside the epoch of {n}")
        if not exact:  # the steps down to the least place are needed and no others
            lo = max(least - 1, 0)
            steps = n - 1 - lo
    bit = _bit_generator(rng)
    cdef bint split = small and _mode <= 2 and steps >= max(_naive_split_min, 2) and \
        _raw_mode(bit, _mode, n)  # (its two copies of the generator read PCG64's raws)
    if split:
        # naive on two cores (ss_nsplit): the later steps on b places of their own, after the
        # epoch's (one allocation: past glibc's mmap threshold, its fresh pages are zeros).
        # Those b places are all of the epoch below the split, however few steps are left:
        # past about twice the steps, making them costs more than sharing the steps saves
        # (1e8 samples, the last 1/8 of the places: 0.48 s against 0.28 s on one core).
        b = n - min(max(int(steps * _naive_share(n)), 1), steps - 1)
        split = b <= 2 * steps
    full = np.zeros(n + (b if split else 0), np.int32) if small else np.empty(n, np.int64)
    cdef int64_t[::1] x64 = None if small else full
    cdef int32_t[::1] x32 = full if small else None
    cdef _Reader rd = _Reader()
    cdef _Reader theirs = None
    cdef ss_jq q
    cdef ss_perm_src src, src2
    cdef ss_nsplit sp
    cdef int short = 0
    cdef int help = 0
    memset(&q, 0, sizeof(q))
    memset(&sp, 0, sizeof(sp))
    with bit.lock:
        rd.open(rng, _mode, n)
        try:
            src.r = rd.reader()
            src.bg = rd.bg
            src.i = min(n - 1, 0xFFFFFFFF)
            src.lo = lo
            if split:
                # The helper's draws come from a second copy of the generator (the same raws
                # and more): it is the one that leaves rng where it should be.
                theirs = _Reader()
                theirs.open(rng, 2, n)
                src2.r = theirs.reader()
                src2.bg = theirs.bg
                src2.i = src.i
                src2.lo = lo
                sp.mine = &src
                sp.theirs = &src2
                sp.x = &x32[0]
                sp.y = &x32[n]
                sp.n = n
                sp.b = b
                sp.lo = lo
                sp.places = &pl[0] if pl.shape[0] else NULL
                sp.out = &o[0] if o.shape[0] else NULL
                sp.m = pl.shape[0]
                help = _naive_split_helper and _second_core()
                with nogil:
                    short = ss_nsplit_run(&sp, help)
            else:
                _open_queue(&q, ss_perm_produce, &src, src.i - src.lo, n <= (1 << 32), _mode,
                            _NAIVE_RING)
                with nogil:
                    if small:
                        short = ss_permutation32_off(&q, &x32[0] if n else NULL, n, src.lo)
                    else:
                        short = ss_permutation(&q, &src, &x64[0] if n else NULL, n)
        finally:
            with nogil:
                ss_jq_close(&q)
            _note_queue(&q)
            rd.close(theirs is None)
            if theirs is not None:
                theirs.close()
    if short == -2:
        raise MemoryError()
    if short:
        raise RuntimeError("the permutation's draws ran short of its swaps (a bug)")
    if pl is None:
        return full
    if not small:  # an int64 permutation: the places are looked up through it in place
        if out is not places:
            out[...] = pl
        _plan.compose_ids(out, full, None)
        return out
    if not split:
        with nogil:
            ss_gather32_off(&x32[0] if n else NULL, &pl[0] if pl.shape[0] else NULL,
                            pl.shape[0], &o[0] if o.shape[0] else NULL)
    return out

