# cython: language_level=3
"""Collation kernels: stack a batch's same-shape, same-dtype arrays into one array.

Torch's ``default_collate`` turns each sample's array into a tensor and stacks those; checking
and copying the rows one by one in Python costs ~2 us a row, more than decoding the row. Here the
check is one pass in C and the copy one ``memcpy`` a row.
"""

cimport numpy as cnp
from libc.string cimport memcpy

cnp.import_array()

MISMATCH = 0  # not all exact ndarrays of the first one's dtype and shape: collate otherwise
CONTIGUOUS = 1  # all match and are C-contiguous: copy_rows can stack them
STRIDED = 2  # all match, some are not C-contiguous: copy those with NumPy


def match_rows(list values):
    """Whether a batch's values can be stacked as arrays of the first one's dtype and shape.

    Args:
        values (List[Any]): The batch's values of one column (at least one).

    Returns:
        int: :data:`MISMATCH`, :data:`CONTIGUOUS` or :data:`STRIDED`.
    """
    cdef Py_ssize_t i, k, n = len(values)
    cdef cnp.ndarray first, value
    cdef int ndim, out = CONTIGUOUS
    cdef cnp.npy_intp *shape
    if n == 0 or type(values[0]) is not cnp.ndarray:
        return MISMATCH
    first = <cnp.ndarray>values[0]
    ndim = cnp.PyArray_NDIM(first)
    shape = cnp.PyArray_DIMS(first)
    for i in range(n):
        if type(values[i]) is not cnp.ndarray:
            return MISMATCH
        value = <cnp.ndarray>values[i]
        if cnp.PyArray_NDIM(value) != ndim or not cnp.PyArray_EquivTypes(
                <cnp.dtype>cnp.PyArray_DESCR(value), <cnp.dtype>cnp.PyArray_DESCR(first)):
            return MISMATCH
        for k in range(ndim):
            if cnp.PyArray_DIMS(value)[k] != shape[k]:
                return MISMATCH
        if not cnp.PyArray_IS_C_CONTIGUOUS(value):
            out = STRIDED
    return out


def copy_rows(list values, cnp.ndarray out):
    """Copy C-contiguous arrays into the rows of ``out``, one after another.

    Args:
        values (List[NDArray]): Arrays :func:`match_rows` found :data:`CONTIGUOUS`.
        out (NDArray): A C-contiguous array of ``len(values)`` rows of their dtype and shape.

    Raises:
        ValueError: If ``out`` is not such an array.
    """
    cdef Py_ssize_t i, n = len(values)
    cdef Py_ssize_t row
    cdef char *dst
    cdef cnp.ndarray value
    if not cnp.PyArray_IS_C_CONTIGUOUS(out) or cnp.PyArray_NDIM(out) < 1 or \
            cnp.PyArray_DIMS(out)[0] != n or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("copy_rows needs a writable C-contiguous array of one row per value")
    row = cnp.PyArray_NBYTES(out) // n if n else 0
    dst = <char *>cnp.PyArray_DATA(out)
    for i in range(n):
        value = <cnp.ndarray>values[i]
        if type(value) is not cnp.ndarray or not cnp.PyArray_IS_C_CONTIGUOUS(value) or \
                cnp.PyArray_NBYTES(value) != row:
            raise ValueError(f"copy_rows: value {i} is not a C-contiguous array of {row} bytes")
        memcpy(dst + i * row, cnp.PyArray_DATA(value), row)
