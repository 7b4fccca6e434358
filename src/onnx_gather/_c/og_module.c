/*
 * onnx_gather._kernels: fused, multi-threaded CPU kernels for ONNX Gather, GatherElements,
 * GatherND, ScatterElements and ScatterND on NumPy arrays.
 *
 *   gather(data, indices, axis, out, check, threads) -> out or None
 *   openvino_gather(data, indices, axis, out, negatives, threads) -> out
 *   gather_elements(data, indices, axis, out, check, threads) -> out or None
 *   gather_nd(data, indices, batch_dims, out, check, threads) -> out or None
 *   scatter_elements(out, data, indices, updates, axis, reduction, kind, check, threads)
 *   scatter_nd(out, data, indices, updates, reduction, kind, check, threads)
 *     -> True, None or NotImplemented (og_scatter.c says what they take)
 *   tensor_scatter_slices(cache, update, write_indices, axis, circular) -> True or False
 *   tensor_scatter_slices_at(cache, update, write_indices, batch, outer, size, length,
 *                            inner, circular) -> True or False (by address)
 *     (TensorScatter's plain writes in place; og_tensor_scatter.c)
 *   scatter_nd_at(data, updates, indices, count, dims, row) -> True or False
 *   scatter_elements_at(data, updates, indices, outer, size, length, inner, itemsize)
 *     -> True or False
 *   gather_elements_at(out, data, indices, outer, size, length, inner, itemsize)
 *     -> True or False
 *     (ScatterND's and ScatterElements' plain writes in place, and GatherElements' reads
 *     into a new buffer, by address; og_scatter_at.c)
 *   outside_at(address, count, itemsize, size) -> True or False
 *     (whether an index in another library's CPU memory is outside [-size, size-1];
 *     og_bounds.c)
 *   view(base, address, shape, strides, typenum) -> ndarray over another library's memory
 *
 * `out` is a C-ordered array to fill, or None for a new one of data's dtype. All release
 * the GIL while copying and return None only when `check` is true and some index lies
 * outside [-s, s-1] (s = data.shape[axis]; for GatherND the size of the axis each
 * coordinate addresses); a given `out` is then unspecified. They
 * return NotImplemented for data whose items are not plain bytes (object or StringDType
 * arrays, ndarray subclasses): the caller's pure-NumPy path serves those. Indices that
 * are not C-ordered, aligned and native are copied first.
 * With `check` false an out-of-range index is clamped into [0, s-1] (negatives are
 * normalised first), so nothing is ever read outside `data`; when s == 0 a non-empty
 * output is filled with zero bytes.
 *
 * Elements are moved as raw bytes (memcpy of a compile-time size for item sizes 1, 2,
 * 4, 8 and 16, a run-time size otherwise), never through floating-point registers, so
 * NaN payloads and -0.0 survive.  Every offset is computed in npy_intp and every index
 * in npy_int64.
 *
 * Threads (pthreads, no OpenMP): kept workers that spin OG_SPIN_NS after a call, then sleep
 * (og_pool.c); a child after fork() starts its own.  Where the pool is busy (another
 * Python thread's call) and on Windows (_beginthreadex) threads are created per call
 * and joined before returning.
 *
 * Every entry point checks what it is given before it touches memory (og_core.h, "The
 * boundary"): ranks and shapes against each other, codes and item sizes, memory shared
 * with `out`, the sizes of a layout told by address. A malformed call raises ValueError,
 * TypeError or OverflowError naming the argument and its value, or is refused as each
 * documents (NotImplemented, False), and writes nothing.
 *
 * This file holds the Python entry points; og_core.c the shared core; og_<operator>.c
 * each operator's kernel.
 */
#define OG_MODULE
#include "og_core.h"

/* ------------------------------------------------------------------------------ */
/* Entry points: argument parsing, the arrays the kernels take, NotImplemented.      */

/* Whether the kernels move `data`'s items as plain bytes: an exact ndarray whose dtype
 * holds no object references and keeps no items out of line (StringDType, kind 'T'). */
static int
plain_data(PyObject *data)
{
    PyArray_Descr *descr;
    if (!PyArray_CheckExact(data)) return 0;
    descr = PyArray_DESCR((PyArrayObject *)data);
    return !PyDataType_REFCHK(descr) && descr->kind != 'T';
}

/* A gather's entry point: parse (`format` ends ":name", the name in its errors; the axis
 * argument is `axis_name`), serve plain data, make the indices C-ordered and native,
 * check (check_args), run `impl`. */
static PyObject *
og_call(og_impl impl, PyObject *args, const char *format, const char *axis_name)
{
    const char *fn = strchr(format, ':') + 1;
    PyObject *data, *given, *res;
    PyArrayObject *ind, *copy = NULL;
    Py_ssize_t axis, threads;
    int check;

    if (!PyArg_ParseTuple(args, format, &data, &PyArray_Type, &ind, &axis, &given, &check,
                          &threads)) {
        return NULL;
    }
    if (!plain_data(data)) {
        /* Strings, objects, subclasses: the caller's pure-NumPy path serves them. */
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!(PyArray_IS_C_CONTIGUOUS(ind) && PyArray_ISALIGNED(ind) && PyArray_ISNOTSWAPPED(ind)) &&
        PyArray_ISINTEGER(ind) && PyArray_ISSIGNED(ind) &&
        (PyArray_ITEMSIZE(ind) == 4 || PyArray_ITEMSIZE(ind) == 8)) {
        /* A C-ordered, aligned, native copy: proportional to the output, never the data.
         * Other index dtypes go on as they are, for check_args to reject. */
        PyArray_Descr *native = PyArray_DescrFromType(PyArray_ITEMSIZE(ind) == 8 ? NPY_INT64
                                                                                  : NPY_INT32);
        ind = copy = (PyArrayObject *)PyArray_FromArray(
            ind, native, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
        if (copy == NULL) return NULL;
    }
    res = check_args(fn, axis_name, (PyArrayObject *)data, ind, axis, threads) < 0
              ? NULL
              : impl(fn, (PyArrayObject *)data, ind, axis, given, check, threads);
    Py_XDECREF(copy);
    return res;
}

static PyObject *
og_gather(PyObject *self, PyObject *args)
{
    (void)self;
    return og_call(gather_impl, args, "OO!nOpn:gather", "axis");
}

/* OpenVINO Gather-7/8 without batch dims: Gather's kernel in an OG_ZERO mode, chosen by
 * the bool in `check`'s place (whether negative indices count from the end). */
static PyObject *
openvino_gather_impl(const char *fn, PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis,
                     PyObject *given, int negatives, Py_ssize_t threads)
{
    return gather_impl(fn, data, ind, axis, given, negatives ? OG_ZERO : OG_ZERO_POS, threads);
}

static PyObject *
og_openvino_gather(PyObject *self, PyObject *args)
{
    (void)self;
    return og_call(openvino_gather_impl, args, "OO!nOpn:openvino_gather", "axis");
}

static PyObject *
og_gather_elements(PyObject *self, PyObject *args)
{
    (void)self;
    return og_call(gather_elements_impl, args, "OO!nOpn:gather_elements", "axis");
}

static PyObject *
og_gather_nd(PyObject *self, PyObject *args)
{
    (void)self;
    return og_call(gather_nd_impl, args, "OO!nOpn:gather_nd", "batch_dims");
}

/* ------------------------------------------------------------------------------ */
/* view(base, address, shape, strides, typenum): an ndarray over memory another library
 * owns (a CPU tensor's), which `base` keeps alive; strides in items, None for C order.
 * For the PyTorch backend's route to the kernels: cheaper than Tensor.numpy(), even with
 * the caller's reads of the tensor's address, sizes and strides (docs/performance.md). */

static int
address_converter(PyObject *obj, void *address)
{
    void *p = PyLong_AsVoidPtr(obj);
    if (p == NULL && PyErr_Occurred()) return 0;
    *(void **)address = p;
    return 1;
}

static PyObject *
og_view(PyObject *self, PyObject *args)
{
    PyObject *base, *shape_obj, *strides_obj, *shape_seq = NULL, *strides_seq = NULL;
    PyObject *arr = NULL;
    PyArray_Descr *descr;
    void *address;
    npy_intp shape[OG_MAXDIMS], strides[OG_MAXDIMS], isz, extent;
    Py_ssize_t nd, k;
    int typenum, empty = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO&OOi:view", &base, address_converter, &address,
                          &shape_obj, &strides_obj, &typenum)) {
        return NULL;
    }
    descr = PyArray_DescrFromType(typenum); /* a new reference, stolen below */
    if (descr == NULL) return NULL;
    isz = PyDataType_ELSIZE(descr);
    shape_seq = PySequence_Fast(shape_obj, "view: shape must be a sequence");
    if (shape_seq == NULL) goto fail;
    nd = PySequence_Fast_GET_SIZE(shape_seq);
    if (strides_obj != Py_None) {
        strides_seq = PySequence_Fast(strides_obj, "view: strides must be a sequence or None");
        if (strides_seq == NULL) goto fail;
    }
    if (nd > OG_MAXDIMS || (strides_seq && PySequence_Fast_GET_SIZE(strides_seq) != nd)) {
        PyErr_Format(PyExc_ValueError,
                     "view: %zd sizes and %zd strides; want one stride per size, at most %d",
                     nd, strides_seq ? PySequence_Fast_GET_SIZE(strides_seq) : nd, OG_MAXDIMS);
        goto fail;
    }
    /* The layout told: sizes in [0, 2**62], strides whose bytes and whose span over the
     * sizes fit npy_intp (the kernels' extents and offsets of any array are then exact). */
    extent = isz;
    for (k = 0; k < nd; k++) {
        shape[k] = og_size_arg(PySequence_Fast_GET_ITEM(shape_seq, k), "view", "shape item");
        if (shape[k] < 0) goto fail;
        if (strides_seq) {
            npy_intp items = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(strides_seq, k)), bytes;
            if (items == -1 && PyErr_Occurred()) goto fail;
            if (items == NPY_MIN_INTP) { /* (whose magnitude is no npy_intp) */
                PyErr_Format(PyExc_OverflowError, "view: stride %zd overflows", items);
                goto fail;
            }
            if (!og_times(items < 0 ? -items : items, isz, &bytes, "view")) goto fail;
            strides[k] = items < 0 ? -bytes : bytes;
        }
    }
    for (k = 0; k < nd && !empty; k++) empty = shape[k] == 0;
    for (k = nd - 1; k >= 0 && !empty; k--) {
        /* (C order: dim k's stride is the extent of the dims after it.) */
        npy_intp step = !strides_seq ? extent : strides[k] < 0 ? -strides[k] : strides[k], reach;
        if (!og_times(shape[k] - 1, step, &reach, "view")) goto fail;
        if (reach > NPY_MAX_INTP - extent) {
            PyErr_Format(PyExc_OverflowError, "view: the layout's extent overflows (dim %zd)", k);
            goto fail;
        }
        extent += reach;
    }
    /* strides None: C order. */
    arr = PyArray_NewFromDescr(&PyArray_Type, descr, (int)nd, shape,
                               strides_seq ? strides : NULL, address, NPY_ARRAY_WRITEABLE, NULL);
    descr = NULL; /* stolen */
    if (arr == NULL) goto fail;
    Py_INCREF(base);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, base) < 0) {
        Py_CLEAR(arr);
    }
    Py_DECREF(shape_seq);
    Py_XDECREF(strides_seq);
    return arr;
fail:
    Py_XDECREF(descr);
    Py_XDECREF(shape_seq);
    Py_XDECREF(strides_seq);
    return NULL;
}

/* ------------------------------------------------------------------------------ */

static PyObject *
og_tune(PyObject *self, PyObject *args)
{
    Py_ssize_t min_per_thread = -1, block_bytes = -1;
    PyObject *res;
    (void)self;
    if (!PyArg_ParseTuple(args, "|nn:_tune", &min_per_thread, &block_bytes)) {
        return NULL;
    }
    res = Py_BuildValue("nn", (Py_ssize_t)og_min_per_thread, (Py_ssize_t)og_block_bytes);
    if (min_per_thread >= 0) og_min_per_thread = min_per_thread;
    if (block_bytes > 0) og_block_bytes = block_bytes;
    return res;
}

static PyMethodDef og_methods[] = {
    {"gather", og_gather, METH_VARARGS,
     "gather(data, indices, axis, out, check, threads) -> out or None\n\n"
     "ONNX Gather into the C-contiguous `out` (None: a new array); None when `check` "
     "and an index is out of range."},
    {"openvino_gather", og_openvino_gather, METH_VARARGS,
     "openvino_gather(data, indices, axis, out, negatives, threads) -> out\n\n"
     "OpenVINO Gather-8 (negatives true) or Gather-7 without batch dims into the "
     "C-contiguous `out` (None: a new array): zeros for an index out of range."},
    {"gather_elements", og_gather_elements, METH_VARARGS,
     "gather_elements(data, indices, axis, out, check, threads) -> out or None\n\n"
     "ONNX GatherElements into the C-contiguous `out` (None: a new array); None when "
     "`check` and an index is out of range."},
    {"gather_nd", og_gather_nd, METH_VARARGS,
     "gather_nd(data, indices, batch_dims, out, check, threads) -> out or None\n\n"
     "ONNX GatherND into the C-contiguous `out` (None: a new array); None when `check` "
     "and a coordinate is out of range for its axis."},
    {"scatter_elements", og_scatter_elements, METH_VARARGS,
     "scatter_elements(out, data, indices, updates, axis, reduction, kind, check, threads) "
     "-> True, None or NotImplemented\n\nONNX ScatterElements into `out`, after copying "
     "`data` into it (None: `out` holds data); None when `check` found an index out of "
     "range."},
    {"scatter_nd", og_scatter_nd, METH_VARARGS,
     "scatter_nd(out, data, indices, updates, reduction, kind, check, threads) -> True, "
     "None or NotImplemented\n\nONNX ScatterND into `out`, after copying `data` into it "
     "(None: `out` holds data); None when `check` found a coordinate out of range."},
    {"tensor_scatter_slices", (PyCFunction)(void (*)(void))og_tensor_scatter_slices,
     METH_FASTCALL,
     "tensor_scatter_slices(cache, update, write_indices, axis, circular) -> True or False\n\n"
     "TensorScatter-24 in place where every batch entry's update lands whole in the axis "
     "at its write index (C-ordered plain arrays, int64 indices, nothing shared): True, "
     "written; False, nothing written."},
    {"tensor_scatter_slices_at", (PyCFunction)(void (*)(void))og_tensor_scatter_slices_at,
     METH_FASTCALL,
     "tensor_scatter_slices_at(cache, update, write_indices, batch, outer, size, length, "
     "inner, circular) -> True or False\n\ntensor_scatter_slices on C-ordered buffers by "
     "address: batch x outer x size rows of `inner` bytes, the update's length rows, "
     "`batch` int64 indices."},
    {"scatter_nd_at", (PyCFunction)(void (*)(void))og_scatter_nd_at, METH_FASTCALL,
     "scatter_nd_at(data, updates, indices, count, dims, row) -> True or False\n\n"
     "ScatterND (reduction none) in place on C-ordered buffers by address: data of "
     "prod(dims) slices of `row` bytes, `count` int64 tuples of len(dims) coordinates and "
     "their update slices. True: written; False: nothing written (an index out of range, "
     "misaligned indices, memory shared with data)."},
    {"scatter_elements_at", (PyCFunction)(void (*)(void))og_scatter_elements_at,
     METH_FASTCALL,
     "scatter_elements_at(data, updates, indices, outer, size, length, inner, itemsize) "
     "-> True or False\n\nScatterElements (reduction none) in place on C-ordered buffers "
     "by address: data of outer x size x inner items, int64 indices and updates of outer x "
     "length x inner. True: written; False: nothing written."},
    {"gather_elements_at", (PyCFunction)(void (*)(void))og_gather_elements_at,
     METH_FASTCALL,
     "gather_elements_at(out, data, indices, outer, size, length, inner, itemsize) "
     "-> True or False\n\nGatherElements into `out` on C-ordered buffers by address: data "
     "of outer x size x inner items, int64 indices and out of outer x length x inner. "
     "True: read; False: nothing written (an index out of range, misaligned indices, "
     "memory shared with out)."},
    {"outside_at", (PyCFunction)(void (*)(void))og_outside_at, METH_FASTCALL,
     "outside_at(address, count, itemsize, size) -> True or False\n\nWhether any of count "
     "native int32 (itemsize 4) or int64 (8) indices at address lies outside "
     "[-size, size-1]."},
    {"view", og_view, METH_VARARGS,
     "view(base, address, shape, strides, typenum) -> ndarray\n\n"
     "An array over the memory at `address` (strides in items; None: C order), kept "
     "alive by `base`."},
    {"_tune", og_tune, METH_VARARGS,
     "_tune(min_elements_per_thread=-1, block_bytes=-1) -> (old, old): measurement "
     "knobs; negative leaves a value unchanged."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef og_module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "Fused multi-threaded CPU kernels for the ONNX Gather and Scatter operators.", -1,
    og_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    PyObject *m;
    import_array();
    m = PyModule_Create(&og_module);
    if (m == NULL) return NULL;
#ifdef Py_GIL_DISABLED
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
    return m;
}

