/*
 * ScatterND's and ScatterElements' plain writes in place, on buffers by address: the
 * decode step's KV-cache write of a few rows into another library's tensor, whose NumPy
 * views (and the general kernel's argument parsing, og_scatter.c) cost more than the
 * write.
 *
 *   scatter_nd_at(data, updates, indices, count, dims, row) -> True or False
 *   scatter_elements_at(data, updates, indices, outer, size, length, inner, itemsize)
 *     -> True or False
 *   gather_elements_at(out, data, indices, outer, size, length, inner, itemsize)
 *     -> True or False
 *
 * gather_elements_at reads (GatherElements into `out`, a new buffer: a small eager call
 * whose indices hold negatives, which torch's own gather refuses); in its terms below,
 * `out` is the buffer written and `data` the one read, as `updates` is for the writes.
 * The writes: reduction none. True: written. False, with nothing written: an index out of range
 * (the caller's general path then raises, or drops the update unchecked), misaligned
 * indices, a buffer at a null address (a torch ZeroTensor's), more than 32 coordinates,
 * or updates or indices that share data's memory (the general path copies them first).
 * Every index is read before the first write, and the writes run in C order of the
 * indices: with duplicates the last update wins, as the general kernel's does.
 * Negative indices count from the end of their axis.
 *
 * Each buffer is an address (a Python int: another library's memory), for which the
 * caller vouches that it holds C-ordered data of the sizes below (indices native int64),
 * or an exact ndarray, which must be C-ordered, aligned, of plain items (no object
 * references or StringDType) and of exactly those bytes (data writeable, indices native
 * int64; else False). The layout:
 *   - scatter_nd_at: data of prod(dims) slices of `row` bytes; `count` index tuples of
 *     len(dims) coordinates, the first addressing dims[0]; `count` update slices.
 *   - scatter_elements_at: data of outer x size x inner items of `itemsize` bytes;
 *     indices and updates of outer x length x inner (the axis is the middle one: the
 *     indices' other dims are data's).
 *   - gather_elements_at: data of outer x size x inner items; indices and out of outer x
 *     length x inner.
 * Writes of 1 MiB and more release the GIL. ValueError for a size out of [0, 2**62],
 * OverflowError for sizes whose products overflow.
 */
#include "og_core.h"

#define OG_AT_MAX_DIMS 32
#define OG_AT_UNLOCKED ((npy_intp)1 << 20)

/* The three buffers (data, updates, indices) of nbytes[k] bytes each: an address (a
 * Python int), or a plain C-ordered ndarray (og_plain_c_array) of exactly those bytes
 * (data writeable; indices native int64). 1: at[] holds them; 0: an ndarray is not such
 * (the caller's general path serves it); -1 with an error set. */
static int
buffers(PyObject *const *args, const npy_intp *nbytes, char **at)
{
    int k;
    for (k = 0; k < 3; k++) {
        if (PyArray_CheckExact(args[k])) {
            PyArrayObject *a = (PyArrayObject *)args[k];
            if (!og_plain_c_array(args[k]) || PyArray_NBYTES(a) != nbytes[k] ||
                (k == 0 && !PyArray_ISWRITEABLE(a)) ||
                (k == 2 && (PyArray_TYPE(a) != NPY_INT64 || !PyArray_ISNOTSWAPPED(a)))) {
                return 0;
            }
            at[k] = PyArray_BYTES(a);
        }
        else {
            at[k] = PyLong_AsVoidPtr(args[k]);
            if (at[k] == NULL && PyErr_Occurred()) return -1;
        }
    }
    return 1;
}

static void
nd_write(char *data, const char *updates, const npy_int64 *ind, npy_intp count, int depth,
         const npy_int64 *dims, npy_intp row)
{
    npy_intp n;
    int j;
    for (n = 0; n < count; n++) {
        const npy_int64 *c = ind + n * depth;
        npy_int64 slice = 0;
        for (j = 0; j < depth; j++) slice = slice * dims[j] + og_wrap(c[j], dims[j]);
        memcpy(data + slice * row, updates + n * row, (size_t)row);
    }
}

PyObject *
og_scatter_nd_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    char *at[3];
    npy_int64 dims[OG_AT_MAX_DIMS];
    npy_intp count, row, n, nbytes[3], slices = 1, tuples;
    Py_ssize_t depth, j;
    int ok;
    npy_uint64 bad = 0;
    (void)self;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "scatter_nd_at takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    if ((count = og_size_arg(args[3], "scatter_nd_at", "count")) < 0) return NULL;
    if ((row = og_size_arg(args[5], "scatter_nd_at", "row")) < 0) return NULL;
    if (!PyTuple_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError, "scatter_nd_at: dims must be a tuple of ints");
        return NULL;
    }
    depth = PyTuple_GET_SIZE(args[4]);
    if (depth > OG_AT_MAX_DIMS) Py_RETURN_FALSE; /* (the general path's) */
    for (j = 0; j < depth; j++) {
        npy_intp d = og_size_arg(PyTuple_GET_ITEM(args[4], j), "scatter_nd_at", "dims item");
        if (d < 0 || !og_times(slices, d, &slices, "scatter_nd_at")) return NULL;
        dims[j] = d;
    }
    if (!og_times(slices, row, &nbytes[0], "scatter_nd_at") ||
        !og_times(count, row, &nbytes[1], "scatter_nd_at") ||
        !og_times(count, (npy_intp)depth, &tuples, "scatter_nd_at") ||
        !og_times(tuples, (npy_intp)sizeof(npy_int64), &nbytes[2], "scatter_nd_at")) {
        return NULL;
    }
    if ((ok = buffers(args, nbytes, at)) <= 0) return ok < 0 ? NULL : Py_NewRef(Py_False);
    if (count == 0) Py_RETURN_TRUE;
    if ((depth > 0 && at[2] == NULL) ||
        (npy_intp)at[2] % (npy_intp)sizeof(npy_int64) != 0 ||
        og_bytes_overlap(at[0], nbytes[0], at[1], nbytes[1]) ||
        og_bytes_overlap(at[0], nbytes[0], at[2], nbytes[2])) {
        Py_RETURN_FALSE;
    }
    /* Every coordinate first (og_valid, og_wrap: og_core.h; no branch on the sign, which
     * mixed-sign indices would mispredict): a bad one writes nothing. */
    {
        const npy_int64 *ind = (const npy_int64 *)at[2];
        for (n = 0; n < count; n++) {
            for (j = 0; j < depth; j++) bad |= !og_valid(ind[n * depth + j], dims[j]);
        }
    }
    if (bad) Py_RETURN_FALSE;
    if (row == 0) Py_RETURN_TRUE;
    if (at[0] == NULL || at[1] == NULL) Py_RETURN_FALSE;
    if (count * row >= OG_AT_UNLOCKED) {
        Py_BEGIN_ALLOW_THREADS
        nd_write(at[0], at[1], (const npy_int64 *)at[2], count, (int)depth, dims, row);
        Py_END_ALLOW_THREADS
    }
    else {
        nd_write(at[0], at[1], (const npy_int64 *)at[2], count, (int)depth, dims, row);
    }
    Py_RETURN_TRUE;
}

/* Whether the n >= 1 indices at `row` are one value: the second tells most rows that
 * are not at once; then one pass without a branch, which the compiler vectorises. */
static inline int
og_one_value(const npy_int64 *row, npy_intp n)
{
    npy_uint64 differ = 0;
    npy_intp i;
    if (n > 1 && row[1] != row[0]) return 0;
    for (i = 2; i < n; i++) differ |= (npy_uint64)(row[i] ^ row[0]);
    return !differ;
}

/* One item of a compile-time size where it is a common one: a memcpy the compiler turns
 * into a move. An inner row of indices of one value (og_one_value) addresses consecutive
 * items of one slice: one copy of the row. A KV-cache write's indices are one position
 * repeated: 8 copies of 64 items rather than 512 of one (docs/performance.md; random
 * indices cost the same either way). The writes keep the indices' C order: the items of one
 * row are distinct targets. */
#define OG_ELEMENTS_LOOP(SIZE)                                                              \
    for (o = 0; o < outer; o++) {                                                          \
        for (l = 0; l < length; l++) {                                                     \
            npy_intp from = (o * length + l) * inner;                                      \
            if (og_one_value(ind + from, inner)) {                                         \
                npy_intp to = (o * size + og_wrap(ind[from], size)) * inner;               \
                memcpy(data + to * (SIZE), updates + from * (SIZE), (size_t)(inner * (SIZE))); \
                continue;                                                                  \
            }                                                                              \
            for (i = 0; i < inner; i++) {                                                  \
                npy_intp to = (o * size + og_wrap(ind[from + i], size)) * inner + i;       \
                memcpy(data + to * (SIZE), updates + (from + i) * (SIZE), (size_t)(SIZE)); \
            }                                                                              \
        }                                                                                  \
    }

/* Whether every index of `rows` rows of `inner` is in range: a row of one value (see
 * OG_ELEMENTS_LOOP) checks it once, others each (without a branch). */
static int
elements_valid(const npy_int64 *ind, npy_intp rows, npy_intp inner, npy_intp size)
{
    npy_uint64 bad = 0;
    npy_intp r, i;
    for (r = 0; r < rows; r++) {
        const npy_int64 *row = ind + r * inner;
        if (og_one_value(row, inner)) {
            bad |= !og_valid(row[0], size);
            continue;
        }
        for (i = 0; i < inner; i++) bad |= !og_valid(row[i], size);
    }
    return !bad;
}

static void
elements_write(char *data, const char *updates, const npy_int64 *ind, npy_intp outer,
               npy_intp size, npy_intp length, npy_intp inner, npy_intp itemsize)
{
    npy_intp o, l, i;
    switch (itemsize) {
    case 1: OG_ELEMENTS_LOOP(1) break;
    case 2: OG_ELEMENTS_LOOP(2) break;
    case 4: OG_ELEMENTS_LOOP(4) break;
    case 8: OG_ELEMENTS_LOOP(8) break;
    case 16: OG_ELEMENTS_LOOP(16) break;
    default: OG_ELEMENTS_LOOP(itemsize) break;
    }
}

/* GatherElements' reads, OG_ELEMENTS_LOOP's writes turned round: an inner row of indices
 * of one value reads one row of consecutive items. */
#define OG_ELEMENTS_READ(SIZE)                                                              \
    for (o = 0; o < outer; o++) {                                                          \
        for (l = 0; l < length; l++) {                                                     \
            npy_intp to = (o * length + l) * inner;                                        \
            if (og_one_value(ind + to, inner)) {                                           \
                npy_intp from = (o * size + og_wrap(ind[to], size)) * inner;               \
                memcpy(out + to * (SIZE), data + from * (SIZE), (size_t)(inner * (SIZE))); \
                continue;                                                                  \
            }                                                                              \
            for (i = 0; i < inner; i++) {                                                  \
                npy_intp from = (o * size + og_wrap(ind[to + i], size)) * inner + i;       \
                memcpy(out + (to + i) * (SIZE), data + from * (SIZE), (size_t)(SIZE));     \
            }                                                                              \
        }                                                                                  \
    }

static void
elements_read(char *out, const char *data, const npy_int64 *ind, npy_intp outer,
              npy_intp size, npy_intp length, npy_intp inner, npy_intp itemsize)
{
    npy_intp o, l, i;
    switch (itemsize) {
    case 1: OG_ELEMENTS_READ(1) break;
    case 2: OG_ELEMENTS_READ(2) break;
    case 4: OG_ELEMENTS_READ(4) break;
    case 8: OG_ELEMENTS_READ(8) break;
    case 16: OG_ELEMENTS_READ(16) break;
    default: OG_ELEMENTS_READ(itemsize) break;
    }
}

/* scatter_elements_at (read: 0) and gather_elements_at (1): their args, their checks,
 * then the writes or the reads. In the gather's layout the buffers swap roles: args[0]
 * is `out` (outer x length x inner, written) and args[1] is data (outer x size x inner). */
static PyObject *
elements_at(PyObject *const *args, Py_ssize_t nargs, int read)
{
    static const char *names[5] = {"outer", "size", "length", "inner", "itemsize"};
    const char *function = read ? "gather_elements_at" : "scatter_elements_at";
    void (*move)(char *, const char *, const npy_int64 *, npy_intp, npy_intp, npy_intp,
                 npy_intp, npy_intp) = read ? elements_read : elements_write;
    char *at[3];
    npy_intp sizes[5], outer, size, length, inner, itemsize, count, cells, k, nbytes[3];
    int ok;
    const npy_int64 *ind;
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "%s takes 8 arguments (%zd given)", function, nargs);
        return NULL;
    }
    for (k = 0; k < 5; k++) {
        sizes[k] = og_size_arg(args[3 + k], function, names[k]);
        if (sizes[k] < 0) return NULL;
    }
    outer = sizes[0], size = sizes[1], length = sizes[2], inner = sizes[3], itemsize = sizes[4];
    if (!og_times(outer, length, &count, function) || !og_times(count, inner, &count, function) ||
        !og_times(outer, size, &cells, function) || !og_times(cells, inner, &cells, function) ||
        !og_times(read ? count : cells, itemsize, &nbytes[0], function) ||
        !og_times(read ? cells : count, itemsize, &nbytes[1], function) ||
        !og_times(count, (npy_intp)sizeof(npy_int64), &nbytes[2], function)) {
        return NULL;
    }
    if ((ok = buffers(args, nbytes, at)) <= 0) return ok < 0 ? NULL : Py_NewRef(Py_False);
    if (count == 0) Py_RETURN_TRUE;
    if (at[2] == NULL || (npy_intp)at[2] % (npy_intp)sizeof(npy_int64) != 0 ||
        og_bytes_overlap(at[0], nbytes[0], at[1], nbytes[1]) ||
        og_bytes_overlap(at[0], nbytes[0], at[2], nbytes[2])) {
        Py_RETURN_FALSE;
    }
    ind = (const npy_int64 *)at[2];
    if (!elements_valid(ind, count / inner, inner, size)) Py_RETURN_FALSE;
    if (itemsize == 0) Py_RETURN_TRUE;
    if (at[0] == NULL || at[1] == NULL) Py_RETURN_FALSE;
    if (count * itemsize >= OG_AT_UNLOCKED) {
        Py_BEGIN_ALLOW_THREADS
        move(at[0], at[1], ind, outer, size, length, inner, itemsize);
        Py_END_ALLOW_THREADS
    }
    else {
        move(at[0], at[1], ind, outer, size, length, inner, itemsize);
    }
    Py_RETURN_TRUE;
}

PyObject *
og_scatter_elements_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return elements_at(args, nargs, 0);
}

PyObject *
og_gather_elements_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return elements_at(args, nargs, 1);
}
