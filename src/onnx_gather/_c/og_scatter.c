/*
 * ONNX ScatterElements and ScatterND: updates applied in place to a C-ordered result.
 *
 *   scatter_elements(out, data, indices, updates, axis, reduction, kind, check, threads)
 *   scatter_nd(out, data, indices, updates, reduction, kind, check, threads)
 *     -> True, None (check found an index out of range), or NotImplemented
 *
 * `out` receives the result: `data` (C-ordered, out's dtype and shape) is copied into it
 * first, over threads; with data None, `out` already holds it (the caller copied it, or
 * it is data itself: in place).  Each
 * update lands on the element (ScatterElements) or the slice (ScatterND) its index
 * addresses, one at a time in C order of its position in `indices`: with duplicates the
 * last update wins (reduction none), and reductions (add, mul, max, min) run in that
 * order, each step computed and rounded in the data's type (float16 and bfloat16 through
 * float, whose 24 bits make the rounding exact: 24 >= 2 * 11 + 2).  Integers wrap (the
 * arithmetic is unsigned); bool add and max are OR, mul and min AND; float max and min are
 * IEEE 754-2019 maximum and minimum (NaN wins, the first NaN stays; -0.0 < +0.0); a NaN
 * that add or mul produces is the canonical quiet NaN (each part of a complex number).
 *
 * check: 0 drops an update whose index is out of range; 1 scans every index first and
 * writes nothing when one is bad (a result written in place stays untouched); 2 checks
 * while writing (the caller discards a new result it finds partly written).
 *
 * Threads split by destination, never by update, so every destination sees its updates
 * in order: ScatterElements by an off-axis dim of the indices (different positions there
 * land in different elements), ScatterND by columns of wide slices (every thread reads
 * every index tuple); ScatterND of narrow slices runs on one thread.
 *
 * `kind` names the data type's arithmetic (OG_K_* below; the caller maps dtypes to it;
 * -1: none), of out's item size; reduction none moves raw bytes and takes any plain type.
 * NotImplemented where the arrays are not the C-ordered, aligned, native arrays of one
 * plain dtype this expects, or a reduction has no arithmetic for `kind`: the caller's
 * NumPy path serves those. ValueError, before anything is written, for a reduction,
 * kind, check or thread count out of range, a kind of another item size, shapes that do
 * not fit (updates: the indices' shape; ScatterND's: indices.shape[:-1] + out.shape[k:];
 * the indices within out off the axis), or a data, indices or updates that shares memory
 * with out (the caller copies those first).
 */
#include "og_core.h"

#include <math.h>

/* The reductions' arithmetic is IEEE's whatever the calling thread's mode: XLA's CPU
 * threads run with subnormals flushed to zero (FTZ and DAZ set: a JAX callback runs this
 * kernel on one, openxla/xla#22858), and so may any caller (torch.set_flush_denormal).
 * Each piece of work clears those flags for itself and restores the caller's after. */
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#include <xmmintrin.h>
typedef unsigned int og_fpmode;
#define OG_FLUSH_BITS 0x8040u /* MXCSR FTZ (bit 15) and DAZ (bit 6) */
static inline og_fpmode
og_ieee_enter(void)
{
    og_fpmode mode = _mm_getcsr();
    if (mode & OG_FLUSH_BITS) _mm_setcsr(mode & ~OG_FLUSH_BITS);
    return mode;
}
static inline void
og_ieee_leave(og_fpmode mode)
{
    if (mode & OG_FLUSH_BITS) _mm_setcsr(mode);
}
#elif defined(__aarch64__)
typedef unsigned long og_fpmode;
#define OG_FLUSH_BITS ((1ul << 24) | (1ul << 19)) /* FPCR FZ and FZ16 */
static inline og_fpmode
og_ieee_enter(void)
{
    og_fpmode mode, ieee;
    __asm__ volatile("mrs %0, fpcr" : "=r"(mode));
    ieee = mode & ~OG_FLUSH_BITS;
    if (mode != ieee) __asm__ volatile("msr fpcr, %0" : : "r"(ieee));
    return mode;
}
static inline void
og_ieee_leave(og_fpmode mode)
{
    if (mode & OG_FLUSH_BITS) __asm__ volatile("msr fpcr, %0" : : "r"(mode));
}
#else
typedef int og_fpmode;
static inline og_fpmode og_ieee_enter(void) { return 0; }
static inline void og_ieee_leave(og_fpmode mode) { (void)mode; }
#endif

enum { OG_NONE, OG_ADD, OG_MUL, OG_MAX, OG_MIN, OG_NREDUCTIONS };
enum {
    OG_K_BOOL, OG_K_I8, OG_K_I16, OG_K_I32, OG_K_I64, OG_K_U8, OG_K_U16, OG_K_U32, OG_K_U64,
    OG_K_F16, OG_K_BF16, OG_K_F32, OG_K_F64, OG_K_C64, OG_K_C128, OG_NKINDS
};

/* The loops a reduction runs on one data type, the element step inlined into each:
 * batch: n updates, update q from src + soff[q] onto out + doff[q];
 * row: n contiguous updates onto n contiguous elements. */
typedef void (*og_batch)(char *out, const npy_intp *doff, const char *src, const npy_intp *soff,
                         npy_intp n, npy_intp isz);
typedef void (*og_row)(char *d, const char *s, npy_intp n, npy_intp isz);
typedef struct {
    og_batch batch;
    og_row row; /* NULL: memcpy (reduction none) */
} og_loops;
/* Updates whose offsets are computed before they are applied: a batch. */
#define OG_BATCH 256

/* ------------------------------------------------------------------------------ */
/* float16 and bfloat16 <-> float, rounding to nearest even.                         */

static float
half_to_float(npy_uint16 h)
{
    npy_uint32 sign = (npy_uint32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    npy_uint32 f;
    float r;
    if (exp == 0x1fu) {
        f = sign | 0x7f800000u | (man << 13); /* infinity, or NaN with its payload */
    }
    else if (exp == 0) {
        if (man == 0) {
            f = sign;
        }
        else { /* subnormal: normalise */
            npy_uint32 e = 113;
            while (!(man & 0x400u)) {
                man <<= 1;
                e--;
            }
            f = sign | (e << 23) | ((man & 0x3ffu) << 13);
        }
    }
    else {
        f = sign | ((exp + 112) << 23) | (man << 13);
    }
    memcpy(&r, &f, 4);
    return r;
}

static npy_uint16
float_to_half(float x)
{
    npy_uint32 f, sign, man, h, rem, half;
    int e, shift;
    memcpy(&f, &x, 4);
    sign = (f >> 16) & 0x8000u;
    man = f & 0x7fffffu;
    if (((f >> 23) & 0xffu) == 0xffu) {
        if (man == 0) return (npy_uint16)(sign | 0x7c00u);
        h = 0x7c00u | (man >> 13); /* NaN: its payload's top bits, and never infinity */
        return (npy_uint16)(sign | ((h & 0x3ffu) ? h : h | 1u));
    }
    e = (int)((f >> 23) & 0xffu) - 127 + 15;
    if (e >= 31) return (npy_uint16)(sign | 0x7c00u);
    if (e <= 0) { /* a subnormal half, or zero */
        if (e < -10) return (npy_uint16)sign;
        man |= 0x800000u;
        shift = 14 - e;
        h = man >> shift;
        rem = man & ((1u << shift) - 1);
        half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (npy_uint16)(sign | h);
    }
    h = ((npy_uint32)e << 10) | (man >> 13);
    rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry may reach infinity */
    return (npy_uint16)(sign | h);
}

static float
bf16_to_float(npy_uint16 b)
{
    npy_uint32 f = (npy_uint32)b << 16;
    float r;
    memcpy(&r, &f, 4);
    return r;
}

static npy_uint16
float_to_bf16(float x)
{
    npy_uint32 f;
    memcpy(&f, &x, 4);
    if ((f & 0x7fffffffu) > 0x7f800000u) {
        return (npy_uint16)(((f >> 16) & 0x8000u) | 0x7fc0u); /* NaN: ml_dtypes' quiet one */
    }
    f += 0x7fffu + ((f >> 16) & 1u);
    return (npy_uint16)(f >> 16);
}

/* A NaN result of add or mul becomes the canonical quiet NaN (positive, payload zero):
 * which NaN the hardware gives depends on the operands' order, which the compiler may
 * swap, and on the device (CUDA gives its own). */
static inline float
og_canonical(float x)
{
    return x != x ? NAN : x;
}

/* ------------------------------------------------------------------------------ */
/* The reductions, one element at a time.                                          */

/* Integers: add and mul in the unsigned type of at least 32 bits (wrap-around, no
 * undefined overflow), max and min compared in the type itself. */
#define OG_INT_OPS(NAME, T, U)                                                              \
    static inline void add_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        a = (T)((U)a + (U)b);                                                               \
        memcpy(d, &a, sizeof a);                                                            \
    }                                                                                       \
    static inline void mul_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        a = (T)((U)a * (U)b);                                                               \
        memcpy(d, &a, sizeof a);                                                            \
    }                                                                                       \
    static inline void max_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        if (b > a) memcpy(d, &b, sizeof b);                                                 \
    }                                                                                       \
    static inline void min_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        if (b < a) memcpy(d, &b, sizeof b);                                                 \
    }

OG_INT_OPS(i8, npy_int8, npy_uint32)
OG_INT_OPS(i16, npy_int16, npy_uint32)
OG_INT_OPS(i32, npy_int32, npy_uint32)
OG_INT_OPS(i64, npy_int64, npy_uint64)
OG_INT_OPS(u8, npy_uint8, npy_uint32)
OG_INT_OPS(u16, npy_uint16, npy_uint32)
OG_INT_OPS(u32, npy_uint32, npy_uint32)
OG_INT_OPS(u64, npy_uint64, npy_uint64)

static inline void
or_bool(char *d, const char *s)
{
    *d = (char)((*d != 0) | (*s != 0));
}

static inline void
and_bool(char *d, const char *s)
{
    *d = (char)((*d != 0) & (*s != 0));
}

/* IEEE 754-2019 maximum / minimum on values a (there) and b (the update): whether b
 * replaces a.  A NaN there stays (the first NaN wins); a NaN update replaces a number;
 * -0.0 < +0.0. */
#define OG_TAKES_MAX(a, b) \
    ((a) == (a) && ((b) != (b) || (b) > (a) || ((b) == (a) && signbit(a) && !signbit(b))))
#define OG_TAKES_MIN(a, b) \
    ((a) == (a) && ((b) != (b) || (b) < (a) || ((b) == (a) && !signbit(a) && signbit(b))))

#define OG_FLOAT_OPS(NAME, T)                                                               \
    static inline void add_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        a = a + b;                                                                          \
        if (a != a) a = (T)NAN; /* the canonical NaN (the module docstring) */              \
        memcpy(d, &a, sizeof a);                                                            \
    }                                                                                       \
    static inline void mul_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        a = a * b;                                                                          \
        if (a != a) a = (T)NAN;                                                             \
        memcpy(d, &a, sizeof a);                                                            \
    }                                                                                       \
    static inline void max_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        if (OG_TAKES_MAX(a, b)) memcpy(d, s, sizeof b);                                     \
    }                                                                                       \
    static inline void min_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a, b;                                                                             \
        memcpy(&a, d, sizeof a);                                                            \
        memcpy(&b, s, sizeof b);                                                            \
        if (OG_TAKES_MIN(a, b)) memcpy(d, s, sizeof b);                                     \
    }

OG_FLOAT_OPS(f32, float)
OG_FLOAT_OPS(f64, double)

/* 16-bit floats: computed in float, rounded back; max and min copy the update's bits. */
#define OG_HALF_OPS(NAME, TO, FROM)                                                         \
    static inline void add_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        npy_uint16 a, b;                                                                    \
        memcpy(&a, d, 2);                                                                   \
        memcpy(&b, s, 2);                                                                   \
        a = FROM(og_canonical(TO(a) + TO(b)));                                              \
        memcpy(d, &a, 2);                                                                   \
    }                                                                                       \
    static inline void mul_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        npy_uint16 a, b;                                                                    \
        memcpy(&a, d, 2);                                                                   \
        memcpy(&b, s, 2);                                                                   \
        a = FROM(og_canonical(TO(a) * TO(b)));                                              \
        memcpy(d, &a, 2);                                                                   \
    }                                                                                       \
    static inline void max_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        npy_uint16 a, b;                                                                    \
        float x, y;                                                                         \
        memcpy(&a, d, 2);                                                                   \
        memcpy(&b, s, 2);                                                                   \
        x = TO(a);                                                                          \
        y = TO(b);                                                                          \
        if (OG_TAKES_MAX(x, y)) memcpy(d, s, 2);                                            \
    }                                                                                       \
    static inline void min_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        npy_uint16 a, b;                                                                    \
        float x, y;                                                                         \
        memcpy(&a, d, 2);                                                                   \
        memcpy(&b, s, 2);                                                                   \
        x = TO(a);                                                                          \
        y = TO(b);                                                                          \
        if (OG_TAKES_MIN(x, y)) memcpy(d, s, 2);                                            \
    }

OG_HALF_OPS(f16, half_to_float, float_to_half)
OG_HALF_OPS(bf16, bf16_to_float, float_to_bf16)

/* Complex: add part by part; mul as NumPy computes it, (ac - bd) + (ad + bc)i (the build
 * turns floating-point contraction off, so no fused multiply-add changes a rounding). */
#define OG_COMPLEX_OPS(NAME, T)                                                             \
    static inline void add_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a[2], b[2];                                                                       \
        memcpy(a, d, sizeof a);                                                             \
        memcpy(b, s, sizeof b);                                                             \
        a[0] = a[0] + b[0];                                                                 \
        a[1] = a[1] + b[1];                                                                 \
        if (a[0] != a[0]) a[0] = (T)NAN;                                                    \
        if (a[1] != a[1]) a[1] = (T)NAN;                                                    \
        memcpy(d, a, sizeof a);                                                             \
    }                                                                                       \
    static inline void mul_##NAME(char *d, const char *s)                                          \
    {                                                                                       \
        T a[2], b[2], r[2];                                                                 \
        memcpy(a, d, sizeof a);                                                             \
        memcpy(b, s, sizeof b);                                                             \
        r[0] = a[0] * b[0] - a[1] * b[1];                                                   \
        r[1] = a[0] * b[1] + a[1] * b[0];                                                   \
        if (r[0] != r[0]) r[0] = (T)NAN;                                                    \
        if (r[1] != r[1]) r[1] = (T)NAN;                                                    \
        memcpy(d, r, sizeof r);                                                             \
    }

OG_COMPLEX_OPS(c64, float)
OG_COMPLEX_OPS(c128, double)

#define OG_LOOPS(NAME, SZ)                                                                  \
    static void batch_##NAME(char *o, const npy_intp *d, const char *s, const npy_intp *so,   \
                             npy_intp n, npy_intp isz)                                        \
    {                                                                                         \
        npy_intp q;                                                                           \
        (void)isz;                                                                            \
        for (q = 0; q < n; q++) NAME(o + d[q], s + so[q]);                                    \
    }                                                                                         \
    static void row_##NAME(char *d, const char *s, npy_intp n, npy_intp isz)                  \
    {                                                                                         \
        npy_intp q;                                                                           \
        (void)isz;                                                                            \
        for (q = 0; q < n; q++) NAME(d + q * (SZ), s + q * (SZ));                             \
    }
#define OG_TYPE_LOOPS(T, SZ) \
    OG_LOOPS(add_##T, SZ) OG_LOOPS(mul_##T, SZ) OG_LOOPS(max_##T, SZ) OG_LOOPS(min_##T, SZ)

OG_LOOPS(or_bool, 1)
OG_LOOPS(and_bool, 1)
OG_TYPE_LOOPS(i8, 1)
OG_TYPE_LOOPS(i16, 2)
OG_TYPE_LOOPS(i32, 4)
OG_TYPE_LOOPS(i64, 8)
OG_TYPE_LOOPS(u8, 1)
OG_TYPE_LOOPS(u16, 2)
OG_TYPE_LOOPS(u32, 4)
OG_TYPE_LOOPS(u64, 8)
OG_TYPE_LOOPS(f16, 2)
OG_TYPE_LOOPS(bf16, 2)
OG_TYPE_LOOPS(f32, 4)
OG_TYPE_LOOPS(f64, 8)
OG_LOOPS(add_c64, 8)
OG_LOOPS(mul_c64, 8)
OG_LOOPS(add_c128, 16)
OG_LOOPS(mul_c128, 16)

/* Reduction none: the update's bytes, of a compile-time size where there is one. */
#define OG_COPY_LOOP(SZ)                                                                      \
    static void batch_copy##SZ(char *o, const npy_intp *d, const char *s, const npy_intp *so, \
                               npy_intp n, npy_intp isz)                                      \
    {                                                                                         \
        npy_intp q;                                                                           \
        (void)isz;                                                                            \
        for (q = 0; q < n; q++) memcpy(o + d[q], s + so[q], SZ);                              \
    }
OG_COPY_LOOP(1)
OG_COPY_LOOP(2)
OG_COPY_LOOP(4)
OG_COPY_LOOP(8)
OG_COPY_LOOP(16)

static void
batch_copy(char *o, const npy_intp *d, const char *s, const npy_intp *so, npy_intp n, npy_intp isz)
{
    npy_intp q;
    for (q = 0; q < n; q++) memcpy(o + d[q], s + so[q], (size_t)isz);
}

#define OG_ROW(NAME) {batch_##NAME, row_##NAME}
#define OG_KIND(T) {OG_ROW(add_##T), OG_ROW(mul_##T), OG_ROW(max_##T), OG_ROW(min_##T)}

/* The loops of each reduction (add, mul, max, min) and kind; {NULL, NULL}: none. */
static const og_loops og_loops_table[OG_NKINDS][4] = {
    [OG_K_BOOL] = {OG_ROW(or_bool), OG_ROW(and_bool), OG_ROW(or_bool), OG_ROW(and_bool)},
    [OG_K_I8] = OG_KIND(i8),
    [OG_K_I16] = OG_KIND(i16),
    [OG_K_I32] = OG_KIND(i32),
    [OG_K_I64] = OG_KIND(i64),
    [OG_K_U8] = OG_KIND(u8),
    [OG_K_U16] = OG_KIND(u16),
    [OG_K_U32] = OG_KIND(u32),
    [OG_K_U64] = OG_KIND(u64),
    [OG_K_F16] = OG_KIND(f16),
    [OG_K_BF16] = OG_KIND(bf16),
    [OG_K_F32] = OG_KIND(f32),
    [OG_K_F64] = OG_KIND(f64),
    [OG_K_C64] = {OG_ROW(add_c64), OG_ROW(mul_c64), {NULL, NULL}, {NULL, NULL}},
    [OG_K_C128] = {OG_ROW(add_c128), OG_ROW(mul_c128), {NULL, NULL}, {NULL, NULL}},
};

/* The type each kind names and its item size: the reductions' loops read and write items
 * of that size. (The caller may present the items as another type of that size: the
 * PyTorch backend views bfloat16 as int16 and unsigned types as signed ones.) */
static const struct {
    const char *name;
    npy_intp size;
} og_kind_types[OG_NKINDS] = {
    [OG_K_BOOL] = {"bool", 1},     [OG_K_I8] = {"int8", 1},         [OG_K_I16] = {"int16", 2},
    [OG_K_I32] = {"int32", 4},     [OG_K_I64] = {"int64", 8},       [OG_K_U8] = {"uint8", 1},
    [OG_K_U16] = {"uint16", 2},    [OG_K_U32] = {"uint32", 4},      [OG_K_U64] = {"uint64", 8},
    [OG_K_F16] = {"float16", 2},   [OG_K_BF16] = {"bfloat16", 2},   [OG_K_F32] = {"float32", 4},
    [OG_K_F64] = {"float64", 8},   [OG_K_C64] = {"complex64", 8},   [OG_K_C128] = {"complex128", 16},
};

/* The loops of `reduction` on `kind` for out's items (`descr`) into *loops: 1; 0 where the
 * reduction has no arithmetic for the kind (kind -1: a type without any; complex max and
 * min), the documented NotImplemented; -1 with a ValueError for a reduction or kind out of
 * range, or a kind whose items are not out's size (its loops would read and write past
 * each item). Reduction none moves out's items as bytes, whatever the kind. */
static int
og_loops_for(const char *fn, int reduction, int kind, PyArray_Descr *descr, og_loops *loops)
{
    const npy_intp isz = PyDataType_ELSIZE(descr);
    og_loops none = {batch_copy, NULL};
    if (reduction < 0 || reduction >= OG_NREDUCTIONS) {
        PyErr_Format(PyExc_ValueError,
                     "%s: reduction %d (want 0 none, 1 add, 2 mul, 3 max or 4 min)", fn,
                     reduction);
        return -1;
    }
    if (kind < -1 || kind >= OG_NKINDS) {
        PyErr_Format(PyExc_ValueError, "%s: kind %d (want -1 to %d)", fn, kind, OG_NKINDS - 1);
        return -1;
    }
    if (kind >= 0 && og_kind_types[kind].size != isz) {
        PyErr_Format(PyExc_ValueError,
                     "%s: kind %d (%s, %zd-byte items) on out's %zd-byte items (dtype %S)", fn,
                     kind, og_kind_types[kind].name, (Py_ssize_t)og_kind_types[kind].size,
                     (Py_ssize_t)isz, (PyObject *)descr);
        return -1;
    }
    if (reduction == OG_NONE) {
        switch (isz) {
        case 1: none.batch = batch_copy1; break;
        case 2: none.batch = batch_copy2; break;
        case 4: none.batch = batch_copy4; break;
        case 8: none.batch = batch_copy8; break;
        case 16: none.batch = batch_copy16; break;
        default: break;
        }
        *loops = none;
        return 1;
    }
    if (kind < 0 || og_loops_table[kind][reduction - 1].batch == NULL) return 0;
    *loops = og_loops_table[kind][reduction - 1];
    return 1;
}

static inline npy_int64
og_index(const void *ind, int ind64, npy_intp k)
{
    return ind64 ? ((const npy_int64 *)ind)[k] : (npy_int64)((const npy_int32 *)ind)[k];
}

/* Whether every index is in range: index k is coordinate k % ncoord, of sizes[...]. */
static int
og_all_in_range(const void *ind, int ind64, npy_intp n, int ncoord, const npy_int64 *sizes)
{
    npy_intp k;
    for (k = 0; k < n; k++) {
        npy_int64 i = og_index(ind, ind64, k), s = sizes[ncoord == 1 ? 0 : k % ncoord];
        if (i < -s || i >= s) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------------ */
/* ScatterElements                                                                  */

typedef struct {
    char *out;
    const char *upd;
    const void *ind;
    int ind64, nd, split, check;
    npy_intp shape[OG_MAXDIMS];   /* the indices' (and updates') shape */
    npy_intp ostride[OG_MAXDIMS]; /* out's byte strides, 0 on the axis */
    npy_intp sa, isz;             /* out's byte stride along the axis; item size */
    npy_int64 s;                  /* the axis' size */
    og_loops loops;
    volatile int bad;
} se_job;

/* Positions of the indices whose coordinate along `split` is in [lo, hi), in C order:
 * their targets computed a batch at a time, then the batch applied. */
static void
se_range(se_job *j, npy_intp lo, npy_intp hi)
{
    int nd = j->nd, last = nd - 1, e;
    npy_intp c[OG_MAXDIMS], istride[OG_MAXDIMS], q;
    npy_intp doff[OG_BATCH], soff[OG_BATCH], nb = 0;
    npy_intp j0 = 0, j1 = j->shape[last], olast = j->ostride[last];
    istride[last] = 1;
    for (e = last - 1; e >= 0; e--) istride[e] = istride[e + 1] * j->shape[e + 1];
    for (e = 0; e < nd; e++) c[e] = 0;
    if (j->split == last) {
        j0 = lo;
        j1 = hi;
    }
    else if (j->split >= 0) {
        c[j->split] = lo;
    }
    for (;;) {
        npy_intp pos = 0, obase = 0;
        for (e = 0; e < last; e++) {
            pos += c[e] * istride[e];
            obase += c[e] * j->ostride[e];
        }
        for (q = j0; q < j1; q++) {
            npy_int64 i = og_index(j->ind, j->ind64, pos + q);
            i = og_wrap(i, j->s);
            if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)j->s)) {
                if (j->check) {
                    j->bad = 1;
                    return;
                }
                continue; /* dropped */
            }
            doff[nb] = obase + q * olast + (npy_intp)i * j->sa;
            soff[nb] = (pos + q) * j->isz;
            if (++nb == OG_BATCH) {
                j->loops.batch(j->out, doff, j->upd, soff, nb, j->isz);
                nb = 0;
            }
        }
        /* The next row: the odometer over dims [0, last), `split` within [lo, hi). */
        for (e = last - 1; e >= 0; e--) {
            npy_intp top = e == j->split ? hi : j->shape[e];
            if (++c[e] < top) break;
            c[e] = e == j->split ? lo : 0;
        }
        if (e < 0 || j->bad) break;
    }
    if (nb && !j->bad) j->loops.batch(j->out, doff, j->upd, soff, nb, j->isz);
}

static void
se_work(void *p, int t, int nt)
{
    se_job *j = (se_job *)p;
    npy_intp lo = 0, hi = 0;
    og_fpmode mode = og_ieee_enter();
    if (j->split >= 0) og_part(j->shape[j->split], t, nt, &lo, &hi);
    if (j->split < 0 || lo < hi) se_range(j, lo, hi);
    og_ieee_leave(mode);
}

/* ------------------------------------------------------------------------------ */
/* ScatterND                                                                        */

typedef struct {
    char *out;
    const char *upd;
    const void *ind;
    int ind64, k, check;
    npy_intp ntuples, width, isz, nrows;
    npy_int64 sizes[OG_MAXDIMS];
    npy_intp rows[OG_MAXDIMS]; /* rows of a step of each coordinate */
    og_loops loops;
    volatile int bad;
} nd_job;

/* The row index tuple t addresses; -1 where a coordinate is out of range (dropped, or
 * with check, marked bad). */
static inline npy_intp
nd_row(nd_job *j, npy_intp t)
{
    npy_intp row = 0;
    int m;
    for (m = 0; m < j->k; m++) {
        npy_int64 i = og_index(j->ind, j->ind64, t * j->k + m), s = j->sizes[m];
        i = og_wrap(i, s);
        if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)s)) {
            if (j->check) j->bad = 1;
            return -1;
        }
        row += (npy_intp)i * j->rows[m];
    }
    return row;
}

/* One coordinate per tuple, one element per slice (a histogram): the index type known. */
#define OG_ND_ONE(IDX)                                                                       \
    static void nd_one_##IDX(nd_job *j)                                                      \
    {                                                                                        \
        const IDX *ind = (const IDX *)j->ind;                                                \
        npy_intp t, doff[OG_BATCH], soff[OG_BATCH], nb = 0, isz = j->isz;                    \
        npy_int64 s = j->sizes[0];                                                           \
        for (t = 0; t < j->ntuples; t++) {                                                   \
            npy_int64 i = ind[t];                                                            \
            i = og_wrap(i, s);                                                               \
            if (OG_UNLIKELY((npy_uint64)i >= (npy_uint64)s)) {                               \
                if (j->check) {                                                              \
                    j->bad = 1;                                                              \
                    return;                                                                  \
                }                                                                            \
                continue; /* dropped */                                                      \
            }                                                                                \
            doff[nb] = (npy_intp)i * isz;                                                    \
            soff[nb] = t * isz;                                                              \
            if (++nb == OG_BATCH) {                                                          \
                j->loops.batch(j->out, doff, j->upd, soff, nb, isz);                         \
                nb = 0;                                                                      \
            }                                                                                \
        }                                                                                    \
        if (nb) j->loops.batch(j->out, doff, j->upd, soff, nb, isz);                         \
    }
OG_ND_ONE(npy_int32)
OG_ND_ONE(npy_int64)

/* Tuples in order; each writes columns [c0, c1) of its slice.  Slices of one element go
 * a batch at a time. */
static void
nd_range(nd_job *j, npy_intp c0, npy_intp c1)
{
    npy_intp t, rowbytes = j->width * j->isz, n = c1 - c0;
    npy_intp doff[OG_BATCH], soff[OG_BATCH], nb = 0;
    if (j->width == 1 && j->k == 1) {
        if (j->ind64) {
            nd_one_npy_int64(j);
        }
        else {
            nd_one_npy_int32(j);
        }
        return;
    }
    for (t = 0; t < j->ntuples; t++) {
        npy_intp row = nd_row(j, t);
        if (row < 0) {
            if (j->bad) return;
            continue; /* dropped */
        }
        if (j->width == 1) {
            doff[nb] = row * rowbytes;
            soff[nb] = t * rowbytes;
            if (++nb == OG_BATCH) {
                j->loops.batch(j->out, doff, j->upd, soff, nb, j->isz);
                nb = 0;
            }
        }
        else if (j->loops.row == NULL) {
            memcpy(j->out + row * rowbytes + c0 * j->isz, j->upd + t * rowbytes + c0 * j->isz,
                   (size_t)(n * j->isz));
        }
        else {
            j->loops.row(j->out + row * rowbytes + c0 * j->isz,
                         j->upd + t * rowbytes + c0 * j->isz, n, j->isz);
        }
    }
    if (nb) j->loops.batch(j->out, doff, j->upd, soff, nb, j->isz);
}

/* Threads split the columns of the slices: each thread reads every tuple. */
static void
nd_work(void *p, int t, int nt)
{
    nd_job *j = (nd_job *)p;
    npy_intp lo, hi;
    og_fpmode mode = og_ieee_enter();
    og_part(j->width, t, nt, &lo, &hi);
    if (lo < hi) nd_range(j, lo, hi);
    og_ieee_leave(mode);
}

/* ------------------------------------------------------------------------------ */
/* The copy of data that a new result starts as, split over threads by bytes.        */

typedef struct {
    char *dst;
    const char *src;
    npy_intp bytes;
} copy_job;

static void
copy_work(void *p, int t, int nt)
{
    copy_job *c = (copy_job *)p;
    npy_intp lo, hi;
    og_part(c->bytes, t, nt, &lo, &hi);
    if (lo < hi) memcpy(c->dst + lo, c->src + lo, (size_t)(hi - lo));
}

/* Copy `data` (None: nothing, `out` already holds it) into `out`; run with the GIL
 * released.  Threads by the bytes, in pieces of 256 KiB at least. */
static void
og_copy_data(PyObject *data, PyArrayObject *out, Py_ssize_t threads)
{
    copy_job c;
    if (data == Py_None) return;
    c.dst = PyArray_BYTES(out);
    c.src = PyArray_BYTES((PyArrayObject *)data);
    c.bytes = PyArray_NBYTES(out);
    og_run(copy_work, &c, og_nthreads(threads, OG_COPY_WORK(1, c.bytes), c.bytes >> 18));
}

/* Whether `data` is None or a C-ordered array of out's dtype and shape to copy from. */
static int
og_copyable(PyObject *data, PyArrayObject *out)
{
    PyArrayObject *d = (PyArrayObject *)data;
    if (data == Py_None) return 1;
    return PyArray_CheckExact(data) && PyArray_ISCARRAY_RO(d) && PyArray_ISNOTSWAPPED(d) &&
           PyArray_EquivTypes(PyArray_DESCR(d), PyArray_DESCR(out)) &&
           PyArray_SAMESHAPE(d, out);
}

/* ------------------------------------------------------------------------------ */
/* Entry points                                                                      */

/* Whether `out`, `ind` and `upd` are what the kernels take (the module docstring). */
static int
og_scatter_args(PyObject *out, PyObject *ind, PyObject *upd)
{
    PyArray_Descr *descr;
    PyArrayObject *o = (PyArrayObject *)out, *u = (PyArrayObject *)upd, *i = (PyArrayObject *)ind;
    if (!PyArray_CheckExact(out) || !PyArray_CheckExact(upd) || !PyArray_CheckExact(ind)) return 0;
    descr = PyArray_DESCR(o);
    if (PyDataType_REFCHK(descr) || descr->kind == 'T') return 0;
    if (!PyArray_EquivTypes(descr, PyArray_DESCR(u))) return 0;
    if (!PyArray_ISCARRAY(o) || !PyArray_ISCARRAY_RO(u) || !PyArray_ISCARRAY_RO(i)) return 0;
    if (!PyArray_ISNOTSWAPPED(o) || !PyArray_ISNOTSWAPPED(u) || !PyArray_ISNOTSWAPPED(i)) return 0;
    if (!PyArray_ISINTEGER(i) || !PyArray_ISSIGNED(i)) return 0;
    return PyArray_ITEMSIZE(i) == 4 || PyArray_ITEMSIZE(i) == 8;
}

/* What both scatters check before their own shapes: 1 to go on, with *loops set; 0 for
 * the documented NotImplemented (arrays the kernels do not take, a reduction without
 * arithmetic for the kind); -1 with an error set: threads or check out of range, a
 * reduction or kind og_loops_for refuses, out of rank 0 or above OG_MAXDIMS, or an input
 * that shares memory with out (the kernels read the updates and indices while writing
 * out, and copy data into it with memcpy; the caller copies shared inputs first). */
static int
og_scatter_prepare(const char *fn, PyObject *out, PyObject *data, PyObject *ind, PyObject *upd,
                   int reduction, int kind, int check, Py_ssize_t threads, og_loops *loops)
{
    PyArrayObject *o = (PyArrayObject *)out;
    int ok;
    if (og_check_threads(fn, threads) < 0) return -1;
    if (check < 0 || check > 2) {
        PyErr_Format(PyExc_ValueError, "%s: check %d (want 0, 1 or 2)", fn, check);
        return -1;
    }
    if (!og_scatter_args(out, ind, upd) || !og_copyable(data, o)) return 0;
    if ((ok = og_loops_for(fn, reduction, kind, PyArray_DESCR(o), loops)) <= 0) return ok;
    if (og_check_rank(fn, "out", o, 1, OG_MAXDIMS) < 0 ||
        (data != Py_None && og_check_apart(fn, "data", (PyArrayObject *)data, o) < 0) ||
        og_check_apart(fn, "indices", (PyArrayObject *)ind, o) < 0 ||
        og_check_apart(fn, "updates", (PyArrayObject *)upd, o) < 0) {
        return -1;
    }
    return 1;
}

PyObject *
og_scatter_elements(PyObject *self, PyObject *args)
{
    static const char *fn = "scatter_elements";
    PyObject *out, *data, *ind, *upd;
    PyArrayObject *o, *i, *u;
    Py_ssize_t axis, threads;
    int reduction, kind, check, ok, e, nt = 1;
    se_job job;
    npy_intp n, best = 1, isz;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOniiin:scatter_elements", &out, &data, &ind, &upd, &axis,
                          &reduction, &kind, &check, &threads)) {
        return NULL;
    }
    memset(&job, 0, sizeof job);
    ok = og_scatter_prepare(fn, out, data, ind, upd, reduction, kind, check, threads, &job.loops);
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    o = (PyArrayObject *)out;
    i = (PyArrayObject *)ind;
    u = (PyArrayObject *)upd;
    job.nd = PyArray_NDIM(o);
    /* One update per index, and the indices within out off the axis: an index's position
     * there is its target's. */
    if (og_check_rank(fn, "indices", i, job.nd, job.nd) < 0 ||
        og_check_rank(fn, "updates", u, job.nd, job.nd) < 0 ||
        og_check_axis(fn, "axis", axis, "out", job.nd) < 0 ||
        og_check_dims(fn, "updates", u, 0, PyArray_DIMS(i), "indices", 0, job.nd, -1, 0) < 0 ||
        og_check_dims(fn, "indices", i, 0, PyArray_DIMS(o), "out", 0, job.nd, (int)axis, 1) < 0) {
        return NULL;
    }
    isz = PyArray_ITEMSIZE(o);
    n = PyArray_SIZE(i);
    job.out = PyArray_BYTES(o);
    job.upd = PyArray_BYTES(u);
    job.ind = PyArray_DATA(i);
    job.ind64 = PyArray_ITEMSIZE(i) == 8;
    job.isz = isz;
    job.s = PyArray_DIM(o, (int)axis);
    job.sa = PyArray_STRIDE(o, (int)axis);
    job.check = check != 0;
    job.split = -1;
    for (e = 0; e < job.nd; e++) {
        job.shape[e] = PyArray_DIM(i, e);
        job.ostride[e] = e == axis ? 0 : PyArray_STRIDE(o, e);
        /* Threads split the largest dim off the axis: its positions land apart. */
        if (e != axis && job.shape[e] > best) {
            best = job.shape[e];
            job.split = e;
        }
    }
    if (check == 1 && !og_all_in_range(job.ind, job.ind64, n, 1, &job.s)) Py_RETURN_NONE;
    if (check == 1) job.check = 0; /* all in range: nothing more to test */
    if (job.split >= 0) nt = og_nthreads(threads, OG_COPY_WORK(n, n * isz), best);
    Py_BEGIN_ALLOW_THREADS
    og_copy_data(data, o, threads);
    if (n == 0) {
        /* nothing to write */
    }
    else if (job.split < 0) {
        se_work(&job, 0, 1);
    }
    else {
        og_run(se_work, &job, nt);
    }
    Py_END_ALLOW_THREADS
    if (job.bad) Py_RETURN_NONE;
    Py_RETURN_TRUE;
}

PyObject *
og_scatter_nd(PyObject *self, PyObject *args)
{
    static const char *fn = "scatter_nd";
    PyObject *out, *data, *ind, *upd;
    PyArrayObject *o, *i, *u;
    Py_ssize_t threads;
    int reduction, kind, check, ok, m, r, q, nt;
    nd_job job;
    npy_intp n, units;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOiiin:scatter_nd", &out, &data, &ind, &upd, &reduction, &kind,
                          &check, &threads)) {
        return NULL;
    }
    memset(&job, 0, sizeof job);
    ok = og_scatter_prepare(fn, out, data, ind, upd, reduction, kind, check, threads, &job.loops);
    if (ok <= 0) return ok < 0 ? NULL : Py_NewRef(Py_NotImplemented);
    o = (PyArrayObject *)out;
    i = (PyArrayObject *)ind;
    u = (PyArrayObject *)upd;
    r = PyArray_NDIM(o);
    q = PyArray_NDIM(i);
    /* Tuples of k coordinates into out's first k dims; the updates one slice of out's
     * other dims per tuple: indices.shape[:-1] + out.shape[k:]. */
    if (og_check_rank(fn, "indices", i, 1, OG_MAXDIMS) < 0 ||
        (job.k = og_coordinates(fn, i, r)) < 0 ||
        og_check_rank(fn, "updates", u, q - 1 + r - job.k, q - 1 + r - job.k) < 0 ||
        og_check_dims(fn, "updates", u, 0, PyArray_DIMS(i), "indices", 0, q - 1, -1, 0) < 0 ||
        og_check_dims(fn, "updates", u, q - 1, PyArray_DIMS(o) + job.k, "out", job.k, r - job.k,
                      -1, 0) < 0) {
        return NULL;
    }
    n = PyArray_SIZE(i);
    job.ntuples = n / job.k;
    job.isz = PyArray_ITEMSIZE(o);
    /* (Products of an array's dims fit: NumPy refuses arrays whose nonzero dims' product
     * overflows.) */
    job.width = 1;
    for (m = job.k; m < r; m++) job.width *= PyArray_DIM(o, m);
    job.nrows = 1;
    for (m = job.k - 1; m >= 0; m--) {
        job.sizes[m] = PyArray_DIM(o, m);
        job.rows[m] = job.nrows;
        job.nrows *= PyArray_DIM(o, m);
    }
    job.out = PyArray_BYTES(o);
    job.upd = PyArray_BYTES(u);
    job.ind = PyArray_DATA(i);
    job.ind64 = PyArray_ITEMSIZE(i) == 8;
    job.check = check != 0;
    /* Check 1 scans first; so does check 2 where nothing is written (empty slices). */
    if ((check == 1 || (check == 2 && (job.width == 0 || job.nrows == 0))) &&
        !og_all_in_range(job.ind, job.ind64, n, job.k, job.sizes)) {
        Py_RETURN_NONE;
    }
    if (check == 1) job.check = 0;
    /* Wide slices split by columns (16 at least each); narrow ones run on one thread
     * (splitting destination rows, each thread reading every tuple, ran slower on two
     * threads than on one: docs/performance.md, "The C kernel"). */
    units = job.width / 16;
    nt = og_nthreads(threads, OG_COPY_WORK(job.ntuples, job.ntuples * job.width * job.isz),
                     units);
    Py_BEGIN_ALLOW_THREADS
    og_copy_data(data, o, threads);
    if (n && job.width && job.nrows) og_run(nd_work, &job, nt);
    Py_END_ALLOW_THREADS
    if (job.bad) Py_RETURN_NONE;
    Py_RETURN_TRUE;
}
