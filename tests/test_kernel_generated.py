"""Generated calls of the compiled kernel, valid and not, each checked bit for bit and fenced.

Hypothesis draws calls of every array entry point of ``onnx_gather._kernels`` straight
from their arguments: shapes (empty dims included), the 15 numeric ONNX types (bfloat16
where ml_dtypes is installed) and items of 3 and 20 bytes, layouts of the inputs (transposed, reversed, stepped,
broadcast, offset in a larger buffer), ``out`` given or not and sharing memory with an
input, indices anywhere from the int64 limits to the axis' edges, every reduction,
bounds mode and thread count, and now and then one argument made wrong (a dim, a rank, an
axis, a code, the threads). Each call's outcome is predicted from the module's contract
(og_module.c, og_scatter.c, og_scatter_at.c; the boundary of og_core.h): an exception of
the predicted type, NotImplemented, None, or the result, which must equal a NumPy
reference bit for bit (the float reductions only where no update lands). Every buffer sits
inside a larger one whose other bytes are a canary (tests/fenced.py) that no
call may touch; a refused call writes no byte at all, and no call writes an input.

The by-address entry points run on layouts that are true, against their array siblings;
a last test runs generated calls from four Python threads at once. ``nox -s asan`` runs
this module with the kernel built with AddressSanitizer and UndefinedBehaviorSanitizer and
ONNX_GATHER_EXAMPLES examples per test (default 100).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from fenced import Fenced
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from onnx_gather._backends._numpy._scatter import _KINDS as KINDS
from onnx_gather._conformance.libraries import bfloat16
from onnx_gather._conformance.strategies import Layout

if os.environ.get("ONNX_GATHER_NO_EXTENSION", "").strip() not in ("", "0"):
    _kernels = pytest.importorskip("onnx_gather._kernels")
else:
    from onnx_gather import _kernels

EXAMPLES = int(os.environ.get("ONNX_GATHER_EXAMPLES", "100"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_BF16 = bfloat16()
#: Item types: the numeric ONNX types and two sizes the kernel copies with a run-time size.
DTYPES = [
    np.dtype(t)
    for t in ("int32", "float32", "int8", "int16", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float64", "complex64", "complex128", "bool", "V3", "V20")
] + ([np.dtype(_BF16)] if _BF16 is not None else [])  # fmt: skip
#: Index values that reach past any axis: the limits of both index types and beyond.
WILD = (2**63 - 1, -(2**63), 2**31 - 1, -(2**31), 2**31, -(2**31) - 1, 2**62, -(2**62))
NONE, ADD, MUL, MAX, MIN = range(5)


@pytest.fixture(autouse=True)
def split_small_work():
    """Threads from 256 elements each on, so small calls split over threads too."""
    old, _ = _kernels._tune(256)
    yield
    _kernels._tune(old)


# ---------------------------------------------------------------------------------------
# Arrays: random bits, in a layout, inside a fenced buffer


@dataclass
class Arrays:
    """The fenced buffers of one call, and the bytes each held before it."""

    fences: list[Fenced] = field(default_factory=list)

    def add(self, fence: Fenced) -> Fenced:
        self.fences.append(fence)
        return fence

    def fences_intact(self) -> bool:
        """Whether every canary byte, outside every array, is as it was."""
        return all(f.intact_outside(f.array) for f in self.fences)

    def untouched(self, *skip: Fenced) -> bool:
        """Whether every byte of every buffer but ``skip`` is as it was."""
        return all(f.untouched() for f in self.fences if all(f is not s for s in skip))


def random_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]):
    """Random bytes of ``dtype`` (NaN payloads, -0.0); bools 0 or 1."""
    n = math.prod(shape) * dtype.itemsize
    raw = rng.integers(0, 256, size=n, dtype=np.uint8)
    if dtype.kind == "b":
        raw &= 1
    return raw.view(dtype).reshape(shape)


def wrong_argument(*which: str) -> st.SearchStrategy[str | None]:
    """None (every argument right) two times in three, else the argument to make wrong."""
    return st.one_of(st.none(), st.none(), st.sampled_from(which))


@st.composite
def layouts(draw, rank: int, broadcast: bool) -> tuple[Layout, int | None]:
    """A Layout (transposed, reversed, stepped, offset), and a dim to broadcast or None."""
    if rank == 0 or draw(st.booleans()):
        return Layout(), None
    perm = tuple(draw(st.permutations(range(rank))))
    steps = tuple(draw(st.sampled_from((1, 2, -1, -2))) for _ in range(rank))
    offsets = tuple(draw(st.integers(0, 2)) for _ in range(rank))
    spread = draw(st.integers(0, rank - 1)) if broadcast and draw(st.booleans()) else None
    return Layout(perm, steps, offsets), spread


def presented(
    arrays: Arrays, values: np.ndarray, layout: Layout, spread: int | None, rng
) -> np.ndarray:
    """``values`` in ``layout`` (broadcast along ``spread``), over a fenced buffer."""
    if spread is not None and values.shape[spread] > 0:
        one = np.take(values, [0], axis=spread)
        fence = arrays.add(Fenced(one))
        return np.broadcast_to(fence.array, values.shape)
    base, slices, perm = layout.realise(
        values, lambda shape: random_values(rng, shape, values.dtype)
    )
    fence = arrays.add(Fenced(base))
    view = fence.array if slices is None else fence.array[slices]
    return view if perm is None else np.transpose(view, perm)


def index_values(rng, shape: tuple[int, ...], sizes, dtype, wild: float) -> np.ndarray:
    """Indices of ``shape``: component k of the last axis (``sizes`` a list: one size per
    coordinate) or every one (an int) in range, a share ``wild`` just past the axis or
    at the limits of both index types (clipped to ``dtype``)."""
    n = math.prod(shape)
    size = (
        np.broadcast_to(np.asarray(sizes, np.int64), shape).reshape(-1)
        if n
        else np.zeros(0, np.int64)
    )
    drawn = np.array([rng.integers(-s, s) if s else 0 for s in size.tolist()], np.int64)
    edges = np.array([*WILD, 0, -1], np.int64)
    for k in np.flatnonzero(rng.random(n) < wild):
        s = int(size[k])
        drawn[k] = rng.choice([s, -s - 1, s - 1, -s, *edges.tolist()])
    info = np.iinfo(dtype)
    return np.clip(drawn, info.min, info.max).astype(dtype).reshape(shape)


def bytes_of(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def voids(a: np.ndarray) -> np.ndarray:
    """``a``'s items as opaque bytes (C-ordered), which NumPy indexes like any dtype."""
    a = np.ascontiguousarray(a)
    return a.view(np.dtype((np.void, a.dtype.itemsize))) if a.dtype.itemsize else a


def overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """The kernel's test (og_check_apart): both non-empty and their byte extents meet."""
    if a.size == 0 or b.size == 0:
        return False

    def extent(x: np.ndarray) -> tuple[int, int]:
        lo, hi = 0, x.itemsize
        for n, stride in zip(x.shape, x.strides, strict=True):
            span = (n - 1) * stride
            lo, hi = (lo + span, hi) if span < 0 else (lo, hi + span)
        start = x.__array_interface__["data"][0]
        return start + lo, start + hi

    (alo, ahi), (blo, bhi) = extent(a), extent(b)
    return alo < bhi and blo < ahi


def outcome(call) -> Any:
    """The call's result, or the exception type it raised (ValueError, TypeError, ...)."""
    try:
        return call()
    except (ValueError, TypeError, OverflowError) as error:
        return type(error)


# ---------------------------------------------------------------------------------------
# The gathers: gather, openvino_gather, gather_elements, gather_nd


@dataclass
class GatherCall:
    entry: str
    data: np.ndarray
    indices: np.ndarray
    axis: int
    out: np.ndarray | None
    check: bool
    threads: int
    arrays: Arrays
    out_fence: Fenced | None  # the buffer out lies in: its own, or data's


@st.composite
def gather_calls(draw) -> GatherCall:
    entry = draw(st.sampled_from(("gather", "gather_elements", "gather_nd", "openvino_gather")))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    axis = draw(st.integers(0, rank - 1))
    index_dtype = draw(st.sampled_from((np.int64, np.int32)))
    wild = draw(st.sampled_from((0.0, 0.1, 0.5)))
    if entry == "gather_elements":
        index_shape = tuple(
            draw(st.integers(0, 5)) if d == axis else draw(st.integers(0, n))
            for d, n in enumerate(shape)
        )
        sizes: Any = shape[axis]
    elif entry == "gather_nd":
        axis = draw(st.integers(0, rank - 1))  # batch_dims
        k = draw(st.integers(1, rank - axis))
        extra = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        index_shape = shape[:axis] + extra + (k,)
        sizes = list(shape[axis : axis + k])
    else:
        index_shape = tuple(draw(st.lists(st.integers(0, 4), max_size=2)))
        sizes = shape[axis]
    wrong = draw(wrong_argument("axis", "threads", "index dim", "rank"))
    threads = 0 if wrong == "threads" else draw(st.integers(1, 6))
    if wrong == "axis":
        axis = draw(st.sampled_from((-1, rank, rank + 3)))
    elif wrong == "index dim" and index_shape:
        d = draw(st.integers(0, len(index_shape) - 1))
        index_shape = (
            index_shape[:d] + (index_shape[d] + draw(st.integers(1, 3)),) + index_shape[d + 1 :]
        )
    elif wrong == "rank":
        index_shape = index_shape[:-1] if index_shape else (1,)
    arrays = Arrays()
    values = random_values(rng, shape, dtype)
    layout, spread = draw(layouts(rank, broadcast=True))
    data = presented(arrays, values, layout, spread, rng)
    index_layout, _ = draw(layouts(len(index_shape), broadcast=False))
    ind = index_values(rng, index_shape, fitting(sizes, index_shape), index_dtype, wild)
    indices = presented(arrays, ind, index_layout, None, rng)
    out, out_fence = None, None
    form = draw(st.sampled_from(("none", "given", "given", "shares data")))
    expected = expected_gather_shape(entry, shape, index_shape, axis)
    if form != "none" and expected is not None:
        if form == "shares data" and data.size and math.prod(expected):
            # out over data's own bytes (its fenced buffer, from the start)
            fence = arrays.fences[0]
            nbytes = math.prod(expected) * dtype.itemsize
            if nbytes <= fence.array.nbytes:
                out = fence.array.reshape(-1).view(np.uint8)[:nbytes].view(dtype).reshape(expected)
                out_fence = fence  # (where data's view skips those bytes, a valid out)
        if out is None:
            out_fence = arrays.add(Fenced(random_values(rng, expected, dtype)))
            out = out_fence.array
    check = draw(st.booleans())
    return GatherCall(entry, data, indices, axis, out, check, threads, arrays, out_fence)


def fitting(sizes: int | list[int], index_shape: tuple[int, ...]) -> int | list[int]:
    """``sizes`` (one per coordinate, or one for all), or one size where a wrong index
    shape has another count of coordinates."""
    if isinstance(sizes, int) or (index_shape and index_shape[-1] == len(sizes)):
        return sizes
    return max(sizes, default=0)


def expected_gather_shape(entry, shape, index_shape, axis) -> tuple[int, ...] | None:
    """The result's shape where the call is valid, else None."""
    rank = len(shape)
    if not 0 <= axis < rank:
        return None
    if entry in ("gather", "openvino_gather"):
        return shape[:axis] + index_shape + shape[axis + 1 :]
    if entry == "gather_elements":
        ok = len(index_shape) == rank and all(
            d == axis or i <= n for d, (i, n) in enumerate(zip(index_shape, shape, strict=True))
        )
        return index_shape if ok else None
    b, q = axis, len(index_shape)
    if q < 1 or b >= q or index_shape[:b] != shape[:b] or not 1 <= index_shape[-1] <= rank - b:
        return None
    return index_shape[:-1] + shape[b + index_shape[-1] :]


def gather_reference(call: GatherCall) -> np.ndarray | None:
    """The result NumPy computes: None where ``check`` finds an index out of range."""
    data, ind = voids(call.data), np.asarray(call.indices, np.int64)
    axis, mode = call.axis, call.check
    if call.entry == "gather_nd":
        k = ind.shape[-1]
        sizes = np.array(data.shape[axis : axis + k], np.int64)
        valid = (ind >= -sizes) & (ind < sizes)
        if mode and not valid.all():
            return None
        if not sizes.all():  # every coordinate of that axis clamped into nothing: zeros
            return np.zeros(ind.shape[:-1] + data.shape[axis + k :], data.dtype)
        pos = np.where(ind < 0, np.where(valid, ind + sizes, 0), np.where(valid, ind, sizes - 1))
        out = np.empty(ind.shape[:-1] + data.shape[axis + k :], data.dtype)
        for t in np.ndindex(ind.shape[:-1]):
            out[t] = data[t[:axis] + tuple(pos[t])]
        return out
    s = data.shape[axis]
    zeros = call.entry == "openvino_gather"
    wrap = s if (not zeros or mode) else 0  # openvino: `check` is "negatives count"
    valid = (ind >= -wrap) & (ind < s)
    if not zeros and mode and not valid.all():
        return None
    pos = np.where(valid, np.where(ind < 0, ind + wrap, ind), np.where(ind < 0, 0, s - 1))
    if s == 0:
        shape = expected_gather_shape(call.entry, call.data.shape, ind.shape, axis)
        return np.zeros(shape, data.dtype) if data.dtype.itemsize else np.empty(shape, data.dtype)
    if call.entry == "gather_elements":
        block = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(ind.shape))
        return np.take_along_axis(data[block], pos, axis=axis)
    out = np.array(np.take(data, pos, axis=axis))
    if zeros:  # OpenVINO: a zero item for an index out of range
        post = data.ndim - axis - 1
        bad = (~valid).reshape((1,) * axis + valid.shape + (1,) * post)
        out[np.broadcast_to(bad, out.shape)] = np.zeros((), data.dtype)
    return out


def check_gather(call: GatherCall) -> str:
    """Run the call, check it; its outcome in words (for hypothesis' statistics)."""
    given = call.out
    got = outcome(
        lambda: getattr(_kernels, call.entry)(
            call.data, call.indices, call.axis, given, call.check, call.threads
        )
    )
    shape = expected_gather_shape(call.entry, call.data.shape, call.indices.shape, call.axis)
    bad_out = given is not None and (overlap(given, call.data) or overlap(given, call.indices))
    label = f"{call.entry}: {getattr(got, '__name__', type(got).__name__)}"
    if call.threads < 1 or shape is None or bad_out:
        assert got is ValueError, (call.entry, got)
        assert call.arrays.untouched()
        return label
    want = gather_reference(call)
    if want is None:
        assert got is None
    else:
        assert isinstance(got, np.ndarray)
        assert given is None or got is given
        assert got.shape == want.shape
        assert bytes_of(got) == bytes_of(want)
    # Nothing but out written, and no byte past it.
    assert call.arrays.untouched(*([call.out_fence] if call.out_fence else []))
    assert call.arrays.fences_intact()
    assert call.out_fence is None or call.out_fence.intact_outside(call.out)
    return label


@SETTINGS
@given(gather_calls())
def test_generated_gathers(call):
    event(check_gather(call))


# ---------------------------------------------------------------------------------------
# The scatters: scatter_elements, scatter_nd


@dataclass
class ScatterCall:
    entry: str
    out: np.ndarray
    data: np.ndarray | None
    indices: np.ndarray
    updates: np.ndarray
    axis: int
    reduction: int
    kind: int
    check: int
    threads: int
    arrays: Arrays
    out_fence: Fenced
    start: np.ndarray  # what the result starts from: data, or out as given


def kind_of(dtype: np.dtype[Any]) -> int:
    return KINDS.get(dtype.name, -1)


#: The item size of each kind's type: a kind must be of out's item size.
KIND_SIZES = {
    code: 2 if name == "bfloat16" else np.dtype(name).itemsize for name, code in KINDS.items()
}


@st.composite
def scatter_calls(draw) -> ScatterCall:
    entry = draw(st.sampled_from(("scatter_elements", "scatter_nd")))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    wild = draw(st.sampled_from((0.0, 0.1, 0.5)))
    index_dtype = draw(st.sampled_from((np.int64, np.int32)))
    axis = draw(st.integers(0, rank - 1))
    if entry == "scatter_elements":
        index_shape = tuple(
            draw(st.integers(0, 5)) if d == axis else draw(st.integers(0, n))
            for d, n in enumerate(shape)
        )
        update_shape, sizes = index_shape, shape[axis]
    else:
        k = draw(st.integers(1, rank))
        batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        index_shape, update_shape = batch + (k,), batch + shape[k:]
        sizes = list(shape[:k])
    reduction = draw(st.sampled_from((NONE, NONE, ADD, MUL, MAX, MIN)))
    kind, check, threads = kind_of(dtype), draw(st.sampled_from((0, 1, 2))), draw(st.integers(1, 6))
    wrong = draw(
        wrong_argument(
            "axis", "threads", "check", "reduction", "kind", "index dim", "update dim", "rank",
            "data overlaps", "indices overlap", "updates overlap", "strided updates",
        )
    )  # fmt: skip
    if wrong == "axis":
        axis = draw(st.sampled_from((-1, rank)))
    elif wrong == "threads":
        threads = draw(st.sampled_from((0, -3)))
    elif wrong == "check":
        check = draw(st.sampled_from((-1, 3)))
    elif wrong == "reduction":
        reduction = draw(st.sampled_from((-1, 5)))
    elif wrong == "kind":
        kind = draw(st.integers(-2, 15))
    elif wrong == "index dim" and index_shape:
        d = draw(st.integers(0, len(index_shape) - 1))
        index_shape = index_shape[:d] + (index_shape[d] + 1,) + index_shape[d + 1 :]
        if entry == "scatter_elements":
            update_shape = index_shape
    elif wrong == "update dim" and update_shape:
        d = draw(st.integers(0, len(update_shape) - 1))
        update_shape = (
            update_shape[:d]
            + (max(update_shape[d] - 1, 0) if update_shape[d] else 2,)
            + update_shape[d + 1 :]
        )
    elif wrong == "rank":
        update_shape = update_shape[1:] if update_shape else (1,)
    arrays = Arrays()
    start = random_values(rng, shape, dtype)
    out_fence = arrays.add(
        Fenced(np.concatenate([start.reshape(-1), random_values(rng, (8,), dtype)]).reshape(-1))
    )
    out = out_fence.array[: start.size].reshape(shape)  # with 8 more items after it
    data = None
    if draw(st.booleans()):
        data = arrays.add(Fenced(random_values(rng, shape, dtype))).array
    if wrong == "data overlaps":
        shift = draw(st.integers(0, 8))
        data = out_fence.array[shift : shift + start.size].reshape(shape)
    first = data if data is not None else out
    index_layout = draw(st.sampled_from(("c", "c", "strided")))
    ind = index_values(rng, index_shape, fitting(sizes, index_shape), index_dtype, wild)
    indices = arrays.add(Fenced(ind)).array
    if index_layout == "strided" and ind.ndim:
        indices = presented(arrays, ind, Layout(steps=(2,) + (1,) * (ind.ndim - 1)), None, rng)
    updates = arrays.add(Fenced(random_values(rng, update_shape, dtype))).array
    if wrong == "strided updates" and updates.ndim:
        updates = presented(arrays, updates, Layout(steps=(-1,) * updates.ndim), None, rng)
    elif wrong == "updates overlap" and updates.size and updates.size <= out_fence.array.size:
        updates = out_fence.array[out_fence.array.size - updates.size :].reshape(update_shape)
    elif wrong == "indices overlap" and ind.size and out.nbytes:
        raw = out_fence.raw[out_fence.address - out_fence.raw.ctypes.data :]
        nbytes = ind.size * ind.itemsize
        if nbytes <= raw.size:
            indices = raw[:nbytes].view(index_dtype).reshape(index_shape)
    return ScatterCall(
        entry, out, data, indices, updates, axis, reduction, kind, check, threads, arrays,
        out_fence, np.array(first, copy=True),
    )  # fmt: skip


def scatter_refusal(call: ScatterCall) -> Any:
    """What the kernel says before it writes: an error type, NotImplemented or None (go)."""
    out, ind, upd, data = call.out, call.indices, call.updates, call.data
    if call.threads < 1 or not 0 <= call.check <= 2:
        return ValueError
    if not (ind.flags.c_contiguous and upd.flags.c_contiguous):
        return NotImplemented
    if not 0 <= call.reduction <= 4 or not -1 <= call.kind <= 14:
        return ValueError
    if call.kind >= 0 and KIND_SIZES[call.kind] != out.dtype.itemsize:
        return ValueError
    no_arithmetic = call.kind < 0 or (call.kind >= KINDS["complex64"] and call.reduction >= MAX)
    if call.reduction != NONE and no_arithmetic:
        return NotImplemented
    shared = (data is not None and overlap(data, out)) or overlap(ind, out) or overlap(upd, out)
    if shared:
        return ValueError
    r, q = out.ndim, ind.ndim
    if call.entry == "scatter_elements":
        if q != r or upd.ndim != r or not 0 <= call.axis < r or upd.shape != ind.shape:
            return ValueError
        if any(
            d != call.axis and i > n
            for d, (i, n) in enumerate(zip(ind.shape, out.shape, strict=True))
        ):
            return ValueError
        return None
    if q < 1 or not 1 <= ind.shape[-1] <= r:
        return ValueError
    k = ind.shape[-1]
    return ValueError if upd.shape != ind.shape[:-1] + out.shape[k:] else None


def apply_reduction(reduction: int, target: np.ndarray, update: np.ndarray) -> np.ndarray:
    """One step of a reduction on 1-element arrays (integers wrap; bools OR and AND)."""
    if reduction == NONE:
        return update
    if target.dtype.kind == "b":
        op = np.logical_or if reduction in (ADD, MAX) else np.logical_and
        return op(target, update)
    op = {ADD: np.add, MUL: np.multiply, MAX: np.maximum, MIN: np.minimum}[reduction]
    with np.errstate(all="ignore"):
        return op(target, update)


def exact_reference(call: ScatterCall) -> bool:
    """Whether :func:`scatter_reference` computes every value: reduction none, or the
    integer or bool arithmetic of out's own type (a kind of another type of that size is
    the caller's to choose; float reductions are the property tests')."""
    dtype = call.out.dtype
    return call.reduction == NONE or (call.kind == kind_of(dtype) and dtype.kind in "biu")


def scatter_reference(call: ScatterCall) -> tuple[np.ndarray | None, np.ndarray]:
    """The result (None where ``check`` finds an index out of range) and where updates land."""
    result = call.start.copy()
    ind = np.asarray(call.indices, np.int64)
    landed = np.zeros(result.shape, bool)
    exact = exact_reference(call)
    if call.entry == "scatter_elements":
        s = result.shape[call.axis]
        valid = (ind >= -s) & (ind < s)
        targets = (
            (p[: call.axis] + (int(ind[p]) % s if s else 0,) + p[call.axis + 1 :], p)
            for p in np.ndindex(ind.shape) if valid[p]
        )  # fmt: skip
    else:
        k = ind.shape[-1]
        sizes = np.array(result.shape[:k], np.int64)
        valid = ((ind >= -sizes) & (ind < sizes)).all(axis=-1)
        targets = (
            (tuple(int(c) % int(n) for c, n in zip(ind[t], sizes, strict=True)), t)
            for t in np.ndindex(ind.shape[:-1]) if valid[t]
        )  # fmt: skip
    if call.check and not valid.all():
        return None, landed
    upd = np.asarray(call.updates)
    for target, position in targets:
        landed[target] = True
        if exact:
            before = np.asarray(result[target])
            result[target] = apply_reduction(call.reduction, before, np.asarray(upd[position]))
    return result, landed


def check_scatter(call: ScatterCall) -> str:
    """Run the call, check it; its outcome in words (for hypothesis' statistics)."""
    entry = getattr(_kernels, call.entry)
    extra = (call.axis,) if call.entry == "scatter_elements" else ()
    args = (call.out, call.data, call.indices, call.updates, *extra, call.reduction, call.kind)
    got = outcome(lambda: entry(*args, call.check, call.threads))
    refusal = scatter_refusal(call)
    label = f"{call.entry}: {getattr(got, '__name__', got)}"
    if refusal is not None:
        assert got is refusal, (call.entry, got, refusal)
        assert call.arrays.untouched()
        return label
    want, landed = scatter_reference(call)
    # No input written, nor a byte past out (its buffer holds 8 more items after it).
    assert call.arrays.untouched(call.out_fence)
    assert call.arrays.fences_intact()
    assert call.out_fence.intact_outside(call.out)
    if want is None:
        assert got is None
        if call.check == 1:  # every index scanned before the first write
            assert call.arrays.untouched()
        return label
    assert got is True
    if exact_reference(call):
        assert bytes_of(call.out) == bytes_of(want)
    else:  # other reductions: where no update lands, the data
        assert bytes_of(voids(call.out)[~landed]) == bytes_of(voids(want)[~landed])
    return label


@SETTINGS
@given(scatter_calls())
def test_generated_scatters(call):
    event(check_scatter(call))


# ---------------------------------------------------------------------------------------
# The writes by address, on true layouts, against their array siblings


@dataclass
class AddressCall:
    """A by-address call's inputs: four sizes for its layout, drawn from ``seed``."""

    entry: str
    dtype: np.dtype[Any]
    sizes: tuple[int, int, int, int]
    wild: float
    seed: int
    as_address: bool  # each buffer as an address, else as the ndarray (where it takes one)
    circular: bool

    def buffers(self, arrays: Arrays, *values: np.ndarray) -> list[Any]:
        """Each of ``values`` fenced, as the call takes it."""
        fences = [arrays.add(Fenced(v)) for v in values]
        return [f.address if self.as_address else f.array for f in fences]


@st.composite
def address_calls(draw) -> AddressCall:
    entry = draw(st.sampled_from(("scatter_elements_at", "gather_elements_at", "scatter_nd_at",
                                  "tensor_scatter_slices_at")))  # fmt: skip
    return AddressCall(
        entry,
        draw(st.sampled_from(DTYPES)),
        tuple(draw(st.lists(st.integers(0, 4), min_size=4, max_size=4))),
        draw(st.sampled_from((0.0, 0.0, 0.2))),
        draw(st.integers(0, 2**32 - 1)),
        draw(st.booleans()),
        draw(st.booleans()),
    )


def elements_at(call: AddressCall, arrays: Arrays, rng) -> tuple[bool, bool, np.ndarray]:
    """scatter_elements_at or gather_elements_at, and its array sibling's outcome and result."""
    outer, size, length, inner = call.sizes
    layout = (outer, size, length, inner, call.dtype.itemsize)
    ind = index_values(rng, (outer, length, inner), size, np.int64, call.wild)
    data = random_values(rng, (outer, size, inner), call.dtype)
    other = random_values(rng, ind.shape, call.dtype)  # the updates, or out
    want = (data if call.entry == "scatter_elements_at" else other).copy()
    if call.entry == "scatter_elements_at":
        sibling = _kernels.scatter_elements(want, None, ind, other, 1, NONE, -1, 1, 1)
        d, u, i = call.buffers(arrays, data, other, ind)
        return _kernels.scatter_elements_at(d, u, i, *layout), bool(sibling), want
    sibling = _kernels.gather_elements(data, ind, 1, want, True, 1)
    o, d, i = call.buffers(arrays, other, data, ind)
    return _kernels.gather_elements_at(o, d, i, *layout), sibling is not None, want


def scatter_nd_at(call: AddressCall, arrays: Arrays, rng) -> tuple[bool, bool, np.ndarray]:
    """scatter_nd_at, and scatter_nd's outcome and result on the same arrays."""
    depth, count, width, _ = call.sizes
    depth %= 3
    shape = tuple(int(n) for n in rng.integers(0, 4, depth)) + (width,)
    ind = index_values(rng, (count, depth), list(shape[:depth]) or 0, np.int64, call.wild)
    data = random_values(rng, shape, call.dtype)
    updates = random_values(rng, (count, width), call.dtype)
    want, sibling = data.copy(), True
    if depth:
        sibling = bool(_kernels.scatter_nd(want, None, ind, updates, NONE, -1, 1, 1))
    elif count:  # no coordinates: every update lands on the one slice, the last wins
        want[...] = updates[-1]
    d, u, i = call.buffers(arrays, data, updates, ind)
    done = _kernels.scatter_nd_at(d, u, i, count, shape[:depth], width * call.dtype.itemsize)
    return done, sibling, want


def slices_at(call: AddressCall, arrays: Arrays, rng) -> tuple[bool, bool, np.ndarray]:
    """tensor_scatter_slices_at (by address only), and its array sibling's outcome."""
    batch, outer, size, inner = call.sizes
    length = min(int(rng.integers(0, 3)), size)
    cache = random_values(rng, (batch, outer, size, inner), call.dtype)
    update = random_values(rng, (batch, outer, length, inner), call.dtype)
    starts = index_values(rng, (batch,), size, np.int64, call.wild)
    want = cache.copy()
    sibling = _kernels.tensor_scatter_slices(want, update, starts, 2, call.circular)
    addresses = [arrays.add(Fenced(v)).address for v in (cache, update, starts)]
    row = inner * call.dtype.itemsize
    done = _kernels.tensor_scatter_slices_at(
        *addresses, batch, outer, size, length, row, call.circular
    )
    return done, sibling, want


def check_address_call(call: AddressCall) -> str:
    """Run the call and its sibling, check them; the outcome in words."""
    arrays, rng = Arrays(), np.random.default_rng(call.seed)
    run = {"scatter_nd_at": scatter_nd_at, "tensor_scatter_slices_at": slices_at}
    done, sibling, want = run.get(call.entry, elements_at)(call, arrays, rng)
    written = arrays.fences[0]  # (each puts the buffer it writes first)
    assert done is sibling
    assert arrays.fences_intact()
    assert arrays.untouched(written)
    if done:
        assert bytes_of(written.array) == bytes_of(want)
    else:
        assert written.untouched()
    return f"{call.entry}: {done}"


@SETTINGS
@given(address_calls())
def test_generated_writes_by_address(call):
    event(check_address_call(call))


# ---------------------------------------------------------------------------------------
# Four Python threads at once


@SETTINGS
@given(st.lists(st.one_of(gather_calls(), scatter_calls()), min_size=4, max_size=8))
def test_generated_calls_from_four_threads_at_once(calls):
    """Calls that share no buffer, run at once: each checked as when it runs alone."""

    def run(call: Any) -> None:
        (check_gather if isinstance(call, GatherCall) else check_scatter)(call)

    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(run, call) for call in calls]:
            future.result()
