"""The operators read literally from the spec: one plain loop over output positions.

It shares no code with :mod:`onnx_gather._spec`: it is what the library is checked against.
In the package for ``python -m onnx_gather check``; ``tests/oracle.py`` re-exports it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np

INDEX_DTYPES = {"int32", "int64"}
TYPES = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128", "string",
}  # fmt: skip


E = TypeVar("E", bound=Exception)


def _rule(kind: type[E], rule: str, *names: object) -> E:
    """``kind(rule)``, the spec's exception for a broken rule, naming what must be named.

    The oracle raises the spec's exception types (IndexError for a bad index value,
    ValueError for bad shapes/axis/opset, TypeError for bad dtypes) but makes no claim
    about the library's message text; its own texts name the rule that failed, as the
    conformance report classes them. No take, take_along_axis or fancy indexing anywhere:
    every output element is read with a tuple of ints, so the oracle stays independent of
    every backend.

    ``names`` (the attribute ``names`` of the exception, as strings) are what the
    library's message must contain: the bad value and the rule's words, as docs/semantics.md
    promises. ``rule`` is the oracle's own short text, which reports class examples by.
    """
    exc = kind(rule)
    cast("Any", exc).names = tuple(str(n) for n in names)
    return exc


def _dtype_name(dtype: np.dtype[Any]) -> str:
    return "string" if dtype.kind in "OUST" else dtype.name


def _version(opset: int, versions: tuple[int, ...]) -> int:
    usable = [v for v in versions if v <= opset]
    if not usable:
        raise _rule(ValueError, "opset older than the operator", f"opset {opset}")
    return usable[-1]


def _openvino_version(opset: Any, versions: tuple[int, ...]) -> int:
    """The version an OpenVINO opset (``version``; None: 8) runs; TypeError for a non-int."""
    opset = 8 if opset is None else opset
    if isinstance(opset, bool) or not isinstance(opset, int | np.integer):
        raise _rule(TypeError, "version type", f"version {opset!r}")
    return _version(int(opset), versions)


def _check_common(data: np.ndarray, indices: np.ndarray, axis: int, bf16: bool) -> int:
    if data.ndim < 1:
        raise _rule(ValueError, "data of rank 0", "rank >= 1")
    allowed = TYPES | ({"bfloat16"} if bf16 else set())
    if _dtype_name(data.dtype) not in allowed:
        raise _rule(TypeError, "data type", _dtype_name(data.dtype))
    if _dtype_name(indices.dtype) not in INDEX_DTYPES:
        raise _rule(TypeError, "indices type", _dtype_name(indices.dtype))
    if not -data.ndim <= axis < data.ndim:
        raise _rule(ValueError, "axis out of range", f"axis {axis}")
    return axis % data.ndim


def _resolve(i: int, size: int) -> int:
    """Index ``i`` of an axis of ``size``: ``[-size, size-1]``, negatives from the end.

    The same range in every version: Gather-1's text says only "within bounds", and ONNX
    Runtime and the reference evaluator count its negatives from the end (torch's exporter
    emits them at opset 9); OpenVINO's CPU runtime does the same for GatherElements-6
    since openvinotoolkit/openvino#30800.
    """
    if -size <= i < 0:
        return i + size
    if 0 <= i < size:
        return i
    raise IndexError(i)


def _clamp(i: int, size: int) -> int | None:
    """Index ``i`` of an axis of ``size``, clamped into it: an unchecked gather's read.

    Valid indices as :func:`_resolve`; below ``-size`` element 0, from ``size`` on the last
    element; None on an empty axis, which has nothing to read (the result keeps zeros).
    """
    if size == 0:
        return None
    return _resolve(min(max(i, -size), size - 1), size)


def fill_value(dtype: np.dtype[Any]) -> Any:
    """JAX's fill for an out-of-range gather (``mode="fill"``): its documented value.

    NaN for floating and complex types (``nan+0j``), the most negative signed integer, the
    largest unsigned one, True.
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "OUST":
        raise TypeError("no fill value for strings")
    if dtype == np.bool_:
        value: Any = True
    elif dtype.kind == "i":
        value = np.iinfo(dtype).min
    elif dtype.kind == "u":
        value = np.iinfo(dtype).max
    else:
        value = np.nan
    return np.asarray(value).astype(dtype)[()]


def _reader(
    check_bounds: bool, fill: bool, dtype: np.dtype[Any]
) -> tuple[Callable[[int, int], int | None], Callable[[tuple[int, ...]], np.ndarray]]:
    """How a gather resolves one index, and the array its output starts as.

    Checked: :func:`_resolve`. Unchecked: :func:`_clamp`, over zeros (what an empty axis
    reads), or, with ``fill`` (JAX), None for every out-of-range index, over JAX's fill.
    """
    if check_bounds:
        return _resolve, lambda shape: np.empty(shape, dtype)
    if not fill:
        return _clamp, lambda shape: np.zeros(shape, dtype)

    def inside(i: int, size: int) -> int | None:
        return _resolve(i, size) if -size <= i < size else None

    return inside, lambda shape: np.full(shape, fill_value(dtype), dtype)


def gather(
    data: Any,
    indices: Any,
    axis: int = 0,
    opset: int = 13,
    check_bounds: bool = True,
    fill: bool = False,
) -> np.ndarray:
    """ONNX Gather-1/11/13.

    ``check_bounds=False``: an out-of-range index reads data's element at the index
    clamped into the axis (nothing on an empty axis: zeros), or with ``fill`` JAX's
    :func:`fill_value`: the library's decided behaviour when unchecked; the spec has none.
    """
    data, indices = np.asarray(data), np.asarray(indices)
    version = _version(opset, (1, 11, 13))
    axis = _check_common(data, indices, axis, version >= 13)
    q = indices.ndim
    size = data.shape[axis]
    read, start = _reader(check_bounds, fill, data.dtype)
    if check_bounds:  # every index is checked, even when the output is empty
        for j in itertools.product(*map(range, indices.shape)):
            _resolve(int(indices[j]), size)
    out_shape = data.shape[:axis] + indices.shape + data.shape[axis + 1 :]
    out = start(out_shape)
    for pos in itertools.product(*map(range, out_shape)):
        j = pos[axis : axis + q]
        k = read(int(indices[j]), size)
        if k is not None:
            out[pos] = data[(*pos[:axis], k, *pos[axis + q :])]
    return out


def gather_elements(
    data: Any,
    indices: Any,
    axis: int = 0,
    opset: int = 13,
    check_bounds: bool = True,
    fill: bool = False,
) -> np.ndarray:
    """ONNX GatherElements-11/13 (``check_bounds`` and ``fill`` as for :func:`gather`)."""
    version = _version(opset, (11, 13))
    return _gather_elements(data, indices, axis, version, False, check_bounds, fill)


def openvino_gather_elements(
    data: Any,
    indices: Any,
    axis: int,
    opset: Any = None,
    check_bounds: bool = True,
    fill: bool = False,
) -> np.ndarray:
    """OpenVINO GatherElements-6 (one version: ``opset`` is ignored)."""
    return _gather_elements(data, indices, axis, 13, True, check_bounds, fill)


def _gather_elements(
    data: Any,
    indices: Any,
    axis: int,
    version: int,
    openvino: bool,
    check_bounds: bool,
    fill: bool,
) -> np.ndarray:
    data, indices = np.asarray(data), np.asarray(indices)
    axis = _check_common(data, indices, axis, version >= 13)
    if indices.ndim != data.ndim:
        raise _rule(
            ValueError, "indices of another rank than data", "same rank", f"rank {indices.ndim}"
        )
    for d in range(data.ndim):
        dim = f"indices dim {d} is {indices.shape[d]}"
        if d != axis and openvino and indices.shape[d] != data.shape[d]:
            rule = "indices dims differ from data off the axis (OpenVINO)"
            raise _rule(ValueError, rule, dim, "equal")
        if d != axis and indices.shape[d] > data.shape[d]:
            raise _rule(ValueError, "indices larger than data off the axis", dim, "larger")
    size = data.shape[axis]
    read, start = _reader(check_bounds, fill, data.dtype)
    if check_bounds:
        for pos in itertools.product(*map(range, indices.shape)):
            _resolve(int(indices[pos]), size)
    out = start(indices.shape)
    for pos in itertools.product(*map(range, indices.shape)):
        k = read(int(indices[pos]), size)
        if k is not None:
            out[pos] = data[(*pos[:axis], k, *pos[axis + 1 :])]
    return out


def gather_nd(
    data: Any,
    indices: Any,
    batch_dims: int = 0,
    opset: int = 13,
    check_bounds: bool = True,
    fill: bool = False,
) -> np.ndarray:
    """ONNX GatherND-11/12/13, one index tuple at a time.

    Checks in the library's order (rank, types, ``batch_dims``, the indices' shape), so
    an example that breaks two rules gets the same exception type from both. Every
    coordinate is checked against the axis it addresses, also when the output is empty.
    ``check_bounds=False``: each coordinate is clamped into its axis (an empty axis reads
    nothing: zeros); with ``fill`` (JAX) a tuple with any bad coordinate reads a slice of
    :func:`fill_value`.
    """
    data, indices = np.asarray(data), np.asarray(indices)
    version = _version(opset, (11, 12, 13))
    if data.ndim < 1:
        raise _rule(ValueError, "data of rank 0", "rank >= 1")
    allowed = TYPES | ({"bfloat16"} if version >= 13 else set())
    if _dtype_name(data.dtype) not in allowed:
        raise _rule(TypeError, "data type", _dtype_name(data.dtype))
    if _dtype_name(indices.dtype) not in INDEX_DTYPES:
        raise _rule(TypeError, "indices type", _dtype_name(indices.dtype))
    if isinstance(batch_dims, bool) or not isinstance(batch_dims, int | np.integer):
        raise _rule(TypeError, "batch_dims type", "batch_dims", f"got {batch_dims}")
    b = int(batch_dims)
    if b != 0 and version < 12:
        raise _rule(ValueError, "batch_dims before version 12", f"batch_dims {b}", "version 12")
    r, q = data.ndim, indices.ndim
    if q < 1:
        raise _rule(ValueError, "indices of rank 0", "rank >= 1")
    if not 0 <= b < min(q, r):
        raise _rule(ValueError, "batch_dims out of range", f"batch_dims {b} is out of range")
    if data.shape[:b] != indices.shape[:b]:
        raise _rule(ValueError, "batch dims of data and indices differ", f"batch_dims={b}")
    k = indices.shape[-1]
    if not 1 <= k <= r - b:
        raise _rule(ValueError, "indices.shape[-1] out of range", f"indices.shape[-1] is {k}")
    tuples = list(itertools.product(*map(range, indices.shape[:-1])))
    read, start = _reader(check_bounds, fill, data.dtype)
    if check_bounds:
        for pos in tuples:
            for j in range(k):
                _resolve(int(indices[(*pos, j)]), data.shape[b + j])
    out = start(indices.shape[:-1] + data.shape[b + k :])
    for pos in tuples:
        coordinate = tuple(read(int(indices[(*pos, j)]), data.shape[b + j]) for j in range(k))
        if None in coordinate:
            continue  # nothing to read: the slice keeps its zeros or fill
        # data[batch, coordinate] is a slice of the dims after b + k: element by element.
        for rest in itertools.product(*map(range, data.shape[b + k :])):
            out[(*pos, *rest)] = data[(*pos[:b], *coordinate, *rest)]
    return out


def openvino_gather_nd(
    data: Any,
    indices: Any,
    batch_dims: int = 0,
    opset: Any = 8,
    check_bounds: bool = True,
    fill: bool = False,
) -> np.ndarray:
    """OpenVINO GatherND-5/8: GatherND-13's values; version 5 flattens the batch dims."""
    version = _openvino_version(opset, (5, 8))
    out = gather_nd(data, indices, batch_dims, 13, check_bounds, fill)
    b = int(batch_dims)
    if version < 8 and b:
        out = out.reshape((int(np.prod(out.shape[:b], dtype=np.int64)), *out.shape[b:]))
    return out


def openvino_gather(
    data: Any,
    indices: Any,
    axis: int,
    batch_dims: int = 0,
    opset: Any = 8,
    check_bounds: bool = True,
) -> np.ndarray:
    """OpenVINO Gather-7/8, read from the texts' formula element by element.

    Indices valid in ``[-s, s-1]`` (8) or ``[0, s-1]`` (7); any other reads zero (an empty
    string for strings), checked or not: the operator defines that value.
    """
    data, indices = np.asarray(data), np.asarray(indices)
    version = _openvino_version(opset, (7, 8))
    axis = _check_common(data, indices, axis, True)
    q = indices.ndim
    if isinstance(batch_dims, bool) or not isinstance(batch_dims, int | np.integer):
        raise _rule(TypeError, "batch_dims type", f"batch_dims {batch_dims!r}")
    if not -q <= batch_dims <= q:
        raise _rule(ValueError, "batch_dims out of range", f"batch_dims {batch_dims}")
    b = int(batch_dims) + q if batch_dims < 0 else int(batch_dims)
    if b > axis:
        raise _rule(ValueError, "batch_dims above axis", f"batch_dims {batch_dims}", "axis")
    if indices.shape[:b] != data.shape[:b]:
        raise _rule(ValueError, "batch dims differ", "batch_dims")
    size = data.shape[axis]
    low = -size if version >= 8 else 0
    out_shape = data.shape[:axis] + indices.shape[b:] + data.shape[axis + 1 :]
    zero = "" if data.dtype.kind in "OUST" else 0
    out = np.full(out_shape, zero, dtype=data.dtype)
    m = q - b  # the indices' own dims in the output
    for pos in itertools.product(*map(range, out_shape)):
        i = int(indices[(*pos[:b], *pos[axis : axis + m])])
        if low <= i < size:
            out[pos] = data[(*pos[:axis], i % size, *pos[axis + m :])]
    return out


#: Each reduction and the version of the scatters that adds it.
#: max and min from 16 too, as decided (_spec/reductions.py): the exported models ONNX
#: Runtime and the reference evaluator run.
_REDUCTIONS = {"none": 11, "add": 16, "mul": 16, "max": 16, "min": 16}


def _check_scatter(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, version: int
) -> None:
    """The scatters' type rules, in the library's order (types, then the reduction)."""
    if data.ndim < 1:
        raise _rule(ValueError, "data of rank 0", "rank >= 1")
    allowed = TYPES | ({"bfloat16"} if version >= 13 else set())
    name = _dtype_name(data.dtype)
    if name not in allowed:
        raise _rule(TypeError, "data type", name)
    if _dtype_name(indices.dtype) not in INDEX_DTYPES:
        raise _rule(TypeError, "indices type", _dtype_name(indices.dtype))
    if _dtype_name(updates.dtype) != name:
        rule = "updates of another type than data"
        raise _rule(TypeError, rule, "updates", name, _dtype_name(updates.dtype))


def _check_reduction(reduction: Any, version: int, data: np.ndarray) -> None:
    if not isinstance(reduction, str):
        raise _rule(TypeError, "reduction type", "reduction", f"got {reduction}")
    named = f"reduction '{reduction}'"
    if reduction not in _REDUCTIONS or _REDUCTIONS[reduction] > version:
        raise _rule(ValueError, "reduction unknown or newer than the version", named)
    name = _dtype_name(data.dtype)
    if reduction not in ("none", "add") and name == "string":
        raise _rule(TypeError, "a reduction of strings", named, "string")
    if reduction in ("max", "min") and name.startswith("complex"):
        raise _rule(TypeError, "max/min of complex numbers", named, name)


def _one(x: Any, dtype: np.dtype[Any]) -> np.ndarray:
    return np.asarray([x], dtype=dtype)


def _combine(reduction: str, old: Any, new: Any, dtype: np.dtype[Any]) -> Any:
    """``f(old, new)`` for one element, computed and rounded in ``dtype``.

    One-element arrays, not scalars: array arithmetic wraps integers without a warning,
    and rounds float16 and bfloat16 per operation.
    """
    if reduction == "none":
        return new
    if dtype.kind in "OUST":  # (add: concatenation, the only reduction strings take)
        return old + new
    a, b = _one(old, dtype), _one(new, dtype)
    if dtype == np.bool_:
        return bool(a[0] or b[0]) if reduction in ("add", "max") else bool(a[0] and b[0])
    with np.errstate(all="ignore"):  # NaN, infinity and wrap-around are results here
        if reduction == "add":
            return _canonical(np.add(a, b))[0]
        if reduction == "mul":
            return _canonical(_multiply(a, b))[0]
        return _ordered(reduction, a, b)


def _multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a * b``; complex numbers as ``(ac - bd) + (ad + bc)i``, every operation rounded.

    Not NumPy's complex multiply: its SIMD loops fuse a multiply and an add where the CPU
    has FMA (AVX-512 here), which rounds once where the definition rounds twice.
    """
    if a.dtype.kind != "c":
        product: np.ndarray = np.multiply(a, b)
        return product
    out = np.empty_like(a)
    ar, ai, br, bi = a.real.copy(), a.imag.copy(), b.real.copy(), b.imag.copy()
    out.real = np.subtract(np.multiply(ar, br), np.multiply(ai, bi))
    out.imag = np.add(np.multiply(ar, bi), np.multiply(ai, br))
    return out


def _ordered(reduction: str, a: np.ndarray, b: np.ndarray) -> Any:
    """Max or min of one-element arrays ``a`` (the element's value) and ``b`` (the update)."""
    dtype = a.dtype
    if dtype.kind in "iu":
        return (a if (a[0] >= b[0]) == (reduction == "max") else b)[0]
    # IEEE 754-2019 maximum/minimum: NaN wins (the first one: old, if it is one), and
    # -0.0 < +0.0.
    if np.isnan(a[0]):
        return a[0]
    if np.isnan(b[0]):
        return b[0]
    if a[0] == b[0]:
        negative = bool(np.signbit(a[0]))
        keep_old = not negative if reduction == "max" else negative
        return a[0] if keep_old else b[0]
    bigger = bool(a[0] > b[0])
    return (a if bigger == (reduction == "max") else b)[0]


def _canonical(x: np.ndarray) -> np.ndarray:
    """A NaN result of add or mul as the canonical quiet NaN (each part of a complex)."""
    if x.dtype.kind == "c":
        out = x.copy()
        out.real, out.imag = _canonical(x.real.copy()), _canonical(x.imag.copy())
        return out
    if x.dtype.kind in "biu" or not np.isnan(x).any():
        return x
    return np.where(np.isnan(x), np.asarray(np.nan, x.dtype), x)


def _result(data: np.ndarray, updates: np.ndarray, reduction: str = "none") -> np.ndarray:
    """A copy of data to write into; fixed-width strings wide enough for every update.

    Strings that ``add`` concatenates are Python objects while they grow
    (:func:`_strings_back` gives them data's kind).
    """
    if reduction == "add" and data.dtype.kind in "OUST":
        return data.astype(object)
    if data.dtype.kind in "US" and updates.dtype.kind in "US":
        return data.astype(np.result_type(data.dtype, updates.dtype))
    return data.copy()


def _strings_back(out: np.ndarray, data: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """Concatenated strings (objects) in data's kind; anything else as it is.

    Fixed width as wide as the widest of data's, the updates' and the longest result.
    """
    if out.dtype == data.dtype or data.dtype.kind not in "UST":
        return out
    if data.dtype.kind == "T":
        return out.astype(data.dtype)
    longest = max((len(x) for x in out.reshape(-1)), default=0)
    fits = np.dtype(f"{data.dtype.kind}{max(longest, 1)}")
    wide = np.result_type(data.dtype, updates.dtype) if updates.dtype.kind in "US" else data.dtype
    return out.astype(np.result_type(wide, fits))


def scatter_elements(
    data: Any,
    indices: Any,
    updates: Any,
    axis: int = 0,
    reduction: str = "none",
    opset: int = 18,
    check_bounds: bool = True,
) -> np.ndarray:
    """ONNX ScatterElements-11/13/16/18: one update at a time, in C order of its position.

    ``check_bounds=False``: an update whose index is out of range is dropped (the library's
    decided behaviour when unchecked; the spec has none).
    """
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    version = _version(opset, (11, 13, 16, 18))
    _check_scatter(data, indices, updates, version)
    if not -data.ndim <= axis < data.ndim:
        raise _rule(ValueError, "axis out of range", f"axis {axis}")
    axis %= data.ndim
    _check_reduction(reduction, version, data)
    if indices.ndim != data.ndim:
        raise _rule(
            ValueError, "indices of another rank than data", "same rank", f"rank {indices.ndim}"
        )
    if updates.shape != indices.shape:
        rule = "updates of another shape than indices"
        raise _rule(ValueError, rule, "updates", str(updates.shape))
    for d in range(data.ndim):
        if d != axis and indices.shape[d] > data.shape[d]:
            dim = f"indices dim {d} is {indices.shape[d]}"
            raise _rule(ValueError, "indices larger than data off the axis", dim, "larger")
    size = data.shape[axis]
    positions = list(itertools.product(*map(range, indices.shape)))
    if check_bounds:
        for pos in positions:  # every index is checked, also when there is nothing to write
            _resolve(int(indices[pos]), size)
    else:
        positions = [p for p in positions if -size <= int(indices[p]) < size]
    out = _result(data, updates, reduction)
    for pos in positions:
        target = (*pos[:axis], _resolve(int(indices[pos]), size), *pos[axis + 1 :])
        out[target] = _combine(reduction, out[target], updates[pos], data.dtype)
    return _strings_back(out, data, updates)


def scatter_nd(
    data: Any,
    indices: Any,
    updates: Any,
    reduction: str = "none",
    opset: int = 18,
    check_bounds: bool = True,
) -> np.ndarray:
    """ONNX ScatterND-11/13/16/18: the spec's loop over index tuples, element by element.

    ``check_bounds=False``: an index tuple with a coordinate out of range is dropped.
    """
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    version = _version(opset, (11, 13, 16, 18))
    _check_scatter(data, indices, updates, version)
    _check_reduction(reduction, version, data)
    r, q = data.ndim, indices.ndim
    if q < 1:
        raise _rule(ValueError, "indices of rank 0", "rank >= 1")
    k = indices.shape[-1]
    # (0: each tuple addresses the whole of data; the text bounds k from above only, and
    # ONNX Runtime and the reference evaluator run it)
    if not 0 <= k <= r:
        raise _rule(ValueError, "indices.shape[-1] out of range", f"indices.shape[-1] is {k}")
    if updates.shape != indices.shape[:-1] + data.shape[k:]:
        raise _rule(ValueError, "updates of the wrong shape", "updates", str(updates.shape))
    tuples = list(itertools.product(*map(range, indices.shape[:-1])))

    def valid(pos: tuple[int, ...]) -> bool:
        return all(-data.shape[j] <= int(indices[(*pos, j)]) < data.shape[j] for j in range(k))

    if check_bounds:
        for pos in tuples:
            for j in range(k):
                _resolve(int(indices[(*pos, j)]), data.shape[j])
    else:
        tuples = [pos for pos in tuples if valid(pos)]
    out = _result(data, updates, reduction)
    for pos in tuples:
        coordinate = tuple(_resolve(int(indices[(*pos, j)]), data.shape[j]) for j in range(k))
        for rest in itertools.product(*map(range, data.shape[k:])):
            target = (*coordinate, *rest)
            out[target] = _combine(reduction, out[target], updates[(*pos, *rest)], data.dtype)
    return _strings_back(out, data, updates)


def _ov_version(opset: Any, versions: tuple[int, ...]) -> int:
    """The version an OpenVINO opset runs (None: the newest); TypeError for a non-int."""
    opset = versions[-1] if opset is None else opset
    if isinstance(opset, bool) or not isinstance(opset, int | np.integer):
        raise _rule(TypeError, "version type", f"version {opset!r}")
    return _version(int(opset), versions)


#: OpenVINO's reductions by ONNX's names, where they are the same arithmetic.
_OV_AS_ONNX = {"sum": "add", "prod": "mul", "min": "min", "max": "max"}


def _ov_reduction(
    reduction: Any, allowed: tuple[str, ...], since: int, version: int, data: np.ndarray
) -> str:
    if not isinstance(reduction, str):
        raise _rule(TypeError, "reduction type", "reduction", f"got {reduction}")
    named = f"reduction '{reduction}'"
    if reduction not in allowed or (reduction != "none" and version < since):
        raise _rule(ValueError, "reduction unknown or newer than the version", named)
    name = _dtype_name(data.dtype)
    if reduction != "none" and name == "string":
        raise _rule(TypeError, "a reduction of strings", named, "string")
    if reduction in ("max", "min") and name.startswith("complex"):
        raise _rule(TypeError, "max/min of complex numbers", named, name)
    if reduction == "mean" and (name == "bool" or name.startswith("complex")):
        raise _rule(TypeError, "mean of bool or complex numbers", "'mean'", name)
    return reduction


def _ov_identity(reduction: str, dtype: np.dtype[Any]) -> Any:
    """Where a touched element starts with ``use_init_val=False``: the reduction's identity."""
    if reduction in ("sum", "sub", "mean"):
        return np.zeros((), dtype)[()]
    if reduction == "prod":
        return np.ones((), dtype)[()]
    biggest = reduction == "min"
    if dtype == np.bool_:
        return biggest
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if biggest else info.min
    return np.asarray(np.inf if biggest else -np.inf, dtype)[()]


def _ov_apply(
    out: np.ndarray, writes: list[tuple[tuple[int, ...], Any]], reduction: str, use_init_val: bool
) -> np.ndarray:
    """OpenVINO's scatter of ``writes`` (target, update) into ``out``, one at a time in order."""
    dtype = out.dtype
    if reduction == "none":
        for target, value in writes:
            out[target] = value
        return out
    counts: dict[tuple[int, ...], int] = {}
    for target, _ in writes:
        counts[target] = counts.get(target, 0) + 1
    if not use_init_val:
        for target in counts:
            out[target] = _ov_identity(reduction, dtype)
    for target, value in writes:
        if reduction == "sub":
            out[target] = _subtract(out[target], value, dtype)
        else:
            onnx = "add" if reduction == "mean" else _OV_AS_ONNX[reduction]
            out[target] = _combine(onnx, out[target], value, dtype)
    if reduction == "mean":
        for target, count in counts.items():
            out[target] = _divide(out[target], count + int(use_init_val), dtype)
    return out


def _subtract(old: Any, new: Any, dtype: np.dtype[Any]) -> Any:
    """``old - new`` in ``dtype``; bool: XOR."""
    if dtype == np.bool_:
        return bool(old) != bool(new)
    with np.errstate(all="ignore"):
        return _canonical(np.subtract(_one(old, dtype), _one(new, dtype)))[0]


def _divide(total: Any, n: int, dtype: np.dtype[Any]) -> Any:
    """``total / n`` in ``dtype``: integers rounded down (toward -inf), floats to nearest.

    Python's float division is IEEE double's, correctly rounded; rounded again to a
    narrower float it is the quotient correctly rounded (double holds more than twice
    their bits plus two).
    """
    if dtype.kind in "iu":
        return np.asarray(int(total) // n).astype(dtype)[()]
    return _canonical(np.asarray([float(total) / n]).astype(dtype))[0]


def openvino_scatter_update(
    data: Any, indices: Any, updates: Any, axis: int, opset: Any = None, check_bounds: bool = True
) -> np.ndarray:
    """OpenVINO ScatterUpdate-3: ``out[p, indices[i], q] = updates[p, i, q]``, in C order.

    Indices in ``[0, s-1]``: a negative one is an IndexError (the text and the runtime);
    unchecked, an index outside writes nothing.
    """
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    _ov_version(opset, (3,))
    _check_scatter(data, indices, updates, 13)  # (the ONNX scatters' type rules, bfloat16 too)
    if not -data.ndim <= axis < data.ndim:
        raise _rule(ValueError, "axis out of range", f"axis {axis}")
    axis %= data.ndim
    if updates.shape != data.shape[:axis] + indices.shape + data.shape[axis + 1 :]:
        raise _rule(ValueError, "updates of the wrong shape", "updates", str(updates.shape))
    size = data.shape[axis]
    positions = list(itertools.product(*map(range, indices.shape)))
    if check_bounds:
        for pos in positions:
            i = int(indices[pos])
            if not 0 <= i < size:
                raise _rule(IndexError, "index out of range", f"index {i}")
    out = _result(data, updates)
    for pos in positions:
        i = int(indices[pos])
        if not 0 <= i < size:
            continue
        for before in itertools.product(*map(range, data.shape[:axis])):
            for after in itertools.product(*map(range, data.shape[axis + 1 :])):
                out[(*before, i, *after)] = updates[(*before, *pos, *after)]
    return out


def openvino_scatter_elements_update(
    data: Any,
    indices: Any,
    updates: Any,
    axis: int,
    reduction: str = "none",
    use_init_val: bool = True,
    opset: Any = None,
    check_bounds: bool = True,
) -> np.ndarray:
    """OpenVINO ScatterElementsUpdate-3/12: ScatterElements' targets, OpenVINO's reductions.

    Negative indices count from the end in both versions (the runtime).
    """
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    version = _ov_version(opset, (3, 12))
    reduction = _ov_reduction(
        reduction, ("none", "sum", "prod", "min", "max", "mean"), 12, version, data
    )
    if not isinstance(use_init_val, bool | np.bool_):
        raise _rule(
            TypeError, "use_init_val type", f"use_init_val must be a bool, got {use_init_val!r}"
        )
    if not use_init_val and version < 12:
        raise _rule(ValueError, "use_init_val newer than the version", "use_init_val=False")
    # ScatterElements-18's checks and targets, with no reduction: each write kept in order.
    out = scatter_elements(data, indices, updates, axis, "none", 18, check_bounds)
    if reduction == "none":
        return out
    axis %= data.ndim
    size = data.shape[axis]
    writes = []
    for pos in itertools.product(*map(range, indices.shape)):
        i = int(indices[pos])
        if -size <= i < size:
            writes.append(((*pos[:axis], _resolve(i, size), *pos[axis + 1 :]), updates[pos]))
    return _ov_apply(_result(data, updates), writes, reduction, bool(use_init_val))


def openvino_scatter_nd_update(
    data: Any,
    indices: Any,
    updates: Any,
    reduction: str = "none",
    opset: Any = None,
    check_bounds: bool = True,
) -> np.ndarray:
    """OpenVINO ScatterNDUpdate-3/15: ScatterND's targets, OpenVINO's reductions (``sub`` too).

    Negative coordinates count from the end in both versions (the runtime).
    """
    data, indices, updates = np.asarray(data), np.asarray(indices), np.asarray(updates)
    version = _ov_version(opset, (3, 15))
    reduction = _ov_reduction(
        reduction, ("none", "sum", "sub", "prod", "min", "max"), 15, version, data
    )
    if indices.ndim and indices.shape[-1] == 0:  # (ONNX ScatterND's alone: DESIGN.md)
        raise _rule(ValueError, "index tuples of length 0", "indices.shape[-1] is 0")
    out = scatter_nd(data, indices, updates, "none", 18, check_bounds)
    if reduction == "none":
        return out
    k = indices.shape[-1]
    writes = []
    for pos in itertools.product(*map(range, indices.shape[:-1])):
        coordinate = [int(indices[(*pos, j)]) for j in range(k)]
        if not all(-data.shape[j] <= c < data.shape[j] for j, c in enumerate(coordinate)):
            continue
        at = tuple(_resolve(c, data.shape[j]) for j, c in enumerate(coordinate))
        for rest in itertools.product(*map(range, data.shape[k:])):
            writes.append(((*at, *rest), updates[(*pos, *rest)]))
    return _ov_apply(_result(data, updates), writes, reduction, True)


def _scatter_update_range(
    data_shape: Sequence[int], updates_shape: Sequence[int], attributes: dict[str, Any]
) -> tuple[int, float]:
    """ScatterUpdate's valid indices: ``[0, size - 1]``."""
    return 0, int(data_shape[attributes["axis"] % len(data_shape)]) - 1


def _size_along_axis(data_shape: Sequence[int], attributes: dict[str, Any], position: Any) -> int:
    return int(data_shape[attributes.get("axis", 0) % len(data_shape)])


def scatter(
    data: Any,
    indices: Any,
    updates: Any,
    axis: int = 0,
    opset: int = 11,
    check_bounds: bool = True,
) -> np.ndarray:
    """ONNX Scatter-9/11 (deprecated): ScatterElements-11's loop, as Scatter-11's text says.

    Neither version lists bfloat16; both count negatives from the end (DESIGN.md).
    """
    _version(opset, (9, 11))
    # (ScatterElements-11 lists no bfloat16 either.)
    return scatter_elements(data, indices, updates, axis, "none", 11, check_bounds)


def tensor_scatter(
    past_cache: Any,
    update: Any,
    write_indices: Any = None,
    axis: int = -2,
    mode: str = "linear",
    opset: int = 24,
    check_bounds: bool = True,
) -> np.ndarray:
    """ONNX TensorScatter-24: the text's pseudocode loop, read literally.

    The write-index rule is ONNX Runtime's (DESIGN.md): a negative index is an error in
    both modes, and in linear mode so is ``write_indices[b] + sequence_length >
    max_sequence_length``; circular mode wraps the sequence position only. Unchecked, a
    write outside the axis (every write of a negative index) is dropped.
    """
    _version(opset, (24,))
    cache, update = np.asarray(past_cache), np.asarray(update)
    if cache.ndim < 1:
        raise _rule(ValueError, "data of rank 0", "rank >= 1")
    name = _dtype_name(cache.dtype)
    if name not in TYPES | {"bfloat16"}:
        raise _rule(TypeError, "data type", name)
    starts = np.zeros(cache.shape[0], np.int64) if write_indices is None else write_indices
    starts = np.asarray(starts)
    if _dtype_name(starts.dtype) not in INDEX_DTYPES:
        raise _rule(TypeError, "indices type", _dtype_name(starts.dtype))
    if _dtype_name(update.dtype) != name:
        rule = "update of another type than the cache"
        raise _rule(TypeError, rule, "update", name, _dtype_name(update.dtype))
    if not -cache.ndim <= axis < cache.ndim:
        raise _rule(ValueError, "axis out of range", f"axis {axis}")
    axis %= cache.ndim
    if axis == 0:
        raise _rule(ValueError, "the batch axis", "batch axis 0")
    if not isinstance(mode, str):
        raise _rule(TypeError, "mode type", "mode must be a str")
    if mode not in ("linear", "circular"):
        raise _rule(ValueError, "unknown mode", f"mode {mode!r}")
    off_axis = [d for d in range(cache.ndim) if d != axis]
    if update.ndim != cache.ndim or any(update.shape[d] != cache.shape[d] for d in off_axis):
        raise _rule(ValueError, "update of another shape", "update must have past_cache's shape")
    size, length = cache.shape[axis], update.shape[axis]
    if length > size:
        raise _rule(ValueError, "update longer than the cache", "longer than")
    if starts.shape != (cache.shape[0],):
        raise _rule(ValueError, "write indices' shape", "write_indices must have shape")
    if check_bounds:
        for b in range(starts.shape[0]):
            start = int(starts[b])
            if start < 0 or (mode == "linear" and start + length > size):
                raise _rule(IndexError, "write index out of range", f"index {start}")
    out = _result(cache, update)
    for prefix in itertools.product(*map(range, cache.shape[:axis])):
        start = int(starts[prefix[0]])
        for s in range(length):
            position = start + s
            if mode == "circular":
                if start < 0:
                    continue
                position %= size
            if not 0 <= position < size:
                continue
            out[(*prefix, position)] = update[(*prefix, s)]
    return out


def _tensor_scatter_range(
    data_shape: Sequence[int], updates_shape: Sequence[int], attributes: dict[str, Any]
) -> tuple[int, float]:
    """The valid write indices: ``[0, size - length]`` in linear mode, ``[0, inf)`` circular."""
    axis = attributes.get("axis", -2) % len(data_shape)
    if attributes.get("mode", "linear") == "circular":
        return 0, float("inf")
    return 0, int(data_shape[axis]) - int(updates_shape[axis])


class Oracle(NamedTuple):
    """One operator read from its spec: the registry's ``oracle`` names one.

    ``run(data, indices, opset=..., **attributes)`` computes it (or raises the spec's
    exception type); ``size_at(data_shape, attributes, position)`` is the size of the axis
    the index at ``position`` of ``indices`` addresses, which an IndexError's message
    must name a value outside of.
    """

    run: Callable[..., np.ndarray]
    size_at: Callable[[Sequence[int], dict[str, Any], Any], int]
    #: Whether an unchecked out-of-range index drops its update (the scatters:
    #: ``run(..., check_bounds=False)``).
    drops: bool = False
    #: Whether an unchecked out-of-range index reads the element at the index clamped into
    #: its axis (the gathers: ``run(..., check_bounds=False)``; JAX's fill value with
    #: ``fill=True``).
    clamps: bool = False
    #: ``valid(data_shape, updates_shape, attributes) -> (lo, hi)``, the valid index values,
    #: where they are not ``[-size, size - 1]`` (TensorScatter's write indices).
    valid: Callable[[Sequence[int], Sequence[int], dict[str, Any]], tuple[int, float]] | None = None


def _size_of_coordinate(
    data_shape: Sequence[int], attributes: dict[str, Any], position: Any
) -> int:
    return int(data_shape[attributes.get("batch_dims", 0) + position[-1]])


GATHER = Oracle(gather, _size_along_axis, clamps=True)
GATHER_ELEMENTS = Oracle(gather_elements, _size_along_axis, clamps=True)
OPENVINO_GATHER_ELEMENTS = Oracle(openvino_gather_elements, _size_along_axis, clamps=True)
GATHER_ND = Oracle(gather_nd, _size_of_coordinate, clamps=True)
OPENVINO_GATHER_ND = Oracle(openvino_gather_nd, _size_of_coordinate, clamps=True)
#: (Neither clamps nor drops: an invalid index reads zero, checked or not.)
OPENVINO_GATHER = Oracle(openvino_gather, _size_along_axis)
SCATTER_ELEMENTS = Oracle(scatter_elements, _size_along_axis, drops=True)
SCATTER = Oracle(scatter, _size_along_axis, drops=True)
TENSOR_SCATTER = Oracle(tensor_scatter, _size_along_axis, drops=True, valid=_tensor_scatter_range)
SCATTER_ND = Oracle(scatter_nd, _size_of_coordinate, drops=True)
OPENVINO_SCATTER_UPDATE = Oracle(
    openvino_scatter_update, _size_along_axis, drops=True, valid=_scatter_update_range
)
OPENVINO_SCATTER_ELEMENTS_UPDATE = Oracle(
    openvino_scatter_elements_update, _size_along_axis, drops=True
)
OPENVINO_SCATTER_ND_UPDATE = Oracle(openvino_scatter_nd_update, _size_of_coordinate, drops=True)
