# cython: language_level=3, boundscheck=False, wraparound=False
"""JSON Lines scanner: one pass over a chunk of JSONL bytes into typed columns.

Handles the plain, common shape of JSONL datasets quickly: one object per line whose wanted keys
hold integers, floats, ASCII strings without escapes, or flat arrays of numbers. Anything else
in a wanted column (escapes, non-ASCII text, nested values, literals, a number of the wrong kind,
a missing or repeated key) makes :func:`scan_jsonl` return ``None``, and the caller parses that
chunk with a real JSON parser instead, which also gives proper error messages. Keys that are not
wanted are skipped whatever they hold (strings, numbers, literals, nested arrays/objects).

Every read is bounds-checked against the buffer; malformed input returns ``None``, never reads
past the end.
"""

import numpy as np

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc, realloc, strtod
from libc.string cimport memcmp, memcpy

cdef enum:
    K_INT = 0  # int64 scalar
    K_FLOAT = 1  # float64 scalar
    K_STR = 2  # ASCII string without escapes: (start, end) byte offsets into the buffer
    K_INT_LIST = 3  # flat array of int64
    K_FLOAT_LIST = 4  # flat array of float64

KIND_INT = K_INT
KIND_FLOAT = K_FLOAT
KIND_STR = K_STR
KIND_INT_LIST = K_INT_LIST
KIND_FLOAT_LIST = K_FLOAT_LIST

cdef enum:
    MAX_KEYS = 64


cdef struct Vec:
    char* data
    Py_ssize_t size  # items
    Py_ssize_t cap  # items
    Py_ssize_t item  # bytes per item


cdef int vec_init(Vec* v, Py_ssize_t item) noexcept nogil:
    v.size = 0
    v.cap = 1024
    v.item = item
    v.data = <char*>malloc(v.cap * item)
    return 0 if v.data != NULL else -1


cdef int vec_push(Vec* v, const void* x) noexcept nogil:
    cdef char* grown
    if v.size == v.cap:
        grown = <char*>realloc(v.data, 2 * v.cap * v.item)
        if grown == NULL:
            return -1
        v.data = grown
        v.cap *= 2
    memcpy(v.data + v.size * v.item, x, v.item)
    v.size += 1
    return 0


cdef inline bint is_ws(unsigned char c) noexcept nogil:
    return c == 32 or c == 9 or c == 13


cdef inline Py_ssize_t skip_ws(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    while p < n and is_ws(b[p]):
        p += 1
    return p


cdef Py_ssize_t parse_int(const unsigned char* b, Py_ssize_t p, Py_ssize_t n, int64_t* out) noexcept nogil:
    """JSON integer at p: returns the end, or -1 (not an integer, or over 18 digits)."""
    cdef bint neg = 0
    cdef int64_t value = 0
    cdef Py_ssize_t start
    if p < n and b[p] == 45:  # '-'
        neg = 1
        p += 1
    start = p
    if p >= n or b[p] < 48 or b[p] > 57:
        return -1
    if b[p] == 48 and p + 1 < n and 48 <= b[p + 1] <= 57:
        return -1  # leading zero
    while p < n and 48 <= b[p] <= 57:
        if p - start >= 18:
            return -1
        value = value * 10 + (b[p] - 48)
        p += 1
    if p < n and (b[p] == 46 or b[p] == 101 or b[p] == 69):  # '.', 'e', 'E': not an int
        return -1
    out[0] = -value if neg else value
    return p


cdef Py_ssize_t parse_float(const unsigned char* b, Py_ssize_t p, Py_ssize_t n, double* out) noexcept nogil:
    """JSON number at p as a double (correctly rounded by strtod): returns the end, or -1."""
    cdef Py_ssize_t start = p
    cdef char tmp[64]
    cdef char* endp
    if p < n and b[p] == 45:
        p += 1
    if p >= n or b[p] < 48 or b[p] > 57:
        return -1
    if b[p] == 48 and p + 1 < n and 48 <= b[p + 1] <= 57:
        return -1
    while p < n and 48 <= b[p] <= 57:
        p += 1
    if p < n and b[p] == 46:
        p += 1
        if p >= n or b[p] < 48 or b[p] > 57:
            return -1
        while p < n and 48 <= b[p] <= 57:
            p += 1
    if p < n and (b[p] == 101 or b[p] == 69):
        p += 1
        if p < n and (b[p] == 43 or b[p] == 45):
            p += 1
        if p >= n or b[p] < 48 or b[p] > 57:
            return -1
        while p < n and 48 <= b[p] <= 57:
            p += 1
    if p - start >= 63:
        return -1
    memcpy(tmp, b + start, p - start)
    tmp[p - start] = 0
    out[0] = strtod(tmp, &endp)
    if endp != tmp + (p - start):
        return -1
    return p


cdef Py_ssize_t scan_plain_string(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """At an opening quote: returns the index of the closing quote, or -1 if the string has an
    escape, a control character or a non-ASCII byte (or is unterminated)."""
    p += 1
    while p < n:
        if b[p] == 34:
            return p
        if b[p] == 92 or b[p] < 32 or b[p] >= 128:
            return -1
        p += 1
    return -1


cdef Py_ssize_t skip_string(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """At an opening quote: returns the index after the closing quote, or -1."""
    p += 1
    while p < n:
        if b[p] == 92:
            p += 2
            continue
        if b[p] == 34:
            return p + 1
        if b[p] == 10:
            return -1
        p += 1
    return -1


cdef Py_ssize_t skip_value(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """Skip any JSON value at p (loosely checked; the line is a wanted one's neighbour)."""
    cdef Py_ssize_t depth = 0
    cdef unsigned char c
    while p < n:
        c = b[p]
        if c == 34:
            p = skip_string(b, p, n)
            if p < 0:
                return -1
        elif c == 91 or c == 123:  # '[' '{'
            depth += 1
            p += 1
        elif c == 93 or c == 125:  # ']' '}'
            if depth == 0:
                return p
            depth -= 1
            p += 1
        elif c == 44:  # ','
            if depth == 0:
                return p
            p += 1
        elif c == 10:
            return -1
        else:
            p += 1
    return -1 if depth else p


def scan_jsonl(const unsigned char[::1] buf not None, list keys not None, kinds not None):
    """Scan JSON lines into typed columns, or return ``None`` if a line needs a real parser.

    Args:
        buf (bytes-like): Whole lines of JSONL (blank lines are skipped).
        keys (List[bytes]): Wanted keys (ASCII, at most 64).
        kinds (Sequence[int]): Each key's ``KIND_*``.

    Returns:
        Optional[Tuple[int, List[Any]]]: ``(rows, columns)``, where a column is an int64 or
        float64 array (scalars), an int64 ``(rows, 2)`` array of string byte ranges into
        ``buf``, or an ``(offsets, values)`` pair of arrays (lists, ``rows + 1`` offsets);
        ``None`` when the chunk needs a real JSON parser.
    """
    cdef Py_ssize_t k = len(keys)
    if k == 0 or k > MAX_KEYS or len(kinds) != k:
        raise ValueError(f"scan_jsonl: need 1 to {MAX_KEYS} keys with one kind each")
    cdef int kind_of[MAX_KEYS]
    cdef const unsigned char* key_ptr[MAX_KEYS]
    cdef Py_ssize_t key_len[MAX_KEYS]
    cdef Vec vals[MAX_KEYS]
    cdef Vec offs[MAX_KEYS]
    cdef Py_ssize_t j
    for j in range(k):
        if not isinstance(keys[j], bytes):
            raise TypeError("scan_jsonl: keys must be bytes")
        kind_of[j] = kinds[j]
        if kind_of[j] < 0 or kind_of[j] > 4:
            raise ValueError(f"scan_jsonl: unknown kind {kind_of[j]}")
        key_ptr[j] = <const unsigned char*>(<bytes>keys[j])
        key_len[j] = len(<bytes>keys[j])
    cdef Py_ssize_t n = buf.shape[0]
    cdef const unsigned char* b = &buf[0] if n else NULL
    cdef bint ok = 1
    cdef Py_ssize_t rows = 0
    cdef Py_ssize_t p = 0, q, ks, ke, found, count
    cdef unsigned long long seen, full
    cdef int64_t iv, pair[2]
    cdef double fv
    cdef int kind
    full = (1ULL << k) - 1 if k < 64 else <unsigned long long>0xFFFFFFFFFFFFFFFF

    for j in range(k):
        vals[j].data = NULL
        offs[j].data = NULL
    for j in range(k):
        if (vec_init(&vals[j], 16 if kind_of[j] == K_STR else 8) < 0
                or vec_init(&offs[j], 8) < 0):
            ok = 0
        iv = 0
        if ok and kind_of[j] >= K_INT_LIST and vec_push(&offs[j], &iv) < 0:
            ok = 0
    if not ok:
        for j in range(k):
            free(vals[j].data)
            free(offs[j].data)
        raise MemoryError("scan_jsonl: out of memory")
    try:
        with nogil:
            while ok and p < n:
                p = skip_ws(b, p, n)
                if p < n and b[p] == 10:  # blank line
                    p += 1
                    continue
                if p >= n:
                    break
                if b[p] != 123:  # '{'
                    ok = 0
                    break
                p = skip_ws(b, p + 1, n)
                seen = 0
                if p < n and b[p] == 125:  # '{}'
                    p += 1
                else:
                    while True:
                        if p >= n or b[p] != 34:
                            ok = 0
                            break
                        ks = p + 1
                        ke = scan_plain_string(b, p, n)
                        if ke < 0:
                            ok = 0
                            break
                        p = skip_ws(b, ke + 1, n)
                        if p >= n or b[p] != 58:  # ':'
                            ok = 0
                            break
                        p = skip_ws(b, p + 1, n)
                        found = -1
                        for j in range(k):
                            if key_len[j] == ke - ks and memcmp(key_ptr[j], b + ks, ke - ks) == 0:
                                found = j
                                break
                        if found < 0:
                            p = skip_value(b, p, n)
                            if p < 0:
                                ok = 0
                                break
                        else:
                            if seen & (1ULL << found):
                                ok = 0  # repeated key: leave the semantics to a real parser
                                break
                            seen |= 1ULL << found
                            kind = kind_of[found]
                            if kind == K_INT:
                                p = parse_int(b, p, n, &iv)
                                if p < 0 or vec_push(&vals[found], &iv) < 0:
                                    ok = 0
                                    break
                            elif kind == K_FLOAT:
                                p = parse_float(b, p, n, &fv)
                                if p < 0 or vec_push(&vals[found], &fv) < 0:
                                    ok = 0
                                    break
                            elif kind == K_STR:
                                if p >= n or b[p] != 34:
                                    ok = 0
                                    break
                                q = scan_plain_string(b, p, n)
                                if q < 0:
                                    ok = 0
                                    break
                                pair[0] = p + 1
                                pair[1] = q
                                if vec_push(&vals[found], pair) < 0:
                                    ok = 0
                                    break
                                p = q + 1
                            else:
                                if p >= n or b[p] != 91:  # '['
                                    ok = 0
                                    break
                                p = skip_ws(b, p + 1, n)
                                count = 0
                                if p < n and b[p] == 93:
                                    p += 1
                                else:
                                    while True:
                                        if kind == K_INT_LIST:
                                            p = parse_int(b, p, n, &iv)
                                            if p < 0 or vec_push(&vals[found], &iv) < 0:
                                                ok = 0
                                                break
                                        else:
                                            p = parse_float(b, p, n, &fv)
                                            if p < 0 or vec_push(&vals[found], &fv) < 0:
                                                ok = 0
                                                break
                                        count += 1
                                        p = skip_ws(b, p, n)
                                        if p < n and b[p] == 44:
                                            p = skip_ws(b, p + 1, n)
                                            continue
                                        if p < n and b[p] == 93:
                                            p += 1
                                            break
                                        ok = 0
                                        break
                                    if not ok:
                                        break
                                iv = vals[found].size
                                if vec_push(&offs[found], &iv) < 0:
                                    ok = 0
                                    break
                        p = skip_ws(b, p, n)
                        if p < n and b[p] == 44:
                            p = skip_ws(b, p + 1, n)
                            continue
                        if p < n and b[p] == 125:
                            p += 1
                            break
                        ok = 0
                        break
                if not ok:
                    break
                if seen != full:
                    ok = 0  # a wanted key is missing
                    break
                p = skip_ws(b, p, n)
                if p < n:
                    if b[p] != 10:
                        ok = 0
                        break
                    p += 1
                rows += 1
        if not ok:
            return None
        columns = []
        for j in range(k):
            kind = kind_of[j]
            if kind == K_STR:
                arr = np.empty((vals[j].size, 2), np.int64)
            elif kind == K_FLOAT or kind == K_FLOAT_LIST:
                arr = np.empty(vals[j].size, np.float64)
            else:
                arr = np.empty(vals[j].size, np.int64)
            if vals[j].size:
                memcpy(<void*><Py_ssize_t>arr.ctypes.data, vals[j].data, vals[j].size * vals[j].item)
            if kind >= K_INT_LIST:
                off = np.empty(offs[j].size, np.int64)
                memcpy(<void*><Py_ssize_t>off.ctypes.data, offs[j].data, offs[j].size * 8)
                columns.append((off, arr))
            else:
                columns.append(arr)
        return rows, columns
    finally:
        for j in range(k):
            free(vals[j].data)
            free(offs[j].data)
