# cython: language_level=3
"""MDS shard kernels: validate a raw shard's offset table and cut rows into column values.

A raw MDS shard is::

    [num_samples: u32] [offsets: (num_samples + 1) x u32] [config JSON] [rows]

and a row is ``[sizes of the variable-size columns: u32 each] [column values in order]``.

The shard is untrusted input: :func:`check_shard` validates the whole offset table against the
buffer size once, and :meth:`Columns.decode` re-checks the row's bounds and column sizes before it
reads a byte, raising ``ValueError`` naming the file. Nothing here reads outside the buffer. Sizes
come from untrusted bytes or an untrusted index, so every bound is checked as ``size > limit - pos``
(or by division), never as ``pos + size > limit``, which can wrap around and pass.

An error raised while a column value is decoded (by the kernel or the column's Python decoder)
is given the shard, sample and column: see :func:`_decode_failed`.
"""

cimport numpy as cnp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.long cimport PyLong_FromLongLong
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

import sys

import numpy as np

cnp.import_array()

# Column kinds: how Columns.decode turns a column's bytes into a value.
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
# Whether exceptions take notes (Python 3.11+); a module global so tests can try the other way.
_ADD_NOTE = sys.version_info >= (3, 11)
# The module of this package's own column decoders (see _decode_failed).
_OWN_DECODERS = "streaming.format.mds.encodings"


cdef inline uint32_t _u32(const unsigned char* p) noexcept nogil:
    return ((<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16)
            | (<uint32_t>p[3] << 24))


cdef extern from *:
    """
    /* Whether s[0..n) is well-formed UTF-8: exactly what CPython's strict decoder accepts (no
       overlong forms, no surrogates, nothing past U+10FFFF). ASCII is checked 8 bytes at a
       time. */
    static int ss_utf8_ok(const unsigned char *s, Py_ssize_t n) {
        Py_ssize_t i = 0;
        while (i < n) {
            while (n - i >= 8) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (w & 0x8080808080808080ULL) break;
                i += 8;
            }
            if (i >= n) break;
            unsigned char c = s[i];
            if (c < 0x80) { i++; continue; }
            if (c < 0xC2) return 0;
            if (c < 0xE0) {
                if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80) return 0;
                i += 2;
            } else if (c < 0xF0) {
                if (n - i < 3) return 0;
                unsigned char c1 = s[i + 1];
                if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80) return 0;
                if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return 0;
                i += 3;
            } else if (c < 0xF5) {
                if (n - i < 4) return 0;
                unsigned char c1 = s[i + 1];
                if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 ||
                    (s[i + 3] & 0xC0) != 0x80) return 0;
                if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;
                i += 4;
            } else {
                return 0;
            }
        }
        return 1;
    }
    """
    int ss_utf8_ok(const unsigned char* s, Py_ssize_t n) noexcept nogil


def utf8_ok(const unsigned char[::1] data not None):
    """Whether ``data`` is UTF-8 that ``bytes.decode('utf-8')`` accepts (for tests).

    Args:
        data (buffer): The bytes.

    Returns:
        bool: Whether they decode.
    """
    return bool(ss_utf8_ok(&data[0] if data.shape[0] else NULL, data.shape[0]))


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
    if n > (size - 8) // 4:  # (4 + 4 * (n + 1) could wrap where Py_ssize_t is 32 bits)
        raise ValueError(f"{filename}: shard is truncated ({size} bytes, its offset table alone "
                         f"needs {4 * (<int64_t>n + 2)}); delete it or re-download it")
    need = 4 + 4 * (n + 1)
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


cdef inline bint _row_ok(const unsigned char* buf, Py_ssize_t size, Py_ssize_t idx,
                        Py_ssize_t samples, Py_ssize_t* begin, Py_ssize_t* end) noexcept:
    """Whether row ``idx``'s bounds in the shard are good (``begin``/``end`` are set once the
    offset table is known to hold them); :func:`_row_bounds` raises why they are not."""
    # The row's two offsets end at 4 + 4 * (idx + 2); computed that way it could wrap for a
    # huge ``samples``.
    if idx < 0 or idx >= samples or size < 12 or idx > (size - 12) // 4:
        return False
    begin[0] = _u32(buf + 4 + 4 * idx)
    end[0] = _u32(buf + 8 + 4 * idx)
    return begin[0] <= end[0] <= size


cdef inline (Py_ssize_t, Py_ssize_t) _row_bounds(const unsigned char* buf, Py_ssize_t size,
                                                 Py_ssize_t idx, Py_ssize_t samples,
                                                 str filename) except *:
    cdef Py_ssize_t begin, end
    if _row_ok(buf, size, idx, samples, &begin, &end):
        return begin, end
    # Bad: say why.
    if idx < 0 or idx >= samples:
        raise IndexError(f"{filename}: relative sample index {idx} is out of range "
                         f"[0, {samples})")
    if size < 12 or idx > (size - 12) // 4:
        raise ValueError(f"{filename}: shard is truncated (offset table cut short)")
    raise ValueError(f"{filename}: sample {idx} spans bytes [{begin}, {end}) which is not "
                     f"inside the shard ({size} bytes)")


cdef inline const unsigned char* _base(const unsigned char[::1] buf):
    # An empty buffer has no first byte; every reader of it checks the size first.
    return &buf[0] if buf.shape[0] else NULL


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
    cdef const unsigned char* base = _base(buf)
    begin, end = _row_bounds(base, buf.shape[0], idx, samples, filename)
    return PyBytes_FromStringAndSize(<const char*>base + begin, end - begin)


def rows_span(const unsigned char[::1] buf not None, const int64_t[::1] rows not None,
              Py_ssize_t samples, str filename):
    """The bytes that rows read in order span in the shard.

    Args:
        buf: The whole raw shard.
        rows (int64 array): Rows, as read.
        samples (int): Sample count of the shard.
        filename (str): Shard path, named in errors.

    Returns:
        Optional[Tuple[int, int]]: Where the first row begins and the last one ends, or ``None``
            if ``rows`` is empty or not strictly increasing.

    Raises:
        IndexError: The first or last row is out of range.
        ValueError: Their bounds are not inside the shard.
    """
    cdef Py_ssize_t n = rows.shape[0], i, begin, end, unused
    cdef const unsigned char* base = _base(buf)
    if n == 0:
        return None
    for i in range(1, n):
        if rows[i] <= rows[i - 1]:
            return None
    begin, unused = _row_bounds(base, buf.shape[0], rows[0], samples, filename)
    unused, end = _row_bounds(base, buf.shape[0], rows[n - 1], samples, filename)
    if end < begin:
        return None
    return begin, end


cdef object _array_layout(const char* p, Py_ssize_t size, object spec, cnp.npy_intp* dims,
                          int* ndim_out, Py_ssize_t* data_at):
    """The dtype of an ``ndarray`` column value if this kernel cuts it (then its ``ndim``
    dims and its elements' offset in ``p`` are set), else ``None``: an unknown dtype code, a
    size that does not match the shape, a very deep array, a big-endian host (the column's
    Python decoder decides).

    ``spec`` is ``(dtype or None, shape tuple or None)``.
    """
    cdef Py_ssize_t pos = 0, ndim, width, i, count = 1, need
    cdef unsigned char byte
    cdef uint64_t dim
    cdef object dtype = spec[0]
    cdef object shape = spec[1]
    if not _NATIVE_LE:
        return None
    if dtype is None:
        if size < 1:
            return None
        dtype = _NDARRAY_DTYPES.get(<unsigned char>p[0])
        if dtype is None:
            return None
        pos = 1
    if shape is None:
        if size < pos + 1:
            return None
        byte = <unsigned char>p[pos]
        pos += 1
        ndim = byte >> 2
        width = 1 << (byte & 3)
        if ndim < 1 or ndim > _MAX_NDIM or size < pos + ndim * width:
            return None
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
            # count * dim <= size, checked without multiplying (which could wrap).
            if dim == 0 or dim > <uint64_t>(size // count):
                return None
            dims[i] = <cnp.npy_intp>dim
            count *= <Py_ssize_t>dim
    else:
        ndim = len(shape)
        if ndim < 1 or ndim > _MAX_NDIM:
            return None
        for i in range(ndim):
            dims[i] = <cnp.npy_intp>shape[i]  # (Columns checked that the product fits)
            if dims[i] > size // count:  # count * dims[i] > size, without wrapping
                return None
            count *= dims[i]
    need = count * (<cnp.dtype>dtype).itemsize
    if need != size - pos:
        return None
    ndim_out[0] = <int>ndim
    data_at[0] = pos
    return dtype


cdef object _ndarray(const char* p, Py_ssize_t size, object spec, object decoder):
    """Cut an ``ndarray`` column value into a new (writable, owning) array.

    ``spec`` is ``(dtype or None, shape tuple or None)``. Anything unusual (see
    :func:`_array_layout`) is handed to the column's Python decoder, which returns the same
    value or raises the same error.
    """
    cdef cnp.npy_intp dims[_MAX_NDIM]
    cdef int ndim = 0
    cdef Py_ssize_t pos = 0
    cdef cnp.ndarray arr
    dtype = _array_layout(p, size, spec, dims, &ndim, &pos)
    if dtype is None:
        return decoder(PyBytes_FromStringAndSize(p, size))
    arr = cnp.PyArray_EMPTY(ndim, dims, (<cnp.dtype>dtype).type_num, 0)
    if size - pos:
        memcpy(cnp.PyArray_DATA(arr), p + pos, size - pos)
    return arr


cdef class Columns:
    """How a shard's rows are cut into column values: checked once, shared by every decode.

    Args:
        names (tuple): Column names, in shard order.
        kinds (int64 array): Per column: 0 bytes, 1 UTF-8 str, 2 call ``decoders[col]``,
            3 little-endian int64 to ``int``, 4 ``ndarray`` encoding cut here (needs
            ``arrays``); 3 and 4 fall back to ``decoders[col]`` for anything unusual.
        decoders (tuple): Per column decode callables (used for kind 2).
        fixed (int64 array): Per column fixed size in bytes, or -1 if variable.
        arrays (tuple, optional): Per column, for kind 4: ``(dtype or None, shape or None)``,
            what the ``ndarray`` encoding string fixes (``None`` for other kinds).

    Raises:
        ValueError: The per-column arguments are inconsistent.
    """

    cdef tuple names
    cdef tuple _schema
    cdef tuple decoders
    cdef tuple arrays
    cdef const int64_t[::1] kinds
    cdef const int64_t[::1] fixed
    cdef Py_ssize_t num_var

    def __init__(self, tuple names, const int64_t[::1] kinds not None, tuple decoders,
                 const int64_t[::1] fixed not None, tuple arrays=None):
        cdef Py_ssize_t col
        if names is None or decoders is None:
            raise ValueError("Columns: names and decoders are required")
        if kinds.shape[0] != fixed.shape[0] or len(names) != fixed.shape[0] \
                or len(decoders) != fixed.shape[0] \
                or (arrays is not None and len(arrays) != fixed.shape[0]):
            raise ValueError("Columns: column arrays differ in length")
        for col in range(kinds.shape[0]):
            if kinds[col] == 4:
                spec = None if arrays is None else arrays[col]
                if not (isinstance(spec, tuple) and len(spec) == 2
                        and (spec[0] is None or isinstance(spec[0], np.dtype))
                        and (spec[1] is None or isinstance(spec[1], tuple))):
                    raise ValueError(f"Columns: ndarray column {col} needs a (dtype, shape) spec")
                if spec[1] is not None:
                    count = 1
                    for dim in spec[1]:
                        if not isinstance(dim, int) or dim < 1:
                            raise ValueError(f"Columns: ndarray column {col} has a bad shape")
                        count *= dim
                    # Every dim, and the product, must fit in an npy_intp.
                    if count >= 1 << 63:
                        raise ValueError(f"Columns: ndarray column {col} has too many elements "
                                         f"({count})")
        self.names = names
        self.kinds = kinds
        self.decoders = decoders
        self.fixed = fixed
        self.arrays = arrays
        self.num_var = 0
        for col in range(fixed.shape[0]):
            if fixed[col] < 0:
                self.num_var += 1
        self._schema = (names, tuple(np.asarray(kinds).tolist()))

    @property
    def schema(self):
        """``(names, kinds)``: the column names and kinds (see the class), as tuples."""
        return self._schema

    def __reduce__(self):
        return Columns, (self.names, np.asarray(self.kinds), self.decoders,
                         np.asarray(self.fixed), self.arrays)

    def decode(self, const unsigned char[::1] buf not None, Py_ssize_t idx, Py_ssize_t samples,
               str filename):
        """Decode one row of a shard into a sample dict.

        Args:
            buf: The whole raw shard (already checked with :func:`check_shard`), or its
                leading part: every offset is checked against its length.
            idx (int): Row index in the shard.
            samples (int): Sample count of the shard.
            filename (str): Shard path, named in errors.

        Returns:
            dict: Column name -> decoded value.

        Raises:
            IndexError: ``idx`` out of range.
            ValueError: The row's bytes are inconsistent with the shard or its columns.
        """
        cdef Py_ssize_t begin, end
        cdef const unsigned char* base = _base(buf)
        begin, end = _row_bounds(base, buf.shape[0], idx, samples, filename)
        return _decode(base, begin, end, idx, self, filename)


cdef dict _decode(const unsigned char* buf, Py_ssize_t begin, Py_ssize_t end, Py_ssize_t idx,
                  Columns cols, str filename, list sink=None):
    """Decode one row into a sample dict; or, given ``sink`` (a list per column), append each
    value to its column's list and return ``None``."""
    cdef Py_ssize_t ncol = cols.fixed.shape[0]
    cdef Py_ssize_t col = 0, k = 0, size = 0, pos, num_var = cols.num_var
    cdef Py_ssize_t length = end - begin
    cdef const char* base = <const char*>buf + begin
    cdef int64_t kind
    cdef int64_t i64
    cdef dict out = {}
    cdef object value
    if length < 4 * num_var:
        raise ValueError(f"{filename}: sample {idx} is {length} bytes, too short for its "
                         f"{num_var} column sizes")
    pos = 4 * num_var
    # One try around the loop (entering it costs next to nothing; one per column would cost
    # more): whatever a column's decoding raises is given the shard, sample and column.
    try:
        for col in range(ncol):
            size = cols.fixed[col]
            if size < 0:
                size = _u32(<const unsigned char*>base + 4 * k)
                k += 1
            # Not ``pos + size > length``: a huge fixed size from the index would wrap.
            if size > length - pos:
                break  # raised below, outside the try
            kind = cols.kinds[col]
            if kind == 0:
                value = PyBytes_FromStringAndSize(base + pos, size)
            elif kind == 1:
                value = PyUnicode_DecodeUTF8(base + pos, size, "strict")
            elif kind == 3 and size >= 8 and _NATIVE_LE:
                memcpy(&i64, base + pos, 8)
                value = PyLong_FromLongLong(i64)
            elif kind == 4 and cols.arrays is not None:
                value = _ndarray(base + pos, size, cols.arrays[col], cols.decoders[col])
            else:
                value = cols.decoders[col](PyBytes_FromStringAndSize(base + pos, size))
            if sink is None:
                out[cols.names[col]] = value
            else:
                (<list>sink[col]).append(value)
            pos += size
        else:
            return out if sink is None else None
    except Exception as err:
        replacement = _decode_failed(err, filename, idx, cols.names[col],
                                     None if cols.kinds[col] < 2 else cols.decoders[col])
        if replacement is None:
            raise
        raise replacement from err
    raise ValueError(f"{filename}: sample {idx} column {cols.names[col]!r} runs past the end of "
                     f"the sample ({pos} + {size} > {length} bytes)")


cdef object _decode_failed(Exception err, str filename, Py_ssize_t idx, object name,
                           object decoder):
    """Name the shard, sample and column in an error raised while decoding a column value.

    The error keeps its type where it can, since callers may catch it: on Python 3.11+ it gets a
    note (shown with its traceback). Python 3.10 has no notes, so there an error from the kernel
    or from this package's own decoders (``decoder`` is ``None`` or one of
    :mod:`streaming.format.mds.encodings`) becomes a ``ValueError`` naming the file, chained to
    the original: those errors mean the shard's bytes are corrupt. An error from a user's decoder
    is left as it is (its ``__notes__`` get the note, for tools that show them), since the user's
    code may catch its type; so is a ``MemoryError``, which says nothing about the bytes.

    An ``IndexError`` always becomes a ``ValueError``: out of ``__getitem__`` it means "no such
    sample", and iterating a dataset by index would silently stop at the corrupt sample.

    Returns:
        Optional[Exception]: What to raise instead of ``err``, or ``None`` to re-raise ``err``.
    """
    where = f"{filename}: sample {idx}, column {name!r}: could not decode the value"
    if isinstance(err, IndexError) or (
            not _ADD_NOTE and not isinstance(err, MemoryError)
            and (decoder is None or getattr(decoder, "__module__", None) == _OWN_DECODERS)):
        return ValueError(f"{where} ({type(err).__name__}: {err}); the shard is corrupt or its "
                          f"index entry does not describe it")
    if _ADD_NOTE:
        err.add_note(where)
        return None
    try:
        err.__notes__ = list(getattr(err, "__notes__", ())) + [where]
    except Exception:  # an exception type that takes no attributes: leave it be
        pass
    return None


cdef class Rows:
    """Decode rows of one or more shards lazily: one sample dict per ``next``.

    Decoding as the consumer asks (instead of a block of dicts at once) lets each sample's
    memory be reused for the next one: a burst of freshly allocated rows costs a page fault per
    4 KB when the C heap has shrunk in between, which dominated iteration over 8 KB rows.

    Args:
        shards (tuple): Per shard slot, ``(buf, samples, columns, filename)``: the whole raw
            shard (checked with :func:`check_shard`), its sample count, its :class:`Columns`
            and its path (named in errors). The buffers are held until the iterator is
            dropped.
        slots (int64 array, optional): Per position, which slot of ``shards`` it reads
            (``None``: every position reads slot 0).
        rows (int64 array): Per position, the row index within its shard.

    Raises:
        ValueError: ``slots`` and ``rows`` differ in length or a slot is out of range.
    """

    cdef list views  # keeps every buffer exported while its pointer is in use
    cdef list columns
    cdef list filenames
    cdef const unsigned char** bases
    cdef Py_ssize_t* sizes
    cdef Py_ssize_t* samples
    cdef Py_ssize_t num_slots
    cdef object slot_array
    cdef object row_array
    cdef const int64_t[::1] slots
    cdef const int64_t[::1] rows
    cdef bint one_slot
    cdef Py_ssize_t pos
    cdef object shared  # the shards' schema if they share it, else None (see schema)

    def __cinit__(self):
        self.num_slots = 0
        self.bases = NULL
        self.sizes = NULL
        self.samples = NULL

    def __init__(self, tuple shards not None, slots, rows not None):
        cdef Py_ssize_t i, n = len(shards)
        cdef const unsigned char[::1] view
        cdef Py_ssize_t s
        self.num_slots = 0  # exhausted until fully set up (see __next__)
        self.shared = None
        if n < 1:
            raise ValueError("Rows: no shards given")
        self.row_array = np.ascontiguousarray(rows, np.int64)
        self.rows = self.row_array
        self.one_slot = slots is None
        if not self.one_slot:
            self.slot_array = np.ascontiguousarray(slots, np.int64)
            self.slots = self.slot_array
            if self.slots.shape[0] != self.rows.shape[0]:
                raise ValueError("Rows: slots and rows differ in length")
            for i in range(self.slots.shape[0]):
                s = self.slots[i]
                if s < 0 or s >= n:
                    raise ValueError(f"Rows: slot {s} is out of range [0, {n})")
        PyMem_Free(self.bases)  # (in case __init__ is called again)
        PyMem_Free(self.sizes)
        PyMem_Free(self.samples)
        self.bases = NULL
        self.sizes = NULL
        self.samples = NULL
        self.bases = <const unsigned char**>PyMem_Malloc(n * sizeof(const unsigned char*))
        self.sizes = <Py_ssize_t*>PyMem_Malloc(n * sizeof(Py_ssize_t))
        self.samples = <Py_ssize_t*>PyMem_Malloc(n * sizeof(Py_ssize_t))
        if self.bases == NULL or self.sizes == NULL or self.samples == NULL:
            raise MemoryError()
        self.views = []
        self.columns = []
        self.filenames = []
        for i in range(n):
            buf, count, cols, filename = shards[i]
            if not isinstance(cols, Columns):
                raise ValueError("Rows: each shard needs a Columns")
            view = buf
            self.views.append(view)
            self.bases[i] = _base(view)
            self.sizes[i] = view.shape[0]
            self.samples[i] = count
            self.columns.append(cols)
            self.filenames.append(str(filename))
        first = (<Columns>self.columns[0]).schema
        self.shared = first if all((<Columns>c).schema == first for c in self.columns) else None
        self.num_slots = n
        self.pos = 0

    def __dealloc__(self):
        PyMem_Free(self.bases)
        PyMem_Free(self.sizes)
        PyMem_Free(self.samples)

    def __iter__(self):
        return self

    def __len__(self):
        return self.rows.shape[0] - self.pos if self.num_slots else 0

    def __next__(self):
        if self.num_slots == 0 or self.pos >= self.rows.shape[0]:
            raise StopIteration
        return self._next_row(None)

    cdef inline dict _next_row(self, list sink):
        """Decode the row at ``pos`` (there is one) and move on: its sample dict, or (given
        ``sink``) its values appended to their columns' lists (see :func:`_decode`)."""
        cdef Py_ssize_t slot, idx, begin, end
        slot = 0 if self.one_slot else self.slots[self.pos]
        idx = self.rows[self.pos]
        self.pos += 1
        filename = <str>self.filenames[slot]
        begin, end = _row_bounds(self.bases[slot], self.sizes[slot], idx, self.samples[slot],
                                 filename)
        return _decode(self.bases[slot], begin, end, idx, <Columns>self.columns[slot], filename,
                       sink)

    def schema(self):
        """The shards' column names and kinds (:attr:`Columns.schema`), if they all share them.

        Returns:
            Optional[Tuple[tuple, tuple]]: ``(names, kinds)``, or ``None`` if shards differ.
        """
        return self.shared

    cdef tuple _shared_schema(self, str method):
        """:meth:`schema`, or ValueError naming ``method`` if the shards' columns differ."""
        schema = self.schema()
        if schema is None:
            raise ValueError(f"Rows.{method}: the shards' columns differ")
        return schema

    cdef inline Py_ssize_t _stop(self, Py_ssize_t n):
        """Where the next ``n`` rows (fewer if fewer are left) end."""
        cdef Py_ssize_t left = self.rows.shape[0] - self.pos
        return self.rows.shape[0] if n > left else self.pos + max(n, 0)

    def decode_columns(self, Py_ssize_t n):
        """Decode the next ``n`` rows (fewer if fewer are left) a column at a time: each
        column's values, as the rows' sample dicts would hold them, in one list.

        Args:
            n (int): Rows to decode.

        Returns:
            List[list]: Per column (in :meth:`schema`'s order), its values.

        Raises:
            ValueError: The shards do not share their columns (see :meth:`schema`), or a row
                is corrupt (as :func:`next` raises it).
        """
        cdef Py_ssize_t stop
        if self.num_slots == 0:
            return []
        schema = self._shared_schema("decode_columns")
        sink = [[] for _ in schema[0]]
        stop = self._stop(n)
        while self.pos < stop:
            self._next_row(sink)
        return sink

    cdef Columns _cut(self, Py_ssize_t at, const unsigned char** value, Py_ssize_t* size):
        """Where each column's value of the row at position ``at`` is (``value[col]``,
        ``size[col]``), and the row's columns; ``None`` if its bounds or sizes are bad."""
        cdef Py_ssize_t slot, begin, end, length, pos, k, col
        cdef const unsigned char* row
        cdef Columns cols
        slot = 0 if self.one_slot else self.slots[at]
        if not _row_ok(self.bases[slot], self.sizes[slot], self.rows[at], self.samples[slot],
                       &begin, &end):
            return None
        row = self.bases[slot] + begin
        length = end - begin
        cols = <Columns>self.columns[slot]
        if length < 4 * cols.num_var:
            return None
        pos = 4 * cols.num_var
        k = 0
        for col in range(cols.fixed.shape[0]):
            size[col] = cols.fixed[col]
            if size[col] < 0:
                size[col] = _u32(row + 4 * k)
                k += 1
            if size[col] > length - pos:
                return None
            value[col] = row + pos
            pos += size[col]
        return cols

    def array_specs(self):
        """What the next row's ``ndarray`` values are, per column: ``(dtype, shape)`` where
        this kernel cuts the value (see :meth:`take_columns`), else ``None`` (every column of
        another kind too); ``None`` if no row is left, its bounds are bad or the shards do not
        share their columns.

        Returns:
            Optional[list]: Per column (in :meth:`schema`'s order), ``(dtype, shape)`` or
                ``None``.
        """
        cdef Py_ssize_t col, ncol, i
        cdef Columns cols
        cdef cnp.npy_intp dims[_MAX_NDIM]
        cdef int ndim = 0
        cdef Py_ssize_t at = 0
        if self.num_slots == 0 or self.pos >= self.rows.shape[0] or self.schema() is None:
            return None  # (shards sharing their columns: each row has ncol values)
        ncol = (<Columns>self.columns[0]).fixed.shape[0]
        cdef const unsigned char** value = <const unsigned char**>PyMem_Malloc(
            (ncol + 1) * sizeof(const unsigned char*))
        cdef Py_ssize_t* size = <Py_ssize_t*>PyMem_Malloc((ncol + 1) * sizeof(Py_ssize_t))
        try:
            if value == NULL or size == NULL:
                raise MemoryError()
            cols = self._cut(self.pos, value, size)
            if cols is None:
                return None
            out = [None] * cols.fixed.shape[0]
            for col in range(cols.fixed.shape[0]):
                if cols.kinds[col] == 4 and cols.arrays is not None:
                    dtype = _array_layout(<const char*>value[col], size[col], cols.arrays[col],
                                          dims, &ndim, &at)
                    if dtype is not None:
                        out[col] = (dtype, tuple([dims[i] for i in range(ndim)]))
            return out
        finally:
            PyMem_Free(value)
            PyMem_Free(size)

    def take_columns(self, Py_ssize_t n, bint packed=False, list arrays=None,
                     Py_ssize_t at=0):
        """The next ``n`` rows' columns (fewer if fewer are left), a column at a time, made of
        no object per row where it can: for columns of ``bytes`` (kind 0), ``str`` (1),
        ``int`` (3) and ``ndarray`` (4) values.

        ``bytes``/``str`` columns come as lists of the values, or ``packed``: ``(ends, data)``,
        each value's end in ``data`` as native int64 bytes and the values' bytes one after
        another (as :func:`streaming._kernels._collate.pack_text` packs them; what a DataLoader
        worker sends on). ``int`` columns come as an int64 array. An ``ndarray`` column's
        values are copied into rows ``at ..`` of ``arrays[col]`` (an array of the values'
        dtype and ``(rows, *shape)``; see :meth:`array_specs`), and its entry is ``None``.

        Args:
            n (int): Rows to take.
            packed (bool): Whether strings and bytes come packed. Defaults to ``False``.
            arrays (list, optional): Per column, for ``ndarray`` ones, where its rows go
                (required if there is one). Defaults to ``None``.
            at (int): The row of ``arrays`` the first row goes to. Defaults to ``0``.

        Returns:
            Optional[list]: Per column (in :meth:`schema`'s order), its values; or ``None``,
                nothing taken nor written, when any of those rows would decode otherwise: a
                column of another kind, a row or value that is not well formed (bad bounds,
                text that is not UTF-8, an ``int`` of another size), an ``ndarray`` value this
                kernel does not cut or of another dtype or shape than its array's, or an
                array without room. :meth:`decode_columns` (or :func:`next`) then decodes
                them, raising what :func:`next` raises.

        Raises:
            ValueError: The shards do not share their columns (see :meth:`schema`).
        """
        cdef Py_ssize_t stop, m, r, col, ncol, begin, end, size, data_at = 0, i
        cdef const unsigned char* value
        cdef Columns cols
        cdef int64_t kind
        cdef int ndim = 0
        cdef cnp.npy_intp dims[_MAX_NDIM]
        cdef cnp.ndarray target
        cdef Py_ssize_t row_bytes
        if self.num_slots == 0:
            return []
        kinds = self._shared_schema("take_columns")[1]
        ncol = len(kinds)
        stop = self._stop(n)
        m = stop - self.pos
        for col in range(ncol):
            kind = kinds[col]
            if kind == 3 and not _NATIVE_LE:
                return None
            if kind == 4:
                target = arrays[col] if arrays is not None and col < len(arrays) else None
                if target is None or not cnp.PyArray_IS_C_CONTIGUOUS(target) \
                        or not cnp.PyArray_ISWRITEABLE(target) or cnp.PyArray_NDIM(target) < 2 \
                        or at < 0 or cnp.PyArray_DIMS(target)[0] - at < m:
                    return None
            elif kind != 0 and kind != 1 and kind != 3:
                return None
        cdef int64_t* totals = <int64_t*>PyMem_Malloc((ncol + 1) * sizeof(int64_t))
        # Per row and column, where the value's bytes are (read again by the second pass).
        cdef const unsigned char** src = <const unsigned char**>PyMem_Malloc(
            (m * ncol + 1) * sizeof(const unsigned char*))
        cdef list out = [None] * ncol
        cdef list ends = [None] * ncol
        cdef list known = [None] * ncol
        cdef int64_t** end_of = <int64_t**>PyMem_Malloc((ncol + 1) * sizeof(int64_t*))
        cdef Py_ssize_t* sizes = <Py_ssize_t*>PyMem_Malloc((ncol + 1) * sizeof(Py_ssize_t))
        cdef char* dst
        try:
            if totals == NULL or src == NULL or end_of == NULL or sizes == NULL:
                raise MemoryError()
            for col in range(ncol):
                totals[col] = 0
                end_of[col] = NULL
                if kinds[col] == 3:
                    out[col] = np.empty(m, np.int64)
                    end_of[col] = <int64_t*>cnp.PyArray_DATA(<cnp.ndarray>out[col])
                elif kinds[col] != 4:
                    ends[col] = PyBytes_FromStringAndSize(NULL, m * sizeof(int64_t))
                    end_of[col] = <int64_t*>PyBytes_AS_STRING(ends[col])
            # Pass 1: every row checked (nothing taken or written unless all pass).
            for r in range(m):
                cols = self._cut(self.pos + r, &src[r * ncol], sizes)
                if cols is None:
                    return None
                for col in range(ncol):
                    size = sizes[col]
                    value = src[r * ncol + col]
                    kind = cols.kinds[col]
                    if kind == 3:
                        if size < 8:
                            return None
                        memcpy(&end_of[col][r], value, 8)
                    elif kind == 4:
                        target = <cnp.ndarray>arrays[col]
                        if cols.arrays is None:
                            return None
                        dtype = _array_layout(<const char*>value, size, cols.arrays[col],
                                              dims, &ndim, &data_at)
                        if dtype is None or ndim != cnp.PyArray_NDIM(target) - 1:
                            return None
                        if dtype is not known[col]:  # (dtypes are shared objects: once a run)
                            if not cnp.PyArray_EquivTypes(
                                    <cnp.dtype>dtype, <cnp.dtype>cnp.PyArray_DESCR(target)):
                                return None
                            known[col] = dtype
                        for i in range(ndim):
                            if dims[i] != cnp.PyArray_DIMS(target)[i + 1]:
                                return None
                        src[r * ncol + col] = value + data_at
                    else:
                        if kind == 1 and not ss_utf8_ok(value, size):
                            return None
                        totals[col] += size
                        end_of[col][r] = totals[col]
            # Pass 2: the values.
            for col in range(ncol):
                kind = kinds[col]
                if kind == 3:
                    continue
                if kind == 4:
                    target = <cnp.ndarray>arrays[col]
                    row_bytes = cnp.PyArray_NBYTES(target) // cnp.PyArray_DIMS(target)[0]
                    dst = <char*>cnp.PyArray_DATA(target) + at * row_bytes
                    for r in range(m):
                        memcpy(dst + r * row_bytes, src[r * ncol + col], row_bytes)
                    continue
                if packed:
                    data = PyBytes_FromStringAndSize(NULL, totals[col])
                    dst = PyBytes_AS_STRING(data)
                    begin = 0
                    for r in range(m):
                        end = end_of[col][r]
                        memcpy(dst + begin, src[r * ncol + col], end - begin)
                        begin = end
                    out[col] = (ends[col], data)
                    continue
                values = [None] * m
                begin = 0
                for r in range(m):
                    end = end_of[col][r]
                    if kind == 0:
                        values[r] = PyBytes_FromStringAndSize(<const char*>src[r * ncol + col],
                                                              end - begin)
                    else:  # (checked UTF-8 above)
                        values[r] = PyUnicode_DecodeUTF8(<const char*>src[r * ncol + col],
                                                         end - begin, "strict")
                    begin = end
                out[col] = values
            self.pos = stop
            return out
        finally:
            PyMem_Free(totals)
            PyMem_Free(src)
            PyMem_Free(end_of)
            PyMem_Free(sizes)
