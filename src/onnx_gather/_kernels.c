/*
 * onnx_gather._kernels: fused, multi-threaded CPU kernels for ONNX Gather and
 * GatherElements on NumPy arrays.
 *
 *   gather(data, indices, axis, out, check, threads) -> out or None
 *   gather_elements(data, indices, axis, out, check, threads) -> out or None
 *
 * `out` is a C-ordered array to fill, or None for a new one of data's dtype. Both release
 * the GIL while copying and return None only when `check` is true and some index lies
 * outside [-s, s-1] (s = data.shape[axis]); a given `out` is then unspecified. They
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
 * Threads are created per call and joined before returning (no pool, no OpenMP), so
 * the module survives fork().  Windows uses _beginthreadex, everything else pthreads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>

#include <string.h>

#ifdef _WIN32
#include <windows.h>
#include <process.h>
#else
#include <pthread.h>
#endif

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
/* Work units (about one random element read each, ~0.7 ns here) a thread must have before
 * another one is started: starting and waking a thread costs ~25-100 us on the 2-core VM
 * this was measured on, so 2 threads only pay from ~0.1 ms of single-thread work. */
static npy_intp og_min_per_thread = 65536;
static npy_intp og_block_bytes = 524288;   /* GatherElements column-block working set */

/* ------------------------------------------------------------------------------ */
/* Odometer over a list of dims (shape > 0) with byte strides.                      */

typedef struct {
    int nd;
    npy_intp shape[OG_MAXDIMS];
    npy_intp stride[OG_MAXDIMS];
    npy_intp coord[OG_MAXDIMS];
    npy_intp off;
} og_odo;

static void
odo_init(og_odo *o, int nd, const npy_intp *shape, const npy_intp *stride)
{
    int d;
    o->nd = nd;
    for (d = 0; d < nd; d++) {
        o->shape[d] = shape[d];
        o->stride[d] = stride[d];
        o->coord[d] = 0;
    }
    o->off = 0;
}

static void
odo_seek(og_odo *o, npy_intp flat)
{
    int d;
    o->off = 0;
    for (d = o->nd - 1; d >= 0; d--) {
        npy_intp c = flat % o->shape[d];
        flat /= o->shape[d];
        o->coord[d] = c;
        o->off += c * o->stride[d];
    }
}

static void
odo_next(og_odo *o)
{
    int d;
    for (d = o->nd - 1; d >= 0; d--) {
        o->coord[d]++;
        o->off += o->stride[d];
        if (o->coord[d] < o->shape[d]) {
            return;
        }
        o->off -= o->coord[d] * o->stride[d];
        o->coord[d] = 0;
    }
}

/* Drop size-1 dims and merge neighbours that are contiguous with each other.
 * Returns the new number of dims.  Shapes must all be > 0. */
static int
collapse_dims(int nd, npy_intp *shape, npy_intp *stride)
{
    int d, n = 0;
    for (d = 0; d < nd; d++) {
        if (shape[d] == 1) {
            continue;
        }
        if (n > 0 && stride[n - 1] == stride[d] * shape[d]) {
            shape[n - 1] *= shape[d];
            stride[n - 1] = stride[d];
        }
        else {
            shape[n] = shape[d];
            stride[n] = stride[d];
            n++;
        }
    }
    return n;
}

/* Lines of a data row of s elements sa bytes apart, starting at base: where the row is
 * short enough to prefetch during n elements of the current row (one line per 8). */
static const char *
row_prefetch(const char *base, npy_int64 s, npy_intp sa, npy_intp isz, npy_intp n,
             npy_intp *lines)
{
    npy_intp span = (npy_intp)(s - 1) * sa, lo = span < 0 ? span : 0;
    npy_intp bytes = (span < 0 ? -span : span) + isz;
    npy_intp nl = (bytes + 63) / 64;
    if ((sa != isz && sa != -isz) || nl > (n + 7) / 8) {
        *lines = 0;
        return base;
    }
    *lines = nl;
    return base + lo;
}

/* Split [0, n) into nt nearly equal parts without overflow. */
static void
og_part(npy_intp n, int t, int nt, npy_intp *lo, npy_intp *hi)
{
    npy_intp base = n / nt, rem = n % nt;
    *lo = (npy_intp)t * base + (t < rem ? t : rem);
    *hi = *lo + base + (t < rem ? 1 : 0);
}

/* ------------------------------------------------------------------------------ */
/* Typed kernels.  NAME: suffix; IDX: index C type; SZEXPR: item size expression      */
/* (a constant for the specialised sizes, `isz` for the generic one).                */

/* Branch-free normalisation (a branch on the sign mispredicts on mixed-sign indices):
 * add s where i < 0, then one unsigned compare for the range; the out-of-range branch
 * is the unlikely one. */
#define OG_NORM(i, s, check)                                   \
    i += (s) & -(npy_int64)((npy_uint64)i >> 63);              \
    if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)(s))) {       \
        if (check) {                                           \
            return 0;                                          \
        }                                                      \
        i = (i < 0) ? 0 : (s) - 1;                             \
    }

typedef int (*og_elem_fn)(const char *base, npy_intp sa, npy_int64 s, const void *idx,
                          npy_intp n, char *out, npy_intp isz, int check,
                          const char *pf, npy_intp pfn);
typedef int (*og_rows_fn)(const char *base, npy_intp rs, npy_intp sa, npy_int64 s,
                          const void *idx, char *out, npy_intp nrows, npy_intp K,
                          npy_intp isz, int check);
typedef int (*og_block_fn)(const char *base, npy_intp sa, npy_intp sl, npy_int64 s,
                           const void *idx, char *out, npy_intp rows, npy_intp rstride,
                           npy_intp bw, npy_intp isz, int check);

#define OG_DEFINE(NAME, IDX, SZEXPR)                                                   \
    /* out[k] = base[norm(idx[k]) * sa], k < n (out contiguous); one cache line of    \
       pf (the next row's data) is prefetched every 8 elements, pfn lines in all. */   \
    static int elem_##NAME(const char *base, npy_intp sa, npy_int64 s,                 \
                           const void *idxv, npy_intp n, char *out, npy_intp isz,      \
                           int check, const char *pf, npy_intp pfn)                    \
    {                                                                                  \
        const IDX *idx = (const IDX *)idxv;                                            \
        const npy_intp sz = (SZEXPR);                                                  \
        npy_intp k = 0, kend;                                                          \
        (void)isz;                                                                     \
        for (; pfn > 0 && k < n; pfn--, pf += 64) {                                    \
            OG_PREFETCH(pf);                                                           \
            kend = (n - k > 8) ? k + 8 : n;                                            \
            for (; k < kend; k++) {                                                    \
                npy_int64 i = (npy_int64)idx[k];                                       \
                OG_NORM(i, s, check)                                                   \
                memcpy(out + k * sz, base + (npy_intp)i * sa, sz);                     \
            }                                                                          \
        }                                                                              \
        for (; k < n; k++) {                                                           \
            npy_int64 i = (npy_int64)idx[k];                                           \
            OG_NORM(i, s, check)                                                       \
            memcpy(out + k * sz, base + (npy_intp)i * sa, sz);                         \
        }                                                                              \
        return 1;                                                                      \
    }                                                                                  \
    /* nrows short rows of K: out[r][k] = base[r * rs + norm(idx[r][k]) * sa]; idx and \
       out C-ordered. One tight loop: per-row overhead decides short rows (top-k). */  \
    static int rows_##NAME(const char *base, npy_intp rs, npy_intp sa, npy_int64 s,    \
                           const void *idxv, char *out, npy_intp nrows, npy_intp K,    \
                           npy_intp isz, int check)                                    \
    {                                                                                  \
        const IDX *idx = (const IDX *)idxv;                                            \
        const npy_intp sz = (SZEXPR);                                                  \
        npy_intp r, k;                                                                 \
        (void)isz;                                                                     \
        for (r = 0; r < nrows; r++, base += rs, idx += K, out += K * sz) {             \
            for (k = 0; k < K; k++) {                                                  \
                npy_int64 i = (npy_int64)idx[k];                                       \
                OG_NORM(i, s, check)                                                   \
                memcpy(out + k * sz, base + (npy_intp)i * sa, sz);                     \
            }                                                                          \
        }                                                                              \
        return 1;                                                                      \
    }                                                                                  \
    /* rows x bw block: out[r][k] = base[norm(idx[r][k]) * sa + k * sl];               \
       idx and out rows are rstride elements apart. */                                 \
    static int block_##NAME(const char *base, npy_intp sa, npy_intp sl, npy_int64 s,   \
                            const void *idxv, char *out, npy_intp rows,                \
                            npy_intp rstride, npy_intp bw, npy_intp isz, int check)    \
    {                                                                                  \
        const IDX *idx = (const IDX *)idxv;                                            \
        const npy_intp sz = (SZEXPR);                                                  \
        npy_intp r, k;                                                                 \
        (void)isz;                                                                     \
        for (r = 0; r < rows; r++) {                                                   \
            const IDX *ir = idx + r * rstride;                                         \
            char *orow = out + r * rstride * sz;                                       \
            const char *col = base;                                                    \
            for (k = 0; k < bw; k++, col += sl) {                                      \
                npy_int64 i = (npy_int64)ir[k];                                        \
                OG_NORM(i, s, check)                                                   \
                memcpy(orow + k * sz, col + (npy_intp)i * sa, sz);                     \
            }                                                                          \
        }                                                                              \
        return 1;                                                                      \
    }

OG_DEFINE(i32_1, npy_int32, 1)
OG_DEFINE(i32_2, npy_int32, 2)
OG_DEFINE(i32_4, npy_int32, 4)
OG_DEFINE(i32_8, npy_int32, 8)
OG_DEFINE(i32_16, npy_int32, 16)
OG_DEFINE(i32_g, npy_int32, isz)
OG_DEFINE(i64_1, npy_int64, 1)
OG_DEFINE(i64_2, npy_int64, 2)
OG_DEFINE(i64_4, npy_int64, 4)
OG_DEFINE(i64_8, npy_int64, 8)
OG_DEFINE(i64_16, npy_int64, 16)
OG_DEFINE(i64_g, npy_int64, isz)

static const og_elem_fn og_elem_table[2][6] = {
    {elem_i32_1, elem_i32_2, elem_i32_4, elem_i32_8, elem_i32_16, elem_i32_g},
    {elem_i64_1, elem_i64_2, elem_i64_4, elem_i64_8, elem_i64_16, elem_i64_g},
};
static const og_block_fn og_block_table[2][6] = {
    {block_i32_1, block_i32_2, block_i32_4, block_i32_8, block_i32_16, block_i32_g},
    {block_i64_1, block_i64_2, block_i64_4, block_i64_8, block_i64_16, block_i64_g},
};
static const og_rows_fn og_rows_table[2][6] = {
    {rows_i32_1, rows_i32_2, rows_i32_4, rows_i32_8, rows_i32_16, rows_i32_g},
    {rows_i64_1, rows_i64_2, rows_i64_4, rows_i64_8, rows_i64_16, rows_i64_g},
};

/* Rows shorter than this (GatherElements along the last axis) go through rows_* in one
 * loop: per-row overhead decided a top-8 of 32x1024x64 float32 (python -m benchmarks,
 * 2-core EPYC: 1.23x ONNX Runtime row by row, 0.68x in one loop). */
#define OG_SHORT_ROW 64

static int
size_class(npy_intp isz)
{
    switch (isz) {
        case 1: return 0;
        case 2: return 1;
        case 4: return 2;
        case 8: return 3;
        case 16: return 4;
        default: return 5;
    }
}

/* dst (contiguous) <- n elements at src, stride apart. */
#define OG_STRIDED(SZ)                                          \
    for (k = 0; k < n; k++, src += stride) {                    \
        memcpy(dst + k * (SZ), src, (SZ));                      \
    }                                                           \
    break;

static void
strided_copy(char *dst, const char *src, npy_intp n, npy_intp stride, npy_intp isz)
{
    npy_intp k;
    switch (isz) {
        case 1: OG_STRIDED(1)
        case 2: OG_STRIDED(2)
        case 4: OG_STRIDED(4)
        case 8: OG_STRIDED(8)
        case 16: OG_STRIDED(16)
        default: OG_STRIDED(isz)
    }
}

/* ------------------------------------------------------------------------------ */
/* Threads                                                                          */

typedef void (*og_work_fn)(void *job, int t, int nt);

typedef struct {
    og_work_fn fn;
    void *job;
    int t, nt;
} og_targ;

#ifdef _WIN32
static unsigned __stdcall
og_thread_main(void *p)
{
    og_targ *a = (og_targ *)p;
    a->fn(a->job, a->t, a->nt);
    return 0;
}
#else
static void *
og_thread_main(void *p)
{
    og_targ *a = (og_targ *)p;
    a->fn(a->job, a->t, a->nt);
    return NULL;
}
#endif

/* Run fn(job, t, nt) for t in [0, nt): t = 0 on the calling thread, the rest on threads
 * created here and joined before returning.  A thread that cannot be created has its
 * share run on the calling thread afterwards. */
static void
og_run(og_work_fn fn, void *job, int nt)
{
    og_targ args[OG_MAXTHREADS];
    int started[OG_MAXTHREADS];
#ifdef _WIN32
    HANDLE th[OG_MAXTHREADS];
#else
    pthread_t th[OG_MAXTHREADS];
#endif
    int t;
    if (nt <= 1) {
        fn(job, 0, 1);
        return;
    }
    for (t = 1; t < nt; t++) {
        args[t].fn = fn;
        args[t].job = job;
        args[t].t = t;
        args[t].nt = nt;
#ifdef _WIN32
        th[t] = (HANDLE)_beginthreadex(NULL, 0, og_thread_main, &args[t], 0, NULL);
        started[t] = th[t] != 0;
#else
        started[t] = pthread_create(&th[t], NULL, og_thread_main, &args[t]) == 0;
#endif
    }
    fn(job, 0, nt);
    for (t = 1; t < nt; t++) {
        if (started[t]) {
#ifdef _WIN32
            WaitForSingleObject(th[t], INFINITE);
            CloseHandle(th[t]);
#else
            pthread_join(th[t], NULL);
#endif
        }
        else {
            fn(job, t, nt);
        }
    }
}

static int
og_nthreads(npy_intp threads, npy_intp work, npy_intp units)
{
    npy_intp nt = threads;
    npy_intp by_work = og_min_per_thread > 0 ? work / og_min_per_thread : work;
    if (nt > by_work) nt = by_work;
    if (nt > units) nt = units;
    if (nt > OG_MAXTHREADS) nt = OG_MAXTHREADS;
    if (nt < 1) nt = 1;
    return (int)nt;
}

/* ------------------------------------------------------------------------------ */
/* Argument validation shared by both functions                                     */

/* The arguments both operators take alike.  Returns 0, or -1 with an exception set. */
static int
check_args(PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis, Py_ssize_t threads)
{
    npy_intp isz = PyArray_ITEMSIZE(ind);
    if (PyDataType_REFCHK(PyArray_DESCR(data))) {
        PyErr_SetString(PyExc_TypeError,
                        "data: dtypes holding object references are not supported");
        return -1;
    }
    if (PyArray_NDIM(data) < 1) {
        PyErr_SetString(PyExc_ValueError, "data must have at least one dimension");
        return -1;
    }
    if (!PyArray_ISINTEGER(ind) || !PyArray_ISSIGNED(ind) || (isz != 4 && isz != 8)) {
        PyErr_SetString(PyExc_TypeError, "indices must be int32 or int64");
        return -1;
    }
    if (!PyArray_ISNOTSWAPPED(ind)) {
        PyErr_SetString(PyExc_TypeError, "indices must be in native byte order");
        return -1;
    }
    if (!PyArray_IS_C_CONTIGUOUS(ind) || !PyArray_ISALIGNED(ind)) {
        PyErr_SetString(PyExc_ValueError, "indices must be C-contiguous and aligned");
        return -1;
    }
    if (axis < 0 || axis >= PyArray_NDIM(data)) {
        PyErr_Format(PyExc_ValueError, "axis %zd is out of range for data of rank %d",
                     axis, PyArray_NDIM(data));
        return -1;
    }
    if (threads < 1) {
        PyErr_SetString(PyExc_ValueError, "threads must be >= 1");
        return -1;
    }
    return 0;
}

/* Byte extent [lo, hi) of a non-empty array. */
static void
array_extent(PyArrayObject *a, char **lo, char **hi)
{
    int d;
    npy_intp l = 0, h = PyArray_ITEMSIZE(a);
    for (d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp span = (PyArray_DIM(a, d) - 1) * PyArray_STRIDE(a, d);
        if (span < 0) l += span;
        else h += span;
    }
    *lo = (char *)PyArray_DATA(a) + l;
    *hi = (char *)PyArray_DATA(a) + h;
}

static int
overlaps(PyArrayObject *a, PyArrayObject *b)
{
    char *alo, *ahi, *blo, *bhi;
    if (PyArray_SIZE(a) == 0 || PyArray_SIZE(b) == 0) {
        return 0;
    }
    array_extent(a, &alo, &ahi);
    array_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

static int
check_out(PyArrayObject *out, PyArrayObject *data, PyArrayObject *ind, int nd,
          const npy_intp *shape)
{
    int d;
    if (PyArray_ITEMSIZE(out) != PyArray_ITEMSIZE(data)) {
        PyErr_SetString(PyExc_TypeError, "out must have the item size of data");
        return -1;
    }
    if (!PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out)) {
        PyErr_SetString(PyExc_ValueError, "out must be C-contiguous and writeable");
        return -1;
    }
    if (PyDataType_REFCHK(PyArray_DESCR(out))) {
        PyErr_SetString(PyExc_TypeError,
                        "out: dtypes holding object references are not supported");
        return -1;
    }
    if (PyArray_NDIM(out) != nd) {
        PyErr_Format(PyExc_ValueError, "out has rank %d, expected %d", PyArray_NDIM(out),
                     nd);
        return -1;
    }
    for (d = 0; d < nd; d++) {
        if (PyArray_DIM(out, d) != shape[d]) {
            PyErr_Format(PyExc_ValueError,
                         "out has shape[%d] == %zd, expected %zd", d,
                         (Py_ssize_t)PyArray_DIM(out, d), (Py_ssize_t)shape[d]);
            return -1;
        }
    }
    if (overlaps(out, data) || overlaps(out, ind)) {
        PyErr_SetString(PyExc_ValueError, "out must not overlap data or indices");
        return -1;
    }
    return 0;
}

/* `out` as given, or a new C-ordered array of data's dtype and `shape` when it is None.
 * Returns a new reference, or NULL with an exception set. */
static PyArrayObject *
resolve_out(PyObject *given, PyArrayObject *data, int nd, const npy_intp *shape)
{
    PyArray_Descr *descr;
    if (given != Py_None) {
        if (!PyArray_Check(given)) {
            PyErr_SetString(PyExc_TypeError, "out must be a NumPy array or None");
            return NULL;
        }
        Py_INCREF(given);
        return (PyArrayObject *)given;
    }
    descr = PyArray_DESCR(data);
    Py_INCREF(descr);
    return (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, descr, nd, (npy_intp *)shape,
                                                 NULL, NULL, 0, NULL);
}

/* Scan indices only (empty outputs with check on). */
static int
scan_indices(const void *ind, int ind64, npy_intp n, npy_int64 s)
{
    npy_intp k;
    for (k = 0; k < n; k++) {
        npy_int64 i = ind64 ? ((const npy_int64 *)ind)[k] : ((const npy_int32 *)ind)[k];
        if (i < -s || i >= s) {
            return 0;
        }
    }
    return 1;
}

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
    npy_int64 s;          /* data.shape[axis] */
    /* The kernels for this item size and index type. */
    og_elem_fn elem_fn;
    og_rows_fn rows_fn;
    og_block_fn block_fn;
    volatile int bad;
} og_job;

/* The operator-specific part of a call, run without the GIL on an output with at least one
 * element and data with at least one row along the axis: split the work, run the threads. */
typedef void (*og_plan_fn)(og_job *h);

/* A job of `size` bytes, its og_job filled for an output of shape (nd, shape): the `given`
 * out once checked, or a new array.  Jobs run without the GIL, so whatever they need of the
 * arrays is copied into them here and in the impls.  Only the og_job is zeroed: clearing
 * the operator's dims too costs ~25 ns a call, and its impl and plan set each field they
 * read.  NULL with an exception set. */
static og_job *
job_new(size_t size, PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis,
        PyObject *given, int check, Py_ssize_t threads, int nd, const npy_intp *shape)
{
    og_job *h;
    int cls = size_class(PyArray_ITEMSIZE(data)), ind64 = PyArray_ITEMSIZE(ind) == 8;
    PyArrayObject *out = resolve_out(given, data, nd, shape);
    if (out == NULL) return NULL;
    if (check_out(out, data, ind, nd, shape) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    h = (og_job *)PyMem_RawMalloc(size);
    if (h == NULL) {
        Py_DECREF(out);
        PyErr_NoMemory();
        return NULL;
    }
    memset(h, 0, sizeof(*h));
    h->result = out;
    h->data = (const char *)PyArray_DATA(data);
    h->out = (char *)PyArray_DATA(out);
    h->ind = PyArray_DATA(ind);
    h->ind64 = ind64;
    h->check = check;
    h->threads = threads;
    h->isz = PyArray_ITEMSIZE(data);
    h->sa = PyArray_STRIDE(data, (int)axis);
    h->nind = PyArray_SIZE(ind);
    h->total = PyArray_SIZE(out);
    h->s = (npy_int64)PyArray_DIM(data, (int)axis);
    h->elem_fn = og_elem_table[ind64][cls];
    h->rows_fn = og_rows_table[ind64][cls];
    h->block_fn = og_block_table[ind64][cls];
    return h;
}

/* Run a job without the GIL (plan only where there is something to copy) and free it.
 * Returns `out`, or None when `check` found an index out of range. */
static PyObject *
job_run(og_job *h, og_plan_fn plan)
{
    PyArrayObject *out = h->result;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    if (h->total == 0) {
        /* Nothing to copy, but an index out of range still makes the result None. */
        ok = !h->check || scan_indices(h->ind, h->ind64, h->nind, h->s);
    }
    else if (h->s == 0) {
        /* Every index is out of range; without check, zero bytes. */
        ok = !h->check;
        if (ok) memset(h->out, 0, (size_t)(h->total * h->isz));
    }
    else {
        plan(h);
        ok = !h->bad;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(h);
    if (ok) return (PyObject *)out;
    Py_DECREF(out);
    Py_RETURN_NONE;
}

/* Output elements [e0, e1) of rows of n, row r reading data at the offset of flat position
 * r of the odometer over (nd, shape, stride): the element kernel over runs of a row,
 * prefetching the next row's data where it is short.  The indices are n shared by every
 * row (Gather), or n of its own for each row (ind_per_row: GatherElements). */
static void
elem_rows(og_job *h, int nd, const npy_intp *shape, const npy_intp *stride, npy_intp n,
          int ind_per_row, npy_intp e0, npy_intp e1)
{
    const npy_intp idsz = h->ind64 ? 8 : 4;
    npy_intp e = e0, k;
    og_odo cur, ahead;
    if (e0 >= e1) return;
    odo_init(&cur, nd, shape, stride);
    odo_seek(&cur, e0 / n);
    odo_init(&ahead, nd, shape, stride);
    odo_seek(&ahead, e0 / n);
    odo_next(&ahead);
    k = e0 % n;
    while (e < e1) {
        npy_intp cnt = n - k, pfn = 0;
        const char *pf = NULL;
        if (cnt > e1 - e) cnt = e1 - e;
        if (cnt > OG_CHUNK) cnt = OG_CHUNK;
        if (h->bad) return;
        if (k + cnt == n && e + cnt < e1) {
            pf = row_prefetch(h->data + ahead.off, h->s, h->sa, h->isz, cnt, &pfn);
        }
        if (!h->elem_fn(h->data + cur.off, h->sa, h->s,
                        (const char *)h->ind + (ind_per_row ? e : k) * idsz, cnt,
                        h->out + e * h->isz, h->isz, h->check, pf, pfn)) {
            h->bad = 1;
            return;
        }
        e += cnt;
        k += cnt;
        if (k == n) {
            k = 0;
            odo_next(&cur);
            odo_next(&ahead);
        }
    }
}

/* ------------------------------------------------------------------------------ */
/* Gather                                                                           */

typedef struct {
    og_job h;
    int pre_nd, post_nd, post_contig;
    npy_intp pre_shape[OG_MAXDIMS], pre_stride[OG_MAXDIMS];
    npy_intp post_shape[OG_MAXDIMS], post_stride[OG_MAXDIMS];
    npy_intp P, R; /* post size, rows = pre size * indices size */
} og_gather_job;

/* Copy one post block (P elements) starting at src into contiguous dst. */
static void
gather_copy_post(const og_gather_job *J, char *dst, const char *src)
{
    const npy_intp isz = J->h.isz;
    if (J->post_contig) {
        memcpy(dst, src, J->P * isz);
    }
    else if (J->post_nd == 1) {
        strided_copy(dst, src, J->post_shape[0], J->post_stride[0], isz);
    }
    else {
        /* Odometer over the outer post dims, strided copy along the last. */
        int nd = J->post_nd - 1, d;
        npy_intp coord[OG_MAXDIMS];
        npy_intp inner = J->post_shape[nd], istride = J->post_stride[nd];
        npy_intp rowbytes = inner * isz;
        npy_intp outer = J->P / inner, r;
        const char *p = src;
        for (d = 0; d < nd; d++) coord[d] = 0;
        for (r = 0; r < outer; r++) {
            strided_copy(dst + r * rowbytes, p, inner, istride, isz);
            for (d = nd - 1; d >= 0; d--) {
                coord[d]++;
                p += J->post_stride[d];
                if (coord[d] < J->post_shape[d]) break;
                p -= coord[d] * J->post_stride[d];
                coord[d] = 0;
            }
        }
    }
}

static void
gather_work(void *jv, int t, int nt)
{
    og_gather_job *J = (og_gather_job *)jv;
    og_job *h = &J->h;
    const npy_intp N = h->nind, blockbytes = J->P * h->isz;
    const npy_int64 s = h->s;
    npy_intp r0, r1, r, j, since = 0;
    og_odo pre;
    og_part(J->R, t, nt, &r0, &r1);
    if (J->P == 1) {
        /* One element per index. */
        elem_rows(h, J->pre_nd, J->pre_shape, J->pre_stride, N, 0, r0, r1);
        return;
    }
    if (r0 >= r1) return;
    odo_init(&pre, J->pre_nd, J->pre_shape, J->pre_stride);
    odo_seek(&pre, r0 / N);
    j = r0 % N;
    for (r = r0; r < r1; r++) {
        npy_int64 i = h->ind64 ? ((const npy_int64 *)h->ind)[j]
                               : (npy_int64)((const npy_int32 *)h->ind)[j];
        i += (i < 0) ? s : 0;
        if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)s)) {
            if (h->check) {
                h->bad = 1;
                return;
            }
            i = (i < 0) ? 0 : s - 1;
        }
        gather_copy_post(J, h->out + r * blockbytes, h->data + pre.off + (npy_intp)i * h->sa);
        since += J->P;
        if (since >= OG_CHUNK) {
            since = 0;
            if (h->bad) return;
        }
        if (++j == N) {
            j = 0;
            odo_next(&pre);
        }
    }
}

static void
gather_plan(og_job *h)
{
    og_gather_job *J = (og_gather_job *)h;
    J->pre_nd = collapse_dims(J->pre_nd, J->pre_shape, J->pre_stride);
    J->post_nd = collapse_dims(J->post_nd, J->post_shape, J->post_stride);
    J->post_contig = J->post_nd == 0 || (J->post_nd == 1 && J->post_stride[0] == h->isz);
    /* Work: elements for element gathers; per-row cost plus bytes for row copies. */
    og_run(gather_work, J,
           og_nthreads(h->threads, J->P == 1 ? h->total : J->R * 8 + (h->total * h->isz) / 64,
                       J->R));
}

static PyObject *
gather_impl(PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis, PyObject *given,
            int check, Py_ssize_t threads)
{
    const int ndim = PyArray_NDIM(data), ax = (int)axis;
    int d;
    npy_intp oshape[2 * OG_MAXDIMS];
    og_gather_job *J;

    for (d = 0; d < ax; d++) oshape[d] = PyArray_DIM(data, d);
    for (d = 0; d < PyArray_NDIM(ind); d++) oshape[ax + d] = PyArray_DIM(ind, d);
    for (d = ax + 1; d < ndim; d++) oshape[PyArray_NDIM(ind) + d - 1] = PyArray_DIM(data, d);
    J = (og_gather_job *)job_new(sizeof(*J), data, ind, axis, given, check, threads,
                                 ndim - 1 + PyArray_NDIM(ind), oshape);
    if (J == NULL) return NULL;
    J->pre_nd = ax;
    J->post_nd = ndim - 1 - ax;
    J->R = J->h.nind;
    J->P = 1;
    for (d = 0; d < ax; d++) {
        J->pre_shape[d] = PyArray_DIM(data, d);
        J->pre_stride[d] = PyArray_STRIDE(data, d);
        J->R *= J->pre_shape[d];
    }
    for (d = ax + 1; d < ndim; d++) {
        J->post_shape[d - ax - 1] = PyArray_DIM(data, d);
        J->post_stride[d - ax - 1] = PyArray_STRIDE(data, d);
        J->P *= PyArray_DIM(data, d);
    }
    return job_run(&J->h, gather_plan);
}

/* ------------------------------------------------------------------------------ */
/* GatherElements                                                                   */

typedef struct {
    og_job h;
    /* Before collapsing: indices' shape, data's strides. */
    int nd, axis;
    npy_intp shape[OG_MAXDIMS], stride[OG_MAXDIMS];
    /* Row mode (axis is the last collapsed dim): rows over the other dims. */
    /* Column mode: q dims = all collapsed dims but axis and last. */
    int q_nd;
    npy_intp q_shape[OG_MAXDIMS], q_stride[OG_MAXDIMS];
    npy_intp K;          /* last dim size (row mode: row length) */
    npy_intp sl;         /* last dim stride in data (column mode) */
    npy_intp Q, M, A, B, nb, nA, units;
} og_ge_job;

static void
ge_rows_work(void *jv, int t, int nt)
{
    og_ge_job *J = (og_ge_job *)jv;
    og_job *h = &J->h;
    npy_intp e0, e1;
    if (J->q_nd == 1 && J->K < OG_SHORT_ROW) {
        /* Short rows a constant stride apart: whole rows per thread, one loop. */
        const npy_intp idsz = h->ind64 ? 8 : 4;
        npy_intp r0, r1;
        og_part(J->q_shape[0], t, nt, &r0, &r1);
        if (r0 < r1 &&
            !h->rows_fn(h->data + r0 * J->q_stride[0], J->q_stride[0], h->sa, h->s,
                        (const char *)h->ind + r0 * J->K * idsz, h->out + r0 * J->K * h->isz,
                        r1 - r0, J->K, h->isz, h->check)) {
            h->bad = 1;
        }
        return;
    }
    og_part(h->total, t, nt, &e0, &e1);
    elem_rows(h, J->q_nd, J->q_shape, J->q_stride, J->K, 1, e0, e1);
}

static void
ge_cols_work(void *jv, int t, int nt)
{
    og_ge_job *J = (og_ge_job *)jv;
    og_job *h = &J->h;
    npy_intp u0, u1, u, qcur = -1;
    og_odo q;
    const npy_intp idsz = h->ind64 ? 8 : 4;
    const npy_intp MK = J->M * J->K;
    const npy_intp arows = (J->A + J->nA - 1) / J->nA;
    og_part(J->units, t, nt, &u0, &u1);
    if (u0 >= u1) return;
    odo_init(&q, J->q_nd, J->q_shape, J->q_stride);
    for (u = u0; u < u1; u++) {
        npy_intp qi = u / (J->nb * J->nA);
        npy_intp rem = u % (J->nb * J->nA);
        npy_intp kb = rem / J->nA, ac = rem % J->nA;
        npy_intp k0 = kb * J->B, bw = J->B, a0 = ac * arows, na = arows, o, m, off;
        if (k0 + bw > J->K) bw = J->K - k0;
        if (a0 + na > J->A) na = J->A - a0;
        if (na <= 0) continue;
        if (h->bad) return;
        if (qi != qcur) {
            if (qi == qcur + 1 && qcur >= 0) odo_next(&q);
            else odo_seek(&q, qi);
            qcur = qi;
        }
        o = qi / J->M;
        m = qi % J->M;
        off = o * J->A * MK + a0 * MK + m * J->K + k0; /* elements */
        if (!h->block_fn(h->data + q.off + k0 * J->sl, h->sa, J->sl, h->s,
                         (const char *)h->ind + off * idsz, h->out + off * h->isz, na, MK,
                         bw, h->isz, h->check)) {
            h->bad = 1;
            return;
        }
    }
}

static void
ge_plan(og_job *h)
{
    og_ge_job *J = (og_ge_job *)h;
    npy_intp *shape = J->shape, *stride = J->stride;
    int isaxis[OG_MAXDIMS];
    int d, n = 0, cax = -1, nt;
    /* Collapse: drop size-1 dims (but not the axis), merge contiguous neighbours that are
     * not the axis.  Indices/out are C-contiguous, so only data's strides decide. */
    for (d = 0; d < J->nd; d++) {
        int ax = d == J->axis;
        if (!ax && shape[d] == 1) continue;
        if (!ax && n > 0 && !isaxis[n - 1] && stride[n - 1] == stride[d] * shape[d]) {
            shape[n - 1] *= shape[d];
            stride[n - 1] = stride[d];
            continue;
        }
        shape[n] = shape[d];
        stride[n] = stride[d];
        isaxis[n] = ax;
        if (ax) cax = n;
        n++;
    }
    J->K = shape[n - 1];
    if (cax == n - 1) {
        /* Row mode: walk the output row-major. */
        J->q_nd = n - 1;
        for (d = 0; d < n - 1; d++) {
            J->q_shape[d] = shape[d];
            J->q_stride[d] = stride[d];
        }
        og_run(ge_rows_work, J, og_nthreads(h->threads, h->total, (h->total + 1023) / 1024));
    }
    else {
        /* Column mode: blocks of B columns of the last dim, all rows of the axis. */
        npy_intp ebytes, B, per_col;
        J->sl = stride[n - 1];
        J->A = shape[cax];
        J->M = 1;
        for (d = cax + 1; d < n - 1; d++) J->M *= shape[d];
        J->q_nd = 0;
        J->Q = 1;
        for (d = 0; d < n - 1; d++) {
            if (d == cax) continue;
            J->q_shape[J->q_nd] = shape[d];
            J->q_stride[J->q_nd] = stride[d];
            J->q_nd++;
            J->Q *= shape[d];
        }
        ebytes = J->sl < 0 ? -J->sl : J->sl;
        if (ebytes < h->isz) ebytes = h->isz;
        if (ebytes > 64) ebytes = 64;
        per_col = (npy_intp)h->s * ebytes;
        B = per_col > 0 ? og_block_bytes / per_col : J->K;
        {
            /* Narrow blocks cost more in per-row overhead than they win. */
            npy_intp minb = 32;
            if (B < minb) B = minb;
            if (B > 16) B &= ~(npy_intp)15;
        }
        if (B > J->K) B = J->K;
        J->B = B;
        J->nb = (J->K + B - 1) / B;
        J->nA = 1;
        /* A column-blocked read costs about twice a row-major one. */
        nt = og_nthreads(h->threads, 2 * h->total, h->total);
        if (nt > 1 && J->Q * J->nb < 4 * nt) {
            /* Too few column blocks to balance: split the axis rows as well. */
            J->nA = (4 * nt + J->Q * J->nb - 1) / (J->Q * J->nb);
            if (J->nA > J->A) J->nA = J->A;
        }
        J->units = J->Q * J->nb * J->nA;
        og_run(ge_cols_work, J, nt);
    }
}

static PyObject *
gather_elements_impl(PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis,
                     PyObject *given, int check, Py_ssize_t threads)
{
    const int ndim = PyArray_NDIM(data);
    int d;
    og_ge_job *J;

    if (PyArray_NDIM(ind) != ndim) {
        PyErr_Format(PyExc_ValueError,
                     "indices have rank %d, data has rank %d: they must match",
                     PyArray_NDIM(ind), ndim);
        return NULL;
    }
    for (d = 0; d < ndim; d++) {
        if (d != axis && PyArray_DIM(ind, d) > PyArray_DIM(data, d)) {
            PyErr_Format(PyExc_ValueError,
                         "indices.shape[%d] == %zd exceeds data.shape[%d] == %zd", d,
                         (Py_ssize_t)PyArray_DIM(ind, d), d,
                         (Py_ssize_t)PyArray_DIM(data, d));
            return NULL;
        }
    }
    J = (og_ge_job *)job_new(sizeof(*J), data, ind, axis, given, check, threads, ndim,
                             PyArray_DIMS(ind));
    if (J == NULL) return NULL;
    J->nd = ndim;
    J->axis = (int)axis;
    for (d = 0; d < ndim; d++) {
        J->shape[d] = PyArray_DIM(ind, d);
        J->stride[d] = PyArray_STRIDE(data, d);
    }
    return job_run(&J->h, ge_plan);
}

/* ------------------------------------------------------------------------------ */
/* Entry points: argument parsing, the arrays the kernels take, NotImplemented.      */

/* Called with arguments check_args accepted. */
typedef PyObject *(*og_impl)(PyArrayObject *, PyArrayObject *, Py_ssize_t, PyObject *, int,
                             Py_ssize_t);

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

static PyObject *
og_call(og_impl impl, PyObject *args, const char *format)
{
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
    res = check_args((PyArrayObject *)data, ind, axis, threads) < 0
              ? NULL
              : impl((PyArrayObject *)data, ind, axis, given, check, threads);
    Py_XDECREF(copy);
    return res;
}

static PyObject *
og_gather(PyObject *self, PyObject *args)
{
    (void)self;
    return og_call(gather_impl, args, "OO!nOpn:gather");
}

static PyObject *
og_gather_elements(PyObject *self, PyObject *args)
{
    (void)self;
    return og_call(gather_elements_impl, args, "OO!nOpn:gather_elements");
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
    {"gather_elements", og_gather_elements, METH_VARARGS,
     "gather_elements(data, indices, axis, out, check, threads) -> out or None\n\n"
     "ONNX GatherElements into the C-contiguous `out` (None: a new array); None when "
     "`check` and an index is out of range."},
    {"_tune", og_tune, METH_VARARGS,
     "_tune(min_elements_per_thread=-1, block_bytes=-1) -> (old, old): measurement "
     "knobs; negative leaves a value unchanged."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef og_module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "Fused multi-threaded CPU kernels for ONNX Gather and GatherElements.", -1,
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
