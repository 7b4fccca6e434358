/*
 * TensorScatter-24's plain writes in place: each batch entry's update copied whole into
 * the cache's slice at its write index (og_tensor_scatter_slices).
 *
 *   tensor_scatter_slices(cache, update, write_indices, axis, circular) -> True or False
 *
 * The decode step of a KV cache: every entry's update lands whole inside the axis, at one
 * position or each at its own. True: written. False, with nothing written, for anything
 * else, which the caller's Python path then serves (and checks, with the library's
 * message): an index whose write does not land whole (negative, past the end in linear
 * mode, wrapping around in circular mode), arrays that are not exact, C-ordered ndarrays
 * of plain bytes, an update of another item type, indices that are not a C-ordered 1-D
 * int64 array of one per batch entry, or an update or indices that share the cache's
 * memory. Every index is read before the first write.
 */
#include "og_core.h"

/* Whether `a` is an exact ndarray of plain bytes (no object references, no StringDType
 * items kept out of line), C-ordered and aligned. */
static int
plain_c_array(PyObject *a)
{
    PyArray_Descr *descr;
    if (!PyArray_CheckExact(a)) return 0;
    descr = PyArray_DESCR((PyArrayObject *)a);
    return !PyDataType_REFCHK(descr) && descr->kind != 'T' &&
           PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) && PyArray_ISALIGNED((PyArrayObject *)a);
}

/* Whether the bytes of `a` and `b` overlap. */
static int
overlaps(PyArrayObject *a, PyArrayObject *b)
{
    char *pa = PyArray_BYTES(a), *pb = PyArray_BYTES(b);
    npy_intp na = PyArray_NBYTES(a), nb = PyArray_NBYTES(b);
    return na > 0 && nb > 0 && pa < pb + nb && pb < pa + na;
}

PyObject *
og_tensor_scatter_slices(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyArrayObject *cache, *update, *ind;
    Py_ssize_t axis, nd, k;
    npy_intp batch, size, length, outer = 1, inner, row, b, o;
    const npy_int64 *starts;
    npy_intp *at, on_stack[64];
    char *dst;
    const char *src;
    int circular, ok = 1;
    (void)self;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "tensor_scatter_slices takes 5 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    axis = PyLong_AsSsize_t(args[3]);
    if (axis == -1 && PyErr_Occurred()) return NULL;
    circular = PyObject_IsTrue(args[4]);
    if (circular < 0) return NULL;
    if (!plain_c_array(args[0]) || !plain_c_array(args[1]) || !plain_c_array(args[2])) {
        Py_RETURN_FALSE;
    }
    cache = (PyArrayObject *)args[0];
    update = (PyArrayObject *)args[1];
    ind = (PyArrayObject *)args[2];
    nd = PyArray_NDIM(cache);
    if (axis < 1 || axis >= nd || PyArray_NDIM(update) != nd || PyArray_NDIM(ind) != 1 ||
        !PyArray_ISWRITEABLE(cache) || PyArray_TYPE(ind) != NPY_INT64 ||
        !PyArray_ISNOTSWAPPED(ind) ||
        !PyArray_EquivTypes(PyArray_DESCR(cache), PyArray_DESCR(update))) {
        Py_RETURN_FALSE;
    }
    batch = PyArray_DIM(cache, 0);
    size = PyArray_DIM(cache, axis);
    length = PyArray_DIM(update, axis);
    if (PyArray_DIM(ind, 0) != batch || length > size) Py_RETURN_FALSE;
    inner = PyArray_ITEMSIZE(cache);
    for (k = 0; k < nd; k++) {
        if (k != axis && PyArray_DIM(update, k) != PyArray_DIM(cache, k)) Py_RETURN_FALSE;
        if (k > 0 && k < axis) outer *= PyArray_DIM(cache, k);
        if (k > axis) inner *= PyArray_DIM(cache, k);
    }
    if (overlaps(cache, update) || overlaps(cache, ind)) Py_RETURN_FALSE;
    if (batch == 0 || outer == 0 || inner == 0) {
        /* Nothing to write, but every index is still read: the caller checks them. */
        if (batch > 0) Py_RETURN_FALSE;
        Py_RETURN_TRUE;
    }
    /* Every position first: a write index that does not land whole writes nothing. */
    at = batch <= 64 ? on_stack : PyMem_Malloc((size_t)batch * sizeof(npy_intp));
    if (at == NULL) return PyErr_NoMemory();
    starts = (const npy_int64 *)PyArray_DATA(ind);
    for (b = 0; b < batch; b++) {
        npy_int64 s = starts[b];
        if (circular && s >= 0) s %= (size > 0 ? size : 1);
        if (s < 0 || s > size - length) {
            ok = 0;
            break;
        }
        at[b] = (npy_intp)s;
    }
    if (ok) {
        row = length * inner;
        dst = PyArray_BYTES(cache);
        src = PyArray_BYTES(update);
        if (batch * outer * row >= (1 << 16)) {
            Py_BEGIN_ALLOW_THREADS
            for (b = 0; b < batch; b++) {
                for (o = 0; o < outer; o++) {
                    npy_intp slab = b * outer + o;
                    memcpy(dst + (slab * size + at[b]) * inner, src + slab * row, (size_t)row);
                }
            }
            Py_END_ALLOW_THREADS
        } else {
            for (b = 0; b < batch; b++) {
                for (o = 0; o < outer; o++) {
                    npy_intp slab = b * outer + o;
                    memcpy(dst + (slab * size + at[b]) * inner, src + slab * row, (size_t)row);
                }
            }
        }
    }
    if (at != on_stack) PyMem_Free(at);
    if (ok) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}
