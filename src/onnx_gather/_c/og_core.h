/*
 * The shared core of onnx_gather._kernels: what every operator's kernel is made of.
 *
 * The odometer over dims with byte strides, dim collapsing, the typed element kernel
 * (OG_NORM: count a negative index from the end, check or clamp it, copy the element as
 * bytes), a call's threads (og_pool.c keeps them), the boundary (the checks every entry
 * point makes of its arguments before it touches memory), and jobs:
 * the part of a call every operator shares (og_job), made by job_new and run without the
 * GIL by job_run. Each operator's file (og_gather.c, og_gather_elements.c, ...) defines a job
 * struct that starts with an og_job, its plan (how to split the work) and its workers;
 * og_module.c holds the Python entry points. See og_module.c for the module's contract.
 */
#ifndef OG_CORE_H
#define OG_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
/* One NumPy C-API table for every file of the module: og_module.c imports it. */
#define PY_ARRAY_UNIQUE_SYMBOL onnx_gather_ARRAY_API
#ifndef OG_MODULE
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define OG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define OG_PREFETCH(p) __builtin_prefetch((p), 0, 3)
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <xmmintrin.h>
#define OG_UNLIKELY(x) (x)
#define OG_PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else
#define OG_UNLIKELY(x) (x)
#define OG_PREFETCH(p) ((void)(p))
#endif

#define OG_MAXDIMS 64
#define OG_MAXTHREADS 256
/* Elements a thread processes between looks at the shared "bad index" flag. */
#define OG_CHUNK 65536

/* Tunables (module-private setter `_tune` exists for measurements). */
/* Work units (about one random element read each) a thread must have before another one
 * is started: enough that a kept worker, which starts at once while it spins (og_pool.c),
 * pays for itself; a sleeping one is slow to wake, and the caller then runs its share
 * itself (the figures: docs/performance.md, "The C kernel"). */
extern npy_intp og_min_per_thread;
/* The work of copying `rows` blocks of `bytes` in all, in those units: a per-row cost and
 * a unit per 8 bytes, what a random element read costs in a row copy (page faults of a
 * new output included); at a unit per 64 bytes a large row copy never got its second
 * thread, which halves it (docs/performance.md, "The C kernel"). */
#define OG_COPY_WORK(rows, bytes) ((rows) * 8 + (bytes) / 8)
extern npy_intp og_block_bytes; /* GatherElements column-block working set */

/* Odometer over a list of dims (shape > 0) with byte strides. */
typedef struct {
    int nd;
    npy_intp shape[OG_MAXDIMS];
    npy_intp stride[OG_MAXDIMS];
    npy_intp coord[OG_MAXDIMS];
    npy_intp off;
} og_odo;

void odo_init(og_odo *o, int nd, const npy_intp *shape, const npy_intp *stride);
void odo_seek(og_odo *o, npy_intp flat);
void odo_next(og_odo *o);
/* Drop size-1 dims and merge neighbours that are contiguous with each other.
 * Returns the new number of dims.  Shapes must all be > 0. */
int collapse_dims(int nd, npy_intp *shape, npy_intp *stride);
/* Lines of a data row of s elements sa bytes apart, starting at base: where the row is
 * short enough to prefetch during n elements of the current row (one line per 8). */
const char *row_prefetch(const char *base, npy_int64 s, npy_intp sa, npy_intp isz, npy_intp n,
                         npy_intp *lines);
/* Split [0, n) into nt nearly equal parts without overflow. */
void og_part(npy_intp n, int t, int nt, npy_intp *lo, npy_intp *hi);

/* i counted from the end where negative, without a branch on its sign: a branch
 * mispredicts on mixed-sign indices (GatherND's 4096 mixed-sign coordinates of
 * 8x256x56x56 took twice the time of the same coordinates wrapped, where GCC made
 * `i += (i < 0) ? s : 0` a jump).  The mask is the sign bit spread over the word. */
static inline npy_int64
og_wrap(npy_int64 i, npy_int64 s)
{
    return i + (s & -(npy_int64)((npy_uint64)i >> 63));
}

/* Whether `a` is an exact ndarray of plain bytes (no object references, no StringDType
 * items kept out of line), C-ordered and aligned: one the plain writes in place
 * (og_tensor_scatter.c, og_scatter_at.c) may copy by its address. */
static inline int
og_plain_c_array(PyObject *a)
{
    PyArray_Descr *descr;
    if (!PyArray_CheckExact(a)) return 0;
    descr = PyArray_DESCR((PyArrayObject *)a);
    return !PyDataType_REFCHK(descr) && descr->kind != 'T' &&
           PyArray_IS_C_CONTIGUOUS((PyArrayObject *)a) && PyArray_ISALIGNED((PyArrayObject *)a);
}

/* Whether the byte ranges [a, a + na) and [b, b + nb) overlap. */
static inline int
og_bytes_overlap(const char *a, npy_intp na, const char *b, npy_intp nb)
{
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

/* Whether i, as given, is in [-s, s): one unsigned compare (s < 2^63, so 2*s fits) that
 * needs not wait for og_wrap's result, as a compare of the wrapped index does. */
static inline int
og_valid(npy_int64 i, npy_int64 s)
{
    return (npy_uint64)i + (npy_uint64)s < 2 * (npy_uint64)s;
}

/* A call's bounds mode (og_job.check): clamp an out-of-range index into the axis, stop at
 * the first one (the call returns None), or read zeros in its place (OpenVINO Gather-8;
 * Gather-7, whose negative indices are out of range too: its wrap size is 0). Gather's
 * kernels take every mode; the others clamp or stop. */
#define OG_CLAMP 0
#define OG_RAISE 1
#define OG_ZERO 2
#define OG_ZERO_POS 3

/* Branch-free normalisation (og_wrap), then one unsigned compare for the range; the
 * out-of-range branch is the unlikely one. */
#define OG_NORM(i, s, check)                                   \
    i = og_wrap(i, (s));                                       \
    if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)(s))) {       \
        if (check) {                                           \
            return 0;                                          \
        }                                                      \
        i = (i < 0) ? 0 : (s) - 1;                             \
    }

typedef int (*og_elem_fn)(const char *base, npy_intp sa, npy_int64 s, const void *idx,
                          npy_intp n, char *out, npy_intp isz, int check,
                          const char *pf, npy_intp pfn);

/* The index of an item size in the kernel tables: 1, 2, 4, 8, 16 bytes, else generic. */
int size_class(npy_intp isz);
/* dst (contiguous) <- n elements at src, stride apart. */
void strided_copy(char *dst, const char *src, npy_intp n, npy_intp stride, npy_intp isz);
/* A block of data to copy whole into contiguous output: dims with byte strides (the dims
 * after a gathered axis, or after GatherND's coordinates).  Fill nd, shape and stride,
 * then og_block_collapse; og_block_copy then copies one block from anywhere in data. */
typedef struct {
    int nd, contig;
    npy_intp shape[OG_MAXDIMS], stride[OG_MAXDIMS];
} og_block;
void og_block_collapse(og_block *b, npy_intp isz);
void og_block_copy(const og_block *b, char *dst, const char *src, npy_intp isz);

/* The element kernels, by [int64 indices][size_class]. */
extern const og_elem_fn og_elem_table[2][6];

/* Threads: run fn(job, t, nt) for t in [0, nt), the calling thread taking t = 0. */
typedef void (*og_work_fn)(void *job, int t, int nt);
void og_run(og_work_fn fn, void *job, int nt);
/* The same on the kept worker threads (og_pool.c): 1 when done, 0 (nothing run) when the
 * pool is busy or absent. */
int og_pool_run(og_work_fn fn, void *job, int nt);
/* How many threads `work` units split into `units` pieces are worth (at most `threads`). */
int og_nthreads(npy_intp threads, npy_intp work, npy_intp units);

/* ------------------------------------------------------------------------------ */
/* The boundary: what every entry point checks of its arguments before it touches     */
/* memory.  The Python layer checks its calls too; these are the second wall, so that a */
/* wrong call from it is an exception, never a read or write outside a buffer.  Each    */
/* check costs a few comparisons per call (per dim at most), never one per element.     */
/* The og_check_* functions return 0 when the argument is as required, else -1 with an  */
/* exception set whose message names the entry point (`fn`), the argument and its value. */
/* Arrays: an ndarray's strides are its own (NumPy's invariant, and `view`'s check of   */
/* what it is told): every kernel addresses each array through its own shape and       */
/* strides, so the checks compare shapes with each other and look for shared bytes.   */

/* threads >= 1 (ValueError). */
int og_check_threads(const char *fn, Py_ssize_t threads);
/* a.ndim in [lo, hi] (ValueError). */
int og_check_rank(const char *fn, const char *name, PyArrayObject *a, int lo, int hi);
/* a.shape[first + d] against want[d] for d in [0, n), but d == skip (-1: none): equal,
 * or at most want[d] (at_most). `of` names the array want[] comes from (its dim d being
 * of_first + d), or is NULL for a computed shape (ValueError). */
int og_check_dims(const char *fn, const char *name, PyArrayObject *a, int first,
                  const npy_intp *want, const char *of, int of_first, int n, int skip,
                  int at_most);
/* axis (its argument's name: "axis", "batch_dims") in [0, rank), rank that of the array
 * `of` names (ValueError). */
int og_check_axis(const char *fn, const char *name, Py_ssize_t axis, const char *of, int rank);
/* The coordinates per index tuple, indices.shape[-1] (indices of rank >= 1), in [1, hi]
 * (ValueError); -1 with the error set. */
int og_coordinates(const char *fn, PyArrayObject *ind, int hi);
/* a and out share no byte (ValueError naming a and both byte ranges): the kernels read
 * every input while writing `out`, and copy with memcpy. */
int og_check_apart(const char *fn, const char *name, PyArrayObject *a, PyArrayObject *out);
/* The gathers' data, indices, axis (or batch_dims) and threads: data of rank 1 to
 * OG_MAXDIMS without object references; indices C-ordered, aligned, native int32 or
 * int64; axis (`axis_name`: "axis", "batch_dims") in [0, data.ndim). */
int check_args(const char *fn, const char *axis_name, PyArrayObject *data, PyArrayObject *ind,
               Py_ssize_t axis, Py_ssize_t threads);

/* Sizes told by the by-address entry points (og_scatter_at.c, og_tensor_scatter.c,
 * og_bounds.c) and `view`: they vouch for memory the kernel cannot see, so at least the
 * layout they describe must be one: each size in [0, 2**62], every product of sizes
 * (and a buffer's byte extent) without overflow. */
/* A size argument in [0, 2**62] (ValueError naming it and its value); -1 with an error
 * set. */
npy_intp og_size_arg(PyObject *arg, const char *fn, const char *name);
/* *out = a * b for a, b >= 0; 0 with an OverflowError naming fn where the product
 * overflows npy_intp, else 1. */
int og_times(npy_intp a, npy_intp b, npy_intp *out, const char *fn);

/* ------------------------------------------------------------------------------ */
/* Jobs: the part of a call both operators share.  Each operator's job struct starts */
/* with an og_job, so workers and plans take either through one pointer.            */

typedef struct {
    PyArrayObject *result; /* `out`, owned: the call's result when every index is valid */
    const char *data;
    char *out;
    const void *ind;
    int ind64, check;
    npy_intp threads, isz, sa;
    npy_intp nind, total; /* indices size, output size */
    npy_int64 s;          /* data.shape[axis]; with coordinates the smallest of sizes */
    /* The size each index component addresses: one for every index (sizes = &s), or one
     * per coordinate, index k being coordinate k % ncoord (GatherND). */
    int ncoord;
    const npy_int64 *sizes;
    /* The kernels for this item size and index type. */
    og_elem_fn elem_fn;
    int cls; /* size_class of the item size: an operator's own kernel tables' column */
    volatile int bad;
} og_job;

/* The operator-specific part of a call, run without the GIL on an output with at least one
 * element and data with at least one row along the axis: split the work, run the threads. */
typedef void (*og_plan_fn)(og_job *h);

/* A job of `size` bytes, its og_job filled for an output of shape (nd, shape): the `given`
 * out once checked, or a new array.  NULL with an exception set (see og_core.c). */
og_job *job_new(const char *fn, size_t size, PyArrayObject *data, PyArrayObject *ind,
                Py_ssize_t axis, PyObject *given, int check, Py_ssize_t threads, int nd,
                const npy_intp *shape);
/* Run a job without the GIL (plan only where there is something to copy) and free it.
 * Returns `out`, or None when `check` found an index out of range. */
PyObject *job_run(og_job *h, og_plan_fn plan);
/* Output elements [e0, e1) of rows of n through the element kernel (see og_core.c). */
void elem_rows(og_job *h, int nd, const npy_intp *shape, const npy_intp *stride, npy_intp n,
               int ind_per_row, npy_intp e0, npy_intp e1);

/* The operators' implementations, called with arguments check_args accepted; `fn` names
 * the entry point in their errors. */
typedef PyObject *(*og_impl)(const char *, PyArrayObject *, PyArrayObject *, Py_ssize_t,
                             PyObject *, int, Py_ssize_t);
PyObject *gather_impl(const char *fn, PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis,
                      PyObject *given, int check, Py_ssize_t threads);
PyObject *gather_elements_impl(const char *fn, PyArrayObject *data, PyArrayObject *ind,
                               Py_ssize_t axis, PyObject *given, int check, Py_ssize_t threads);
PyObject *gather_nd_impl(const char *fn, PyArrayObject *data, PyArrayObject *ind,
                         Py_ssize_t batch_dims, PyObject *given, int check, Py_ssize_t threads);

/* The scatters' entry points (og_scatter.c), which parse their own arguments. */
PyObject *og_scatter_elements(PyObject *self, PyObject *args);
PyObject *og_scatter_nd(PyObject *self, PyObject *args);
PyObject *og_tensor_scatter_slices(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *og_tensor_scatter_slices_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* The scatters' plain writes in place by address (og_scatter_at.c). */
PyObject *og_scatter_nd_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *og_scatter_elements_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *og_gather_elements_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* The bounds check by address (og_bounds.c). */
PyObject *og_outside_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif /* OG_CORE_H */
