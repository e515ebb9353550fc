# cython: language_level=3
"""Kernels that compose an epoch's sample-id maps without NumPy temporaries."""

from libc.stdint cimport int64_t


def compose_ids(int64_t[:] work, shuffle=None, small_per_big=None):
    """Map each id of ``work`` through ``shuffle`` then ``small_per_big`` in place; keep ``-1``.

    Equivalent to ``np.where(w != -1, small_per_big[shuffle[w]], -1)`` (a missing map is the
    identity), in one pass and without temporaries.

    Args:
        work (NDArray[np.int64]): Contiguous 1-D ids or ``-1`` padding, rewritten in place.
        shuffle (NDArray[np.int64], optional): First map. Defaults to ``None``.
        small_per_big (NDArray[np.int64], optional): Second map. Defaults to ``None``.

    Raises:
        ValueError: If an id is outside the map it indexes.
    """
    cdef const int64_t[:] s
    cdef const int64_t[:] m
    cdef bint has_s = shuffle is not None, has_m = small_per_big is not None
    if has_s:
        s = shuffle
    if has_m:
        m = small_per_big
    cdef Py_ssize_t i, n = work.shape[0], bad = -1
    cdef Py_ssize_t ns = s.shape[0] if has_s else 0
    cdef Py_ssize_t nm = m.shape[0] if has_m else 0
    cdef int64_t v
    with nogil:
        for i in range(n):
            v = work[i]
            if v == -1:
                continue
            if has_s:
                if v < 0 or v >= ns:
                    bad = i
                    break
                v = s[v]
            if has_m:
                if v < 0 or v >= nm:
                    bad = i
                    break
                v = m[v]
            work[i] = v
    if bad >= 0:
        raise ValueError(f"sample id {work[bad]} at position {bad} is outside the epoch's id maps")


def is_arange(const int64_t[:] ids):
    """Whether ``ids`` is ``0, 1, ..., len(ids) - 1``.

    Args:
        ids (NDArray[np.int64]): 1-D ids.

    Returns:
        bool: ``True`` if ``ids[k] == k`` for every ``k``.
    """
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef bint same = True
    with nogil:
        for i in range(n):
            if ids[i] != i:
                same = False
                break
    return same
