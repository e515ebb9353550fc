# cython: language_level=3
"""Collation kernels: stack a batch's same-shape, same-dtype arrays into one array; pack a
column of strings into one buffer and back.

Torch's ``default_collate`` turns each sample's array into a tensor and stacks those; checking
and copying the rows one by one in Python costs ~2 us a row, more than decoding the row. Here the
check is one pass in C and the copy one ``memcpy`` a row.

A DataLoader worker sends a chunk's strings to the main process: pickled one by one (an opcode
and a memo entry each) that cost ~0.15 us a string, as much as decoding its row. Packed, they
are one ``memcpy`` each, and the main process makes each string straight from its bytes.
"""

cimport numpy as cnp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_New, PyDict_SetItem
from cpython.list cimport PyList_GetSlice
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy


cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object text, Py_ssize_t* size) except NULL
    object PyUnicode_New(Py_ssize_t size, unsigned int maxchar)
    void* PyUnicode_DATA(object text)

cdef extern from *:
    """
    /* Whether s[0..n) is all ASCII (checked 8 bytes at a time). */
    static int ss_ascii(const char *s, Py_ssize_t n) {
        Py_ssize_t i = 0;
        uint64_t w, acc = 0;
        for (; n - i >= 8; i += 8) { memcpy(&w, s + i, 8); acc |= w; }
        for (; i < n; i++) acc |= (unsigned char)s[i];
        return !(acc & 0x8080808080808080ULL);
    }
    """
    int ss_ascii(const char* s, Py_ssize_t n) noexcept nogil

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


def pack_text(list values):
    """Pack a list of only ``str`` or only ``bytes`` into two buffers (see :func:`unpack_text`).

    Args:
        values (List[Union[str, bytes]]): The values, all ``str`` or all ``bytes``.

    Returns:
        Tuple[bytes, bytes]: Each value's end in the data (int64, native order), and the data:
            the values' bytes (strings UTF-8 encoded) one after another.

    Raises:
        TypeError: A value is not of the first one's type (``str`` or ``bytes``).
        UnicodeEncodeError: A string holds a lone surrogate (no UTF-8 for it).
    """
    cdef Py_ssize_t i, n = len(values), size, total = 0
    cdef bint text = n > 0 and type(values[0]) is str
    cdef const char* src
    cdef object value
    ends = PyBytes_FromStringAndSize(NULL, n * sizeof(int64_t))
    cdef int64_t* end = <int64_t*>PyBytes_AS_STRING(ends)
    for i in range(n):
        value = values[i]
        if text and type(value) is str:
            PyUnicode_AsUTF8AndSize(value, &size)
        elif not text and type(value) is bytes:
            size = PyBytes_GET_SIZE(value)
        else:
            raise TypeError(f"pack_text: value {i} is a {type(value).__name__}, not "
                            f"{'str' if text else 'bytes'}")
        total += size
        end[i] = total
    data = PyBytes_FromStringAndSize(NULL, total)
    cdef char* dst = PyBytes_AS_STRING(data)
    for i in range(n):
        value = values[i]
        if text:
            src = PyUnicode_AsUTF8AndSize(value, &size)  # (cached by the first pass)
        else:
            src = PyBytes_AS_STRING(value)
            size = PyBytes_GET_SIZE(value)
        memcpy(dst, src, size)
        dst += size
    return ends, data


def unpack_text(const unsigned char[::1] ends not None, const unsigned char[::1] data not None,
                bint text):
    """The values :func:`pack_text` packed.

    Args:
        ends (buffer): Each value's end in ``data`` (int64, native order).
        data (buffer): The values' bytes.
        text (bool): Whether the values are strings (UTF-8) or bytes.

    Returns:
        List[Union[str, bytes]]: The values.

    Raises:
        ValueError: The ends do not describe ``data`` (not ascending, or past its end).
        UnicodeDecodeError: A string's bytes are not UTF-8.
    """
    cdef Py_ssize_t i, n = ends.shape[0] // sizeof(int64_t), start = 0, stop
    cdef const char* base = <const char*>&data[0] if data.shape[0] else NULL
    cdef int64_t at
    cdef object value
    if ends.shape[0] % sizeof(int64_t):
        raise ValueError("unpack_text: the ends are not whole int64s")
    cdef list out = [None] * n
    for i in range(n):
        memcpy(&at, &ends[i * sizeof(int64_t)], sizeof(int64_t))
        if at < start or at > data.shape[0]:
            raise ValueError(f"unpack_text: value {i} ends at {at}, outside [{start}, "
                             f"{data.shape[0]}]")
        stop = <Py_ssize_t>at
        if text and stop - start > 1 and ss_ascii(base + start, stop - start):
            # (the decoder's own ASCII path costs ~2x this: its setup, per value)
            value = PyUnicode_New(stop - start, 127)
            memcpy(PyUnicode_DATA(value), base + start, stop - start)
            out[i] = value
        elif text:
            out[i] = PyUnicode_DecodeUTF8(base + start, stop - start, "strict")
        else:
            out[i] = PyBytes_FromStringAndSize(base + start, stop - start)
        start = stop
    return out


def list_batches(list values, Py_ssize_t size):
    """``values`` cut into lists of ``size`` (the last one shorter if need be).

    Args:
        values (List[Any]): The values.
        size (int): Values a list (positive).

    Returns:
        List[List[Any]]: The lists, in order.

    Raises:
        ValueError: If ``size`` is not positive.
    """
    cdef Py_ssize_t at, n = len(values)
    if size <= 0:
        raise ValueError(f"list_batches: size must be positive, not {size}")
    return [PyList_GetSlice(values, at, min(at + size, n)) for at in range(0, n, size)]


def batch_dicts(tuple keys, list parts):
    """``[dict(zip(keys, values)) for values in zip(*parts)]``, without a ``zip`` for each dict
    (a dict of two keys: ~0.15 us, against ~0.55 us).

    Args:
        keys (Tuple[Any, ...]): The dicts' keys.
        parts (List[Sequence[Any]]): Each key's values, one for each dict, in order (as many
            sequences as keys).

    Returns:
        List[Dict[Any, Any]]: As many dicts as the shortest sequence holds values.

    Raises:
        ValueError: If there are not as many sequences as keys.
    """
    cdef Py_ssize_t i, k, n, width = len(keys)
    cdef list columns
    cdef dict out
    if len(parts) != width:
        raise ValueError(f"batch_dicts: {len(parts)} sequences of values for {width} keys")
    columns = [part if type(part) is list else list(part) for part in parts]
    n = min([len(column) for column in columns]) if width else 0
    cdef list dicts = [None] * n
    for i in range(n):
        out = PyDict_New()
        for k in range(width):
            PyDict_SetItem(out, keys[k], (<list>columns[k])[i])
        dicts[i] = out
    return dicts
