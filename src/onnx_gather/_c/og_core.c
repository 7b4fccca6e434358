/*
 * The shared core of onnx_gather._kernels (see og_core.h): odometer, dims, the typed
 * element kernel, threads, the boundary (argument and output checks), jobs.
 */
#include "og_core.h"

#ifdef _WIN32
#include <windows.h>
#include <process.h>
#else
#include <pthread.h>
#endif

npy_intp og_min_per_thread = 65536;
npy_intp og_block_bytes = 524288;

/* ------------------------------------------------------------------------------ */
/* Odometer over a list of dims (shape > 0) with byte strides.                      */


void
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

void
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

void
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
int
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
const char *
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
void
og_part(npy_intp n, int t, int nt, npy_intp *lo, npy_intp *hi)
{
    npy_intp base = n / nt, rem = n % nt;
    *lo = (npy_intp)t * base + (t < rem ? t : rem);
    *hi = *lo + base + (t < rem ? 1 : 0);
}


/* ------------------------------------------------------------------------------ */
/* The typed element kernel.  NAME: suffix; IDX: index C type; SZEXPR: item size      */
/* expression (a constant for the specialised sizes, `isz` for the generic one).     */

/* OG_NORM with the zero modes: wrapped by `ws` (0: negatives stay out of range), and an
 * out-of-range index writes a zero element at dst and goes on to the next (`continue`). */
#define OG_NORM_OR_ZERO(i, s, ws, check, dst, sz)             \
    i = og_wrap(i, (ws));                                     \
    if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)(s))) {      \
        if (check == OG_RAISE) {                              \
            return 0;                                         \
        }                                                     \
        if (check >= OG_ZERO) {                               \
            memset((dst), 0, (size_t)(sz));                   \
            continue;                                         \
        }                                                     \
        i = (i < 0) ? 0 : (s) - 1;                            \
    }

/* The zero modes without a branch on validity, for items of 1, 2, 4 or 8 bytes: an invalid
 * index reads item 0 and a mask clears the value, in an unsigned integer of the item's
 * width: slower than Gather's loop, but whatever the share of bad indices (Gather's loop
 * with a branch to zeros runs at Gather's speed while they are rare: the kernel's first
 * choice). The mask comes from a sign bit, never from a compare: where a tenth of random
 * indices were invalid, a branch (GCC makes `ok ? u : 0` one) mispredicted, and a mask
 * made by `-(u < s)` became a chain of `sbb` from one element to the next (the figures:
 * docs/performance.md, "The C kernel"). (A right shift of a negative int64 is arithmetic
 * on every compiler the package builds with.) */
#define OG_SELECT_T(T, i, s, ws, dst, src0, sa)                               \
    {                                                                         \
        T v_;                                                                 \
        npy_uint64 u_ = (npy_uint64)og_wrap(i, (ws)), m_;                     \
        /* All ones where u_ < s, from the sign bit of u_ - s (s < 2**63), which \
           counts only where u_ < 2**63 too (& ~u_). */                       \
        m_ = (npy_uint64)((npy_int64)((u_ - (npy_uint64)(s)) & ~u_) >> 63);  \
        u_ &= m_;                                                             \
        memcpy(&v_, (src0) + (npy_intp)u_ * (sa), sizeof(T));                 \
        v_ &= (T)m_;                                                          \
        memcpy((dst), &v_, sizeof(T));                                        \
    }

#define OG_SELECT_LOOP(T)                                                     \
    for (; k < n; k++) {                                                      \
        npy_int64 i = (npy_int64)idx[k];                                      \
        OG_SELECT_T(T, i, s, ws, out + k * sizeof(T), base, sa)               \
    }                                                                         \
    return 1;

/* The zero modes without a branch, from a table of the line's items (`line`): twice over
 * in OG_ZERO (item i + s is item i, i in [-s, s)), once in OG_ZERO_POS, then a zero item at
 * `last`. An index reads item ws + i, or that zero where the sum is past it (as unsigned:
 * a `cmov`). It keeps up with Gather's loop, which OG_SELECT_T's masks do not. */
#define OG_SENTINEL_LOOP(T)                                                   \
    for (; k < n; k++) {                                                      \
        npy_uint64 u_ = (npy_uint64)(npy_int64)idx[k] + (npy_uint64)ws;       \
        u_ = (u_ < last) ? u_ : last;                                         \
        memcpy(out + k * sizeof(T), line + (npy_intp)u_ * sizeof(T), sizeof(T)); \
    }                                                                         \
    break;

/* The longest axis (items) the zero modes copy for OG_SENTINEL_LOOP: 2**16, at most 1 MiB
 * of 8-byte items twice over, and only where at least 4 reads per item remain. */
#define OG_SENTINEL_MAX ((npy_int64)1 << 16)

/* Element k of the kernel below, normalised (OG_NORM_OR_ZERO) and copied. */
#define OG_ELEM(k)                                                            \
    {                                                                         \
        npy_int64 i = (npy_int64)idx[k];                                      \
        OG_NORM_OR_ZERO(i, s, ws, check, out + (k) * sz, sz)                  \
        memcpy(out + (k) * sz, base + (npy_intp)i * sa, sz);                  \
    }

#define OG_DEFINE_ELEM(NAME, IDX, SZEXPR)                                                   \
    /* out[k] = base[norm(idx[k]) * sa], k < n (out contiguous); one cache line of    \
       pf (the next row's data) is prefetched every 8 elements, pfn lines in all.      \
       `check` is the call's bounds mode (OG_CLAMP ... OG_ZERO_POS). */                \
    static int elem_##NAME(const char *base, npy_intp sa, npy_int64 s,                 \
                           const void *idxv, npy_intp n, char *out, npy_intp isz,      \
                           int check, const char *pf, npy_intp pfn)                    \
    {                                                                                  \
        const IDX *idx = (const IDX *)idxv;                                            \
        const npy_intp sz = (SZEXPR);                                                  \
        const npy_int64 ws = (check == OG_ZERO_POS) ? 0 : s;                           \
        npy_intp k = 0, kend;                                                          \
        (void)isz;                                                                     \
        if (check >= OG_ZERO && sz <= 8 && (sz & (sz - 1)) == 0) {                     \
            /* Zero modes on items of 1, 2, 4 or 8 bytes: Gather's loop, with a branch \
               that costs nothing while indices are valid, block by block; once a      \
               block has more than one bad index in 32, a loop without the branch      \
               for the rest: OG_SENTINEL_LOOP on a copy of a short line, else           \
               OG_SELECT_T. */                                                         \
            while (k < n) {                                                            \
                npy_intp bad = 0;                                                      \
                kend = (n - k > 4096) ? k + 4096 : n;                                  \
                for (; k < kend; k++) {                                                \
                    npy_int64 i = og_wrap((npy_int64)idx[k], ws);                      \
                    if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)s)) {                 \
                        memset(out + k * sz, 0, (size_t)sz);                           \
                        bad++;                                                         \
                        continue;                                                      \
                    }                                                                  \
                    memcpy(out + k * sz, base + (npy_intp)i * sa, sz);                 \
                }                                                                      \
                if (bad * 32 > 4096) break;                                            \
            }                                                                          \
            if (k < n && s <= OG_SENTINEL_MAX && n - k >= 4 * s) {                     \
                const npy_uint64 last = (npy_uint64)(ws + s);                          \
                char *line = (char *)malloc((size_t)(last + 1) * (size_t)sz);          \
                if (line != NULL) {                                                    \
                    strided_copy(line + ws * sz, base, (npy_intp)s, sa, sz);           \
                    if (ws) memcpy(line, line + ws * sz, (size_t)(s * sz));            \
                    memset(line + last * sz, 0, (size_t)sz);                           \
                    switch (sz) {                                                      \
                        case 1: OG_SENTINEL_LOOP(npy_uint8)                            \
                        case 2: OG_SENTINEL_LOOP(npy_uint16)                           \
                        case 4: OG_SENTINEL_LOOP(npy_uint32)                           \
                        default: OG_SENTINEL_LOOP(npy_uint64)                          \
                    }                                                                  \
                    free(line);                                                        \
                    return 1;                                                          \
                }                                                                      \
            }                                                                          \
            switch (sz) {                                                              \
                case 1: OG_SELECT_LOOP(npy_uint8)                                      \
                case 2: OG_SELECT_LOOP(npy_uint16)                                     \
                case 4: OG_SELECT_LOOP(npy_uint32)                                     \
                default: OG_SELECT_LOOP(npy_uint64)                                    \
            }                                                                          \
        }                                                                              \
        for (; pfn > 0 && k < n; pfn--, pf += 64) {                                    \
            OG_PREFETCH(pf);                                                           \
            kend = (n - k > 8) ? k + 8 : n;                                            \
            for (; k < kend; k++) {                                                    \
                OG_ELEM(k)                                                             \
            }                                                                          \
        }                                                                              \
        for (; k < n; k++) {                                                           \
            OG_ELEM(k)                                                                 \
        }                                                                              \
        return 1;                                                                      \
    }

OG_DEFINE_ELEM(i32_1, npy_int32, 1)
OG_DEFINE_ELEM(i32_2, npy_int32, 2)
OG_DEFINE_ELEM(i32_4, npy_int32, 4)
OG_DEFINE_ELEM(i32_8, npy_int32, 8)
OG_DEFINE_ELEM(i32_16, npy_int32, 16)
OG_DEFINE_ELEM(i32_g, npy_int32, isz)
OG_DEFINE_ELEM(i64_1, npy_int64, 1)
OG_DEFINE_ELEM(i64_2, npy_int64, 2)
OG_DEFINE_ELEM(i64_4, npy_int64, 4)
OG_DEFINE_ELEM(i64_8, npy_int64, 8)
OG_DEFINE_ELEM(i64_16, npy_int64, 16)
OG_DEFINE_ELEM(i64_g, npy_int64, isz)

const og_elem_fn og_elem_table[2][6] = {
    {elem_i32_1, elem_i32_2, elem_i32_4, elem_i32_8, elem_i32_16, elem_i32_g},
    {elem_i64_1, elem_i64_2, elem_i64_4, elem_i64_8, elem_i64_16, elem_i64_g},
};

int
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

void
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

void
og_block_collapse(og_block *b, npy_intp isz)
{
    b->nd = collapse_dims(b->nd, b->shape, b->stride);
    b->contig = b->nd == 0 || (b->nd == 1 && b->stride[0] == isz);
}

void
og_block_copy(const og_block *b, char *dst, const char *src, npy_intp isz)
{
    if (b->contig) {
        memcpy(dst, src, (size_t)((b->nd ? b->shape[0] : 1) * isz));
    }
    else if (b->nd == 1) {
        strided_copy(dst, src, b->shape[0], b->stride[0], isz);
    }
    else {
        /* Odometer over the outer dims, strided copy along the last. */
        int nd = b->nd - 1, d;
        npy_intp coord[OG_MAXDIMS];
        npy_intp inner = b->shape[nd], istride = b->stride[nd];
        npy_intp rowbytes = inner * isz;
        npy_intp outer = 1, r;
        const char *p = src;
        for (d = 0; d < nd; d++) {
            coord[d] = 0;
            outer *= b->shape[d];
        }
        for (r = 0; r < outer; r++) {
            strided_copy(dst + r * rowbytes, p, inner, istride, isz);
            for (d = nd - 1; d >= 0; d--) {
                coord[d]++;
                p += b->stride[d];
                if (coord[d] < b->shape[d]) break;
                p -= coord[d] * b->stride[d];
                coord[d] = 0;
            }
        }
    }
}

/* ------------------------------------------------------------------------------ */
/* Threads                                                                          */


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

/* Run fn(job, t, nt) for t in [0, nt): t = 0 on the calling thread, the rest on the
 * pool's workers (og_pool.c), or where the pool is busy or absent (Windows) on threads
 * created here and joined before returning.  A thread that cannot be created has its
 * share run on the calling thread afterwards. */
void
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
    if (og_pool_run(fn, job, nt)) return;
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

int
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
/* The boundary: the checks every entry point makes of its arguments (og_core.h)       */

int
og_check_threads(const char *fn, Py_ssize_t threads)
{
    if (threads >= 1) return 0;
    PyErr_Format(PyExc_ValueError, "%s: threads %zd (want threads >= 1)", fn, threads);
    return -1;
}

int
og_check_rank(const char *fn, const char *name, PyArrayObject *a, int lo, int hi)
{
    int nd = PyArray_NDIM(a);
    if (nd >= lo && nd <= hi) return 0;
    if (lo == hi) {
        PyErr_Format(PyExc_ValueError, "%s: %s has rank %d (want rank %d)", fn, name, nd, lo);
    }
    else {
        PyErr_Format(PyExc_ValueError, "%s: %s has rank %d (want rank %d to %d)", fn, name, nd,
                     lo, hi);
    }
    return -1;
}

int
og_check_dims(const char *fn, const char *name, PyArrayObject *a, int first,
              const npy_intp *want, const char *of, int of_first, int n, int skip, int at_most)
{
    int d;
    for (d = 0; d < n; d++) {
        npy_intp got = PyArray_DIM(a, first + d);
        if (d == skip || (at_most ? got <= want[d] : got == want[d])) continue;
        if (at_most) {
            PyErr_Format(PyExc_ValueError, "%s: %s.shape[%d] == %zd exceeds %s.shape[%d] == %zd",
                         fn, name, first + d, (Py_ssize_t)got, of, of_first + d,
                         (Py_ssize_t)want[d]);
        }
        else if (of != NULL) {
            PyErr_Format(PyExc_ValueError, "%s: %s.shape[%d] == %zd, want %zd (%s.shape[%d])",
                         fn, name, first + d, (Py_ssize_t)got, (Py_ssize_t)want[d], of,
                         of_first + d);
        }
        else {
            PyErr_Format(PyExc_ValueError, "%s: %s.shape[%d] == %zd, want %zd", fn, name,
                         first + d, (Py_ssize_t)got, (Py_ssize_t)want[d]);
        }
        return -1;
    }
    return 0;
}

int
og_check_axis(const char *fn, const char *name, Py_ssize_t axis, const char *of, int rank)
{
    if (axis >= 0 && axis < rank) return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s %zd is out of range for %s of rank %d", fn, name,
                 axis, of, rank);
    return -1;
}

int
og_coordinates(const char *fn, PyArrayObject *ind, int hi)
{
    /* Compared before it is narrowed to an int. */
    npy_intp k = PyArray_DIM(ind, PyArray_NDIM(ind) - 1);
    if (k >= 1 && k <= hi) return (int)k;
    PyErr_Format(PyExc_ValueError, "%s: indices.shape[-1] is %zd; it must be in [1, %d]", fn,
                 (Py_ssize_t)k, hi);
    return -1;
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

int
og_check_apart(const char *fn, const char *name, PyArrayObject *a, PyArrayObject *out)
{
    char *alo, *ahi, *olo, *ohi;
    if (PyArray_SIZE(a) == 0 || PyArray_SIZE(out) == 0) return 0;
    array_extent(a, &alo, &ahi);
    array_extent(out, &olo, &ohi);
    if (!(alo < ohi && olo < ahi)) return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: %s overlaps out (%s spans bytes [%p, %p), out [%p, %p)): the inputs "
                 "must not share memory with out",
                 fn, name, name, (void *)alo, (void *)ahi, (void *)olo, (void *)ohi);
    return -1;
}

int
check_args(const char *fn, const char *axis_name, PyArrayObject *data, PyArrayObject *ind,
           Py_ssize_t axis, Py_ssize_t threads)
{
    PyArray_Descr *idescr = PyArray_DESCR(ind);
    npy_intp isz = PyArray_ITEMSIZE(ind);
    if (PyDataType_REFCHK(PyArray_DESCR(data))) {
        PyErr_Format(PyExc_TypeError,
                     "%s: data of dtype %S holds object references, which are not supported",
                     fn, (PyObject *)PyArray_DESCR(data));
        return -1;
    }
    if (og_check_rank(fn, "data", data, 1, OG_MAXDIMS) < 0) return -1;
    if (!PyArray_ISINTEGER(ind) || !PyArray_ISSIGNED(ind) || (isz != 4 && isz != 8)) {
        PyErr_Format(PyExc_TypeError, "%s: indices of dtype %S (want int32 or int64)", fn,
                     (PyObject *)idescr);
        return -1;
    }
    if (!PyArray_ISNOTSWAPPED(ind)) {
        PyErr_Format(PyExc_TypeError, "%s: indices of dtype %S (want native byte order)", fn,
                     (PyObject *)idescr);
        return -1;
    }
    if (!PyArray_IS_C_CONTIGUOUS(ind) || !PyArray_ISALIGNED(ind)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: indices must be C-contiguous and aligned (contiguous %d, aligned %d)",
                     fn, PyArray_IS_C_CONTIGUOUS(ind) != 0, PyArray_ISALIGNED(ind) != 0);
        return -1;
    }
    if (og_check_axis(fn, axis_name, axis, "data", PyArray_NDIM(data)) < 0) return -1;
    return og_check_threads(fn, threads);
}

npy_intp
og_size_arg(PyObject *arg, const char *fn, const char *name)
{
    npy_intp v = PyLong_AsSsize_t(arg);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || (npy_int64)v > ((npy_int64)1 << 62)) {
        PyErr_Format(PyExc_ValueError, "%s: %s %zd (want 0 <= %s <= 2**62)", fn, name,
                     (Py_ssize_t)v, name);
        return -1;
    }
    return v;
}

int
og_times(npy_intp a, npy_intp b, npy_intp *out, const char *fn)
{
    if (a != 0 && b > NPY_MAX_INTP / a) {
        PyErr_Format(PyExc_OverflowError, "%s: the layout's sizes overflow (%zd x %zd)", fn,
                     (Py_ssize_t)a, (Py_ssize_t)b);
        return 0;
    }
    *out = a * b;
    return 1;
}

/* `out` as given: of data's item size, C-ordered, writeable, of plain items, of the
 * result's shape (nd, shape) and apart from data and the indices. */
static int
check_out(const char *fn, PyArrayObject *out, PyArrayObject *data, PyArrayObject *ind, int nd,
          const npy_intp *shape)
{
    if (PyArray_ITEMSIZE(out) != PyArray_ITEMSIZE(data)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: out has dtype %S of item size %zd; want data's item size %zd", fn,
                     (PyObject *)PyArray_DESCR(out), (Py_ssize_t)PyArray_ITEMSIZE(out),
                     (Py_ssize_t)PyArray_ITEMSIZE(data));
        return -1;
    }
    if (!PyArray_IS_C_CONTIGUOUS(out) || !PyArray_ISWRITEABLE(out)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: out must be C-contiguous and writeable (contiguous %d, writeable %d)",
                     fn, PyArray_IS_C_CONTIGUOUS(out) != 0, PyArray_ISWRITEABLE(out) != 0);
        return -1;
    }
    if (PyDataType_REFCHK(PyArray_DESCR(out))) {
        PyErr_Format(PyExc_TypeError,
                     "%s: out of dtype %S holds object references, which are not supported",
                     fn, (PyObject *)PyArray_DESCR(out));
        return -1;
    }
    if (og_check_rank(fn, "out", out, nd, nd) < 0 ||
        og_check_dims(fn, "out", out, 0, shape, NULL, 0, nd, -1, 0) < 0 ||
        og_check_apart(fn, "data", data, out) < 0 || og_check_apart(fn, "indices", ind, out) < 0) {
        return -1;
    }
    return 0;
}

/* `out` as given, or a new C-ordered array of data's dtype and `shape` when it is None.
 * Returns a new reference, or NULL with an exception set. */
static PyArrayObject *
resolve_out(const char *fn, PyObject *given, PyArrayObject *data, int nd, const npy_intp *shape)
{
    PyArray_Descr *descr;
    if (given != Py_None) {
        if (!PyArray_Check(given)) {
            PyErr_Format(PyExc_TypeError, "%s: out of type %.100s (want a NumPy array or None)",
                         fn, Py_TYPE(given)->tp_name);
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

/* Scan indices only (empty outputs with check on): index k is coordinate k % ncoord of
 * its tuple, of the axis of sizes[k % ncoord] (one coordinate: every index alike). */
static int
scan_indices(const void *ind, int ind64, npy_intp n, int ncoord, const npy_int64 *sizes)
{
    npy_intp k;
    for (k = 0; k < n; k++) {
        npy_int64 i = ind64 ? ((const npy_int64 *)ind)[k] : ((const npy_int32 *)ind)[k];
        npy_int64 s = sizes[ncoord == 1 ? 0 : k % ncoord];
        if (i < -s || i >= s) {
            return 0;
        }
    }
    return 1;
}


/* A job of `size` bytes, its og_job filled for an output of shape (nd, shape): the `given`
 * out once checked, or a new array.  Jobs run without the GIL, so whatever they need of the
 * arrays is copied into them here and in the impls.  Only the og_job is zeroed: clearing
 * the operator's dims too would cost every call a memset, and its impl and plan set each
 * field they read.  NULL with an exception set. */
og_job *
job_new(const char *fn, size_t size, PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis,
        PyObject *given, int check, Py_ssize_t threads, int nd, const npy_intp *shape)
{
    og_job *h;
    int cls = size_class(PyArray_ITEMSIZE(data)), ind64 = PyArray_ITEMSIZE(ind) == 8;
    PyArrayObject *out = resolve_out(fn, given, data, nd, shape);
    if (out == NULL) return NULL;
    if (check_out(fn, out, data, ind, nd, shape) < 0) {
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
    h->ncoord = 1;
    h->sizes = &h->s;
    h->elem_fn = og_elem_table[ind64][cls];
    h->cls = cls;
    return h;
}

/* Run a job without the GIL (plan only where there is something to copy) and free it.
 * Returns `out`, or None when `check` found an index out of range. */
PyObject *
job_run(og_job *h, og_plan_fn plan)
{
    PyArrayObject *out = h->result;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    if (h->total == 0) {
        /* Nothing to copy, but an index out of range still makes the result None. */
        ok = h->check != OG_RAISE || scan_indices(h->ind, h->ind64, h->nind, h->ncoord, h->sizes);
    }
    else if (h->s == 0) {
        /* Every index is out of range; clamped or read as zeros, zero bytes. */
        ok = h->check != OG_RAISE;
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
void
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

