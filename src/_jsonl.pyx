# cython: language_level=3, boundscheck=False, wraparound=False
"""JSON Lines scanner: one pass over a chunk of JSONL bytes into typed columns.

Handles the plain, common shape of JSONL datasets quickly: one object per line whose wanted keys
hold integers, floats, ASCII strings without escapes, or flat arrays of numbers. Anything else
in a wanted column (escapes, non-ASCII text, nested values, literals, a number of the wrong kind,
a missing or repeated key) makes :func:`scan_jsonl` return ``None``, and the caller parses that
chunk with a real JSON parser instead, which also gives proper error messages. Keys that are not
wanted are skipped, but only after checking that they hold valid JSON.

The contract is that a chunk the scanner accepts gives exactly what the general path (orjson,
then the per-value encoders) gives: same values bit for bit, and no line the parser would reject.
So anything the parser might treat specially is declined rather than guessed at: integers over
18 digits, numbers that overflow a double (orjson rejects them; ``strtod`` says infinity),
lone surrogate escapes, invalid UTF-8, nesting deeper than ``MAX_DEPTH``.

Every read is bounds-checked against the buffer; malformed input returns ``None``, never reads
past the end.
"""

import numpy as np

from libc.math cimport isinf
from libc.stdint cimport int64_t, uint64_t
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
    MAX_DEPTH = 64  # nesting in skipped values; deeper is left to the parser (orjson: 1024)


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


cdef inline Py_ssize_t parse_number(const unsigned char* b, Py_ssize_t p, Py_ssize_t n,
                                    bint* is_int, int64_t* iv, double* fv) noexcept nogil:
    """JSON number at p: returns its end, or -1 (not a number, or one left to a real parser).

    An integer literal (no fraction, no exponent) sets ``is_int`` and ``iv``; a parser reads it
    as an int, so ``-0`` is 0 (not -0.0). Any other number sets ``fv``, correctly rounded by
    ``strtod`` as by the parser. Declined: integers over 18 digits (a parser makes big ints or
    floats of them), numbers of 63 characters or more, and numbers that overflow a double
    (orjson rejects them, where ``strtod`` would return infinity).
    """
    cdef Py_ssize_t start = p, first
    cdef bint neg = 0
    cdef uint64_t value = 0  # unsigned: wraps harmlessly past 18 digits, which are declined
    cdef char tmp[64]
    cdef char* endp
    cdef double d
    if p < n and b[p] == 45:  # '-'
        neg = 1
        p += 1
    if p >= n or b[p] < 48 or b[p] > 57:
        return -1
    if b[p] == 48 and p + 1 < n and 48 <= b[p + 1] <= 57:
        return -1  # leading zero
    first = p
    while p < n and 48 <= b[p] <= 57:
        value = value * 10 + (b[p] - 48)
        p += 1
    is_int[0] = 1
    if p < n and b[p] == 46:  # '.'
        is_int[0] = 0
        p += 1
        if p >= n or b[p] < 48 or b[p] > 57:
            return -1
        while p < n and 48 <= b[p] <= 57:
            p += 1
    if p < n and (b[p] == 101 or b[p] == 69):  # 'e', 'E'
        is_int[0] = 0
        p += 1
        if p < n and (b[p] == 43 or b[p] == 45):
            p += 1
        if p >= n or b[p] < 48 or b[p] > 57:
            return -1
        while p < n and 48 <= b[p] <= 57:
            p += 1
    if is_int[0]:
        if p - first > 18:
            return -1
        iv[0] = -<int64_t>value if neg else <int64_t>value
        return p
    if p - start >= 63:
        return -1
    memcpy(tmp, b + start, p - start)
    tmp[p - start] = 0
    d = strtod(tmp, &endp)
    # endp: a locale whose decimal point is not '.' makes strtod stop early; decline then.
    if endp != tmp + (p - start) or isinf(d):
        return -1
    fv[0] = d
    return p


cdef inline Py_ssize_t skip_number(const unsigned char* b, Py_ssize_t p,
                                   Py_ssize_t n) noexcept nogil:
    """Skip the JSON number at p: returns its end, or -1 (not a number, or one past DBL_MAX).

    orjson rejects a number that overflows a double (a float, or an integer it has to read as
    one), so the scanner must decline it too; which it is follows from the decimal exponent of
    the leading digit, without converting the number (``strtod`` only decides the one decade
    where rounding matters).
    """
    cdef Py_ssize_t start = p, q, int_digits, frac_zeros = 0, exponent = 0, top
    cdef bint int_nonzero, frac_nonzero = 0, exponent_neg = 0
    cdef char tmp[64]
    cdef char* endp
    if p < n and b[p] == 45:  # '-'
        p += 1
    if p >= n or b[p] < 48 or b[p] > 57:
        return -1
    if b[p] == 48 and p + 1 < n and 48 <= b[p + 1] <= 57:
        return -1  # leading zero
    int_nonzero = b[p] != 48
    q = p
    while p < n and 48 <= b[p] <= 57:
        p += 1
    int_digits = p - q
    if p < n and b[p] == 46:  # '.'
        p += 1
        q = p
        while p < n and b[p] == 48:
            p += 1
        frac_zeros = p - q
        frac_nonzero = p < n and 49 <= b[p] <= 57
        while p < n and 48 <= b[p] <= 57:
            p += 1
        if p == q:
            return -1
    if p < n and (b[p] == 101 or b[p] == 69):  # 'e', 'E'
        p += 1
        if p < n and (b[p] == 43 or b[p] == 45):
            exponent_neg = b[p] == 45
            p += 1
        if p >= n or b[p] < 48 or b[p] > 57:
            return -1
        while p < n and 48 <= b[p] <= 57:
            if exponent < 1000000:  # saturates: far past any double either way
                exponent = exponent * 10 + (b[p] - 48)
            p += 1
        if exponent_neg:
            exponent = -exponent
    # The number is in [10**top, 10**(top + 1)); DBL_MAX is 1.797...e308.
    if int_nonzero:
        top = int_digits - 1 + exponent
    elif frac_nonzero:
        top = exponent - frac_zeros - 1
    else:
        return p  # zero
    if top < 308:
        return p
    if top > 308 or p - start >= 63:
        return -1
    memcpy(tmp, b + start, p - start)
    tmp[p - start] = 0
    if isinf(strtod(tmp, &endp)) or endp != tmp + (p - start):
        return -1
    return p


cdef Py_ssize_t scan_plain_string(const unsigned char* b, Py_ssize_t p,
                                  Py_ssize_t n) noexcept nogil:
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


# Bytes that stand for themselves in a JSON string: printable ASCII but '"' and '\\'.
cdef unsigned char PLAIN[256]
# What follows a backslash: 1 for a one-character escape (" \\ / b f n r t), 2 for 'u'.
cdef unsigned char ESCAPE[256]
# Hex digit values, -1 for other bytes.
cdef signed char HEX[256]
for _c in range(256):
    PLAIN[_c] = 32 <= _c < 128 and _c != 34 and _c != 92
    ESCAPE[_c] = 2 if _c == 117 else 1 if chr(_c) in '"\\/bfnrt' else 0
    HEX[_c] = int(chr(_c), 16) if chr(_c) in "0123456789abcdefABCDEF" else -1


cdef inline int hex4(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """The four hex digits at p as a number, or -1."""
    cdef int value = 0, i, digit
    if p + 4 > n:
        return -1
    for i in range(4):
        digit = HEX[b[p + i]]
        if digit < 0:
            return -1
        value = value * 16 + digit
    return value


cdef inline Py_ssize_t utf8_end(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """At a non-ASCII byte: the end of its well-formed UTF-8 sequence, or -1 (overlong forms,
    surrogates and code points past U+10FFFF are ill-formed: Unicode's table 3-7)."""
    cdef unsigned char c = b[p], lo = 0x80, hi = 0xBF
    cdef Py_ssize_t need, i
    if 0xC2 <= c <= 0xDF:
        need = 1
    elif c == 0xE0:
        need, lo = 2, 0xA0
    elif 0xE1 <= c <= 0xEC or c == 0xEE or c == 0xEF:
        need = 2
    elif c == 0xED:
        need, hi = 2, 0x9F
    elif c == 0xF0:
        need, lo = 3, 0x90
    elif 0xF1 <= c <= 0xF3:
        need = 3
    elif c == 0xF4:
        need, hi = 3, 0x8F
    else:
        return -1
    if p + need >= n or b[p + 1] < lo or b[p + 1] > hi:
        return -1
    for i in range(2, need + 1):
        if b[p + i] < 0x80 or b[p + i] > 0xBF:
            return -1
    return p + need + 1


cdef inline Py_ssize_t skip_string(const unsigned char* b, Py_ssize_t p,
                                   Py_ssize_t n) noexcept nogil:
    """At an opening quote: returns the index after the closing quote, or -1 if the string is not
    valid JSON in valid UTF-8, or holds a lone surrogate escape (orjson rejects those, the json
    module accepts them: left to the parser)."""
    cdef unsigned char c
    cdef int u
    p += 1
    while p < n:
        while p < n and PLAIN[b[p]]:
            p += 1
        if p >= n:
            break
        c = b[p]
        if c == 34:  # '"'
            return p + 1
        if c == 92:  # '\'
            if p + 1 >= n:
                return -1
            c = ESCAPE[b[p + 1]]
            if c == 1:
                p += 2
            elif c == 2:  # \uXXXX
                u = hex4(b, p + 2, n)
                p += 6
                if u < 0 or 0xDC00 <= u <= 0xDFFF:
                    return -1
                if 0xD800 <= u <= 0xDBFF:  # a high surrogate: its low one must follow
                    if p + 1 >= n or b[p] != 92 or b[p + 1] != 117:
                        return -1
                    u = hex4(b, p + 2, n)
                    if u < 0xDC00 or u > 0xDFFF:
                        return -1
                    p += 6
            else:
                return -1
        elif c < 128:  # a control character
            return -1
        elif 0xC2 <= c <= 0xDF and p + 1 < n and (b[p + 1] & 0xC0) == 0x80:
            p += 2  # the common two-byte sequence (Latin, Greek, Cyrillic, ...)
        else:
            p = utf8_end(b, p, n)
            if p < 0:
                return -1
    return -1


cdef inline bint has_literal(const unsigned char* b, Py_ssize_t p, Py_ssize_t n,
                             const char* word, Py_ssize_t size) noexcept nogil:
    return p + size <= n and memcmp(b + p, word, size) == 0


cdef Py_ssize_t skip_member_name(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """At an object member: skips ``"name" :`` and the whitespace after it, or returns -1."""
    if p >= n or b[p] != 34:
        return -1
    p = skip_string(b, p, n)
    if p < 0:
        return -1
    p = skip_ws(b, p, n)
    if p >= n or b[p] != 58:  # ':'
        return -1
    return skip_ws(b, p + 1, n)


cdef Py_ssize_t skip_value(const unsigned char* b, Py_ssize_t p, Py_ssize_t n) noexcept nogil:
    """Skip the JSON value at p, checking that it is valid JSON: returns its end, or -1.

    A key that is not wanted is never decoded, but the general path's parser rejects a line
    whose value is not valid JSON, so the scanner must reject (decline) it as well.
    """
    cdef unsigned char stack[MAX_DEPTH]  # the open containers: '[' or '{'
    cdef Py_ssize_t depth = 0
    cdef unsigned char c
    while True:
        # A value starts at p.
        if p >= n:
            return -1
        c = b[p]
        if c == 91 or c == 123:  # '[' '{'
            if depth == MAX_DEPTH:
                return -1
            stack[depth] = c
            depth += 1
            p = skip_ws(b, p + 1, n)
            if p < n and b[p] == c + 2:  # ']' is '[' + 2 and '}' is '{' + 2
                depth -= 1
                p += 1
            elif c == 123:
                p = skip_member_name(b, p, n)
                if p < 0:
                    return -1
                continue
            else:
                continue
        elif c == 34:
            p = skip_string(b, p, n)
        elif c == 45 or 48 <= c <= 57:
            p = skip_number(b, p, n)
        elif has_literal(b, p, n, b"true", 4) or has_literal(b, p, n, b"null", 4):
            p += 4
        elif has_literal(b, p, n, b"false", 5):
            p += 5
        else:
            return -1
        if p < 0:
            return -1
        # After a value: close containers, or move on to the next element or member.
        while depth:
            p = skip_ws(b, p, n)
            if p >= n:
                return -1
            c = b[p]
            if c == stack[depth - 1] + 2:
                depth -= 1
                p += 1
            elif c == 44:  # ','
                p = skip_ws(b, p + 1, n)
                if stack[depth - 1] == 123:
                    p = skip_member_name(b, p, n)
                    if p < 0:
                        return -1
                break
            else:
                return -1
        if depth == 0:
            return p


cdef inline Py_ssize_t push_number(const unsigned char* b, Py_ssize_t p, Py_ssize_t n,
                                   bint as_float, Vec* v, bint* ints_only) noexcept nogil:
    """Parse the number at p onto ``v`` (int64, or float64 if ``as_float``): returns its end, or -1.

    An integer literal read as a float is converted as NumPy converts the parser's int, and
    leaves ``ints_only`` set: the general path checks a column of ints (not of floats) for
    values that change when cast to float16/float32, so the caller needs to know which it was.
    """
    cdef bint is_int
    cdef int64_t iv
    cdef double fv
    p = parse_number(b, p, n, &is_int, &iv, &fv)
    if p < 0:
        return -1
    if as_float:
        if is_int:
            fv = <double>iv
        else:
            ints_only[0] = 0
        if vec_push(v, &fv) < 0:
            return -1
    else:
        if not is_int or vec_push(v, &iv) < 0:
            return -1
    return p


def scan_jsonl(const unsigned char[::1] buf not None, list keys not None, kinds not None):
    """Scan JSON lines into typed columns, or return ``None`` if a line needs a real parser.

    Args:
        buf (bytes-like): Whole lines of JSONL (blank lines are skipped).
        keys (List[bytes]): Wanted keys (ASCII, at most 64).
        kinds (Sequence[int]): Each key's ``KIND_*``.

    Returns:
        Optional[Tuple[int, List[Any], List[bool]]]: ``(rows, columns, ints_only)``, where a
        column is an int64 or float64 array (scalars), an int64 ``(rows, 2)`` array of string
        byte ranges into ``buf``, or an ``(offsets, values)`` pair of arrays (lists,
        ``rows + 1`` offsets), and ``ints_only`` says for each column whether every number in
        it was an integer literal (``1`` rather than ``1.0``, which a JSON parser reads as an
        int); ``None`` when the chunk needs a real JSON parser.
    """
    cdef Py_ssize_t k = len(keys)
    if k == 0 or k > MAX_KEYS or len(kinds) != k:
        raise ValueError(f"scan_jsonl: need 1 to {MAX_KEYS} keys with one kind each")
    cdef int kind_of[MAX_KEYS]
    cdef const unsigned char* key_ptr[MAX_KEYS]
    cdef Py_ssize_t key_len[MAX_KEYS]
    cdef Vec vals[MAX_KEYS]
    cdef Vec offs[MAX_KEYS]
    cdef bint ints_only[MAX_KEYS]
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
    cdef int64_t iv
    cdef int64_t pair[2]
    cdef int kind
    full = (1ULL << k) - 1 if k < 64 else <unsigned long long>0xFFFFFFFFFFFFFFFF

    for j in range(k):
        vals[j].data = NULL
        offs[j].data = NULL
        ints_only[j] = 1
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
                            if kind == K_INT or kind == K_FLOAT:
                                p = push_number(b, p, n, kind == K_FLOAT, &vals[found],
                                                &ints_only[found])
                                if p < 0:
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
                                        p = push_number(b, p, n, kind == K_FLOAT_LIST,
                                                        &vals[found], &ints_only[found])
                                        if p < 0:
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
                memcpy(<void*><Py_ssize_t>arr.ctypes.data, vals[j].data,
                       vals[j].size * vals[j].item)
            if kind >= K_INT_LIST:
                off = np.empty(offs[j].size, np.int64)
                memcpy(<void*><Py_ssize_t>off.ctypes.data, offs[j].data, offs[j].size * 8)
                columns.append((off, arr))
            else:
                columns.append(arr)
        return rows, columns, [bool(ints_only[j]) for j in range(k)]
    finally:
        for j in range(k):
            free(vals[j].data)
            free(offs[j].data)
