/*
 * ONNX GatherElements (and OpenVINO's) on the shared core: out[p] = data[p with the axis
 * coordinate replaced by norm(indices[p])]. Row mode walks the output row-major (the
 * axis last), column mode blocks columns of the last dim with all rows of the axis.
 */
#define NO_IMPORT_ARRAY
#include "og_core.h"

typedef int (*og_rows_fn)(const char *base, npy_intp rs, npy_intp sa, npy_int64 s,
                          const void *idx, char *out, npy_intp nrows, npy_intp K,
                          npy_intp isz, int check);
typedef int (*og_block_fn)(const char *base, npy_intp sa, npy_intp sl, npy_int64 s,
                           const void *idx, char *out, npy_intp rows, npy_intp rstride,
                           npy_intp bw, npy_intp isz, int check);

#define OG_DEFINE_ROWS_BLOCK(NAME, IDX, SZEXPR)                                         \
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

OG_DEFINE_ROWS_BLOCK(i32_1, npy_int32, 1)
OG_DEFINE_ROWS_BLOCK(i32_2, npy_int32, 2)
OG_DEFINE_ROWS_BLOCK(i32_4, npy_int32, 4)
OG_DEFINE_ROWS_BLOCK(i32_8, npy_int32, 8)
OG_DEFINE_ROWS_BLOCK(i32_16, npy_int32, 16)
OG_DEFINE_ROWS_BLOCK(i32_g, npy_int32, isz)
OG_DEFINE_ROWS_BLOCK(i64_1, npy_int64, 1)
OG_DEFINE_ROWS_BLOCK(i64_2, npy_int64, 2)
OG_DEFINE_ROWS_BLOCK(i64_4, npy_int64, 4)
OG_DEFINE_ROWS_BLOCK(i64_8, npy_int64, 8)
OG_DEFINE_ROWS_BLOCK(i64_16, npy_int64, 16)
OG_DEFINE_ROWS_BLOCK(i64_g, npy_int64, isz)

static const og_block_fn og_block_table[2][6] = {
    {block_i32_1, block_i32_2, block_i32_4, block_i32_8, block_i32_16, block_i32_g},
    {block_i64_1, block_i64_2, block_i64_4, block_i64_8, block_i64_16, block_i64_g},
};
static const og_rows_fn og_rows_table[2][6] = {
    {rows_i32_1, rows_i32_2, rows_i32_4, rows_i32_8, rows_i32_16, rows_i32_g},
    {rows_i64_1, rows_i64_2, rows_i64_4, rows_i64_8, rows_i64_16, rows_i64_g},
};

/* Rows shorter than this (GatherElements along the last axis) go through rows_* in one
 * loop: per-row overhead decided a top-8 of 32x1024x64 float32 (docs/performance.md,
 * "The C kernel"). */
#define OG_SHORT_ROW 64

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
            !og_rows_table[h->ind64][h->cls](h->data + r0 * J->q_stride[0], J->q_stride[0], h->sa, h->s,
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
        if (!og_block_table[h->ind64][h->cls](h->data + q.off + k0 * J->sl, h->sa, J->sl, h->s,
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

PyObject *
gather_elements_impl(const char *fn, PyArrayObject *data, PyArrayObject *ind,
                     Py_ssize_t axis, PyObject *given, int check, Py_ssize_t threads)
{
    const int ndim = PyArray_NDIM(data);
    int d;
    og_ge_job *J;

    /* The indices' dims off the axis within data's: each output element reads data at
     * its own position off the axis. */
    if (og_check_rank(fn, "indices", ind, ndim, ndim) < 0 ||
        og_check_dims(fn, "indices", ind, 0, PyArray_DIMS(data), "data", 0, ndim, (int)axis,
                      1) < 0) {
        return NULL;
    }
    J = (og_ge_job *)job_new(fn, sizeof(*J), data, ind, axis, given, check, threads, ndim,
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

