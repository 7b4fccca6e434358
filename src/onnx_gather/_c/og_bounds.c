/*
 * The bounds check of indices in another library's CPU memory, by address
 * (og_outside_at):
 *
 *   outside_at(address, count, itemsize, size) -> True or False
 *
 * Whether any of `count` native int32 (itemsize 4) or int64 (itemsize 8) indices at
 * `address` lies outside [-size, size-1]. The caller vouches that the buffer holds them,
 * aligned, and is complete (a JAX array on the CPU after block_until_ready). The order of
 * the indices is never read: one size for all of them makes any dense layout right.
 *
 * One branch-free pass (see `outside`). The GIL is released from 64 Ki indices on.
 */
#include "og_core.h"

/* Unsigned arithmetic wraps by definition: v is inside [-size, size-1] exactly when
 * v + size, read as unsigned of the indices' width, is below 2 * size (for int32 with
 * size < 2**31, for int64 with size <= 2**62). int32 indices are read as 32-bit lanes,
 * which the baseline SSE2 and NEON vectorise (a 64-bit unsigned compare is not in SSE2:
 * int64 indices go one at a time, still without a branch). */
static int
outside(const void *address, npy_intp count, int wide, npy_int64 size)
{
    npy_intp k;
    if (wide) {
        const npy_int64 *v = (const npy_int64 *)address;
        const npy_uint64 usize = (npy_uint64)size, span = 2 * usize;
        npy_uint64 bad = 0;
        for (k = 0; k < count; k++) bad |= (npy_uint64)v[k] + usize >= span;
        return bad != 0;
    }
    else {
        const npy_int32 *v = (const npy_int32 *)address;
        npy_uint32 usize, span, bad = 0;
        if (size > NPY_MAX_INT32) return 0; /* every int32 is inside */
        usize = (npy_uint32)size;
        span = 2 * usize;
        for (k = 0; k < count; k++) bad |= -(npy_uint32)((npy_uint32)v[k] + usize >= span);
        return bad != 0;
    }
}

PyObject *
og_outside_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    void *address;
    npy_intp count, itemsize, nbytes;
    npy_int64 size;
    int bad;
    (void)self;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "outside_at takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    address = PyLong_AsVoidPtr(args[0]);
    if (address == NULL && PyErr_Occurred()) return NULL;
    count = PyLong_AsSsize_t(args[1]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    itemsize = PyLong_AsSsize_t(args[2]);
    if (itemsize == -1 && PyErr_Occurred()) return NULL;
    size = PyLong_AsLongLong(args[3]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    if (count < 0 || size < 0 || size > ((npy_int64)1 << 62) || (itemsize != 4 && itemsize != 8)) {
        PyErr_Format(PyExc_ValueError,
                     "outside_at: count %zd, itemsize %zd, size %lld (want count >= 0, "
                     "itemsize 4 or 8, 0 <= size <= 2**62)",
                     (Py_ssize_t)count, (Py_ssize_t)itemsize, (long long)size);
        return NULL;
    }
    /* count indices of itemsize bytes must be a buffer's bytes, which fit npy_intp. */
    if (!og_times(count, itemsize, &nbytes, "outside_at")) return NULL;
    if (count && (address == NULL || (npy_intp)address % itemsize != 0)) {
        PyErr_SetString(PyExc_ValueError, "outside_at: a null or misaligned address");
        return NULL;
    }
    if (count >= ((npy_intp)1 << 16)) {
        Py_BEGIN_ALLOW_THREADS
        bad = outside(address, count, itemsize == 8, size);
        Py_END_ALLOW_THREADS
    }
    else {
        bad = outside(address, count, itemsize == 8, size);
    }
    return PyBool_FromLong(bad);
}
