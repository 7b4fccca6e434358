"""Hypothesis strategies: random calls of every operator of the registry.

Everything is drawn step by step from small choices, so a failure shrinks to a small
example: few and short dims, the first dtype that still fails, counting values, plain layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st

from onnx_gather import _ops
from onnx_gather._conformance.libraries import bfloat16
from onnx_gather._spec import reductions
from onnx_gather._spec.openvino_scatter import ELEMENTS_REDUCTIONS, ND_REDUCTIONS

#: Every ONNX data type, in the order a failing example shrinks towards.
DTYPES = (
    "int32", "int64", "float32", "float64", "float16", "bfloat16", "int8", "int16",
    "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "string",
)  # fmt: skip
#: NumPy's spellings of ONNX ``string``.
STRING_KINDS = ("object", "U", "S", "StringDType")

MAX_DIM = 7
LARGE_AXIS = (64, 300)
#: At most this many elements in data and in the output (outside large-axis examples),
#: so the loop oracle costs a few milliseconds at most.
BUDGET = 1024
SEED_MAX = 2**32 - 1

_STRINGS = ("", "a", "ÿ-ü", "abc", "x" * 40, "\x00z", "日本", " ")


def numpy_dtype(name: str, string_kind: str = "object") -> np.dtype[Any]:
    """The NumPy dtype for an ONNX type name (strings in ``string_kind``'s spelling)."""
    if name == "bfloat16":
        bf16 = bfloat16()
        if bf16 is None:
            msg = "bfloat16 needs ml_dtypes"
            raise RuntimeError(msg)
        return bf16
    if name == "string":
        if string_kind == "StringDType":
            return np.dtype(np.dtypes.StringDType())
        return np.dtype({"object": object, "U": np.str_, "S": np.bytes_}[string_kind])
    return np.dtype(name)


def string_kinds() -> tuple[str, ...]:
    """The string spellings this NumPy has."""
    has_sdt = hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType")
    return STRING_KINDS if has_sdt else STRING_KINDS[:3]


def _specials(dtype: np.dtype[Any]) -> np.ndarray:
    """A type's edge values: NaN payloads (quiet and signalling), -0.0, infinities, extremes."""
    if dtype.kind == "b":
        return np.array([True, False])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.max, 0, 1, info.max - 1, info.min + 1], dtype)
    if dtype.kind == "c":
        part = np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)
        real = _specials(part)
        out = np.empty(real.size, dtype)
        out.real, out.imag = real, real[::-1]  # assignment keeps the bits
        return out
    width = np.dtype(f"u{dtype.itemsize}")
    bits = 8 * dtype.itemsize
    mantissa = {2: 10 if dtype.name == "float16" else 7, 4: 23, 8: 52}[dtype.itemsize]
    exponent = ((1 << (bits - 1)) - 1) ^ ((1 << mantissa) - 1)
    sign = 1 << (bits - 1)
    quiet = 1 << (mantissa - 1)
    patterns = [
        0,  # +0.0
        sign,  # -0.0
        exponent,  # +inf
        sign | exponent,  # -inf
        exponent | quiet | 1,  # quiet NaN with a payload
        sign | exponent | quiet | 5,  # negative quiet NaN with a payload
        exponent | 1,  # signalling NaN
        1,  # smallest subnormal
        exponent - 1,  # largest finite
        sign | (exponent - 1),  # most negative finite
    ]
    return np.array(patterns, dtype=width).view(dtype)


def values(dtype: np.dtype[Any], shape: tuple[int, ...], mode: str, seed: int) -> np.ndarray:
    """Deterministic element values of ``dtype``: ``counting``, random ``bits`` or ``specials``."""
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    if dtype.kind in "OUST":
        if mode == "counting":
            text = [str(i) for i in range(n)]
        else:
            text = [_STRINGS[i] if i < len(_STRINGS) else f"s{i}" for i in rng.integers(0, 12, n)]
        flat = np.array(text, dtype=object)
        if dtype.kind == "S":
            flat = np.array([t.encode("utf-8") for t in text], dtype=object)
        strings: np.ndarray = flat.astype(dtype).reshape(shape)
        return strings
    if mode == "counting":
        if dtype.kind == "b":
            return np.asarray(np.arange(n) % 3 == 1).reshape(shape)
        if dtype.kind in "iu":
            return np.arange(n).astype(dtype).reshape(shape)
        counting = np.arange(n, dtype=np.float64) + 0.5
        if dtype.kind == "c":
            counting = counting - 1j * counting
        return counting.astype(dtype).reshape(shape)
    if mode == "specials":
        pool = _specials(dtype)
        return pool[rng.integers(0, pool.size, n)].reshape(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


@dataclass(frozen=True)
class Layout:
    """How an input is presented: ``permute_dims(base[slices], perm)`` of a larger base.

    ``steps`` and ``offsets`` give one slice per axis of the base (``offset::step``, or
    from the end for a negative step); ``perm`` then transposes. Empty tuples: no slicing,
    no transposition (a plain contiguous array).
    """

    perm: tuple[int, ...] = ()
    steps: tuple[int, ...] = ()
    offsets: tuple[int, ...] = ()

    @property
    def plain(self) -> bool:
        """Whether this is a plain contiguous array."""
        return not self.perm and not self.steps

    def without_reversal(self) -> Layout:
        """The same view with positive steps, for libraries without negative strides."""
        return Layout(self.perm, tuple(abs(s) for s in self.steps), self.offsets)

    def realise(
        self, logical: np.ndarray, pad: Callable[[tuple[int, ...]], np.ndarray]
    ) -> tuple[np.ndarray, tuple[slice, ...] | None, tuple[int, ...] | None]:
        """A base array and the slices and permutation that turn it into ``logical``.

        Parameters
        ----------
        logical : numpy.ndarray
            The values the view must show.
        pad : callable
            Returns filler values of ``logical``'s dtype for a shape: what the view skips.

        Returns
        -------
        base, slices, perm
            ``permute_dims(base[slices], perm)`` equals ``logical``; ``slices`` or
            ``perm`` is None where that step is not needed.
        """
        if self.plain or logical.ndim == 0:
            return logical.copy(order="C"), None, None
        rank = logical.ndim
        perm = self.perm or tuple(range(rank))
        # transpose(pre, perm) == logical
        pre = np.transpose(logical, np.argsort(perm))
        steps = self.steps or (1,) * rank
        offsets = self.offsets or (0,) * rank
        base_shape, slices = [], []
        for n, step, offset in zip(pre.shape, steps, offsets, strict=True):
            if n == 0:
                base_shape.append(0)
                slices.append(slice(None))
                continue
            size = offset + n * abs(step)
            base_shape.append(size)
            start = offset if step > 0 else size - 1 - offset
            slices.append(slice(start, None, step))
        base = pad(tuple(base_shape)).copy()
        base[tuple(slices)] = pre
        return base, tuple(slices), (perm if self.perm else None)


@dataclass(frozen=True)
class Example:
    """One call of an operator, with its inputs as NumPy arrays and how to present them.

    ``op`` is a registry name (:data:`onnx_gather._ops.OPS`); ``attributes`` its
    attributes by name; ``opset`` the model's opset (None: the operator's default).
    ``indices_form`` is ``"array"`` (an array of the data's library where it can hold
    the index type, else NumPy), ``"numpy"`` or ``"list"`` (a Python int or nested list).
    """

    op: str
    data: np.ndarray
    indices: np.ndarray
    attributes: dict[str, Any]
    opset: int | None
    check_bounds: bool = True
    data_layout: Layout = field(default_factory=Layout)
    indices_layout: Layout = field(default_factory=Layout)
    indices_form: str = "array"
    seed: int = 0
    #: The scatters' third input (data's dtype), and how it is presented.
    updates: np.ndarray | None = None
    updates_layout: Layout = field(default_factory=Layout)

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The inputs in the operator's order."""
        return _ops.get(self.op).in_order(self.data, self.indices, self.updates)

    @property
    def dtype_name(self) -> str:
        """The data's ONNX type name."""
        return "string" if self.data.dtype.kind in "OUST" else str(self.data.dtype.name)

    def pad(self, shape: tuple[int, ...], which: str = "data") -> np.ndarray:
        """Filler for the positions a view skips: values the result must never contain."""
        like = self.data if which == "data" else self.indices
        return values(like.dtype, shape, "bits", self.seed + 2)


def _weighted(*pairs: tuple[Any, int]) -> st.SearchStrategy[Any]:
    """``sampled_from`` with repeats as weights; shrinks towards the first value."""
    return st.sampled_from([v for v, w in pairs for _ in range(w)])


def _dims(
    draw: Callable[[st.SearchStrategy[Any]], Any], count: int, high: int, budget: int
) -> list[int]:
    """``count`` dims in ``[0, high]`` whose product stays within ``budget``."""
    dims: list[int] = []
    product = 1
    for _ in range(count):
        n = draw(st.integers(0, max(0, min(high, budget // max(product, 1)))))
        dims.append(n)
        product *= max(n, 1)
    return dims


def _index_values(
    draw: Callable[[st.SearchStrategy[Any]], Any],
    shape: tuple[int, ...],
    sizes: tuple[int, ...],
    dtype: str,
    seed: int,
) -> np.ndarray:
    """Indices for axes of ``sizes``: valid values, then a few drawn bad ones.

    One size: every index addresses that axis. Several (coordinates): the last dim of
    ``shape`` enumerates them, and coordinate ``j`` addresses an axis of ``sizes[j]``.
    Valid is ``[-s, s-1]`` in every version of every operator, so negative values are
    drawn as often everywhere (mostly mixed-sign, sometimes non-negative only).
    """
    rng = np.random.default_rng(seed + 1)
    signed = draw(_weighted((True, 3), (False, 1)))
    out = np.zeros(shape, dtype=np.int64)
    per = np.broadcast_to(np.asarray(sizes, np.int64), shape) if shape else np.int64(sizes[0])
    if out.size and (per > 0).all():
        low = -per if signed else np.zeros_like(per)
        out = np.array(rng.integers(low, per, shape, dtype=np.int64))  # 0-d: an array too
    flat = out.reshape(-1)
    flat_sizes = np.asarray(per).reshape(-1)
    info = np.iinfo(np.dtype(dtype))
    for _ in range(draw(_weighted((0, 10), (1, 2), (2, 1))) if flat.size else 0):
        position = draw(st.integers(0, flat.size - 1))
        size = int(flat_sizes[position])
        flat[position] = draw(
            st.one_of(
                st.integers(-2 * size - 2, 2 * size + 1),
                st.sampled_from([size, -size - 1, info.max, info.min]),
            )
        )
    return out.astype(dtype)


@st.composite
def _layout(draw: Callable[[st.SearchStrategy[Any]], Any], rank: int) -> Layout:
    if rank == 0 or draw(_weighted(("plain", 2), ("view", 1))) == "plain":
        return Layout()
    perm = tuple(draw(st.permutations(range(rank))))
    steps = tuple(draw(st.sampled_from((1, 2, -1, -2))) for _ in range(rank))
    offsets = tuple(draw(st.sampled_from((0, 1))) for _ in range(rank))
    return Layout(perm if perm != tuple(range(rank)) else (), steps, offsets)


class Shapes(NamedTuple):
    """What an operator's shape strategy draws: the rest of an example is common."""

    data: tuple[int, ...]
    indices: tuple[int, ...]
    attributes: dict[str, Any]
    #: The size of the axis each index component addresses (one, or one per coordinate).
    sizes: tuple[int, ...]
    #: The scatters' updates (None: the operator has none).
    updates: tuple[int, ...] | None = None
    #: The index values, where the operator's rule is not ``[-s, s-1]`` (TensorScatter's
    #: write indices); None: drawn by the common rule.
    index_values: np.ndarray | None = None


Draw = Callable[[st.SearchStrategy[Any]], Any]


def _axis_and_data(draw: Draw) -> tuple[int, int, tuple[int, ...], bool, int]:
    """An axis (sometimes out of range) and data around it: (axis, ax, shape, large, outer).

    About one example in five has an axis of 64-300 (where the ONNX reference evaluator's
    GatherElements breaks) with the other dims at most 2.
    """
    rank = draw(st.integers(1, 5))
    if draw(_weighted((True, 15), (False, 1))):
        axis = draw(st.integers(-rank, rank - 1))
    else:
        axis = draw(st.sampled_from([rank, -rank - 1]))
    ax = axis % rank if -rank <= axis < rank else 0
    large = draw(_weighted((False, 4), (True, 1)))
    others = _dims(draw, rank - 1, 2 if large else MAX_DIM, BUDGET)
    size = draw(st.integers(*LARGE_AXIS)) if large else draw(st.integers(0, MAX_DIM))
    data_shape = (*others[:ax], size, *others[ax:])
    outer = int(np.prod(others, dtype=np.int64)) if others else 1
    return axis, ax, data_shape, large, outer


def _gather_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """Gather: any indices shape of rank 0-3."""
    axis, ax, data_shape, _, outer = _axis_and_data(draw)
    q = draw(st.integers(0, 3))
    index_shape = tuple(_dims(draw, q, MAX_DIM, BUDGET // max(outer, 1)))
    return Shapes(data_shape, index_shape, {"axis": axis}, (data_shape[ax],))


def _elements_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """GatherElements (ONNX, or OpenVINO's equal dims off the axis): data's rank.

    About one example in twelve breaks the shape rule in one dim off the axis.
    """
    axis, ax, data_shape, large, _ = _axis_and_data(draw)
    off_axis = [d for d in range(len(data_shape)) if d != ax]
    broken = None
    if off_axis and draw(_weighted((False, 11), (True, 1))):
        broken = draw(st.sampled_from(off_axis))
    shape = []
    for d, n in enumerate(data_shape):
        if d == ax:
            shape.append(-1)
        elif d == broken:
            # Larger is wrong for both; smaller is wrong only for OpenVINO.
            if op.equal_off_axis and n > 0 and draw(st.booleans()):
                shape.append(draw(st.integers(0, n - 1)))
            else:
                shape.append(n + draw(st.integers(1, 2)))
        elif not op.equal_off_axis and n > 0 and draw(_weighted((False, 6), (True, 5))):
            shape.append(draw(st.integers(0, n - 1)))  # smaller than data: allowed
        else:
            shape.append(n)
    across = int(np.prod([n for n in shape if n >= 0], dtype=np.int64))
    longest = LARGE_AXIS[1] if large else MAX_DIM
    length = draw(st.integers(0, max(0, min(longest, BUDGET * 4 // max(across, 1)))))
    index_shape = tuple(length if n < 0 else n for n in shape)
    return Shapes(data_shape, index_shape, {"axis": axis}, (data_shape[ax],))


def _gather_nd_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """GatherND: data of rank 1-5, ``batch_dims`` mostly 0, ``k`` coordinates per tuple.

    About one example in ten breaks a shape rule (``batch_dims`` out of range, batch dims
    that differ, ``k`` of 0 or beyond ``r - b``); about one in five has an addressed axis of
    64-300 with the other dims at most 2.
    """
    rank = draw(st.integers(1, 5))
    large = draw(_weighted((False, 4), (True, 1)))
    data_shape = _dims(draw, rank, 2 if large else MAX_DIM, BUDGET)
    broken = draw(_weighted((None, 18), ("batch", 1), ("k", 1)))
    b = draw(_weighted((0, 4), (min(1, rank - 1), 2), (min(2, rank - 1), 1)))
    k = draw(st.integers(1, rank - b))
    if large:
        data_shape[b + draw(st.integers(0, k - 1))] = draw(st.integers(*LARGE_AXIS))
    outer = int(np.prod(data_shape[:b], dtype=np.int64))
    middle = _dims(draw, draw(st.integers(0, 2)), MAX_DIM, BUDGET // max(outer, 1))
    batch = list(data_shape[:b])
    if broken == "batch":
        if b and draw(st.booleans()):
            batch[-1] += 1  # batch dims that differ
        else:
            b = draw(st.sampled_from([-1, rank, len(batch) + len(middle) + 1]))
    elif broken == "k":
        k = draw(st.sampled_from([0, rank - b + 1]))
    index_shape = (*batch, *middle, k)
    # The size each coordinate addresses (1 for coordinates beyond data's rank).
    sizes = tuple(data_shape[max(b, 0) + j] if 0 <= b + j < rank else 1 for j in range(k))
    return Shapes(tuple(data_shape), index_shape, {"batch_dims": b}, sizes)


def _openvino_gather_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """OpenVINO Gather: ``batch_dims`` mostly 0, else up to the axis, sometimes negative.

    About one example in twelve breaks a batch rule (batch dims that differ, or a
    ``batch_dims`` above the axis or below ``-rank(indices)``).
    """
    axis, ax, data_shape, _, outer = _axis_and_data(draw)
    b = draw(_weighted((0, 3), (min(1, ax), 1), (ax, 1)))
    batch = list(data_shape[:b])
    extra = _dims(draw, draw(st.integers(0, 2)), MAX_DIM, BUDGET // max(outer, 1))
    q = b + len(extra)
    given = b - q if q and draw(_weighted((False, 3), (True, 1))) else b
    if draw(_weighted((False, 11), (True, 1))):
        if batch and draw(st.booleans()):
            batch[-1] += 1  # batch dims that differ
        else:
            given = draw(st.sampled_from([ax + 1, -q - 1]))
    index_shape = (*batch, *extra)
    return Shapes(data_shape, index_shape, {"axis": axis, "batch_dims": given}, (data_shape[ax],))


def _updates_shape(draw: Draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape``, the one the rule asks for; about one example in fifteen breaks it."""
    if not draw(_weighted((False, 14), (True, 1))):
        return shape
    if shape and draw(st.booleans()):
        d = draw(st.integers(0, len(shape) - 1))
        return (*shape[:d], shape[d] + 1, *shape[d + 1 :])
    return (*shape, 1)  # another rank


def _scatter_elements_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """ScatterElements: GatherElements' shapes; updates of the indices' shape."""
    drawn = _elements_shapes(draw, op)
    return drawn._replace(updates=_updates_shape(draw, drawn.indices))


def _scatter_nd_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """ScatterND: data of rank 1-5, ``k`` coordinates per tuple, few tuples.

    Updates of shape ``indices.shape[:-1] + data.shape[k:]``; about one example in ten
    has a ``k`` of 0 or beyond the rank; about one in five an addressed axis of 64-300
    with the other dims at most 2.
    """
    rank = draw(st.integers(1, 5))
    large = draw(_weighted((False, 4), (True, 1)))
    data_shape = _dims(draw, rank, 2 if large else MAX_DIM, BUDGET)
    k = draw(st.integers(1, rank))
    if large:
        data_shape[draw(st.integers(0, k - 1))] = draw(st.integers(*LARGE_AXIS))
    slice_size = int(np.prod(data_shape[k:], dtype=np.int64))
    middle = _dims(draw, draw(st.integers(0, 2)), MAX_DIM, BUDGET // max(slice_size, 1))
    updates = (*middle, *data_shape[k:])
    if draw(_weighted((False, 18), (True, 1))):
        k = draw(st.sampled_from([0, rank + 1]))
    sizes = tuple(data_shape[j] if j < rank else 1 for j in range(k))
    return Shapes(tuple(data_shape), (*middle, k), {}, sizes, _updates_shape(draw, tuple(updates)))


INT64 = np.iinfo(np.int64)


def as_index_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    """int64 ``values`` as ``dtype``, each value near an int64 limit as near that type's.

    A value beyond the type's range is put at the same distance from its limit (``2**63
    - 1 - k`` becomes ``2**31 - 1 - k`` in int32), so a strategy that draws near the
    limits does so for either index type; every other value is kept.
    """
    info = np.iinfo(dtype)
    if info.bits == 64:
        return values.astype(dtype)
    above, below = values > info.max, values < info.min
    moved = np.where(above, values - (INT64.max - info.max), values)
    moved = np.where(below, values - (INT64.min - info.min), moved)
    return np.clip(moved, info.min, info.max).astype(dtype)


def _tensor_scatter_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """TensorScatter: a cache of rank 2-4 and an update no longer than it along the axis.

    The sequence axis is never the batch axis, and the write indices are mostly valid for
    the mode. About one example in twenty breaks a shape rule (the batch axis, a longer update,
    write indices of another length); a few write indices are negative or, in linear
    mode, too large; about one in four has write indices within ``size + length`` of an
    integer limit.
    """
    rank = draw(st.integers(2, 4))
    cache = _dims(draw, rank, MAX_DIM, BUDGET)
    ax = draw(st.integers(1, rank - 1))
    axis = ax - rank if draw(st.booleans()) else ax
    mode = draw(_weighted(("linear", 3), ("circular", 2)))
    size = cache[ax]
    length = draw(st.integers(0, size))
    broken = draw(_weighted((None, 19), ("batch-axis", 1), ("longer", 1), ("batch", 1)))
    if broken == "batch-axis":
        axis = 0
    elif broken == "longer":
        length = size + 1
    update = [length if d == ax else n for d, n in enumerate(cache)]
    batch = cache[0] + 1 if broken == "batch" else cache[0]
    top = max(size - length, 0) if mode == "linear" else 3 * size + 2
    starts = np.array([draw(st.integers(0, top)) for _ in range(batch)], np.int64)
    for _ in range(draw(_weighted((0, 12), (1, 2))) if batch else 0):
        b = draw(st.integers(0, batch - 1))
        starts[b] = draw(st.sampled_from([-1, -size - 1, size - length + 1, size + 3]))
    # About one example in four has write indices near the integer limits, where a start
    # plus an offset leaves the index type (int32 ones move with it: as_index_dtype).
    for _ in range(draw(_weighted((0, 6), (1, 1), (2, 1))) if batch else 0):
        b = draw(st.integers(0, batch - 1))
        # Half of them close enough that the last offset's position passes the limit.
        far = draw(st.booleans())
        near = draw(st.integers(0, size + length if far else max(length - 2, 0)))
        top = draw(_weighted((True, 3), (False, 1)))
        starts[b] = INT64.max - near if top else INT64.min + near
    return Shapes(
        tuple(cache), (batch,), {"axis": axis, "mode": mode}, (size,), tuple(update), starts
    )


def _scatter_update_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """OpenVINO ScatterUpdate: indices of rank 0-2; updates ``data[:axis] + indices + data[axis+1:]``.

    Index values mostly in ``[0, s-1]``; a few negative or ``>= s`` (errors here).
    """
    axis, ax, data_shape, _, outer = _axis_and_data(draw)
    index_shape = tuple(_dims(draw, draw(st.integers(0, 2)), MAX_DIM, BUDGET // max(outer, 1)))
    size = data_shape[ax]
    rng = np.random.default_rng(draw(st.integers(0, SEED_MAX)))
    values = np.asarray(rng.integers(0, max(size, 1), index_shape, dtype=np.int64))
    flat = values.reshape(-1)
    for _ in range(draw(_weighted((0, 10), (1, 2), (2, 1))) if flat.size else 0):
        position = draw(st.integers(0, flat.size - 1))
        flat[position] = draw(st.sampled_from([-1, -size, -size - 1, size, size + 2]))
    if not size:
        values = np.asarray(values - 1) if draw(st.booleans()) else values  # (none is valid)
    updates = (*data_shape[:ax], *index_shape, *data_shape[ax + 1 :])
    return Shapes(
        data_shape, index_shape, {"axis": axis}, (size,), _updates_shape(draw, updates), values
    )


def _openvino_elements_shapes(draw: Draw, op: _ops.Operator) -> Shapes:
    """OpenVINO ScatterElementsUpdate: ScatterElements' shapes; ``use_init_val`` drawn."""
    drawn = _scatter_elements_shapes(draw, op)
    attributes = {**drawn.attributes, "use_init_val": draw(_weighted((True, 2), (False, 1)))}
    return drawn._replace(attributes=attributes)


#: OpenVINO's reductions by operator, and the version that adds them.
_OPENVINO_REDUCTIONS = {
    "openvino.scatter_elements_update": (ELEMENTS_REDUCTIONS, 12),
    "openvino.scatter_nd_update": (ND_REDUCTIONS, 15),
}


def _reduction(
    draw: Draw, op: _ops.Operator, opset: int | None, dtype: np.dtype[Any], dtype_name: str
) -> str:
    """A scatter's reduction: mostly one the version and type allow, sometimes not.

    Strings take ``none`` and ONNX's ``add`` (concatenation), but fixed-width ones never
    ``add``: the result's width is known only once computed, which Dask refuses.
    """
    every: tuple[str, ...]
    if op.name in _OPENVINO_REDUCTIONS:
        every, since = _OPENVINO_REDUCTIONS[op.name]
        newest = since if opset is None else opset
        allowed = list(every) if newest >= since else ["none"]
        if dtype_name in ("bool", "complex64", "complex128"):
            allowed = [r for r in allowed if r != "mean"]
        unknown = "add"
    else:
        version = 18 if opset is None else opset
        every = tuple(map(str, reductions.SINCE))
        allowed = [str(r) for r, since in reductions.SINCE.items() if since <= version] or ["none"]
        unknown = "sum"
    if dtype_name == "string":
        concatenates = op.name not in _OPENVINO_REDUCTIONS  # (ONNX's add; OpenVINO's none)
        allowed = [r for r in allowed if r == "none" or (r == "add" and concatenates)]
        if dtype.kind in "US":
            allowed, every = ["none"], tuple(r for r in every if r != "add")
    elif dtype_name.startswith("complex"):
        allowed = [r for r in allowed if r not in ("max", "min")]
    if draw(_weighted((True, 19), (False, 1))):
        return str(draw(st.sampled_from(allowed)))
    return str(draw(st.sampled_from([*every, unknown])))


@st.composite
def _examples(
    draw: Draw,
    op: _ops.Operator,
    shapes: Callable[[Draw, _ops.Operator], Shapes],
    dtypes: Sequence[str],
) -> Example:
    """Examples of ``op`` with data of one of ``dtypes``, shaped by ``shapes``.

    One example is one call: operator, data, indices (and a scatter's updates),
    attributes, opset, ``check_bounds``, and how each input is presented (a contiguous
    array, or a transposed / strided / reversed view of a larger array, made later with
    the library's own operations; indices also as a NumPy array or a Python list). Sizes
    are bounded so that the loop oracle stays cheap: data has rank 1-5 and dims 0-7, and
    about one example in five has an axis of 64-300 (where the ONNX reference evaluator's
    GatherElements breaks) with the other dims at most 2. Element values come from a
    drawn seed: counting values, random bit patterns (NaN payloads, signalling NaNs,
    subnormals, -0.0 appear naturally) or a mix of each type's special values.

    Common to every operator: the data type, the opset (about one in ten older than the
    operator), element values, index values (valid, with a few bad ones), views, the
    indices' form and ``check_bounds``. ``shapes`` draws the operator's own part.
    """
    order = [d for d in DTYPES if d in dtypes]
    dtype_name = draw(st.sampled_from(order))
    kind = draw(st.sampled_from(string_kinds())) if dtype_name == "string" else "object"
    dtype = numpy_dtype(dtype_name, kind)

    opset: int | None = None
    if op.default_opset is not None:
        first = op.numbers[0]
        if draw(_weighted((True, 9), (False, 1))):
            opset = draw(st.integers(first, max(first, 22)))
        else:
            opset = draw(st.integers(0, first - 1))

    drawn = shapes(draw, op)
    seed = draw(st.integers(0, SEED_MAX))
    mode = draw(st.sampled_from(("counting", "bits", "specials")))
    data = values(dtype, drawn.data, mode, seed)
    if data.size:
        # A few edge values at drawn places: these shrink, unlike the seeded ones.
        if dtype.kind not in "OUST":
            pool = _specials(dtype)
        else:
            text = [t.encode("utf-8") if dtype.kind == "S" else t for t in _STRINGS]
            pool = np.array(text, dtype=object)
        flat = data.reshape(-1)
        for _ in range(draw(_weighted((0, 3), (1, 1), (2, 1)))):
            position = draw(st.integers(0, flat.size - 1))
            flat[position : position + 1] = pool[draw(st.integers(0, pool.size - 1))]
    index_dtype = draw(st.sampled_from(("int64", "int32")))
    if drawn.index_values is not None:
        indices = as_index_dtype(drawn.index_values, index_dtype)
    else:
        indices = _index_values(draw, drawn.indices, drawn.sizes, index_dtype, seed)
    attributes = dict(drawn.attributes)
    if any(name == "reduction" for name, _ in op.attributes):
        attributes["reduction"] = _reduction(draw, op, opset, dtype, dtype_name)
    updates = None
    if drawn.updates is not None:
        updates_dtype = dtype
        if draw(_weighted((False, 29), (True, 1))):  # another type than data's
            updates_dtype = np.dtype(np.int16 if dtype != np.int16 else np.int8)
        updates = values(updates_dtype, drawn.updates, mode, seed + 3)

    form = draw(_weighted(("array", 4), ("numpy", 1), ("list", 1)))
    if form == "list" and (
        index_dtype != "int64" or np.asarray(indices.tolist()).shape != indices.shape
    ):
        form = "numpy"  # a list of ints is int64 indices, and [] loses the shape of (0, 2)
    return Example(
        op=op.name,
        data=data,
        indices=indices,
        attributes=attributes,
        opset=opset,
        check_bounds=draw(_weighted((True, 9), (False, 1))),
        data_layout=draw(_layout(len(drawn.data))),
        indices_layout=draw(_layout(len(drawn.indices))) if form != "list" else Layout(),
        indices_form=form,
        seed=seed,
        updates=updates,
        updates_layout=(
            draw(_layout(len(drawn.updates))) if drawn.updates is not None else Layout()
        ),
    )


def gather_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """Gather examples (the registry's strategy for it)."""
    return _examples(_ops.GATHER, _gather_shapes, dtypes)


def gather_elements_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """GatherElements examples (the registry's strategy for it)."""
    return _examples(_ops.GATHER_ELEMENTS, _elements_shapes, dtypes)


def openvino_gather_elements_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """OpenVINO GatherElements-6 examples (the registry's strategy for it)."""
    return _examples(_ops.OPENVINO_GATHER_ELEMENTS, _elements_shapes, dtypes)


def gather_nd_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """GatherND examples (the registry's strategy for it)."""
    return _examples(_ops.GATHER_ND, _gather_nd_shapes, dtypes)


def openvino_gather_nd_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """OpenVINO GatherND-5/8 examples (the registry's strategy for it): GatherND's shapes."""
    return _examples(_ops.OPENVINO_GATHER_ND, _gather_nd_shapes, dtypes)


def openvino_gather_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """OpenVINO Gather-7/8 examples (the registry's strategy for it)."""
    return _examples(_ops.OPENVINO_GATHER, _openvino_gather_shapes, dtypes)


def scatter_elements_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """ScatterElements examples (the registry's strategy for it)."""
    return _examples(_ops.SCATTER_ELEMENTS, _scatter_elements_shapes, dtypes)


def scatter_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """Scatter-9/11 examples (the registry's strategy for it): ScatterElements' shapes."""
    return _examples(_ops.SCATTER, _scatter_elements_shapes, dtypes)


def tensor_scatter_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """TensorScatter-24 examples (the registry's strategy for it)."""
    return _examples(_ops.TENSOR_SCATTER, _tensor_scatter_shapes, dtypes)


def scatter_nd_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """ScatterND examples (the registry's strategy for it)."""
    return _examples(_ops.SCATTER_ND, _scatter_nd_shapes, dtypes)


def openvino_scatter_update_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """OpenVINO ScatterUpdate-3 examples (the registry's strategy for it)."""
    return _examples(_ops.OPENVINO_SCATTER_UPDATE, _scatter_update_shapes, dtypes)


def openvino_scatter_elements_update_examples(
    dtypes: Sequence[str],
) -> st.SearchStrategy[Example]:
    """OpenVINO ScatterElementsUpdate-3/12 examples (the registry's strategy for it)."""
    return _examples(_ops.OPENVINO_SCATTER_ELEMENTS_UPDATE, _openvino_elements_shapes, dtypes)


def openvino_scatter_nd_update_examples(dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """OpenVINO ScatterNDUpdate-3/15 examples (the registry's strategy for it)."""
    return _examples(_ops.OPENVINO_SCATTER_ND_UPDATE, _scatter_nd_shapes, dtypes)


def examples(op: str | _ops.Operator, dtypes: Sequence[str]) -> st.SearchStrategy[Example]:
    """Examples of ``op`` (a registry name) with data of one of ``dtypes`` (ONNX names)."""
    strategy: Callable[[Sequence[str]], st.SearchStrategy[Example]] = _ops.get(op).load("strategy")
    return strategy(dtypes)
