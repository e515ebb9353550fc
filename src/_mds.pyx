# cython: language_level=3
"""MDS shard kernels: validate a raw shard's offset table and cut rows into column values.

A raw MDS shard is::

    [num_samples: u32] [offsets: (num_samples + 1) x u32] [config JSON] [rows]

and a row is ``[sizes of the variable-size columns: u32 each] [column values in order]``.

The shard is untrusted input: :func:`check_shard` validates the whole offset table against the
buffer size once, and :func:`decode_row` re-checks the row's bounds and column sizes before it
reads a byte, raising ``ValueError`` naming the file. Nothing here reads outside the buffer.
"""

cimport numpy as cnp
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_FromLongLong
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as np

cnp.import_array()

# Column kinds: how decode_row turns a column's bytes into a value.
KIND_BYTES = 0  # the bytes themselves
KIND_STR = 1  # UTF-8 text
KIND_CALL = 2  # decoders[col](bytes)
KIND_INT64 = 3  # little-endian int64 -> int (the ``int`` encoding)
KIND_NDARRAY = 4  # the ``ndarray[:DTYPE[:SHAPE]]`` encoding, cut here; see ``arrays``

# ``ndarray`` dtype codes (as written by the NDArray encoding) -> NumPy dtype.
_NDARRAY_DTYPES = {8: np.dtype("uint8"), 9: np.dtype("int8"), 16: np.dtype("uint16"),
                   17: np.dtype("int16"), 18: np.dtype("float16"), 32: np.dtype("uint32"),
                   33: np.dtype("int32"), 34: np.dtype("float32"), 64: np.dtype("uint64"),
                   65: np.dtype("int64"), 66: np.dtype("float64")}
# Little-endian hosts only: values are stored little-endian and copied as they are.
_NATIVE_LE = np.little_endian
# Deepest ndarray cut here; deeper ones go to the column's Python decoder.
DEF _MAX_NDIM = 32


cdef inline uint32_t _u32(const unsigned char* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


def check_shard(const unsigned char[::1] buf not None, Py_ssize_t samples, str filename):
    """Validate a raw shard's header and offset table.

    Args:
        buf: The whole raw shard.
        samples (int): Sample count the index declares for this shard.
        filename (str): Shard path, named in errors.

    Returns:
        int: The offset of the first row (the end of header, offsets and config).

    Raises:
        ValueError: Truncated shard, sample count mismatch, offsets out of order or past the end.
    """
    cdef Py_ssize_t size = buf.shape[0]
    cdef Py_ssize_t n, i, need, prev, off
    if size < 8:
        raise ValueError(f"{filename}: shard is truncated ({size} bytes, need at least 8); "
                         f"delete it or re-download it")
    n = _u32(&buf[0])
    if n != samples:
        raise ValueError(f"{filename}: shard holds {n} samples but the index says {samples}")
    need = 4 + 4 * (n + 1)
    if size < need:
        raise ValueError(f"{filename}: shard is truncated ({size} bytes, its offset table alone "
                         f"needs {need}); delete it or re-download it")
    prev = need
    for i in range(n + 1):
        off = _u32(&buf[4 + 4 * i])
        if off < prev:
            if i == 0:
                raise ValueError(f"{filename}: first sample offset {off} points into the header")
            raise ValueError(f"{filename}: sample offsets are not in order at sample {i - 1} "
                             f"({prev} > {off})")
        if off > size:
            raise ValueError(f"{filename}: sample {i - 1 if i else 0} ends at offset {off}, past "
                             f"the end of the shard ({size} bytes); the shard is truncated or "
                             f"corrupt")
        prev = off
    return _u32(&buf[4])


cdef inline (Py_ssize_t, Py_ssize_t) _row_bounds(const unsigned char[::1] buf, Py_ssize_t idx,
                                                 Py_ssize_t samples, str filename) except *:
    cdef Py_ssize_t size = buf.shape[0]
    cdef Py_ssize_t begin, end
    if idx < 0 or idx >= samples:
        raise IndexError(f"{filename}: relative sample index {idx} is out of range "
                         f"[0, {samples})")
    if size < 4 + 4 * (idx + 2):
        raise ValueError(f"{filename}: shard is truncated (offset table cut short)")
    begin = _u32(&buf[4 + 4 * idx])
    end = _u32(&buf[8 + 4 * idx])
    if begin > end or end > size:
        raise ValueError(f"{filename}: sample {idx} spans bytes [{begin}, {end}) which is not "
                         f"inside the shard ({size} bytes)")
    return begin, end


def row_bytes(const unsigned char[::1] buf not None, Py_ssize_t idx, Py_ssize_t samples,
              str filename):
    """Get one row's bytes.

    Args:
        buf: The whole raw shard.
        idx (int): Row index in the shard.
        samples (int): Sample count of the shard.
        filename (str): Shard path, named in errors.

    Returns:
        bytes: The row.
    """
    cdef Py_ssize_t begin, end
    begin, end = _row_bounds(buf, idx, samples, filename)
    return PyBytes_FromStringAndSize(<const char*>&buf[0] + begin, end - begin)


cdef object _ndarray(const char* p, Py_ssize_t size, object spec, object decoder):
    """Cut an ``ndarray`` column value into a new (writable, owning) array.

    ``spec`` is ``(dtype or None, shape tuple or None)``. Anything unusual (an unknown dtype code,
    a size that does not match the shape, a very deep array, a big-endian host) is handed to the
    column's Python decoder, which returns the same value or raises the same error.
    """
    cdef Py_ssize_t pos = 0, ndim, width, i, count = 1, need
    cdef cnp.npy_intp dims[_MAX_NDIM]
    cdef unsigned char byte
    cdef uint64_t dim
    cdef object dtype = spec[0]
    cdef object shape = spec[1]
    cdef cnp.ndarray arr
    if not _NATIVE_LE:
        return decoder(PyBytes_FromStringAndSize(p, size))
    if dtype is None:
        if size < 1:
            return decoder(PyBytes_FromStringAndSize(p, size))
        dtype = _NDARRAY_DTYPES.get(<unsigned char>p[0])
        if dtype is None:
            return decoder(PyBytes_FromStringAndSize(p, size))
        pos = 1
    if shape is None:
        if size < pos + 1:
            return decoder(PyBytes_FromStringAndSize(p, size))
        byte = <unsigned char>p[pos]
        pos += 1
        ndim = byte >> 2
        width = 1 << (byte & 3)
        if ndim < 1 or ndim > _MAX_NDIM or size < pos + ndim * width:
            return decoder(PyBytes_FromStringAndSize(p, size))
        for i in range(ndim):
            dim = 0
            if width == 1:
                dim = <unsigned char>p[pos]
            elif width == 2:
                dim = (<unsigned char>p[pos]) | (<uint64_t>(<unsigned char>p[pos + 1]) << 8)
            elif width == 4:
                dim = _u32(<const unsigned char*>p + pos)
            else:
                dim = _u32(<const unsigned char*>p + pos) | \
                    (<uint64_t>_u32(<const unsigned char*>p + pos + 4) << 32)
            pos += width
            if dim == 0 or dim > <uint64_t>size:
                return decoder(PyBytes_FromStringAndSize(p, size))
            dims[i] = <cnp.npy_intp>dim
            count *= <Py_ssize_t>dim
            if count > size:
                return decoder(PyBytes_FromStringAndSize(p, size))
    else:
        ndim = len(shape)
        if ndim < 1 or ndim > _MAX_NDIM:
            return decoder(PyBytes_FromStringAndSize(p, size))
        for i in range(ndim):
            dims[i] = <cnp.npy_intp>shape[i]
            count *= dims[i]
            if count > size:
                return decoder(PyBytes_FromStringAndSize(p, size))
    need = count * (<cnp.dtype>dtype).itemsize
    if need != size - pos:
        return decoder(PyBytes_FromStringAndSize(p, size))
    arr = cnp.PyArray_EMPTY(<int>ndim, dims, (<cnp.dtype>dtype).type_num, 0)
    if need:
        memcpy(cnp.PyArray_DATA(arr), p + pos, need)
    return arr


cdef dict _decode(const unsigned char[::1] buf, Py_ssize_t begin, Py_ssize_t end, Py_ssize_t idx,
                  tuple names, const int64_t[::1] kinds, tuple decoders,
                  const int64_t[::1] fixed, tuple arrays, str filename):
    cdef Py_ssize_t ncol = fixed.shape[0]
    cdef Py_ssize_t col, k = 0, size, pos, total = 0, num_var = 0
    cdef Py_ssize_t length = end - begin
    cdef const char* base = <const char*>&buf[0] + begin
    cdef int64_t kind
    cdef int64_t i64
    cdef dict out = {}
    cdef object value
    for col in range(ncol):
        if fixed[col] < 0:
            num_var += 1
    if length < 4 * num_var:
        raise ValueError(f"{filename}: sample {idx} is {length} bytes, too short for its "
                         f"{num_var} column sizes")
    pos = 4 * num_var
    for col in range(ncol):
        size = fixed[col]
        if size < 0:
            size = _u32(<const unsigned char*>base + 4 * k)
            k += 1
        total = pos + size
        if total > length:
            raise ValueError(f"{filename}: sample {idx} column {names[col]!r} runs past the end "
                             f"of the sample ({total} > {length} bytes)")
        kind = kinds[col]
        if kind == 0:
            value = PyBytes_FromStringAndSize(base + pos, size)
        elif kind == 1:
            value = PyUnicode_DecodeUTF8(base + pos, size, "strict")
        elif kind == 3 and size >= 8 and _NATIVE_LE:
            memcpy(&i64, base + pos, 8)
            value = PyLong_FromLongLong(i64)
        elif kind == 4 and arrays is not None:
            value = _ndarray(base + pos, size, arrays[col], decoders[col])
        else:
            value = decoders[col](PyBytes_FromStringAndSize(base + pos, size))
        out[names[col]] = value
        pos = total
    return out


cdef _check_columns(tuple names, const int64_t[::1] kinds, tuple decoders,
                    const int64_t[::1] fixed, tuple arrays, str where):
    cdef Py_ssize_t col
    if kinds.shape[0] != fixed.shape[0] or len(names) != fixed.shape[0] \
            or len(decoders) != fixed.shape[0] \
            or (arrays is not None and len(arrays) != fixed.shape[0]):
        raise ValueError(f"{where}: column arrays differ in length")
    for col in range(kinds.shape[0]):
        if kinds[col] == 4:
            spec = None if arrays is None else arrays[col]
            if not (isinstance(spec, tuple) and len(spec) == 2
                    and (spec[0] is None or isinstance(spec[0], np.dtype))
                    and (spec[1] is None or isinstance(spec[1], tuple))):
                raise ValueError(f"{where}: ndarray column {col} needs a (dtype, shape) spec")
            if spec[1] is not None:
                for dim in spec[1]:
                    if not isinstance(dim, int) or dim < 1:
                        raise ValueError(f"{where}: ndarray column {col} has a bad shape")


def decode_row(const unsigned char[::1] buf not None, Py_ssize_t idx, Py_ssize_t samples,
               tuple names, const int64_t[::1] kinds not None, tuple decoders,
               const int64_t[::1] fixed not None, str filename, tuple arrays=None):
    """Decode one row into a sample dict.

    Args:
        buf: The whole raw shard (already checked with :func:`check_shard`).
        idx (int): Row index in the shard.
        samples (int): Sample count of the shard.
        names (tuple): Column names, in shard order.
        kinds (int64 array): Per column: 0 bytes, 1 UTF-8 str, 2 call ``decoders[col]``,
            3 little-endian int64 to ``int``, 4 ``ndarray`` encoding cut here (needs
            ``arrays``); 3 and 4 fall back to ``decoders[col]`` for anything unusual.
        decoders (tuple): Per column decode callables (used for kind 2).
        fixed (int64 array): Per column fixed size in bytes, or -1 if variable.
        filename (str): Shard path, named in errors.
        arrays (tuple, optional): Per column, for kind 4: ``(dtype or None, shape or None)``,
            what the ``ndarray`` encoding string fixes (``None`` for other kinds).

    Returns:
        dict: Column name -> decoded value.

    Raises:
        IndexError: ``idx`` out of range.
        ValueError: The row's bytes are inconsistent with the shard or its columns.
    """
    cdef Py_ssize_t begin, end
    _check_columns(names, kinds, decoders, fixed, arrays, "decode_row")
    begin, end = _row_bounds(buf, idx, samples, filename)
    return _decode(buf, begin, end, idx, names, kinds, decoders, fixed, arrays, filename)


def decode_rows(const unsigned char[::1] buf not None, const int64_t[::1] idxs not None,
                Py_ssize_t samples, tuple names, const int64_t[::1] kinds not None,
                tuple decoders, const int64_t[::1] fixed not None, str filename,
                tuple arrays=None):
    """Decode many rows of one shard (see :func:`decode_row`).

    Returns:
        list: One sample dict per index, in order.
    """
    cdef Py_ssize_t i, begin, end
    cdef list out = []
    _check_columns(names, kinds, decoders, fixed, arrays, "decode_rows")
    for i in range(idxs.shape[0]):
        begin, end = _row_bounds(buf, idxs[i], samples, filename)
        out.append(_decode(buf, begin, end, idxs[i], names, kinds, decoders, fixed, arrays,
                           filename))
    return out
