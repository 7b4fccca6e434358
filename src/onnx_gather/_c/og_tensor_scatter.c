/*
 * TensorScatter-24's plain writes in place: each batch entry's update copied whole into
 * the cache's slice at its write index (og_tensor_scatter_slices).
 *
 *   tensor_scatter_slices(cache, update, write_indices, axis, circular) -> True or False
 *   tensor_scatter_slices_at(cache, update, write_indices, batch, outer, size, length,
 *                            inner, circular) -> True or False
 *
 * The decode step of a KV cache: every entry's update lands whole inside the axis, at one
 * position or each at its own. True: written. False, with nothing written, for anything
 * else, which the caller's Python path then serves (and checks, with the library's
 * message): an index whose write does not land whole (negative, past the end in linear
 * mode, wrapping around in circular mode), arrays that are not exact, C-ordered ndarrays
 * of plain bytes, an update of another item type, indices that are not a C-ordered 1-D
 * int64 array of one per batch entry, or an update or indices that share the cache's
 * memory. Every index is read before the first write.
 *
 * `_at` takes the three C-ordered buffers by address (another library's tensors, whose
 * NumPy views cost more than the write): the cache of batch x outer x size rows of
 * `inner` bytes, the update of batch x outer x length rows, `batch` native int64 indices.
 * The caller vouches for the layout; the call still declines indices out of range,
 * null or misaligned addresses and memory shared with the cache, and raises for a size
 * out of [0, 2**62] (ValueError) or a layout whose byte sizes overflow (OverflowError).
 */
#include "og_core.h"

/* The writes, given the layout: `batch` entries of `outer` slabs each, the cache's slab
 * `size` rows and the update's `length` rows of `inner` bytes. 1: written; 0: an index
 * does not land whole (nothing written); -1: an error set (memory). */
static int
write_slices(char *cache, const char *update, const npy_int64 *starts, npy_intp batch,
             npy_intp outer, npy_intp size, npy_intp length, npy_intp inner, int circular)
{
    npy_intp *at, on_stack[64], row = length * inner, b, o;
    int ok = 1;
    if (batch == 0) return 1;
    at = batch <= 64 ? on_stack : PyMem_Malloc((size_t)batch * sizeof(npy_intp));
    if (at == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    /* Every position first: a write index that does not land whole writes nothing. */
    for (b = 0; b < batch; b++) {
        npy_int64 s = starts[b];
        if (circular && s >= 0) s %= (size > 0 ? size : 1);
        if (s < 0 || s > size - length) {
            ok = 0;
            break;
        }
        at[b] = (npy_intp)s;
    }
    if (ok && outer > 0 && row > 0) {
        if (batch * outer * row >= (1 << 16)) {
            Py_BEGIN_ALLOW_THREADS
            for (b = 0; b < batch; b++) {
                for (o = 0; o < outer; o++) {
                    npy_intp slab = b * outer + o;
                    memcpy(cache + (slab * size + at[b]) * inner, update + slab * row,
                           (size_t)row);
                }
            }
            Py_END_ALLOW_THREADS
        } else {
            for (b = 0; b < batch; b++) {
                for (o = 0; o < outer; o++) {
                    npy_intp slab = b * outer + o;
                    memcpy(cache + (slab * size + at[b]) * inner, update + slab * row,
                           (size_t)row);
                }
            }
        }
    }
    if (at != on_stack) PyMem_Free(at);
    return ok;
}

PyObject *
og_tensor_scatter_slices(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyArrayObject *cache, *update, *ind;
    Py_ssize_t axis, nd, k;
    npy_intp batch, size, length, outer = 1, inner;
    int circular, ok;
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
    if (!og_plain_c_array(args[0]) || !og_plain_c_array(args[1]) ||
        !og_plain_c_array(args[2])) {
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
    if (og_bytes_overlap(PyArray_BYTES(cache), PyArray_NBYTES(cache), PyArray_BYTES(update),
                 PyArray_NBYTES(update)) ||
        og_bytes_overlap(PyArray_BYTES(cache), PyArray_NBYTES(cache), PyArray_BYTES(ind),
                 PyArray_NBYTES(ind))) {
        Py_RETURN_FALSE;
    }
    ok = write_slices(PyArray_BYTES(cache), PyArray_BYTES(update),
                      (const npy_int64 *)PyArray_DATA(ind), batch, outer, size, length, inner,
                      circular);
    if (ok < 0) return NULL;
    return PyBool_FromLong(ok);
}

PyObject *
og_tensor_scatter_slices_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    static const char *fn = "tensor_scatter_slices_at";
    static const char *names[5] = {"batch", "outer", "size", "length", "inner"};
    void *address[3];
    npy_intp dims[5], slabs, cache_bytes, update_bytes, index_bytes;
    Py_ssize_t k;
    int circular, ok;
    (void)self;
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "%s takes 9 arguments (%zd given)", fn, nargs);
        return NULL;
    }
    for (k = 0; k < 3; k++) {
        address[k] = PyLong_AsVoidPtr(args[k]);
        if (address[k] == NULL && PyErr_Occurred()) return NULL;
    }
    for (k = 0; k < 5; k++) {
        if ((dims[k] = og_size_arg(args[3 + k], fn, names[k])) < 0) return NULL;
    }
    /* The layout's byte sizes: every offset write_slices computes lies below them. */
    if (!og_times(dims[0], dims[1], &slabs, fn) || !og_times(slabs, dims[2], &cache_bytes, fn) ||
        !og_times(cache_bytes, dims[4], &cache_bytes, fn) ||
        !og_times(slabs, dims[3], &update_bytes, fn) ||
        !og_times(update_bytes, dims[4], &update_bytes, fn) ||
        !og_times(dims[0], (npy_intp)sizeof(npy_int64), &index_bytes, fn)) {
        return NULL;
    }
    circular = PyObject_IsTrue(args[8]);
    if (circular < 0) return NULL;
    /* (A null address: a torch ZeroTensor's, which has no memory; the caller's path.) */
    if (dims[3] > dims[2] || address[0] == NULL || address[1] == NULL || address[2] == NULL ||
        ((npy_intp)address[2] % (npy_intp)sizeof(npy_int64)) != 0) {
        Py_RETURN_FALSE;
    }
    if (og_bytes_overlap(address[0], cache_bytes, address[1], update_bytes) ||
        og_bytes_overlap(address[0], cache_bytes, address[2], index_bytes)) {
        Py_RETURN_FALSE;
    }
    ok = write_slices(address[0], address[1], address[2], dims[0], dims[1], dims[2], dims[3],
                      dims[4], circular);
    if (ok < 0) return NULL;
    return PyBool_FromLong(ok);
}
