"""The compiled kernel's boundary: a malformed call raises or refuses, and writes nothing.

Each entry point of ``onnx_gather._kernels`` checks what it is given before it touches
memory (og_core.h, "The boundary"); the Python layer checks its calls too, so these call
the kernel directly, as a wrong call from a future Python change would. Every buffer sits
inside a larger one whose bytes around it are a canary (``fenced.Fenced``): after a refused
call the whole larger buffer, the array and both fences, holds the bytes it held before.

The first four tests are the calls issue 59 found with AddressSanitizer: updates smaller
than the indices (read past the updates), indices wider than ``out`` off the axis (write
past ``out``), a reduction kind of another item size (16-byte arithmetic on 1-byte items),
and a ``data`` that partly overlaps ``out`` (memcpy of overlapping bytes). ``nox -s asan``
runs this module with the kernel built with AddressSanitizer.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from fenced import Fenced, fenced, untouched

from onnx_gather._backends._numpy._scatter import _KINDS as KINDS

if os.environ.get("ONNX_GATHER_NO_EXTENSION", "").strip() not in ("", "0"):
    _kernels = pytest.importorskip("onnx_gather._kernels")
else:
    from onnx_gather import _kernels

#: The scatters' reduction codes (og_scatter.c).
NONE, ADD, MUL, MAX, MIN = range(5)


# ---------------------------------------------------------------------------------------
# The four calls of issue 59


def test_scatter_elements_refuses_updates_smaller_than_the_indices():
    """The kernel read updates at every index's position: past updates' end here."""
    out, ind, upd = fenced(np.zeros((4, 4)), np.zeros((4, 4), np.int64), np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"updates\.shape\[0\] == 2, want 4 \(indices"):
        _kernels.scatter_elements(out.array, None, ind.array, upd.array, 0, NONE, 12, 0, 1)
    assert untouched(out, ind, upd)


@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_elements_refuses_indices_wider_than_out_off_the_axis(axis):
    """Positions off the axis are the targets' own: past out's end where out is narrower."""
    shape = (4, 8) if axis == 0 else (8, 4)
    out, ind, upd = fenced(np.zeros((4, 4)), np.full(shape, 3, np.int64), np.ones(shape))
    other = 1 - axis
    with pytest.raises(
        ValueError, match=rf"indices\.shape\[{other}\] == 8 exceeds out\.shape\[{other}\] == 4"
    ):
        _kernels.scatter_elements(out.array, None, ind.array, upd.array, axis, NONE, 12, 0, 1)
    assert untouched(out, ind, upd)


def _scatter(entry: str, out, data, ind, upd, reduction, kind, check=0, threads=1, axis=0):
    if entry == "scatter_elements":
        return _kernels.scatter_elements(out, data, ind, upd, axis, reduction, kind, check, threads)
    return _kernels.scatter_nd(out, data, ind, upd, reduction, kind, check, threads)


def _scatter_args(entry: str, dtype, n: int = 4) -> list[Fenced]:
    """out, indices and updates of a valid call of ``entry`` on n items of ``dtype``."""
    indices = np.arange(n, dtype=np.int64)
    if entry == "scatter_nd":
        indices = indices.reshape(n, 1)
    return fenced(np.zeros(n, dtype), indices, np.ones(n, dtype))


@pytest.mark.parametrize("entry", ["scatter_elements", "scatter_nd"])
@pytest.mark.parametrize(
    ("dtype", "kind", "reduction"),
    [
        (np.int8, KINDS["complex128"], ADD),  # 16-byte adds on 1-byte items (the issue's)
        (np.int8, KINDS["complex128"], NONE),  # a kind is checked whatever the reduction
        (np.int16, KINDS["int64"], MUL),
        (np.float32, KINDS["float64"], MIN),
        (np.complex128, KINDS["float64"], ADD),  # 8-byte adds on 16-byte items
        (np.bool_, KINDS["bfloat16"], MAX),
    ],
    ids=["c128-on-int8-add", "c128-on-int8-none", "i64-on-i16", "f64-on-f32", "f64-on-c128",
         "bf16-on-bool"],
)  # fmt: skip
def test_scatter_kind_must_be_of_outs_item_size(entry, dtype, kind, reduction):
    """og_loops_for picked the loops from the kind alone: 16-byte arithmetic on int8. (A
    kind of out's item size but another type is the caller's: the PyTorch backend views
    bfloat16 as int16, unsigned types as signed ones.)"""
    out, ind, upd = _scatter_args(entry, dtype)
    size, name = np.dtype(dtype).itemsize, np.dtype(dtype).name
    with pytest.raises(
        ValueError,
        match=rf"{entry}: kind {kind} \(.*\) on out's {size}-byte items \(dtype {name}\)",
    ):
        _scatter(entry, out.array, None, ind.array, upd.array, reduction, kind)
    assert untouched(out, ind, upd)


@pytest.mark.parametrize("entry", ["scatter_elements", "scatter_nd"])
@pytest.mark.parametrize("shift", [-8, 8, 0])
def test_scatters_refuse_a_data_that_overlaps_out(entry, shift):
    """data was copied into out with memcpy: undefined for overlapping bytes (shift 0:
    data is out's memory itself, which the caller says with data None)."""
    whole = Fenced(np.arange(48, dtype=np.float64))
    out = whole.array[8:40]
    data = whole.array[8 + shift : 40 + shift]
    indices = np.zeros((0, 1), np.int64) if entry == "scatter_nd" else np.zeros(0, np.int64)
    ind, upd = fenced(indices, np.zeros(0))
    with pytest.raises(ValueError, match=rf"{entry}: data overlaps out \(data spans bytes"):
        _scatter(entry, out, data, ind.array, upd.array, NONE, 12)
    assert untouched(whole, ind, upd)


# ---------------------------------------------------------------------------------------
# The scatters' other arguments


@pytest.mark.parametrize(
    ("out_shape", "index_shape", "update_shape", "message"),
    [
        # One element a tuple: the updates one per tuple.
        ((4, 3), (2, 2), (3,), r"updates\.shape\[0\] == 3, want 2 \(indices\.shape\[0\]\)"),
        # Rows of 3: updates of the right size, the wrong shape.
        ((4, 3), (2, 1), (3, 2), r"updates\.shape\[0\] == 3, want 2 \(indices\.shape\[0\]\)"),
        ((4, 3), (2, 1), (2, 2), r"updates\.shape\[1\] == 2, want 3 \(out\.shape\[1\]\)"),
        ((4, 3), (2, 1), (6,), r"updates has rank 1 \(want rank 2\)"),
        ((4, 3), (2, 3), (2,), r"indices\.shape\[-1\] is 3; it must be in \[1, 2\]"),
        ((4, 3), (), (1,), r"indices has rank 0 \(want rank 1 to 64\)"),
    ],
    ids=["tuples", "rows", "row-width", "updates-rank", "coordinates", "indices-rank"],
)
def test_scatter_nd_refuses_updates_and_indices_of_the_wrong_shape(
    out_shape, index_shape, update_shape, message
):
    """Only the updates' size was compared (with a product that could overflow)."""
    out, ind, upd = fenced(
        np.zeros(out_shape, np.float32),
        np.zeros(index_shape, np.int64),
        np.ones(update_shape, np.float32),
    )
    with pytest.raises(ValueError, match="scatter_nd: " + message):
        _kernels.scatter_nd(out.array, None, ind.array, upd.array, NONE, 11, 0, 1)
    assert untouched(out, ind, upd)


@pytest.mark.parametrize("entry", ["scatter_elements", "scatter_nd"])
@pytest.mark.parametrize("shared", ["indices", "updates"])
def test_scatters_refuse_indices_or_updates_that_share_outs_memory(entry, shared):
    """They are read while out is written (the caller copies them first)."""
    whole = Fenced(np.arange(16, dtype=np.int64))
    out = whole.array[:8]
    (ind,) = fenced(np.arange(4, dtype=np.int64))
    (upd,) = fenced(np.full(4, 7, np.int64))
    indices, updates = ind.array, upd.array
    if shared == "indices":
        indices = whole.array[4:8]  # out's last half: in range of out, which is 8 long
    else:
        updates = whole.array[6:10]  # out's last two items and two past it
    if entry == "scatter_nd":
        indices = indices.reshape(4, 1)
    with pytest.raises(ValueError, match=rf"{entry}: {shared} overlaps out"):
        _scatter(entry, out, None, indices, updates, NONE, KINDS["int64"])
    assert untouched(whole, ind, upd)


@pytest.mark.parametrize("entry", ["scatter_elements", "scatter_nd"])
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"reduction": 5}, r"reduction 5 \(want 0 none"),
        ({"reduction": -1}, r"reduction -1 \(want 0 none"),
        ({"kind": 15}, r"kind 15 \(want -1 to 14\)"),
        ({"kind": -2}, r"kind -2 \(want -1 to 14\)"),
        ({"threads": 0}, r"threads 0 \(want threads >= 1\)"),
        ({"check": 3}, r"check 3 \(want 0, 1 or 2\)"),
        ({"check": -1}, r"check -1 \(want 0, 1 or 2\)"),
    ],
    ids=[
        "reduction-5",
        "reduction-neg",
        "kind-15",
        "kind-neg",
        "threads-0",
        "check-3",
        "check-neg",
    ],
)
def test_scatters_refuse_codes_out_of_range(entry, change, message):
    """A reduction out of range was NotImplemented; the others went on (threads clamped)."""
    out, ind, upd = _scatter_args(entry, np.float32)
    args = {"reduction": NONE, "kind": KINDS["float32"], "check": 0, "threads": 1} | change
    with pytest.raises(ValueError, match=f"{entry}: {message}"):
        _scatter(entry, out.array, None, ind.array, upd.array, **args)
    assert untouched(out, ind, upd)


# ---------------------------------------------------------------------------------------
# The by-address entry points: the layouts they are told


def test_tensor_scatter_slices_at_refuses_a_layout_whose_sizes_overflow():
    """cache of 1 x 1 x 2**62 rows of 8 bytes: 2**65 bytes, which wrapped to 0, so the
    overlap test saw an empty cache and a write index of 2**61 + 1 landed 8 bytes in."""
    cache, update, index = fenced(
        np.zeros(1, np.float64), np.full(1, 5.0), np.array([2**61 + 1], np.int64)
    )
    args = (cache.address, update.address, index.address)
    with pytest.raises(
        OverflowError, match=r"tensor_scatter_slices_at: the layout's sizes overflow"
    ):
        _kernels.tensor_scatter_slices_at(*args, 1, 1, 2**62, 1, 8, False)
    assert untouched(cache, update, index)


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ((-1, 1, 4, 1, 8), r"batch -1 \(want 0 <= batch <= 2\*\*62\)"),
        ((1, 1, 4, 1, -8), r"inner -8 \(want 0 <= inner <= 2\*\*62\)"),
        ((1, 1, 2**62 + 1, 1, 8), r"size 4611686018427387905 \(want 0 <= size <= 2\*\*62\)"),
    ],
    ids=["batch-negative", "inner-negative", "size-too-large"],
)
def test_tensor_scatter_slices_at_names_a_size_out_of_range(sizes, message):
    cache, update, index = fenced(np.zeros(4), np.ones(1), np.zeros(1, np.int64))
    args = (cache.address, update.address, index.address)
    with pytest.raises(ValueError, match="tensor_scatter_slices_at: " + message):
        _kernels.tensor_scatter_slices_at(*args, *sizes, False)
    assert untouched(cache, update, index)


def test_outside_at_refuses_a_count_whose_bytes_overflow():
    """2**61 int64 indices are 2**64 bytes: no buffer holds them (it read until a fault)."""
    (indices,) = fenced(np.zeros(4, np.int64))
    with pytest.raises(OverflowError, match=r"outside_at: the layout's sizes overflow"):
        _kernels.outside_at(indices.address, 2**61, 8, 10)
    assert untouched(indices)


@pytest.mark.parametrize(
    ("shape", "strides", "message"),
    [
        # 2**62 items of 8 bytes: a stride of 2**65 bytes, which wrapped to 0.
        ((2,), (2**62,), r"view: the layout's sizes overflow \(4611686018427387904 x 8\)"),
        ((2,), (-(2**62),), r"view: the layout's sizes overflow \(4611686018427387904 x 8\)"),
        ((2,), (-(2**63),), r"view: stride -9223372036854775808 overflows"),
        # Each stride fits, their span over the sizes does not.
        ((3, 3), (2**59, 2**59), r"view: the layout's sizes overflow \(2 x 4611686018427387904\)"),
        ((2, 2), (2**59, -(2**59)), r"view: the layout's extent overflows \(dim 0\)"),
    ],
    ids=["stride", "negative-stride", "stride-min", "span", "extent"],
)
def test_view_refuses_a_layout_that_overflows(shape, strides, message):
    """NumPy takes any strides over a given address: the layout told must be one."""
    (memory,) = fenced(np.zeros(8, np.float64))
    num = np.dtype(np.float64).num
    with pytest.raises(OverflowError, match=message):
        _kernels.view(memory.array, memory.address, shape, strides, num)
    assert untouched(memory)


# ---------------------------------------------------------------------------------------
# The gathers: their checks name the entry point, the argument and its value


def _gather_call(entry: str, data, indices, axis, out, threads=1):
    return getattr(_kernels, entry)(data, indices, axis, out, True, threads)


GATHER_CASES = [
    # entry, data shape, index shape, index dtype, axis, out shape, out dtype, error, message
    ("gather", (3, 4), (2,), np.int64, 0, (2, 4), np.float64, TypeError,
     r"gather: out has dtype float64 of item size 8; want data's item size 4"),
    ("gather", (3, 4), (2,), np.int64, 0, (2, 3), np.float32, ValueError,
     r"gather: out\.shape\[1\] == 3, want 4"),
    ("gather", (3, 4), (2,), np.int64, 0, (8,), np.float32, ValueError,
     r"gather: out has rank 1 \(want rank 2\)"),
    ("gather", (3, 4), (2,), np.float64, 0, (2, 4), np.float32, TypeError,
     r"gather: indices of dtype float64 \(want int32 or int64\)"),
    ("gather", (3, 4), (2,), np.int64, 2, (2, 4), np.float32, ValueError,
     r"gather: axis 2 is out of range for data of rank 2"),
    ("openvino_gather", (3, 4), (2,), np.int64, -1, (2, 4), np.float32, ValueError,
     r"openvino_gather: axis -1 is out of range for data of rank 2"),
    ("gather", (), (2,), np.int64, 0, (2,), np.float32, ValueError,
     r"gather: data has rank 0 \(want rank 1 to 64\)"),
    ("gather_elements", (3, 4), (2,), np.int64, 0, (2,), np.float32, ValueError,
     r"gather_elements: indices has rank 1 \(want rank 2\)"),
    ("gather_elements", (3, 4), (2, 5), np.int64, 0, (2, 5), np.float32, ValueError,
     r"gather_elements: indices\.shape\[1\] == 5 exceeds data\.shape\[1\] == 4"),
    ("gather_nd", (3, 4), (2, 1), np.int64, 1, (2,), np.float32, ValueError,
     r"gather_nd: indices\.shape\[0\] == 2, want 3 \(data\.shape\[0\]\)"),
    ("gather_nd", (3, 4), (1, 3), np.int64, 0, (1,), np.float32, ValueError,
     r"gather_nd: indices\.shape\[-1\] is 3; it must be in \[1, 2\]"),
    ("gather_nd", (3, 4), (3,), np.int64, 1, (3,), np.float32, ValueError,
     r"gather_nd: batch_dims 1 must be below both ranks \(data 2, indices 1\)"),
    ("gather_nd", (3, 4), (2, 1), np.int64, 2, (2, 4), np.float32, ValueError,
     r"gather_nd: batch_dims 2 is out of range for data of rank 2"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "data_shape", "index_shape", "index_dtype", "axis", "out_shape", "out_dtype",
     "error", "message"),
    GATHER_CASES,
    ids=[f"{case[0]}-{i}" for i, case in enumerate(GATHER_CASES)],
)  # fmt: skip
def test_gathers_name_the_bad_argument_and_write_nothing(
    entry, data_shape, index_shape, index_dtype, axis, out_shape, out_dtype, error, message
):
    data, indices, out = fenced(
        np.ones(data_shape, np.float32),
        np.zeros(index_shape, index_dtype),
        np.zeros(out_shape, out_dtype),
    )
    with pytest.raises(error, match=message):
        _gather_call(entry, data.array, indices.array, axis, out.array)
    assert untouched(data, indices, out)


#: Each gather's index shape for a result of (2, 4) from data of (3, 4).
RESULT_2X4 = {
    "gather": (2,), "openvino_gather": (2,), "gather_elements": (2, 4), "gather_nd": (2, 1),
}  # fmt: skip


@pytest.mark.parametrize("entry", sorted(RESULT_2X4))
@pytest.mark.parametrize(
    ("problem", "error", "message"),
    [
        ("threads", ValueError, r"threads 0 \(want threads >= 1\)"),
        ("strided", ValueError, r"out must be C-contiguous and writeable \(contiguous 0, writeable 1\)"),
        ("read-only", ValueError, r"out must be C-contiguous and writeable \(contiguous 1, writeable 0\)"),
        ("a-list", TypeError, r"out of type list \(want a NumPy array or None\)"),
    ],
    ids=["threads", "strided", "read-only", "a-list"],
)  # fmt: skip
def test_gathers_name_a_bad_out_or_threads(entry, problem, error, message):
    data, indices = fenced(np.ones((3, 4), np.float32), np.zeros(RESULT_2X4[entry], np.int64))
    whole = Fenced(np.zeros(16, np.float32))
    out, threads = whole.array[:8].reshape(2, 4), 1
    if problem == "threads":
        threads = 0
    elif problem == "strided":
        out = whole.array.reshape(2, 8)[:, ::2]
    elif problem == "read-only":
        out.flags.writeable = False
    else:
        out = out.tolist()  # (a-list)
    with pytest.raises(error, match=f"{entry}: {message}"):
        _gather_call(entry, data.array, indices.array, 0, out, threads)
    assert untouched(data, indices, whole)


@pytest.mark.parametrize("entry", ["gather", "gather_elements", "gather_nd"])
@pytest.mark.parametrize("shared", ["data", "indices"])
def test_gathers_name_an_out_that_shares_memory(entry, shared):
    whole = Fenced(np.zeros(64, np.int64))
    data = whole.array[:24].reshape(3, 8)
    out_shape, index_shape = {"gather": ((2, 8), (2,)), "gather_elements": ((2, 8), (2, 8)),
                              "gather_nd": ((2, 8), (2, 1))}[entry]  # fmt: skip
    size = out_shape[0] * out_shape[1]
    indices = np.zeros(index_shape, np.int64)
    if shared == "data":
        (ind,) = fenced(indices)
        out, indices = whole.array[16 : 16 + size].reshape(out_shape), ind.array
    else:
        ind = whole  # the indices at the buffer's end, out just before them
        indices = whole.array[64 - indices.size :].reshape(index_shape)
        out = whole.array[64 - indices.size - size + 1 : 64 - indices.size + 1].reshape(out_shape)
    with pytest.raises(ValueError, match=rf"{entry}: {shared} overlaps out \({shared} spans bytes"):
        _gather_call(entry, data, indices, 0, out)
    assert untouched(whole, ind)
