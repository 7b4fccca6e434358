"""The compiled kernels ``onnx_gather._kernels`` against np.take / np.take_along_axis, bit
for bit.

A missing extension fails this module, unless the build was told to skip it
(ONNX_GATHER_NO_EXTENSION set), in which case the module is skipped.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

if os.environ.get("ONNX_GATHER_NO_EXTENSION", "").strip() not in ("", "0"):
    _kernels = pytest.importorskip("onnx_gather._kernels")
else:
    from onnx_gather import _kernels


@pytest.fixture(autouse=True)
def split_small_work():
    """Split work over threads from 256 elements a thread on, so threads=4 calls on
    small arrays exercise the partitioning too (uneven shares, row/block boundaries)."""
    old, _ = _kernels._tune(256)
    yield
    _kernels._tune(old)


DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
    np.complex128,
    "U3",
    "S5",
    "V3",
    "U5",  # 20 bytes: the generic path
]
INDEX_DTYPES = [np.int32, np.int64]


def random_bits(shape, dtype, rng):
    """An array of `dtype` whose bytes are random (NaN payloads, -0.0, odd bools)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = rng.integers(0, 256, size=n, dtype=np.uint8)
    if dtype.kind == "U":
        # Keep code points valid: random ASCII letters.
        raw = raw.view(np.uint32) if n else raw[:0].view(np.uint32)
        raw = (raw % 26 + 65).astype(np.uint32).view(np.uint8)
    return raw.view(dtype).reshape(shape)


def as_bytes(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(-1) if a.dtype.itemsize else np.zeros(0, np.uint8)


def assert_bits_equal(got, want):
    assert got.shape == want.shape
    assert got.dtype.itemsize == want.dtype.itemsize
    np.testing.assert_array_equal(as_bytes(got), as_bytes(np.asarray(want, dtype=got.dtype)))


def norm(indices, s):
    indices = np.asarray(indices, dtype=np.int64)
    return np.where(indices < 0, indices + s, indices)


def ref_gather(data, indices, axis):
    return np.take(data, norm(indices, data.shape[axis]), axis=axis)


def ref_gather_elements(data, indices, axis):
    # take_along_axis needs matching shapes off the axis: slice data down first.
    sl = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(indices.shape))
    return np.take_along_axis(data[sl], norm(indices, data.shape[axis]), axis=axis)


def call_gather(data, indices, axis, check=True, threads=1, out_dtype=None):
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1 :]
    out = np.empty(shape, dtype=out_dtype or data.dtype)
    result = _kernels.gather(data, indices, axis, out, check, threads)
    assert result is None or result is out  # the given out, filled
    return result is not None, out


def call_ge(data, indices, axis, check=True, threads=1):
    out = np.empty(indices.shape, dtype=data.dtype)
    result = _kernels.gather_elements(data, indices, axis, out, check, threads)
    assert result is None or result is out
    return result is not None, out


def rand_indices(shape, s, dtype, rng, negative=True):
    lo = -s if negative else 0
    return np.asarray(rng.integers(lo, s, size=shape), dtype=dtype)


# ---------------------------------------------------------------------------------------
# Gather


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_gather_every_dtype(dtype, idt):
    rng = np.random.default_rng(0)
    data = random_bits((5, 7, 3), dtype, rng)
    for axis in range(3):
        ind = rand_indices((4, 2), data.shape[axis], idt, rng)
        ok, out = call_gather(data, ind, axis)
        assert ok is True
        assert_bits_equal(out, ref_gather(data, ind, axis))


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
@pytest.mark.parametrize("ind_shape", [(), (3,), (2, 3), (1, 2, 2)], ids=str)
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_gather_ranks_axes(rank, ind_shape, idt):
    rng = np.random.default_rng(rank * 10 + len(ind_shape))
    shape = (4, 3, 5, 2)[:rank]
    data = random_bits(shape, np.float32, rng)
    for axis in range(rank):
        ind = rand_indices(ind_shape, shape[axis], idt, rng)
        assert ind.shape == ind_shape
        ok, out = call_gather(data, ind, axis)
        assert ok
        assert out.ndim == rank - 1 + len(ind_shape)
        assert_bits_equal(out, ref_gather(data, ind, axis))


def views(base):
    """Non-contiguous views of a rank-3 array."""
    yield "transposed", base.transpose(2, 0, 1)
    yield "reversed", base[::-1, :, ::-1]
    yield "strided", base[::2, :, ::2]
    yield "fortran", np.asfortranarray(base)
    yield "broadcast", np.broadcast_to(base[:1, :, :1], base.shape)
    yield "middle", base[:, 1:3, :]
    yield "negstride_mid", base[:, ::-2, :]


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.float32, np.float64, np.complex128, "U3", "V3"], ids=str
)
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_gather_views(dtype, idt):
    rng = np.random.default_rng(1)
    base = random_bits((6, 5, 8), dtype, rng)
    for name, data in views(base):
        for axis in range(3):
            for ind_shape in [(), (7,), (3, 2)]:
                ind = rand_indices(ind_shape, data.shape[axis], idt, rng)
                ok, out = call_gather(data, ind, axis, threads=3)
                assert ok, name
                assert_bits_equal(out, ref_gather(data, ind, axis))


def test_gather_float_bits_move_unchanged():
    payloads = np.array([0x7FC00001, 0xFFC12345, 0x80000000, 0x7F800001], dtype=np.uint32)
    data = payloads.view(np.float32)
    ind = np.array([3, 2, 1, 0, -1], dtype=np.int64)
    ok, out = call_gather(data, ind, 0)
    assert ok
    np.testing.assert_array_equal(out.view(np.uint32), payloads[[3, 2, 1, 0, 3]])
    d64 = np.array([0x7FF0000000000001, 0x8000000000000000], dtype=np.uint64)
    ok, out = call_gather(d64.view(np.float64), np.array([1, 0], np.int32), 0)
    assert ok
    np.testing.assert_array_equal(out.view(np.uint64), d64[[1, 0]])


def test_gather_out_dtype_may_differ_with_same_itemsize():
    data = np.arange(12, dtype=np.int16).reshape(3, 4)
    ok, out = call_gather(data, np.array([2, 0], np.int64), 0, out_dtype=np.float16)
    assert ok
    np.testing.assert_array_equal(out.view(np.int16), data[[2, 0]])


def test_gather_empty_outputs():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    ok, out = call_gather(data, np.zeros((0,), np.int64), 0)
    assert ok
    assert out.shape == (0, 4)
    ok, out = call_gather(data, np.zeros((2, 0), np.int32), 1)
    assert ok
    assert out.shape == (3, 2, 0)
    # Empty off the axis: indices are still checked.
    empty = np.zeros((0, 4), np.float32)
    ok, out = call_gather(empty, np.array([1, 3], np.int64), 1)
    assert ok
    assert out.shape == (0, 2)
    ok, out = call_gather(empty, np.array([1, 4], np.int64), 1)
    assert ok is False
    ok, out = call_gather(empty, np.array([1, 4], np.int64), 1, check=False)
    assert ok is True


@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_gather_axis_of_length_zero(idt):
    data = np.zeros((3, 0, 2), np.float64)
    ind = np.array([0, 1], idt)
    ok, out = call_gather(data, ind, 1)
    assert ok is False
    out = np.full((3, 2, 2), 7.0)
    assert _kernels.gather(data, ind, 1, out, False, 1) is out
    np.testing.assert_array_equal(out.view(np.uint64), 0)
    # No indices: nothing is out of range.
    ok, out = call_gather(data, np.zeros((0,), idt), 1)
    assert ok
    assert out.shape == (3, 0, 2)


@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("bad", ["high", "low"])
@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("post", [1, 3])
def test_gather_check_reports_one_bad_index(idt, where, bad, threads, post):
    rng = np.random.default_rng(2)
    s = 50
    data = random_bits((4, s, post), np.float32, rng)
    ind = rand_indices((100_000,), s, idt, rng)
    pos = {"first": 0, "middle": ind.size // 2, "last": ind.size - 1}[where]
    ind[pos] = s if bad == "high" else -s - 1
    ok, _ = call_gather(data, ind, 1, check=True, threads=threads)
    assert ok is False
    # The edge values themselves are valid.
    ind[pos] = s - 1 if bad == "high" else -s
    ok, out = call_gather(data, ind, 1, check=True, threads=threads)
    assert ok is True
    assert_bits_equal(out, ref_gather(data, ind, 1))


WILD = [2**62, -(2**62), -(2**63), 2**63 - 1, 2**31 - 1, -(2**31), 10**12, -(10**12)]


@pytest.mark.parametrize("post", [1, 4])
@pytest.mark.parametrize("threads", [1, 4])
def test_gather_unchecked_wild_indices_stay_inside(post, threads):
    rng = np.random.default_rng(3)
    data = random_bits((3, 9, post), np.float64, rng)
    ind64 = np.array(WILD * 5000, dtype=np.int64)
    for ind in (ind64, ind64.astype(np.int32)):
        ok, out = call_gather(data, ind, 1, check=False, threads=threads)
        assert ok is True
        clamped = np.clip(norm(ind, 9), 0, 8)
        assert_bits_equal(out, ref_gather(data, clamped, 1))
        assert call_gather(data, ind, 1, check=True, threads=threads)[0] is False


@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_threads_match_single_thread(idt, axis):
    rng = np.random.default_rng(4)
    data = random_bits((40, 300, 50), np.float32, rng)[:, ::-1, :]
    ind = rand_indices((700,), data.shape[axis], idt, rng)
    ok1, out1 = call_gather(data, ind, axis, threads=1)
    ok4, out4 = call_gather(data, ind, axis, threads=4)
    ok3, out3 = call_gather(data, ind, axis, threads=3)
    assert ok1
    assert ok4
    assert ok3
    assert_bits_equal(out3, out1)
    assert_bits_equal(out4, out1)
    assert_bits_equal(out4, ref_gather(data, ind, axis))


def test_gather_large_1d_threads():
    _kernels._tune(65536)  # the shipped default: 300k elements split over 4 threads
    rng = np.random.default_rng(5)
    data = random_bits((1000,), np.complex128, rng)
    ind = rand_indices((300_000,), 1000, np.int32, rng)
    ok, out = call_gather(data, ind, 0, threads=4)
    assert ok
    assert_bits_equal(out, ref_gather(data, ind, 0))


# ---------------------------------------------------------------------------------------
# OpenVINO Gather-7/8 without batch dims: Gather's kernel, zeros for a bad index


def ref_openvino_gather(data, indices, axis, negatives):
    """Zeros where an index is outside [-s, s-1] (Gather-8) or [0, s-1] (Gather-7)."""
    s = data.shape[axis]
    indices = np.asarray(indices, dtype=np.int64)
    valid = (indices >= (-s if negatives else 0)) & (indices < s)
    safe = np.where(valid, norm(indices, s), 0)
    read = (
        np.take(data, safe, axis=axis)
        if s
        else np.zeros(data.shape[:axis] + indices.shape + data.shape[axis + 1 :], data.dtype)
    )
    mask = valid.reshape((1,) * axis + indices.shape + (1,) * (data.ndim - axis - 1))
    out = np.zeros_like(read)
    np.copyto(out, read, where=np.broadcast_to(mask, read.shape))
    return out


def mixed_indices(shape, s, dtype, rng):
    """About a third out of range on either side, the rest valid, negatives too."""
    return np.asarray(rng.integers(-2 * s - 1, 2 * s + 2, size=shape), dtype=dtype)


@pytest.mark.parametrize("negatives", [True, False], ids=["v8", "v7"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_openvino_gather_every_dtype_reads_zeros(dtype, idt, negatives):
    """Every item size, element (last axis) and row (earlier axes) paths: zero bytes where
    the index is bad, data's bits elsewhere."""
    rng = np.random.default_rng(7)
    data = random_bits((5, 7, 3), dtype, rng)
    for axis in range(3):
        ind = mixed_indices((4, 6), data.shape[axis], idt, rng)
        out = _kernels.openvino_gather(data, ind, axis, None, negatives, 1)
        assert_bits_equal(out, ref_openvino_gather(data, ind, axis, negatives))


@pytest.mark.parametrize("negatives", [True, False], ids=["v8", "v7"])
@pytest.mark.parametrize("threads", [1, 4])
def test_openvino_gather_views_threads_and_wild_indices(negatives, threads):
    rng = np.random.default_rng(8)
    base = random_bits((40, 30, 8), np.float32, rng)
    for name, data in views(base):
        for axis in range(3):
            s = data.shape[axis]
            ind = mixed_indices((300,), s, np.int64, rng)
            ind[: len(WILD)] = WILD  # far out of range: zeros, never a read outside data
            out = _kernels.openvino_gather(data, ind, axis, None, negatives, threads)
            assert out.shape == data.shape[:axis] + ind.shape + data.shape[axis + 1 :], name
            assert_bits_equal(out, ref_openvino_gather(data, ind, axis, negatives))


@pytest.mark.parametrize("negatives", [True, False], ids=["v8", "v7"])
@pytest.mark.parametrize("bad_share", [0.0, 0.005, 0.5])
@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int16, np.float32, np.float64, np.complex128, "V3"], ids=str
)
@pytest.mark.parametrize("length", [1000, 8000], ids=["short-line", "long-line"])
def test_openvino_gather_long_element_reads_every_loop(dtype, bad_share, negatives, length):
    """20,000 reads of 1-D data: Gather's loop with a branch while bad indices are rare;
    once a block of 4096 has more than one in 32 (items of 1-8 bytes), a loop without it:
    on a copy of a short line with a zero after it (at least 4 reads per item left), else
    with masks; the generic loop for other sizes; one thread and two; dense data and a
    strided view."""
    rng = np.random.default_rng(9)
    dense = random_bits((3 * length,), dtype, rng)
    ind = rng.integers(-length, length, 20_000)
    bad = rng.choice([length, -length - 1, 2**40], ind.shape)
    ind = np.where(rng.random(ind.shape) < bad_share, bad, ind)
    for data in (dense[:length], dense[::3]):
        for threads in (1, 2):
            out = _kernels.openvino_gather(data, ind, 0, None, negatives, threads)
            assert_bits_equal(out, ref_openvino_gather(data, ind, 0, negatives))


def test_openvino_gather_empty_axis_empty_output_and_given_out():
    data = np.zeros((3, 0, 2), np.float32)
    out = _kernels.openvino_gather(data, np.array([0, -1, 5]), 1, None, True, 1)
    assert out.shape == (3, 3, 2)
    assert not out.any()
    data = np.arange(6.0).reshape(2, 3)
    empty = _kernels.openvino_gather(data, np.zeros((0,), np.int64), 1, None, True, 1)
    assert empty.shape == (2, 0)
    given = np.full((2, 2), 9.0)
    got = _kernels.openvino_gather(data, np.array([-1, 3]), 1, given, True, 1)
    assert got is given
    assert given.tolist() == [[2.0, 0.0], [5.0, 0.0]]
    # Objects are not plain bytes: the caller's path serves them.
    objects = np.array(["a", "b"], object)
    assert _kernels.openvino_gather(objects, np.array([0]), 0, None, True, 1) is NotImplemented


# ---------------------------------------------------------------------------------------
# GatherElements


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_gather_elements_every_dtype(dtype, idt):
    rng = np.random.default_rng(6)
    data = random_bits((5, 7, 3), dtype, rng)
    for axis in range(3):
        ishape = list(data.shape)
        ishape[axis] = 6
        ind = rand_indices(tuple(ishape), data.shape[axis], idt, rng)
        ok, out = call_ge(data, ind, axis)
        assert ok is True
        assert_bits_equal(out, ref_gather_elements(data, ind, axis))


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
@pytest.mark.parametrize("smaller", [False, True])
def test_gather_elements_ranks_axes(rank, idt, smaller):
    rng = np.random.default_rng(rank)
    shape = (5, 4, 6, 3)[:rank]
    data = random_bits(shape, np.int16, rng)
    for axis in range(rank):
        for ax_len in (1, 3, 9):
            ishape = [max(1, n - 2) if smaller else n for n in shape]
            ishape[axis] = ax_len
            ind = rand_indices(tuple(ishape), shape[axis], idt, rng)
            ok, out = call_ge(data, ind, axis)
            assert ok
            assert_bits_equal(out, ref_gather_elements(data, ind, axis))


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.float32, np.float64, np.complex128, "U3", "V3"], ids=str
)
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_gather_elements_views(dtype, idt):
    rng = np.random.default_rng(7)
    base = random_bits((6, 5, 8), dtype, rng)
    for name, data in views(base):
        for axis in range(3):
            for smaller in (False, True):
                ishape = [n - 1 if smaller and n > 1 else n for n in data.shape]
                ishape[axis] = 4
                ind = rand_indices(tuple(ishape), data.shape[axis], idt, rng)
                ok, out = call_ge(data, ind, axis, threads=3)
                assert ok, name
                assert_bits_equal(out, ref_gather_elements(data, ind, axis))


def test_gather_elements_size_one_dims_and_collapse():
    rng = np.random.default_rng(8)
    data = random_bits((1, 7, 1, 4, 1), np.float32, rng)
    for axis in range(5):
        ishape = list(data.shape)
        ishape[axis] = 3
        ind = rand_indices(tuple(ishape), data.shape[axis], np.int64, rng)
        ok, out = call_ge(data, ind, axis)
        assert ok
        assert_bits_equal(out, ref_gather_elements(data, ind, axis))


def test_gather_elements_empty_and_zero_axis():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    ok, out = call_ge(data, np.zeros((0, 4), np.int64), 0)
    assert ok
    assert out.shape == (0, 4)
    ok, out = call_ge(data, np.zeros((3, 0), np.int32), 0)
    assert ok
    assert out.shape == (3, 0)
    z = np.zeros((0, 4), np.float32)
    ind = np.zeros((2, 3), np.int64)
    assert call_ge(z, ind, 0)[0] is False
    out = np.full((2, 3), 5.0, np.float32)
    assert _kernels.gather_elements(z, ind, 0, out, False, 1) is out
    np.testing.assert_array_equal(out.view(np.uint32), 0)


@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("threads", [1, 3, 4])
def test_gather_elements_check_reports_one_bad_index(idt, where, axis, threads):
    rng = np.random.default_rng(9)
    data = random_bits((300, 400), np.float32, rng)
    s = data.shape[axis]
    ind = rand_indices((300, 400), s, idt, rng)
    pos = {"first": (0, 0), "middle": (150, 200), "last": (299, 399)}[where]
    for bad in (s, -s - 1):
        ind[pos] = bad
        assert call_ge(data, ind, axis, threads=threads)[0] is False
    ind[pos] = -s
    ok, out = call_ge(data, ind, axis, threads=threads)
    assert ok is True
    assert_bits_equal(out, ref_gather_elements(data, ind, axis))


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("threads", [1, 4])
def test_gather_elements_unchecked_wild_indices_stay_inside(axis, threads):
    rng = np.random.default_rng(10)
    data = random_bits((20, 30, 40), np.int64, rng)
    s = data.shape[axis]
    wild = np.array(WILD, dtype=np.int64)
    ind64 = wild[rng.integers(0, len(wild), size=data.shape)]
    for ind in (ind64, ind64.astype(np.int32)):
        ok, out = call_ge(data, ind, axis, check=False, threads=threads)
        assert ok is True
        clamped = np.clip(norm(ind, s), 0, s - 1)
        assert_bits_equal(out, ref_gather_elements(data, clamped, axis))


@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("view", ["plain", "reversed", "transposed"])
def test_gather_elements_threads_match(idt, axis, view):
    rng = np.random.default_rng(11)
    base = random_bits((60, 70, 80), np.float32, rng)
    data = {"plain": base, "reversed": base[::-1, :, ::-1], "transposed": base.transpose(1, 2, 0)}[
        view
    ]
    ishape = [n - 3 for n in data.shape]
    ishape[axis] = 90
    ind = rand_indices(tuple(ishape), data.shape[axis], idt, rng)
    ok1, out1 = call_ge(data, ind, axis, threads=1)
    ok4, out4 = call_ge(data, ind, axis, threads=4)
    ok3, out3 = call_ge(data, ind, axis, threads=3)
    assert ok1
    assert ok4
    assert ok3
    assert_bits_equal(out3, out1)
    assert_bits_equal(out4, out1)
    assert_bits_equal(out4, ref_gather_elements(data, ind, axis))


def test_gather_elements_tall_thin_splits_rows():
    # Few column blocks: the axis rows are split across threads as well.
    rng = np.random.default_rng(12)
    data = random_bits((200_000, 2), np.float64, rng)
    ind = rand_indices((200_000, 2), 200_000, np.int64, rng)
    ok, out = call_ge(data, ind, 0, threads=4)
    assert ok
    assert_bits_equal(out, ref_gather_elements(data, ind, 0))


def test_gather_elements_large_int32_axis_arithmetic():
    # A zero-stride axis longer than 2**31: offsets and norm(-1) = s - 1 must not wrap.
    s = 2**31 + 5
    data = np.lib.stride_tricks.as_strided(
        np.arange(3, dtype=np.float32), shape=(s, 3), strides=(0, 4)
    )
    ind = np.array([[-1, -(2**31), 2**31 - 1]], dtype=np.int32)
    ok, out = call_ge(data, ind, 0)
    assert ok
    np.testing.assert_array_equal(out, [[0, 1, 2]])
    ok, out = call_gather(data, ind[0], 0)
    assert ok
    np.testing.assert_array_equal(out, [[0, 1, 2]] * 3)


# ---------------------------------------------------------------------------------------
# Validation: a wrong call raises, never writes out of bounds


def test_validation_errors():
    data = np.zeros((3, 4), np.float32)
    ind = np.zeros((2,), np.int64)
    good = np.zeros((2, 4), np.float32)
    assert _kernels.gather(data, ind, 0, good, True, 1) is good
    with pytest.raises(ValueError, match="shape"):
        _kernels.gather(data, ind, 0, np.zeros((2, 3), np.float32), True, 1)
    with pytest.raises(ValueError, match="rank"):
        _kernels.gather(data, ind, 0, np.zeros((8,), np.float32), True, 1)
    # Strided or big-endian indices are copied C-ordered and native (output-sized).
    strided = np.array([2, 9, -1, 9], np.int64)[::2]
    assert_bits_equal(
        _kernels.gather(data, strided, 0, None, True, 1), ref_gather(data, strided, 0)
    )
    swapped = np.array([1, -1], ">i8")
    assert_bits_equal(
        _kernels.gather(data, swapped, 0, None, True, 1), ref_gather(data, swapped, 0)
    )
    with pytest.raises(ValueError, match="contiguous"):
        _kernels.gather(data, ind, 0, np.zeros((4, 2), np.float32).T, True, 1)
    ro = np.zeros((2, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        _kernels.gather(data, ind, 0, ro, True, 1)
    with pytest.raises(TypeError, match="item size"):
        _kernels.gather(data, ind, 0, np.zeros((2, 4), np.float64), True, 1)
    for axis in (-1, 2, 100):
        with pytest.raises(ValueError, match="axis"):
            _kernels.gather(data, ind, axis, good, True, 1)
    for bad_ind in (ind.astype(np.float64), ind.astype(np.uint64), ind.astype(np.int16)):
        with pytest.raises(TypeError):
            _kernels.gather(data, bad_ind, 0, good, True, 1)
    with pytest.raises(ValueError, match="threads"):
        _kernels.gather(data, ind, 0, good, True, 0)
    # Items that are not plain bytes, and anything but an exact ndarray: NotImplemented.
    objects = np.zeros((3, 4), object)
    assert _kernels.gather(objects, ind, 0, None, True, 1) is NotImplemented
    assert _kernels.gather([1, 2, 3], ind, 0, good, True, 1) is NotImplemented

    class Sub(np.ndarray):
        pass

    assert _kernels.gather(data.view(Sub), ind, 0, None, True, 1) is NotImplemented
    with pytest.raises(ValueError):
        _kernels.gather(np.array(1.0, np.float32), ind, 0, good, True, 1)
    big = np.zeros((3, 4), np.float32)
    with pytest.raises(ValueError, match="overlap"):
        _kernels.gather(big, np.zeros((1,), np.int64), 0, big[1:2], True, 1)


def test_validation_errors_gather_elements():
    data = np.zeros((3, 4), np.float32)
    ind = np.zeros((2, 4), np.int64)
    assert _kernels.gather_elements(data, ind, 0, np.zeros((2, 4), np.float32), True, 1) is not None
    with pytest.raises(ValueError, match="shape"):
        _kernels.gather_elements(data, ind, 0, np.zeros((2, 3), np.float32), True, 1)
    with pytest.raises(ValueError, match="rank"):
        _kernels.gather_elements(data, ind[0], 0, np.zeros((4,), np.float32), True, 1)
    big = np.zeros((2, 5), np.int64)
    with pytest.raises(ValueError, match="exceeds"):
        _kernels.gather_elements(data, big, 0, np.zeros((2, 5), np.float32), True, 1)
    nc = np.array([[0, 9, 1, 9, 2, 9, -1, 9]] * 2, np.int64)[:, ::2]
    got = _kernels.gather_elements(data, nc, 0, None, True, 1)
    assert_bits_equal(got, ref_gather_elements(data, nc, 0))
    with pytest.raises(ValueError, match="axis"):
        _kernels.gather_elements(data, ind, 2, np.zeros((2, 4), np.float32), True, 1)
    if hasattr(np.dtypes, "StringDType"):
        sdata = np.array(["a", "b"], dtype=np.dtypes.StringDType())
        got = _kernels.gather_elements(sdata, np.zeros(1, np.int64), 0, None, True, 1)
        assert got is NotImplemented


FORK_SCRIPT = """
import os, numpy as np
from onnx_gather import _kernels
data = np.arange(2_000_000, dtype=np.float32)
ind = np.arange(2_000_000, dtype=np.int64)[::-1].copy()
out = np.empty_like(data)
assert _kernels.gather(data, ind, 0, out, True, 4) is out
pid = os.fork()
if pid == 0:
    out2 = np.empty_like(data)
    ok = _kernels.gather(data, ind, 0, out2, True, 4) is out2
    os._exit(0 if ok and out2[0] == data[-1] else 1)
_, status = os.waitpid(pid, 0)
raise SystemExit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_after_threaded_call():
    # In a fresh interpreter: pytest's own at-fork hooks are no part of this.
    res = subprocess.run([sys.executable, "-c", FORK_SCRIPT], capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr.decode()


def test_threaded_calls_back_to_back_with_changing_thread_counts():
    """The kept workers (og_pool.c) take each call once, whatever the last call used."""
    rng = np.random.default_rng(7)
    data = random_bits((64, 33), np.uint32, rng)
    for threads in [4, 2, 3, 1, 4, 2, 8, 3, 1, 2, 4] * 5:
        ind = rand_indices((40, 5), 64, np.int64, rng)
        ok, out = call_gather(data, ind, 0, threads=threads)
        assert ok
        assert_bits_equal(out, ref_gather(data, ind, 0))
        ind = rand_indices((64, 33), 33, np.int32, rng)
        ok, out = call_ge(data, ind, 1, threads=threads)
        assert ok
        assert_bits_equal(out, ref_gather_elements(data, ind, 1))
        bad = ind.copy()
        bad.flat[rng.integers(bad.size)] = 33
        assert call_ge(data, bad, 1, threads=threads)[0] is False


def test_threaded_calls_from_many_python_threads_at_once():
    """One caller holds the pool; the others create their threads per call, as before."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(8)
    data = random_bits((300, 70), np.uint16, rng)
    jobs = [(rand_indices((200, 70), 300, np.int64, rng), 2 + n % 3) for n in range(96)]

    def run(job):
        ind, threads = job
        return call_ge(data, ind, 0, threads=threads)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, jobs))
    for (ind, _), (ok, out) in zip(jobs, results, strict=True):
        assert ok
        assert_bits_equal(out, ref_gather_elements(data, ind, 0))


IDLE_SCRIPT = """
import time, numpy as np
from onnx_gather import _kernels
data = np.arange(4_000_000, dtype=np.float32)
ind = np.arange(4_000_000, dtype=np.int64)[::-1].copy()
for _ in range(3):
    assert _kernels.gather(data, ind, 0, None, True, 2) is not None
start = time.process_time()
time.sleep(0.5)
print(time.process_time() - start)
"""


def test_an_idle_process_holds_no_busy_core():
    # The workers spin for 0.5 ms after a call, then sleep: half a second idle must cost
    # (nearly) no CPU time. Without the sleep it would cost about 0.5 s.
    res = subprocess.run([sys.executable, "-c", IDLE_SCRIPT], capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr.decode()
    assert float(res.stdout) < 0.1, res.stdout


SIGNAL_SCRIPT = """
import os, signal, threading, numpy as np
from onnx_gather import _kernels
# Python's own handler, as an interactive program has it: a runner that starts the tests
# with SIGINT ignored (a background job of a shell without job control) passes that on
# to this child, which would then ignore the signal and loop until the timeout.
signal.signal(signal.SIGINT, signal.default_int_handler)
data = np.arange(1_000_000, dtype=np.float32)
ind = np.arange(1_000_000, dtype=np.int64)[::-1].copy()
threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    while True:
        assert _kernels.gather(data, ind, 0, None, True, 2) is not None
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.skipif(not hasattr(os, "kill"), reason="no signals")
def test_ctrl_c_reaches_python_during_threaded_calls():
    # The workers block every signal: SIGINT is Python's, raised between calls.
    res = subprocess.run([sys.executable, "-c", SIGNAL_SCRIPT], capture_output=True, timeout=120)
    assert res.stdout.decode().strip() == "interrupted", res.stderr.decode()


def test_all_small_shapes_exhaustive():
    """Every shape up to 3x3x3, every axis, both ops, both index types, with negatives."""
    rng = np.random.default_rng(13)
    for shape in itertools.product([1, 2, 3], repeat=3):
        data = random_bits(shape, np.uint16, rng)
        for axis in range(3):
            for idt in INDEX_DTYPES:
                ind = rand_indices((2,), shape[axis], idt, rng)
                ok, out = call_gather(data, ind, axis)
                assert ok
                assert_bits_equal(out, ref_gather(data, ind, axis))
                ishape = list(shape)
                ishape[axis] = 2
                ind = rand_indices(tuple(ishape), shape[axis], idt, rng)
                ok, out = call_ge(data, ind, axis)
                assert ok
                assert_bits_equal(out, ref_gather_elements(data, ind, axis))


@pytest.mark.parametrize("dtype", [np.float32, np.dtype("U3"), np.complex128])
def test_out_none_allocates_a_new_array_of_datas_dtype(dtype):
    data = np.arange(12).astype(dtype).reshape(3, 4)
    ind = np.array([[2, -1]], np.int64)
    got = _kernels.gather(data, ind, 1, None, True, 1)
    assert got.dtype == data.dtype
    assert got.flags.c_contiguous
    assert got.flags.owndata
    assert_bits_equal(got, np.take(data, ind, axis=1))
    got = _kernels.gather_elements(data, np.array([[0, -1]], np.int64), 0, None, True, 1)
    assert got.shape == (1, 2)
    assert_bits_equal(got, np.take_along_axis(data[:, :2], np.array([[0, 2]]), 0))
    assert _kernels.gather(data, np.array([4]), 1, None, True, 1) is None
    assert _kernels.gather_elements(data, np.array([[3]]), 0, None, True, 1) is None


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_short_rows_along_the_last_axis(threads, index_dtype):
    """Top-k shaped GatherElements (rows of 8 from rows of 64): the one-loop row path."""
    rng = np.random.default_rng(8)
    data = rng.standard_normal((32, 100, 64)).astype(np.float32)
    ind = rng.integers(-64, 64, (32, 100, 8)).astype(index_dtype)
    old = _kernels._tune(1)  # split over threads at any size
    try:
        for view in (data, data[:, ::-1], data.transpose(1, 0, 2)):
            got = _kernels.gather_elements(
                view, ind[: view.shape[0], : view.shape[1]], 2, None, True, threads
            )
            assert_bits_equal(
                got, ref_gather_elements(view, ind[: view.shape[0], : view.shape[1]], 2)
            )
        for where in (0, ind.size // 2, ind.size - 1):
            bad = ind.copy()
            bad.reshape(-1)[where] = 64
            assert _kernels.gather_elements(data, bad, 2, None, True, threads) is None
            assert _kernels.gather_elements(data, bad, 2, None, False, threads) is not None
    finally:
        _kernels._tune(*old)


# ---------------------------------------------------------------------------------------
# GatherND


def ref_gather_nd(data, indices, b):
    """GatherND by advanced indexing of counted coordinates (NumPy's own semantics)."""
    k = indices.shape[-1]
    lead = indices.shape[:-1]
    batch = [np.arange(n).reshape([n if e == d else 1 for e in range(len(lead))])
             for d, n in enumerate(lead[:b])]  # fmt: skip
    coords = [norm(indices[..., j], data.shape[b + j]) for j in range(k)]
    return np.asarray(data[(*batch, *coords)]).reshape(lead + data.shape[b + k :])


def nd_indices(data_shape, lead, b, k, dtype, rng):
    """Tuples of k coordinates into data's dims b..b+k-1, negatives included."""
    cols = [rng.integers(-data_shape[b + j], data_shape[b + j], lead) for j in range(k)]
    return np.stack(cols, -1).astype(dtype) if k else np.zeros((*lead, 0), dtype)


def call_nd(data, indices, b, check=True, threads=1):
    shape = indices.shape[:-1] + data.shape[b + indices.shape[-1] :]
    out = np.empty(shape, dtype=data.dtype)
    result = _kernels.gather_nd(data, indices, b, out, check, threads)
    assert result is None or result is out
    return result is not None, out


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
def test_gather_nd_every_dtype(dtype, idt):
    rng = np.random.default_rng(21)
    data = random_bits((3, 4, 5), dtype, rng)
    for b, k, lead in [
        (0, 1, (6,)),
        (0, 2, (2, 3)),
        (0, 3, (7,)),
        (1, 1, (3, 2)),
        (1, 2, (3,)),
        (2, 1, (3, 4, 2)),
    ]:
        ind = nd_indices(data.shape, lead, b, k, idt, rng)
        ok, out = call_nd(data, ind, b)
        assert ok
        assert_bits_equal(out, ref_gather_nd(data, ind, b))


@pytest.mark.parametrize(
    "view",
    ["plain", "reversed", "transposed", "strided", "zero-stride"],
)
@pytest.mark.parametrize("threads", [1, 4])
def test_gather_nd_views(view, threads):
    rng = np.random.default_rng(22)
    base = random_bits((6, 8, 10), np.float64, rng)
    data = {
        "plain": base,
        "reversed": base[::-1, :, ::-2],
        "transposed": base.transpose(2, 0, 1),
        "strided": base[::2, 1::3],
        "zero-stride": np.broadcast_to(base[:1], (5, 8, 10)),
    }[view]
    for b in (0, 1):
        for k in range(1, data.ndim - b + 1):
            lead = (data.shape[0], 7) if b else (9, 2)
            ind = nd_indices(data.shape, lead, b, k, np.int64, rng)
            ok, out = call_nd(data, ind, b, threads=threads)
            assert ok
            assert_bits_equal(out, ref_gather_nd(data, ind, b))
    # Non-contiguous and byte-swapped indices are copied C-ordered and native.
    ind = nd_indices(data.shape, (5, 3), 0, 2, np.int64, rng)
    for given in (ind.transpose(1, 0, 2).copy().transpose(1, 0, 2), ind.astype(">i8")):
        ok, out = call_nd(data, given, 0)
        assert ok
        assert_bits_equal(out, ref_gather_nd(data, ind, 0))


@pytest.mark.parametrize("coordinate", ["first", "last"])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("threads", [1, 4])
def test_gather_nd_check_reports_a_bad_coordinate(coordinate, where, threads):
    """A coordinate bad for its own axis (sizes 2 and 50): None checked, inside unchecked."""
    rng = np.random.default_rng(23)
    data = random_bits((2, 50, 3), np.float32, rng)
    ind = nd_indices(data.shape, (400,), 0, 2, np.int64, rng)
    t = {"first": 0, "middle": 217, "last": 399}[where]
    j = 0 if coordinate == "first" else 1
    for value in (data.shape[j], -data.shape[j] - 1, 2**62, -(2**63)):
        bad = ind.copy()
        bad[t, j] = value
        assert call_nd(data, bad, 0, threads=threads)[0] is False
        ok, out = call_nd(data, bad, 0, check=False, threads=threads)
        assert ok
        clamped = bad.copy()
        clamped[t, j] = 0 if value < 0 else data.shape[j] - 1
        assert_bits_equal(out, ref_gather_nd(data, clamped, 0))
    # A value valid for axis 1 (size 50) but not for axis 0 (size 2).
    bad = ind.copy()
    bad[t, 0] = 30
    assert call_nd(data, bad, 0, threads=threads)[0] is False


@pytest.mark.parametrize("idt", INDEX_DTYPES, ids=["i32", "i64"])
@pytest.mark.parametrize("k", [2, 3])  # 3: one element per tuple; 2: blocks of 3
def test_gather_nd_edge_coordinates(idt, k):
    """-s and s - 1 are valid on each coordinate's own axis; -s - 1, s and the index
    dtype's extremes are not (the sign is counted without a branch: og_wrap)."""
    data = random_bits((2, 5, 3), np.float32, np.random.default_rng(26))
    sizes = data.shape[:k]
    ind = np.array(list(itertools.product(*[[-s, -1, 0, s - 1] for s in sizes])), idt)
    ok, out = call_nd(data, ind, 0)
    assert ok
    assert_bits_equal(out, ref_gather_nd(data, ind, 0))
    info = np.iinfo(idt)
    for j, s in enumerate(sizes):
        for value in (-s - 1, s, info.min, info.max):
            bad = ind.copy()
            bad[5, j] = value
            assert call_nd(data, bad, 0)[0] is False, (j, value)


def test_gather_nd_empty_outputs_and_empty_axes():
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    # No tuples: nothing to check, an empty result.
    ok, out = call_nd(data, np.zeros((0, 2), np.int64), 0)
    assert ok
    assert out.shape == (0,)
    # Empty blocks (a dim of 0 after the coordinates): every coordinate is still checked.
    empty_rest = np.zeros((3, 0), np.float32)
    assert call_nd(empty_rest, np.array([[2], [-3]]), 0)[0]
    assert call_nd(empty_rest, np.array([[2], [3]]), 0)[0] is False
    assert call_nd(empty_rest, np.array([[9]]), 0, check=False)[0]
    # An empty addressed axis: every tuple is out of range; unchecked, zero bytes.
    empty_axis = np.zeros((2, 0, 3), np.float32)
    assert call_nd(empty_axis, np.array([[1, 0]]), 0)[0] is False
    ok, out = call_nd(empty_axis, np.array([[1, 0]]), 0, check=False)
    assert ok
    assert out.shape == (1, 3)
    assert not out.any()


@pytest.mark.parametrize("b", [0, 1])
def test_gather_nd_threads_match_single_thread(b):
    rng = np.random.default_rng(24)
    data = random_bits((8, 30, 20, 3), np.int16, rng)
    for k in (1, 2, 3):
        if b + k > data.ndim:
            continue
        ind = nd_indices(data.shape, (8, 301), b, k, np.int32, rng)
        one = call_nd(data, ind, b, threads=1)[1]
        for threads in (2, 3, 5):
            ok, many = call_nd(data, ind, b, threads=threads)
            assert ok
            assert_bits_equal(many, one)
        assert_bits_equal(one, ref_gather_nd(data, ind, b))


def test_gather_nd_unchecked_wild_indices_stay_inside():
    """Wild coordinates, unchecked: some element of data, never a read outside it."""
    rng = np.random.default_rng(25)
    base = np.full((7, 9, 4), np.nan, np.float32)
    base[1:6, 2:8] = np.arange(5 * 6 * 4, dtype=np.float32).reshape(5, 6, 4)
    data = base[1:6, 2:8]  # a view inside a NaN frame
    wild = rng.integers(-(2**62), 2**62, (200, 2))
    wild[::7] = np.iinfo(np.int64).min
    for threads in (1, 4):
        ok, out = call_nd(data, wild, 0, check=False, threads=threads)
        assert ok
        assert not np.isnan(out).any()


def test_gather_nd_validation_and_out():
    data = np.zeros((3, 4), np.float32)
    good = np.zeros((2,), np.float32)
    ind = np.zeros((2, 2), np.int64)
    assert _kernels.gather_nd(data, ind, 0, good, True, 1) is good
    with pytest.raises(ValueError, match="shape"):
        _kernels.gather_nd(data, ind, 0, np.zeros((3,), np.float32), True, 1)
    with pytest.raises(ValueError, match="overlap"):
        _kernels.gather_nd(data, ind, 0, data[0, :2], True, 1)
    with pytest.raises(ValueError, match=r"indices.shape\[-1\] is 3"):
        _kernels.gather_nd(data, np.zeros((1, 3), np.int64), 0, None, True, 1)
    with pytest.raises(ValueError, match=r"indices.shape\[0\] == 2, want 3 \(data.shape\[0\]\)"):
        _kernels.gather_nd(data, np.zeros((2, 1), np.int64), 1, None, True, 1)
    with pytest.raises(ValueError, match="below both ranks"):
        _kernels.gather_nd(data, np.zeros((3,), np.int64), 1, None, True, 1)
    with pytest.raises(TypeError, match="int32 or int64"):
        _kernels.gather_nd(data, np.zeros((1, 1), np.int16), 0, None, True, 1)
    objects = np.array([["a", "b"]], dtype=object)
    assert (
        _kernels.gather_nd(objects, np.zeros((1, 2), np.int64), 0, None, True, 1) is NotImplemented
    )


# ---------------------------------------------------------------------------------------
# view: the PyTorch backend's zero-copy route to the kernels


def test_view_reads_and_writes_the_base_memory_and_keeps_it_alive():
    import gc
    import weakref

    class Owner:  # (like a tensor: holds the memory, weakly referable)
        def __init__(self) -> None:
            self.array = np.arange(24, dtype=np.int32).reshape(4, 6)

    owner = Owner()
    address = owner.array.ctypes.data
    gone = weakref.ref(owner)
    # Strides in items: every other column of rows 0 and 1 of the 4 x 6 block.
    view = _kernels.view(owner, address, (2, 3), (6, 2), np.dtype(np.int32).num)
    assert view.base is owner
    np.testing.assert_array_equal(view, owner.array[:2, ::2])
    del owner
    gc.collect()
    assert gone() is not None  # the view keeps its base alive
    view[1, 2] = -5
    assert gone().array[1, 4] == -5  # and writes into its memory
    # None: C order over the sizes given.
    flat = _kernels.view(gone(), address, (3, 8), None, np.dtype(np.int32).num)
    np.testing.assert_array_equal(flat.ravel(), gone().array.ravel())
    assert flat.flags.c_contiguous
    scalar = _kernels.view(gone(), address, (), None, np.dtype(np.int32).num)
    assert scalar.shape == ()
    assert scalar[()] == 0
    del view, flat, scalar
    gc.collect()
    assert gone() is None


def test_view_validation_names_the_bad_value():
    data = np.zeros(8, np.float64)
    num = np.dtype(np.float64).num
    with pytest.raises(ValueError, match="2 sizes and 1 strides"):
        _kernels.view(data, data.ctypes.data, (2, 4), (4,), num)
    with pytest.raises(ValueError, match="65 sizes"):
        _kernels.view(data, data.ctypes.data, (1,) * 65, None, num)
    with pytest.raises(TypeError, match="shape must be a sequence"):
        _kernels.view(data, data.ctypes.data, 8, None, num)
    with pytest.raises(TypeError):
        _kernels.view(data, "address", (8,), None, num)
    with pytest.raises(ValueError, match="shape item -1"):
        _kernels.view(data, data.ctypes.data, (-1,), None, num)


def _outside_oracle(values: list[int], size: int) -> bool:
    return any(not -size <= v < size for v in values)


@pytest.mark.parametrize("idt", [np.int32, np.int64])
@pytest.mark.parametrize("size", [0, 1, 4, 2**31 - 1, 2**31, 2**40, 2**62])
def test_outside_at_finds_any_index_outside_the_range(idt, size):
    """Every edge of ``[-size, size-1]`` and of the index type, at every position.

    Lengths 1-40 cross the vectorised loop's blocks and its scalar tail; each array holds
    one value under test among in-range ones (or zeros where size is 0).
    """
    info = np.iinfo(idt)
    edges = [0, 1, -1, size - 1, size, -size, -size - 1, info.min, info.min + 1, info.max]
    edges = sorted({v for v in edges if info.min <= v <= info.max})
    fill = 0 if size else None
    for value in edges:
        for length in (1, 2, 3, 4, 5, 8, 9, 17, 40):
            for position in {0, length // 2, length - 1}:
                values = [fill if fill is not None else value] * length
                values[position] = value
                a = np.array(values, idt)
                got = _kernels.outside_at(a.ctypes.data, a.size, a.itemsize, size)
                assert got is _outside_oracle(values, size), (value, length, position)


def test_outside_at_reads_large_buffers_and_nothing_when_empty():
    rng = np.random.default_rng(7)
    a = rng.integers(-100, 100, 1 << 17).astype(np.int32)  # (past the GIL's release)
    assert _kernels.outside_at(a.ctypes.data, a.size, 4, 100) is False
    a[-1] = 100
    assert _kernels.outside_at(a.ctypes.data, a.size, 4, 100) is True
    assert _kernels.outside_at(a.ctypes.data, a.size - 1, 4, 100) is False  # (count is read)
    assert _kernels.outside_at(0, 0, 8, 0) is False


def test_outside_at_validation_names_the_bad_value():
    a = np.zeros(4, np.int64)
    with pytest.raises(ValueError, match="itemsize 2"):
        _kernels.outside_at(a.ctypes.data, 4, 2, 4)
    with pytest.raises(ValueError, match="count -1"):
        _kernels.outside_at(a.ctypes.data, -1, 8, 4)
    with pytest.raises(ValueError, match="size -3"):
        _kernels.outside_at(a.ctypes.data, 4, 8, -3)
    with pytest.raises(ValueError, match="size 4611686018427387905"):
        _kernels.outside_at(a.ctypes.data, 4, 8, 2**62 + 1)
    with pytest.raises(ValueError, match="misaligned"):
        _kernels.outside_at(a.ctypes.data + 1, 2, 8, 4)
    with pytest.raises(ValueError, match="null"):
        _kernels.outside_at(0, 2, 8, 4)
    with pytest.raises(TypeError, match="4 arguments"):
        _kernels.outside_at(a.ctypes.data, 4, 8)


def _nd_oracle(data, indices, updates):
    """ScatterND, reduction none, one tuple at a time in C order (the last duplicate wins)."""
    want = data.copy()
    depth = indices.shape[-1]
    count = int(np.prod(indices.shape[:-1]))
    for tuple_, update in zip(
        indices.reshape(count, depth), updates.reshape(count, *data.shape[depth:]), strict=True
    ):
        want[tuple(tuple_)] = update
    return want


def _nd_at(data, indices, updates):
    depth = indices.shape[-1]
    row = int(np.prod(data.shape[depth:], dtype=np.int64)) * data.itemsize
    count = int(np.prod(indices.shape[:-1]))
    return _kernels.scatter_nd_at(
        data.ctypes.data, updates.ctypes.data, indices.ctypes.data, count,
        data.shape[:depth], row,
    )  # fmt: skip


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_scatter_nd_at_writes_as_scatter_nd_does(dtype, depth):
    """Negative coordinates from the end, duplicates in C order (the last wins)."""
    rng = np.random.default_rng(depth)
    shape = (3, 4, 5, 2)
    for count in (1, 2, 7, 40):
        data = rng.integers(-9, 9, shape).astype(dtype)
        indices = np.zeros((count, depth), np.int64)
        for j, n in enumerate(shape[:depth]):
            indices[:, j] = rng.integers(-n, n, count)
        updates = rng.integers(-9, 9, (count, *shape[depth:])).astype(dtype)
        want = _nd_oracle(data, indices, updates)
        assert _nd_at(data, indices, updates) is True
        np.testing.assert_array_equal(data, want)


@pytest.mark.parametrize("bad", [5, -6, 2**62, -(2**63)])
def test_scatter_nd_at_writes_nothing_for_a_coordinate_out_of_range(bad):
    data = np.zeros((4, 5, 3), np.float32)
    indices = np.array([[0, 1], [3, 4], [2, -5]], np.int64)
    updates = np.ones((3, 3), np.float32)
    for where in range(indices.size):  # (bad is outside both axes, of 4 and of 5)
        rows = indices.copy()
        rows.reshape(-1)[where] = bad
        assert _nd_at(data, rows, updates) is False
        assert not data.any()


def test_scatter_nd_at_declines_shared_memory_and_misaligned_indices():
    cache = np.zeros((4, 8), np.float32)
    indices = np.array([[1], [2]], np.int64)
    # Updates that are rows of the cache itself: the general path copies them first.
    assert _nd_at(cache, indices, cache[:2]) is False
    store = np.zeros(3, np.int64)  # indices inside the cache's bytes
    as_cache = store.view(np.float32).reshape(3, 2)
    assert (
        _kernels.scatter_nd_at(
            as_cache.ctypes.data, np.ones(2, np.float32).ctypes.data, store.ctypes.data, 1, (3,), 8
        )
        is False
    )
    raw = np.zeros(3, np.int64)
    misaligned = raw.view(np.uint8)[4:20].view(np.int64)
    assert _kernels.scatter_nd_at(
        cache.ctypes.data, np.ones((2, 8), np.float32).ctypes.data, misaligned.ctypes.data,
        2, (4,), 32,
    ) is False  # fmt: skip
    assert not cache.any()


def test_scatter_nd_at_large_writes_and_empty_ones():
    data = np.zeros((64, 8192), np.float32)  # 2 MiB: past the GIL's release
    indices = np.arange(63, -1, -1, dtype=np.int64).reshape(64, 1)
    updates = np.arange(64 * 8192, dtype=np.float32).reshape(64, 8192)
    assert _nd_at(data, indices, updates) is True
    np.testing.assert_array_equal(data, updates[::-1])
    # Empty slices: coordinates are still checked, nothing is written.
    empty = np.zeros((4, 0), np.float32)
    assert _nd_at(empty, np.array([[3]], np.int64), np.zeros((1, 0), np.float32)) is True
    assert _nd_at(empty, np.array([[4]], np.int64), np.zeros((1, 0), np.float32)) is False
    assert _kernels.scatter_nd_at(0, 0, 0, 0, (4,), 8) is True  # (no tuples)


def test_scatter_nd_at_validation_names_the_bad_value():
    a = np.zeros(4, np.int64)
    p = a.ctypes.data
    with pytest.raises(ValueError, match="count -1"):
        _kernels.scatter_nd_at(p, p, p, -1, (4,), 8)
    with pytest.raises(ValueError, match="row -8"):
        _kernels.scatter_nd_at(p, p, p, 1, (4,), -8)
    with pytest.raises(ValueError, match="dims item -4"):
        _kernels.scatter_nd_at(p, p, p, 1, (-4,), 8)
    with pytest.raises(TypeError, match="dims must be a tuple"):
        _kernels.scatter_nd_at(p, p, p, 1, [4], 8)
    with pytest.raises(TypeError, match="6 arguments"):
        _kernels.scatter_nd_at(p, p, p, 1, (4,))
    # Products past npy_intp: an error, never a wrapped size an ndarray's bytes could match.
    with pytest.raises(OverflowError, match="scatter_nd_at: the layout's sizes overflow"):
        _kernels.scatter_nd_at(np.zeros(0), np.zeros(1), np.zeros(2, np.int64), 1, (2**62, 4), 8)
    with pytest.raises(OverflowError, match="sizes overflow"):
        _kernels.scatter_nd_at(np.zeros(2), np.zeros(1), a, 2**61 + 1, (2,), 8)
    # Declined, nothing written: a null address (a torch ZeroTensor's), more than 32 dims.
    data = np.zeros((4, 2), np.float32)
    one = np.zeros((1, 1), np.int64)
    assert _kernels.scatter_nd_at(p, p, 0, 1, (4,), 8) is False
    assert _kernels.scatter_nd_at(data.ctypes.data, 0, one.ctypes.data, 1, (4,), 8) is False
    assert _kernels.scatter_nd_at(0, data.ctypes.data, one.ctypes.data, 1, (4,), 8) is False
    deep = np.zeros(1, np.float32)  # (seen as 33 dims of 1: NumPy 1 holds at most 32)
    assert _kernels.scatter_nd_at(deep, np.ones(1, np.float32), np.zeros(33, np.int64), 1,
                                  (1,) * 33, 4) is False  # fmt: skip
    assert not data.any()
    assert not deep.any()


def _elements_at(data, indices, updates, axis):
    shape = data.shape
    outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1 :]))
    return _kernels.scatter_elements_at(
        data.ctypes.data, updates.ctypes.data, indices.ctypes.data, outer, shape[axis],
        indices.shape[axis], inner, data.itemsize,
    )  # fmt: skip


def _elements_oracle(data, indices, updates, axis):
    want = data.copy()
    for position in np.ndindex(indices.shape):
        target = list(position)
        target[axis] = indices[position]
        want[tuple(target)] = updates[position]
    return want


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int16, np.float32, np.float64, np.complex128, np.dtype("V3")]
)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scatter_elements_at_writes_as_scatter_elements_does(dtype, axis):
    """Every item size the kernel moves (a compile-time 1, 2, 4, 8, 16; a run-time 3)."""
    rng = np.random.default_rng(axis)
    shape = (3, 5, 4)
    for length in (1, 2, 7):
        index_shape = tuple(length if k == axis else n for k, n in enumerate(shape))
        raw = rng.integers(0, 256, (*shape, 16), dtype=np.uint8)
        data = np.ascontiguousarray(raw[..., : np.dtype(dtype).itemsize]).view(dtype)[..., 0]
        raw = rng.integers(0, 256, (*index_shape, 16), dtype=np.uint8)
        updates = np.ascontiguousarray(raw[..., : np.dtype(dtype).itemsize]).view(dtype)[..., 0]
        n = shape[axis]
        indices = rng.integers(-n, n, index_shape).astype(np.int64)
        want = _elements_oracle(data, indices, updates, axis)
        assert _elements_at(data, indices, updates, axis) is True
        assert data.tobytes() == want.tobytes()


def test_scatter_elements_at_writes_nothing_for_an_index_out_of_range():
    data = np.zeros((2, 4, 3), np.float32)
    updates = np.ones((2, 1, 3), np.float32)
    for bad in (4, -5, 2**62, -(2**63)):
        for where in range(6):
            indices = np.zeros((2, 1, 3), np.int64)
            indices.reshape(-1)[where] = bad
            assert _elements_at(data, indices, updates, 1) is False
            assert not data.any()
    assert _elements_at(data, np.full((2, 1, 3), -4, np.int64), updates, 1) is True
    assert (data[:, 0] == 1).all()
    # An empty axis: every index is out of range.
    empty = np.zeros((2, 0, 3), np.float32)
    assert _elements_at(empty, np.zeros((2, 1, 3), np.int64), updates, 1) is False


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128, np.dtype("V3")])
def test_scatter_elements_at_rows_of_one_index(dtype):
    """Inner rows of one index are one copy; rows that differ late, and duplicates, are not.

    Every row kind in one call: one value (positive, negative), the first two equal and a
    later one other, all different; the axis' rows meet (the last in C order wins).
    """
    rng = np.random.default_rng(7)
    for inner in (1, 2, 5, 64):
        shape, index_shape = (3, 6, inner), (3, 4, inner)
        raw = rng.integers(0, 256, (*shape, 16), dtype=np.uint8)
        data = np.ascontiguousarray(raw[..., : np.dtype(dtype).itemsize]).view(dtype)[..., 0]
        raw = rng.integers(0, 256, (*index_shape, 16), dtype=np.uint8)
        updates = np.ascontiguousarray(raw[..., : np.dtype(dtype).itemsize]).view(dtype)[..., 0]
        indices = np.empty(index_shape, np.int64)
        indices[:, 0] = 2
        indices[:, 1] = -1
        indices[:, 2] = 2  # (meets row 0: its values win)
        indices[:, 3] = rng.integers(-6, 6, (3, inner))
        indices[0, 3, :] = 5
        indices[0, 3, -1] = 0  # (the first two equal, the last not)
        want = _elements_oracle(data, indices, updates, 1)
        assert _elements_at(data, indices, updates, 1) is True
        assert data.tobytes() == want.tobytes()
        # A row of one index out of range, or one whose last index is: nothing written.
        before = data.copy()
        for bad in (6, -7):
            for last_only in (False, True):
                wrong = indices.copy()
                if last_only:
                    wrong[1, 0, -1] = bad
                else:
                    wrong[1, 0, :] = bad
                assert _elements_at(data, wrong, updates, 1) is False
                assert data.tobytes() == before.tobytes()


def test_scatter_elements_at_declines_shared_memory_and_validates():
    data = np.zeros((4, 4), np.float32)
    indices = np.zeros((1, 4), np.int64)
    assert _elements_at(data, indices, data[1:2], 0) is False  # (updates are data's row 1)
    assert not data.any()
    p = data.ctypes.data
    with pytest.raises(ValueError, match="length -1"):
        _kernels.scatter_elements_at(p, p, p, 1, 4, -1, 4, 4)
    with pytest.raises(ValueError, match="itemsize -4"):
        _kernels.scatter_elements_at(p, p, p, 1, 4, 1, 4, -4)
    assert _kernels.scatter_elements_at(p, p, 0, 1, 4, 1, 4, 4) is False  # (a null address)
    assert _kernels.scatter_elements_at(0, p, indices.ctypes.data, 1, 4, 1, 4, 4) is False
    with pytest.raises(OverflowError, match="scatter_elements_at: the layout's sizes overflow"):
        _kernels.scatter_elements_at(np.zeros(0), p, p, 2**62, 2**62, 1, 1, 4)
    with pytest.raises(TypeError, match="8 arguments"):
        _kernels.scatter_elements_at(p, p, p, 1, 4, 1, 4)
    assert _kernels.scatter_elements_at(0, 0, 0, 0, 4, 1, 4, 4) is True  # (nothing to write)


def _read_at(out, data, indices, axis):
    shape = data.shape
    outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1 :]))
    return _kernels.gather_elements_at(
        out.ctypes.data, data.ctypes.data, indices.ctypes.data, outer, shape[axis],
        indices.shape[axis], inner, data.itemsize,
    )  # fmt: skip


def _random_items(rng, shape, dtype):
    """Random bytes as items of ``dtype`` (NaN payloads and -0.0 among the floats)."""
    raw = rng.integers(0, 256, (*shape, 16), dtype=np.uint8)
    return np.ascontiguousarray(raw[..., : np.dtype(dtype).itemsize]).view(dtype)[..., 0]


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int16, np.float32, np.float64, np.complex128, np.dtype("V3")]
)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_gather_elements_at_reads_as_take_along_axis(dtype, axis):
    """Every item size (a compile-time 1, 2, 4, 8, 16; a run-time 3), byte for byte; rows
    of one index (one copy), rows that differ late, and random rows."""
    rng = np.random.default_rng(10 + axis)
    shape = (3, 5, 4)
    n = shape[axis]
    for length in (1, 2, 7):
        index_shape = tuple(length if k == axis else m for k, m in enumerate(shape))
        data = _random_items(rng, shape, dtype)
        indices = rng.integers(-n, n, index_shape).astype(np.int64)
        rows = np.moveaxis(indices, axis, 0)  # (a view: the inner rows are the last dim)
        rows[0] = -1  # (rows of one index where the axis is not the last)
        rows[-1, ..., :-1] = 2
        rows[-1, ..., -1] = 0  # (the first equal, the last not)
        want = np.take_along_axis(data, indices % n, axis)
        out = np.zeros(index_shape, dtype)
        assert _read_at(out, data, indices, axis) is True
        assert out.tobytes() == want.tobytes()


def test_gather_elements_at_writes_nothing_for_an_index_out_of_range():
    data = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    for inner_rows in (False, True):
        for bad in (4, -5, 2**62, -(2**63)):
            for where in range(6):
                indices = np.zeros((2, 1, 3), np.int64)
                if inner_rows:  # (a whole inner row of the one bad value)
                    indices[where // 3, 0, :] = bad
                else:
                    indices.reshape(-1)[where] = bad
                out = np.full((2, 1, 3), 7, np.float32)
                assert _read_at(out, data, indices, 1) is False
                assert (out == 7).all()
    # An empty axis: every index is out of range.
    out = np.full((2, 1, 3), 7, np.float32)
    assert _read_at(out, np.zeros((2, 0, 3), np.float32), np.zeros((2, 1, 3), np.int64), 1) is False
    assert (out == 7).all()


def test_gather_elements_at_declines_shared_memory_and_validates():
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    indices = np.zeros((1, 4), np.int64)
    kept = data.copy()
    assert _read_at(data[1:2], data, indices, 0) is False  # (out is data's row 1)
    np.testing.assert_array_equal(data, kept)
    p = data.ctypes.data
    with pytest.raises(ValueError, match="length -1"):
        _kernels.gather_elements_at(p, p, p, 1, 4, -1, 4, 4)
    with pytest.raises(ValueError, match="itemsize -4"):
        _kernels.gather_elements_at(p, p, p, 1, 4, 1, 4, -4)
    out = np.zeros((1, 4), np.float32)
    assert _kernels.gather_elements_at(out.ctypes.data, p, 0, 1, 4, 1, 4, 4) is False  # (null)
    assert _kernels.gather_elements_at(0, p, indices.ctypes.data, 1, 4, 1, 4, 4) is False
    assert (
        _kernels.gather_elements_at(out.ctypes.data, 0, indices.ctypes.data, 1, 4, 1, 4, 4) is False
    )
    assert not out.any()
    with pytest.raises(OverflowError, match="gather_elements_at: the layout's sizes overflow"):
        _kernels.gather_elements_at(p, np.zeros(0), p, 2**62, 2**62, 1, 1, 4)
    with pytest.raises(TypeError, match="8 arguments"):
        _kernels.gather_elements_at(p, p, p, 1, 4, 1, 4)
    assert _kernels.gather_elements_at(0, 0, 0, 0, 4, 1, 4, 4) is True  # (nothing to read)
    # Plain ndarrays of exactly the layout's bytes; else declined.
    got = np.zeros((4, 1), np.float32)
    assert _kernels.gather_elements_at(got, data, np.array([[-1], [0], [1], [3]]), 4, 4, 1, 1, 4)
    assert got.ravel().tolist() == [3, 4, 9, 15]
    assert (
        _kernels.gather_elements_at(got, data, np.zeros((4, 1), np.int32), 4, 4, 1, 1, 4) is False
    )


def test_scatter_at_takes_plain_ndarrays_of_exactly_the_bytes():
    """An ndarray in place of an address: C-ordered, aligned, of exactly the bytes (data
    writeable, indices native int64), else False with nothing written."""
    data = np.zeros((4, 3), np.float32)
    indices = np.array([[2], [-1]], np.int64)
    updates = np.arange(6, dtype=np.float32).reshape(2, 3)
    nd = _kernels.scatter_nd_at
    assert nd(data, updates, indices, 2, (4,), 12) is True
    np.testing.assert_array_equal(data[[2, 3]], updates)
    data[:] = 0
    declined = [
        (data[:, :2].copy(), updates, indices),  # (fewer bytes than the layout's)
        (np.zeros((4, 6), np.float32)[:, ::2], updates, indices),  # (strided)
        (data, updates, indices.astype(np.int32)),
        (data, updates, indices.astype(">i8")),
        (data, np.asfortranarray(updates), indices),
    ]
    for k, (d, u, i) in enumerate(declined):
        assert nd(d, u, i, 2, (4,), 12) is False, k
        assert not d.any(), k
    if hasattr(np.dtypes, "StringDType"):  # (NumPy 2: its items are kept out of line)
        texts = np.array(["a", "b", "c", "d"], dtype=np.dtypes.StringDType())
        kept = texts.copy()
        row = texts.itemsize
        assert nd(texts, np.array(["x"], texts.dtype), np.array([[1]]), 1, (4,), row) is False
        assert texts.tolist() == kept.tolist()
    frozen = np.zeros((4, 3), np.float32)
    frozen.flags.writeable = False
    assert nd(frozen, updates, indices, 2, (4,), 12) is False
    assert not frozen.any()
    e = np.zeros((2, 3), np.float32)
    assert _kernels.scatter_elements_at(
        e, np.ones((2, 1), np.float32), np.array([[-1], [0]], np.int64), 2, 3, 1, 1, 4
    ) is True  # fmt: skip
    assert e.tolist() == [[0, 0, 1], [1, 0, 0]]
