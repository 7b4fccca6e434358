/*
 * ONNX Gather on the shared core: out[pre, j, post] = data[pre, norm(indices[j]), post];
 * also OpenVINO Gather-7/8 without batch dims (the OG_ZERO modes: zeros for a bad index).
 */
#define NO_IMPORT_ARRAY
#include "og_core.h"

/* ------------------------------------------------------------------------------ */
/* Gather                                                                           */

typedef struct {
    og_job h;
    int pre_nd;
    npy_intp pre_shape[OG_MAXDIMS], pre_stride[OG_MAXDIMS];
    og_block post; /* the dims after the axis: one block per (pre, index) row */
    npy_intp P, R; /* post size, rows = pre size * indices size */
} og_gather_job;

static void
gather_work(void *jv, int t, int nt)
{
    og_gather_job *J = (og_gather_job *)jv;
    og_job *h = &J->h;
    const npy_intp N = h->nind, blockbytes = J->P * h->isz;
    const npy_int64 s = h->s, ws = (h->check == OG_ZERO_POS) ? 0 : s;
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
        i = og_wrap(i, ws);
        if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)s)) {
            if (h->check == OG_RAISE) {
                h->bad = 1;
                return;
            }
            i = (h->check >= OG_ZERO) ? -1 : (i < 0) ? 0 : s - 1;
        }
        if (OG_UNLIKELY(i < 0)) /* (OG_ZERO modes: a zero block) */
            memset(h->out + r * blockbytes, 0, (size_t)blockbytes);
        else
            og_block_copy(&J->post, h->out + r * blockbytes, h->data + pre.off + (npy_intp)i * h->sa, h->isz);
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
    og_block_collapse(&J->post, h->isz);
    /* Work: elements for element gathers; per-row cost plus bytes for row copies. */
    og_run(gather_work, J,
           og_nthreads(h->threads, J->P == 1 ? h->total : OG_COPY_WORK(J->R, h->total * h->isz),
                       J->R));
}

PyObject *
gather_impl(const char *fn, PyArrayObject *data, PyArrayObject *ind, Py_ssize_t axis,
            PyObject *given, int check, Py_ssize_t threads)
{
    const int ndim = PyArray_NDIM(data), ax = (int)axis;
    int d;
    npy_intp oshape[2 * OG_MAXDIMS];
    og_gather_job *J;

    for (d = 0; d < ax; d++) oshape[d] = PyArray_DIM(data, d);
    for (d = 0; d < PyArray_NDIM(ind); d++) oshape[ax + d] = PyArray_DIM(ind, d);
    for (d = ax + 1; d < ndim; d++) oshape[PyArray_NDIM(ind) + d - 1] = PyArray_DIM(data, d);
    J = (og_gather_job *)job_new(fn, sizeof(*J), data, ind, axis, given, check, threads,
                                 ndim - 1 + PyArray_NDIM(ind), oshape);
    if (J == NULL) return NULL;
    J->pre_nd = ax;
    J->post.nd = ndim - 1 - ax;
    J->R = J->h.nind;
    J->P = 1;
    for (d = 0; d < ax; d++) {
        J->pre_shape[d] = PyArray_DIM(data, d);
        J->pre_stride[d] = PyArray_STRIDE(data, d);
        J->R *= J->pre_shape[d];
    }
    for (d = ax + 1; d < ndim; d++) {
        J->post.shape[d - ax - 1] = PyArray_DIM(data, d);
        J->post.stride[d - ax - 1] = PyArray_STRIDE(data, d);
        J->P *= PyArray_DIM(data, d);
    }
    return job_run(&J->h, gather_plan);
}

