/*
 * ONNX GatherND on the shared core: for each index tuple t (the indices' dims but the
 * last), out[t, rest] = data[batch(t), norm(idx[t, 0]), ..., norm(idx[t, k-1]), rest],
 * coordinate j counted from the end and checked against its own axis, batch(t) the
 * tuple's first batch_dims coordinates in the indices' dims (equal to data's).
 *
 * One pass over the tuples: a tuple's data offset is its batch entry's offset (an
 * odometer over the batch dims) plus each coordinate times its axis' stride; then its
 * block (the dims after the coordinates) is copied whole.  Threads split the tuples.
 */
#define NO_IMPORT_ARRAY
#include "og_core.h"

typedef struct {
    og_job h;
    int k;                                          /* coordinates per tuple */
    npy_int64 sizes[OG_MAXDIMS];                    /* the axis each coordinate addresses */
    npy_intp cstride[OG_MAXDIMS];                   /* and its byte stride in data */
    int batch_nd;                                   /* the batch dims of data */
    npy_intp batch_shape[OG_MAXDIMS], batch_stride[OG_MAXDIMS];
    npy_intp T;                                     /* tuples per batch entry */
    npy_intp N;                                     /* tuples */
    og_block rest;                                  /* the dims after the coordinates */
    npy_intp P;                                     /* elements of one block */
} og_nd_job;

/* Tuples per batch of offsets (nd_work): computed first, then their elements copied in
 * one loop of independent loads, so many cache misses are in flight at once. */
#define OG_ND_BATCH 256

/* Copy n elements of size SZ from data + offs[c] to out, in order. */
#define OG_ND_COPY(SZ)                                                                   \
    for (c = 0; c < n; c++) memcpy(out + c * (SZ), data + offs[c], (SZ));

/* Tuples [t0, t1): the data offset of each, its block copied to out.  Offsets are
 * computed a batch at a time (OG_ND_BATCH), then copied: more loads in flight than one
 * loop that computes an offset and copies its element, where data is out of cache
 * (docs/performance.md, "The C kernel"). */
static void
nd_work(void *jv, int t, int nt)
{
    og_nd_job *J = (og_nd_job *)jv;
    og_job *h = &J->h;
    const npy_intp isz = h->isz, blockbytes = J->P * isz, k = J->k;
    const char *data = h->data;
    const int ind64 = h->ind64, check = h->check;
    npy_intp offs[OG_ND_BATCH];
    npy_intp t0, t1, tup, in_batch, since = 0;
    og_odo batch;
    int j;
    og_part(J->N, t, nt, &t0, &t1);
    if (t0 >= t1) return;
    odo_init(&batch, J->batch_nd, J->batch_shape, J->batch_stride);
    odo_seek(&batch, t0 / J->T);
    in_batch = t0 % J->T;
    for (tup = t0; tup < t1;) {
        const npy_intp n = t1 - tup < OG_ND_BATCH ? t1 - tup : OG_ND_BATCH;
        char *out = h->out + tup * blockbytes;
        npy_intp c;
        for (c = 0; c < n; c++) {
            npy_intp off = batch.off;
            const npy_intp at0 = (tup + c) * k;
            for (j = 0; j < k; j++) {
                const npy_int64 raw = ind64 ? ((const npy_int64 *)h->ind)[at0 + j]
                                            : (npy_int64)((const npy_int32 *)h->ind)[at0 + j];
                const npy_int64 s = J->sizes[j];
                npy_int64 i = og_wrap(raw, s);
                /* The range of the index as given: beside the wrap, not after it,
                 * which cost full coordinates more (docs/performance.md). */
                if (OG_UNLIKELY(!og_valid(raw, s))) {
                    if (check) {
                        h->bad = 1;
                        return;
                    }
                    i = (raw < 0) ? 0 : s - 1;
                }
                off += (npy_intp)i * J->cstride[j];
            }
            offs[c] = off;
            if (++in_batch == J->T) {
                in_batch = 0;
                odo_next(&batch);
            }
        }
        if (J->P == 1) {
            switch (isz) {
            case 1: OG_ND_COPY(1) break;
            case 2: OG_ND_COPY(2) break;
            case 4: OG_ND_COPY(4) break;
            case 8: OG_ND_COPY(8) break;
            case 16: OG_ND_COPY(16) break;
            default: OG_ND_COPY(isz) break;
            }
        }
        else {
            for (c = 0; c < n; c++) {
                og_block_copy(&J->rest, out + c * blockbytes, data + offs[c], isz);
            }
        }
        tup += n;
        since += n * (J->P + k);
        if (since >= OG_CHUNK) {
            since = 0;
            if (h->bad) return;
        }
    }
}

static void
nd_plan(og_job *h)
{
    og_nd_job *J = (og_nd_job *)h;
    og_block_collapse(&J->rest, h->isz);
    /* The batch entries are walked in C order: merging contiguous batch dims keeps it. */
    J->batch_nd = collapse_dims(J->batch_nd, J->batch_shape, J->batch_stride);
    /* Work: per tuple its coordinates and, for blocks, the bytes copied. */
    og_run(nd_work, J,
           og_nthreads(h->threads,
                       J->P == 1 ? J->N * (1 + J->k / 2) : OG_COPY_WORK(J->N, h->total * h->isz),
                       J->N));
}

PyObject *
gather_nd_impl(const char *fn, PyArrayObject *data, PyArrayObject *ind, Py_ssize_t batch_dims,
               PyObject *given, int check, Py_ssize_t threads)
{
    const int r = PyArray_NDIM(data), q = PyArray_NDIM(ind), b = (int)batch_dims;
    int d, k, nd;
    npy_intp oshape[2 * OG_MAXDIMS];
    og_nd_job *J;

    if (og_check_rank(fn, "indices", ind, 1, OG_MAXDIMS) < 0) return NULL;
    if (b >= q || b >= r) {
        PyErr_Format(PyExc_ValueError,
                     "%s: batch_dims %d must be below both ranks (data %d, indices %d)", fn, b,
                     r, q);
        return NULL;
    }
    /* The batch dims are data's. */
    if (og_check_dims(fn, "indices", ind, 0, PyArray_DIMS(data), "data", 0, b, -1, 0) < 0 ||
        (k = og_coordinates(fn, ind, r - b)) < 0) {
        return NULL;
    }
    nd = 0;
    for (d = 0; d < q - 1; d++) oshape[nd++] = PyArray_DIM(ind, d);
    for (d = b + k; d < r; d++) oshape[nd++] = PyArray_DIM(data, d);
    J = (og_nd_job *)job_new(fn, sizeof(*J), data, ind, batch_dims, given, check, threads, nd,
                             oshape);
    if (J == NULL) return NULL;
    J->k = k;
    J->h.s = -1;
    for (d = 0; d < k; d++) {
        J->sizes[d] = (npy_int64)PyArray_DIM(data, b + d);
        J->cstride[d] = PyArray_STRIDE(data, b + d);
        if (J->h.s < 0 || J->sizes[d] < J->h.s) J->h.s = J->sizes[d];
    }
    J->h.ncoord = k;
    J->h.sizes = J->sizes;
    J->batch_nd = b;
    J->T = 1;
    J->N = 1;
    for (d = 0; d < b; d++) {
        J->batch_shape[d] = PyArray_DIM(data, d);
        J->batch_stride[d] = PyArray_STRIDE(data, d);
    }
    for (d = b; d < q - 1; d++) J->T *= PyArray_DIM(ind, d);
    for (d = 0; d < q - 1; d++) J->N *= PyArray_DIM(ind, d);
    J->rest.nd = r - b - k;
    J->P = 1;
    for (d = b + k; d < r; d++) {
        J->rest.shape[d - b - k] = PyArray_DIM(data, d);
        J->rest.stride[d - b - k] = PyArray_STRIDE(data, d);
        J->P *= PyArray_DIM(data, d);
    }
    return job_run(&J->h, nd_plan);
}
