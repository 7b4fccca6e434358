"""ScatterElements and ScatterND beyond the shared case table: ``out=``, a random sweep.

The scatters' cases (``scatter_cases.py``) run with every other case in test_cases.py;
here: ``out=`` on every library that can write, a 400-call sweep bit-identical to the loop
oracle on every library and route, views and layouts, threaded calls, all 16-bit floats,
and the peers (ONNX Runtime, the reference evaluator).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np
import pytest
from cases import Case
from helpers import applies, assert_identical, oracle_answer, without_compiled_kernel
from libs import BFLOAT16, LIBS, Library
from openvino_scatter_cases import OPENVINO_SCATTER_CASES
from scatter_cases import F32, SCATTER_CASES, a, scatter

import onnx_gather as og
from onnx_gather import _ops
from onnx_gather._backends import _numpy as _numpy_backend
from onnx_gather._conformance import onnx_peers
from onnx_gather._conformance.runner import Outcome, difference, mismatch
from onnx_gather._conformance.strategies import Example, numpy_dtype

SE, SN, SC = _ops.SCATTER_ELEMENTS, _ops.SCATTER_ND, _ops.SCATTER
SU = _ops.OPENVINO_SCATTER_UPDATE
SEU = _ops.OPENVINO_SCATTER_ELEMENTS_UPDATE
SNDU = _ops.OPENVINO_SCATTER_ND_UPDATE
#: Every scatter that reads updates at indices (TensorScatter's own out= tests are in
#: test_tensor_scatter.py): ONNX's and OpenVINO's.
ALL_CASES = SCATTER_CASES + OPENVINO_SCATTER_CASES
#: Tests of NumPy's kernels, the oracle or the peers alone: run in NumPy's session only.
NUMPY_ONLY = pytest.mark.backend("numpy")


def _run(lib: Library, case: Case, out: Any = None) -> Any:
    """The case through its public function on ``lib``, into ``out`` where given."""
    arrays = _ops.get(case.op).in_order(
        lib.asarray(case.data), lib.indices(case.indices), lib.asarray(case.updates)
    )
    extra = {} if out is None else {"out": out}
    return _ops.call(
        case.op, *arrays, opset=case.opset, check_bounds=case.check_bounds, **case.attributes,
        **extra,
    )  # fmt: skip


def _attribute_values(case: Case) -> tuple[Any, ...]:
    return tuple(case.attributes[name] for name, _ in _ops.get(case.op).attributes)


PARAMS = [
    pytest.param(lib, case, id=f"{lib.name}-{case.id}")
    for lib in LIBS
    for case in ALL_CASES
    if applies(lib, case)
]


@NUMPY_ONLY
@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.raises is None], ids=lambda c: c.id)
def test_inputs_are_not_modified(case: Case) -> None:
    data, indices, updates = (x.copy() for x in case.arrays)
    result = _ops.call(
        case.op, data, indices, updates, opset=case.opset, check_bounds=case.check_bounds,
        **case.attributes,
    )  # fmt: skip
    assert not np.shares_memory(result, data)
    for given, kept in zip((data, indices, updates), case.arrays, strict=True):
        assert_identical(given, kept)


def _wider_than_data(case: Case) -> bool:
    """Whether the result's strings are wider than data's (an out of data's dtype is refused)."""
    data, updates = case.data.dtype, np.asarray(case.updates).dtype
    return data.kind in "SU" and updates.kind in "SU" and updates.itemsize > data.itemsize


#: Libraries whose arrays a scatter can write into (JAX's and Dask's are immutable); not
#: the cases whose result is wider than data (strings: test_out_on_a_strided_view_...).
WRITABLE = [
    p
    for p in PARAMS
    if p.values[1].raises is None
    and p.values[0].name not in ("jax", "dask")
    and not _wider_than_data(p.values[1])
]


@pytest.mark.parametrize(("lib_", "case"), WRITABLE)
def test_out_receives_the_result(lib_: Library, case: Case) -> None:
    """``out=`` returns ``out`` holding the result; ``out=data`` updates data itself."""
    want = oracle_answer(case)
    out = lib_.asarray(
        np.zeros_like(case.data) if case.data.dtype.kind != "O" else case.data.copy()
    )
    assert _run(lib_, case, out) is out
    assert_identical(lib_.to_numpy(out), want)
    # A copy: array-api-strict's asarray shares the case table's own NumPy memory, which
    # out=data then writes into (and every later test of the case would read).
    data = lib_.asarray(case.data.copy())
    arrays = _ops.get(case.op).in_order(
        data, lib_.indices(case.indices), lib_.asarray(case.updates)
    )
    result = _ops.call(
        case.op, *arrays, opset=case.opset, check_bounds=case.check_bounds, out=data,
        **case.attributes,
    )  # fmt: skip
    assert result is data
    assert_identical(lib_.to_numpy(data), want)


IMMUTABLE = {
    "jax": r"JAX arrays are immutable.*donate_argnums",
    "dask": r"dask arrays are lazy and immutable: out= cannot write into one",
}


@pytest.mark.parametrize("lib_", [lib for lib in LIBS if lib.name in IMMUTABLE],
                         ids=lambda lib: lib.name)  # fmt: skip
def test_out_of_an_immutable_library_is_a_type_error(lib_: Library) -> None:
    data = lib_.asarray(np.zeros(3, F32))
    with pytest.raises(TypeError, match=IMMUTABLE[lib_.name]):
        og.scatter_elements(data, lib_.indices(a([1])), lib_.asarray(a([1.0], F32)), out=data)


@NUMPY_ONLY
def test_out_on_a_strided_view_and_its_errors() -> None:
    base = np.zeros((4, 6), np.int32)
    view = base[::2, ::2]  # (2, 3), not contiguous
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    result = og.scatter_elements(data, a([[1, 0, 1]]), a([[7, 8, 9]], np.int32), out=view)
    assert result is view
    assert_identical(base[::2, ::2], a([[0, 8, 2], [7, 4, 9]], np.int32))
    assert not base[1::2].any()
    assert not base[:, 1::2].any()
    args = (data, a([[0]]), a([[1]], np.int32))
    with pytest.raises(ValueError, match=r"out has shape \(3, 2\), the result has \(2, 3\)"):
        og.scatter_elements(*args, out=np.zeros((3, 2), np.int32))
    with pytest.raises(TypeError, match="out has dtype int64, the result has data's int32"):
        og.scatter_elements(*args, out=np.zeros((2, 3), np.int64))
    with pytest.raises(TypeError, match="out is a Python list"):
        og.scatter_elements(*args, out=[[0, 0, 0], [0, 0, 0]])
    frozen = np.zeros((2, 3), np.int32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        og.scatter_elements(*args, out=frozen)
    narrow = np.array(["ab"], "<U2")
    with pytest.raises(TypeError, match=r"out holds strings of dtype <U2, which would cut the "
                                        r"updates \(<U3\): pass data of dtype <U3"):  # fmt: skip
        og.scatter_nd(narrow, [[0]], np.array(["xyz"]), out=narrow)
    with pytest.raises(TypeError, match="updates is a Python list"):
        og.scatter_elements(data, a([[0]]), [[1]])


#: NumPy's string kinds; StringDType exists from NumPy 2.0 (the floor is 1.25).
STRING_KINDS = ["U", "S"] + (["StringDType"] if hasattr(np.dtypes, "StringDType") else [])


@NUMPY_ONLY
@pytest.mark.parametrize("kind", STRING_KINDS)
def test_concatenated_strings_of_every_numpy_kind(kind: str) -> None:
    """Reliability round 5, item 7: ``add`` concatenates; a fixed-width result is as wide
    as the longest string made (ONNX Runtime keeps every concatenation whole), and an
    ``out`` too narrow for it is refused, untouched."""
    dtype = numpy_dtype("string", kind)

    def strings(*text: str) -> np.ndarray:
        return np.array([t.encode() if kind == "S" else t for t in text], dtype)

    data, updates = strings("base", "untouched"), strings("-first", "-second", "-last")
    want = strings("base-first-second-last", "untouched")
    for got in (og.scatter_elements(data, a([0, 0, 0]), updates, reduction="add"),
                og.scatter_nd(data, a([[0], [0], [0]]), updates, reduction="add")):  # fmt: skip
        assert_identical(got, want)
    if kind != "StringDType":
        narrow = data.copy()
        with pytest.raises(TypeError, match=f"out holds strings of dtype {narrow.dtype}, which "
                                            f"would cut the concatenated strings"):  # fmt: skip
            og.scatter_elements(narrow, a([0, 0, 0]), updates, reduction="add", out=narrow)
        assert_identical(narrow, data)


@pytest.mark.backend("dask")
def test_dask_refuses_to_concatenate_fixed_width_strings() -> None:
    """A Dask array's dtype is fixed before it computes: fixed-width strings cannot grow."""
    import dask.array as da

    data = da.from_array(np.array(["ab", "c"]), chunks=1)
    updates = da.from_array(np.array(["xyz"]), chunks=1)
    with pytest.raises(TypeError, match=r"reduction 'add' concatenates strings, which "
                                        r"fixed-width <U2 data cannot hold"):  # fmt: skip
        og.scatter_elements(data, [0], updates, reduction="add")


@NUMPY_ONLY
def test_in_place_updates_data_itself() -> None:
    """``out=data`` on a KV-cache-like array: data is the result, no copy of it is made.

    A second view of data's memory sees the new position written and every other row as
    it was; the call returns data itself (the copying call would return a new array).
    """
    cache = np.zeros((4, 8, 3), F32)
    twin = cache.view()  # shares the memory
    new = np.ones((4, 1, 3), F32)
    idx = np.stack(np.meshgrid(np.arange(4), [5], indexing="ij"), axis=-1)  # (4, 1, 2)
    result = og.scatter_nd(cache, idx, new, out=cache)
    assert result is cache
    assert twin[:, 5].all()
    assert not twin[:, :5].any()
    assert not twin[:, 6:].any()
    copied = og.scatter_nd(cache, idx, 2 * new)
    assert not np.shares_memory(copied, cache)
    assert twin[:, 5].max() == 1


@pytest.mark.parametrize("op", ["scatter_nd", "scatter_elements"])
def test_numpy_in_place_writes_by_address_first(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A NumPy KV write in place goes by address (``_scatter.writer_at``); where that
    declines (an index out of range, updates sharing the cache, int32 indices, a layout
    it does not take), the general path answers, and raises before writing anything.
    (A build without the kernel has no such route: the results must be the same.)"""
    from onnx_gather import _api
    from onnx_gather._backends._numpy import _scatter
    from onnx_gather._memo import Memo

    monkeypatch.setattr(_api, "_CALLS", Memo(4096))
    written = []
    real = _scatter.writer_at

    def spy(*args: Any) -> Any:
        at = real(*args)
        return None if at is None else lambda *a: written.append(at(*a)) or written[-1]

    monkeypatch.setattr(_scatter, "writer_at", spy)
    built = _numpy_backend._kernels is not None

    def route(*log: bool) -> list[bool]:
        return list(log) if built else []

    cache = np.arange(2 * 3 * 5 * 4, dtype=F32).reshape(2, 3, 5, 4)
    new = -np.arange(2 * 3 * 1 * 4, dtype=F32).reshape(2, 3, 1, 4) - 1
    if op == "scatter_nd":
        rows = np.stack(np.meshgrid([0, 1], [0, 1, 2], [-2], indexing="ij"), -1)  # (2, 3, 1, 3)
        rows = rows.reshape(2, 3, 1, 3)

        def write(c: Any, i: Any, u: Any, **kw: Any) -> Any:
            return og.scatter_nd(c, i, u, **kw)

    else:
        rows = np.full((2, 3, 1, 4), -2)

        def write(c: Any, i: Any, u: Any, **kw: Any) -> Any:
            return og.scatter_elements(c, i, u, axis=2, **kw)

    want = write(cache, rows, new)  # (a new array: the general path)
    assert written == []
    c = cache.copy()
    assert write(c, rows, new, out=c) is c
    assert_identical(c, want)
    assert written == route(True)
    bad = rows.copy()
    bad[1, 2, 0, -1] = 5  # (axis 2 has 5 positions)
    c = cache.copy()
    with pytest.raises(IndexError, match="index 5 "):
        write(c, bad, new, out=c)
    assert_identical(c, cache)
    assert written == route(True, False)
    c = cache.copy()
    shared = c[:, :, 1:2]  # (the updates are the cache's position 1)
    write(c, rows, shared, out=c)
    expected_ = write(cache, rows, cache[:, :, 1:2].copy())
    assert_identical(c, expected_)
    assert written == route(True, False, False)
    c = cache.copy()
    write(c, rows.astype(np.int32), new, out=c)
    assert_identical(c, want)
    assert written == route(True, False, False)
    # Updates of another byte order are float32 too, but not data's bytes: the general path.
    c = cache.copy()
    write(c, rows, new.astype(">f4"), out=c)
    assert_identical(c, want)
    assert written == route(True, False, False)


#: NumPy 1 holds at most 32 dims (the floor session's): no array to scatter into there.
_DEEP = [
    pytest.param(
        lib,
        marks=pytest.mark.skipif(
            lib.name == "numpy" and np.lib.NumpyVersion(np.__version__) < "2.0.0",
            reason="NumPy 1 holds at most 32 dims",
        ),
    )
    for lib in LIBS
    if lib.name in ("numpy", "torch")
]


@pytest.mark.parametrize("lib_", _DEEP)
def test_in_place_scatter_nd_of_more_coordinates_than_the_kernel_takes(lib_: Library) -> None:
    """33 coordinates per tuple: the by-address write declines, the general path writes."""
    d = lib_.asarray(np.zeros(2, F32)).reshape((1,) * 32 + (2,))
    indices = np.array([[0] * 32 + [1], [-1] * 32 + [0]])
    updates = np.array([5.0, 7.0], F32)
    og.scatter_nd(d, lib_.asarray(indices), lib_.asarray(updates), out=d)
    assert_identical(lib_.to_numpy(d.reshape(-1)), np.array([7.0, 5.0], F32))


#: The random sweep: shapes small enough for the oracle's Python loops, many duplicates.
_DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint64", "float16", "float32",
           "float64", "complex64", "string"]  # fmt: skip
if BFLOAT16 is not None:
    _DTYPES.append("bfloat16")


def _values(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    if name == "bool":
        return rng.random(shape) < 0.5
    if name == "string":
        return rng.choice(np.array(["", "a", "bc", "日本"], object), shape)
    if name == "bfloat16":
        assert BFLOAT16 is not None
        return rng.choice(np.array([0.0, -0.0, 1.5, -2.0, 3.0, np.nan, 255.0], F32), shape).astype(
            BFLOAT16
        )
    dtype = np.dtype(name)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        pool = np.array([info.min, info.max, 0, 1, 2, 3, -1 if dtype.kind == "i" else 7], object)
        return rng.choice(pool, shape).astype(dtype)
    if dtype.kind == "c":
        out = np.empty(shape, dtype)
        out.real, out.imag = _values(rng, "float32", shape), _values(rng, "float32", shape)
        return out
    pool = np.array([0.0, -0.0, 0.1, -2.5, 1e4, np.inf, -np.inf, np.nan, 3.0], dtype)
    pool[7] = np.array([0x7FF8000000000123], np.uint64).view(np.float64)[0].astype(dtype)
    return rng.choice(pool, shape)


def _sweep(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for n in range(count):
        name = _DTYPES[n % len(_DTYPES)]
        reductions = (
            ["none"]
            if name == "string"
            else ["none", "add", "mul"] + ([] if name.startswith("complex") else ["max", "min"])
        )
        reduction = reductions[(n // len(_DTYPES)) % len(reductions)]
        rank = int(rng.integers(1, 4))
        shape = tuple(int(x) for x in rng.integers(1, 4, rank))
        data = _values(rng, name, shape)
        unchecked = n % 5 == 0
        if n % 2:
            axis = int(rng.integers(-rank, rank))
            ishape = tuple(
                int(rng.integers(1, s + 1)) if d != axis % rank else int(rng.integers(0, 6))
                for d, s in enumerate(shape)
            )
            s = shape[axis]
            hi = s + 2 if unchecked else s
            indices = rng.integers(-s - (2 if unchecked else 0), hi, ishape)
            updates = _values(rng, name, ishape)
            cases.append(
                scatter(
                    f"se-{n}-{name}-{reduction}",
                    SE,
                    data,
                    indices,
                    updates,
                    {"axis": axis, "reduction": reduction},
                    check_bounds=not unchecked,
                )
            )
        else:
            k = int(rng.integers(1, rank + 1))
            lead = tuple(int(x) for x in rng.integers(0, 4, int(rng.integers(0, 3))))
            cols = [
                rng.integers(-s - (1 if unchecked else 0), s + (1 if unchecked else 0), lead + (1,))
                for s in shape[:k]
            ]
            indices = np.concatenate(cols, axis=-1) if cols else np.zeros(lead + (0,), np.int64)
            updates = _values(rng, name, lead + shape[k:])
            cases.append(
                scatter(
                    f"nd-{n}-{name}-{reduction}",
                    SN,
                    data,
                    indices.astype(np.int32 if n % 4 == 0 else np.int64),
                    updates,
                    {"reduction": reduction},
                    check_bounds=not unchecked,
                )
            )
    return cases


SWEEP = _sweep(20261125, 400)
#: The unchecked calls again, checked: those with an index out of range must raise it.
CHECKED_SWEEP = [
    dataclasses.replace(c, id=f"{c.id}-checked", check_bounds=True)
    for c in SWEEP
    if not c.check_bounds
]


#: NumPy's routes: the compiled kernel where it is built (tests/test_compiled_kernel.py
#: holds its presence to what the session expects), and NumPy's own kernels.
ROUTES = (["compiled"] if _numpy_backend._kernels is not None else []) + ["numpy-kernels"]


@pytest.fixture(params=ROUTES)
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """NumPy's two routes: the compiled kernel, and NumPy's own kernels without it."""
    if request.param == "numpy-kernels":
        without_compiled_kernel(monkeypatch)
    return str(request.param)


#: The libraries with a route through the compiled kernel run without it too (PyTorch
#: then runs its own operations: the route of CUDA tensors and autograd).
def _sweep_routes(lib: Library) -> tuple[bool, ...]:
    if lib.name not in ("numpy", "torch"):
        return (True,)  # (no route through the compiled kernel: as it is)
    return (True, False) if _numpy_backend._kernels is not None else (False,)


SWEEP_PARAMS = [
    pytest.param(lib, compiled, id=f"{lib.name}-{'compiled' if compiled else 'without'}")
    for lib in LIBS
    for compiled in _sweep_routes(lib)
]


@pytest.mark.parametrize(("lib_", "compiled"), SWEEP_PARAMS)
def test_sweep_is_bit_identical_to_the_oracle(
    lib_: Library, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """400 random calls (every dtype and reduction, duplicates, unchecked drops) agree.

    The unchecked ones run checked too: an out-of-range index raises the IndexError that
    names it (a value, its position in indices, its axis' size).
    """
    if not compiled:
        without_compiled_kernel(monkeypatch)
    ran = raised_ = 0
    for case in [*SWEEP, *CHECKED_SWEEP]:
        if not applies(lib_, case):
            continue
        try:
            want = oracle_answer(case)
        except IndexError as bad:
            with pytest.raises(IndexError) as raised:
                lib_.to_numpy(_run(lib_, case))
            # The message names a bad value, its position in indices and its axis' size.
            example = Example(
                case.op, case.data, case.indices, case.attributes, case.opset,
                case.check_bounds, updates=case.updates,
            )  # fmt: skip
            problem = mismatch(example, Outcome(error=raised.value), Outcome(error=bad))
            assert problem is None, (case.id, problem)
            raised_ += 1
            continue
        assert_identical(lib_.to_numpy(_run(lib_, case)), want), case.id
        ran += 1
    assert ran > 200
    assert raised_ > 20


def _large_cases() -> list[Case]:
    """Calls large enough to split over threads: every split the kernel makes."""
    rng = np.random.default_rng(7)
    data = rng.standard_normal((300, 200)).astype(F32)
    cases = []
    for axis in (0, 1):
        for reduction in ("none", "add", "mul", "max", "min"):
            idx = rng.integers(
                -data.shape[axis], data.shape[axis], (300, 200) if axis else (500, 200)
            )
            upd = rng.standard_normal(idx.shape).astype(F32)
            cases.append(
                scatter(
                    f"se-axis{axis}-{reduction}",
                    SE,
                    data,
                    idx,
                    upd,
                    {"axis": axis, "reduction": reduction},
                )
            )
    cube = rng.standard_normal((40, 30, 100)).astype(np.float16)
    for reduction in ("none", "add", "max"):
        rows = rng.integers(-40, 40, (3000, 1))  # slices of 3000 elements: by columns
        cases.append(
            scatter(
                f"nd-wide-{reduction}",
                SN,
                cube,
                rows,
                rng.standard_normal((3000, 30, 100)).astype(np.float16),
                {"reduction": reduction},
            )
        )
        cells = rng.integers(-30, 30, (50000, 2))  # one element each: by destination rows
        cases.append(
            scatter(
                f"nd-cells-{reduction}",
                SN,
                cube,
                cells,
                rng.standard_normal((50000, 100)).astype(np.float16),
                {"reduction": reduction},
            )
        )
    return cases


@NUMPY_ONLY
@pytest.mark.parametrize("case", _large_cases(), ids=lambda c: c.id)
def test_large_threaded_calls_agree_with_numpy_kernels(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads split by destination: each destination sees its updates in C order.

    Two slices of independent destinations against the loop oracle (the whole call would
    take it minutes), and the whole result against NumPy's kernels.
    """
    compiled = _ops.call(case.op, *case.arrays, **case.attributes)
    for part in _independent_parts(case, 2):
        want = oracle_answer(dataclasses.replace(case, **part.arrays))
        assert_identical(compiled[part.where], want)
    without_compiled_kernel(monkeypatch)
    assert_identical(compiled, _ops.call(case.op, *case.arrays, **case.attributes))


class _Part:
    """A slice of a scatter's result that a sub-call of its own inputs computes alone."""

    def __init__(self, where: tuple[slice, ...], arrays: dict[str, np.ndarray]) -> None:
        self.where, self.arrays = where, arrays


def _independent_parts(case: Case, count: int) -> list[_Part]:
    """``count`` parts of ``case``'s result, each one position off the scattered axes.

    ScatterElements: one position off the axis (the updates there land on that line of
    data only); ScatterND: one position of the dims after the coordinates.
    """
    rng = np.random.default_rng(3)
    data, indices, updates = case.data, case.indices, case.updates
    assert updates is not None
    parts = []
    for _ in range(count):
        if case.op == SE.name:
            axis = case.attributes["axis"] % data.ndim
            one = tuple(
                slice(None) if d == axis else slice(p := int(rng.integers(n)), p + 1)
                for d, n in enumerate(indices.shape)
            )
            arrays = {"data": data[one], "indices": indices[one], "updates": updates[one]}
            parts.append(_Part(one, arrays))
        else:
            k = indices.shape[-1]
            rest = tuple(slice(p := int(rng.integers(n)), p + 1) for n in data.shape[k:])
            where = (slice(None),) * k + rest
            lead = (slice(None),) * (indices.ndim - 1)
            arrays = {"data": data[where], "indices": indices, "updates": updates[lead + rest]}
            parts.append(_Part(where, arrays))
    return parts


@NUMPY_ONLY
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_every_16_bit_float_rounds_as_numpy_does(name: str, reduction: str) -> None:
    """All 65536 values, each combined with a random one: the kernel's conversions are exact.

    NumPy (ml_dtypes for bfloat16) computes each step in float32 and rounds it back, the
    decided arithmetic; only a NaN result differs, being made the canonical NaN.
    """
    dtype = np.dtype(BFLOAT16) if name == "bfloat16" else np.dtype(name)
    if name == "bfloat16" and BFLOAT16 is None:
        pytest.fail("ml_dtypes is not installed")
    rng = np.random.default_rng(16)
    data = np.arange(2**16, dtype=np.uint16).view(dtype)
    updates = rng.integers(0, 2**16, 2**16, dtype=np.uint16).view(dtype)
    # Every value meets a NaN, a zero, an infinity and a small value too.
    specials = np.array([0x7E01, 0x0000, 0x8000, 0x7C00, 0x0001, 0x3C00], np.uint16)
    if name == "bfloat16":
        specials = np.array([0x7FC1, 0x0000, 0x8000, 0x7F80, 0x0001, 0x3F80], np.uint16)
    for special in specials:
        updates[: len(specials)] = special
        got = og.scatter_elements(data, np.arange(2**16), updates, reduction=reduction)
        with np.errstate(all="ignore"):
            want = (data + updates) if reduction == "add" else (data * updates)
        want[np.isnan(want)] = np.nan  # a NaN result is the canonical one
        assert_identical(got, want)
        updates = np.roll(updates, 1)


@NUMPY_ONLY
@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
def test_a_bad_index_leaves_data_written_in_place_untouched(op: _ops.Operator, route: str) -> None:
    """``out=data`` with a bad index: the IndexError, and not one element written before it."""
    data = np.arange(12, dtype=F32).reshape(3, 4)
    before = data.copy()
    if op is SE:
        arrays = (data, a([[0, 1, 2, 0], [1, 2, 3, 1]]), -np.ones((2, 4), F32))
    else:
        arrays = (data, a([[0], [2], [1], [3]]), -np.ones((4, 4), F32))
    with pytest.raises(IndexError, match=r"index 3 at position \((1, 2|3, 0)\)"):
        _ops.call(op, *arrays, out=data)
    assert_identical(data, before)


#: Writable libraries with their routes (PyTorch's CPU tensors reach the compiled kernel as
#: views; without it they run torch's own operations).
OUT_PARAMS = [p for p in SWEEP_PARAMS if p.values[0].name not in IMMUTABLE]
#: Each scatter with its reductions, as the attributes of a call (OpenVINO's ScatterElements-
#: Update with use_init_val=False too: its identity is scattered first).
REDUCTIONS = {
    SE: [{"reduction": r} for r in ("none", "add", "mul", "max", "min")],
    SN: [{"reduction": r} for r in ("none", "add", "mul", "max", "min")],
    SC: [{}],
    SU: [{}],
    SEU: [
        {"reduction": r, "use_init_val": init}
        for r in ("none", "sum", "prod", "max", "min", "mean")
        for init in (True, False)
        if init or r != "none"
    ],
    SNDU: [{"reduction": r} for r in ("none", "sum", "sub", "prod", "max", "min")],
}
#: The axis each takes (OpenVINO's must be given).
AXIS = {SE: {"axis": 0}, SC: {"axis": 0}, SU: {"axis": 0}, SEU: {"axis": 0}, SN: {}, SNDU: {}}
ALIAS_IDS = [f"{op.name}-{'-'.join(map(str, given.values())) or 'plain'}"
             for op, each in REDUCTIONS.items() for given in each]  # fmt: skip
ALIAS_CALLS = [
    pytest.param(op, AXIS[op] | given, id=name)
    for (op, given), name in zip(
        [(op, given) for op, each in REDUCTIONS.items() for given in each], ALIAS_IDS, strict=True
    )
]
#: Element-wise indices (ScatterElements, Scatter, ScatterElementsUpdate) against
#: coordinate tuples (ScatterND, ScatterNDUpdate) and ScatterUpdate's (flat: the same).
TUPLES = (SN, SNDU)


def _aliased(op: _ops.Operator, attributes: dict[str, Any], dtype: Any) -> Case:
    """Duplicates, so the order in which updates and indices are read shows in the result."""
    indices = a([[2], [0], [2]]) if op in TUPLES else a([2, 0, 2])
    return scatter("aliased", op, a([5, 6, 7], dtype), indices, a([1, 2, 3], dtype), attributes,
                   opset=_ops.get(op).default_opset or 18)  # fmt: skip


def _call(op: _ops.Operator, attributes: dict[str, Any], *arrays: Any, out: Any) -> Any:
    return _ops.call(op, *arrays, out=out, **attributes)


@pytest.mark.parametrize(("op", "attributes"), ALIAS_CALLS)
@pytest.mark.parametrize(("lib_", "compiled"), OUT_PARAMS)
def test_out_that_is_updates_gives_the_onnx_result(
    lib_: Library, compiled: bool, op: _ops.Operator, attributes: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Every update is read before ``out`` (the updates themselves) is written."""
    if not compiled:
        without_compiled_kernel(monkeypatch)
    case = _aliased(op, attributes, F32)
    want = oracle_answer(case)  # (before: a library may share case's memory)
    updates = lib_.asarray(case.updates)
    got = _call(op, attributes, lib_.asarray(case.data), lib_.indices(case.indices), updates,
                out=updates)  # fmt: skip
    assert got is updates
    assert_identical(lib_.to_numpy(updates), want)


@pytest.mark.parametrize(("op", "attributes"), ALIAS_CALLS)
@pytest.mark.parametrize(("lib_", "compiled"), OUT_PARAMS)
def test_out_that_is_the_indices_gives_the_onnx_result(
    lib_: Library, compiled: bool, op: _ops.Operator, attributes: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Integer data: ``out`` the indices (ScatterND: a view of them) is written after they are read.

    Data [5, 6, 7] copied into the indices first would make every index out of range.
    """
    if not compiled:
        without_compiled_kernel(monkeypatch)
    case = _aliased(op, attributes, np.int64)
    want = oracle_answer(case)  # (before: a library may share case's memory)
    indices = lib_.indices(case.indices)
    out = indices[:, 0] if op in TUPLES else indices
    got = _call(op, attributes, lib_.asarray(case.data), indices, lib_.asarray(case.updates),
                out=out)  # fmt: skip
    assert got is out
    assert_identical(lib_.to_numpy(out), want)


@pytest.mark.parametrize(("op", "attributes"), ALIAS_CALLS)
@pytest.mark.parametrize(("lib_", "compiled"), OUT_PARAMS)
def test_out_that_overlaps_data_gives_the_onnx_result(
    lib_: Library, compiled: bool, op: _ops.Operator, attributes: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``out`` a view of data shifted by one element: data is read before out is written."""
    if not compiled:
        without_compiled_kernel(monkeypatch)
    case = _aliased(op, attributes, F32)
    want = oracle_answer(case)
    whole = lib_.asarray(np.concatenate([case.data, a([8], F32)]))
    data, out = whole[:-1], whole[1:]
    got = _call(op, attributes, data, lib_.indices(case.indices), lib_.asarray(case.updates),
                out=out)  # fmt: skip
    assert got is out
    assert_identical(lib_.to_numpy(out), want)


@pytest.mark.parametrize("layout", ["c-out", "strided-out", "transposed-data"])
@pytest.mark.parametrize(("op", "attributes"), ALIAS_CALLS)
@pytest.mark.parametrize(("lib_", "compiled"), OUT_PARAMS)
def test_a_failed_call_leaves_a_separate_out_untouched(
    lib_: Library, compiled: bool, op: _ops.Operator, attributes: dict[str, Any], layout: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """A bad index: the IndexError, and neither ``out`` nor data written, on every layout."""
    if not compiled:
        without_compiled_kernel(monkeypatch)
    values = np.arange(6, dtype=F32).reshape(2, 3)
    data = lib_.asarray(values)
    if layout == "transposed-data":  # (not C-ordered: copied into out by another path)
        data = lib_.asarray(np.ascontiguousarray(values.T)).T
    if op in TUPLES:
        indices, updates = a([[0], [2]]), -np.ones((2, 3), F32)
    elif op is SU:  # rows 0 and 2 of data: (2, 3) updates
        indices, updates = a([0, 2]), -np.ones((2, 3), F32)
    else:
        indices, updates = a([[0, 1, 0], [1, 2, 1]]), -np.ones((2, 3), F32)
    sentinel = np.full((2, 6 if layout == "strided-out" else 3), 42, F32)
    whole = lib_.asarray(sentinel)
    out = whole[:, ::2] if layout == "strided-out" else whole
    with pytest.raises(IndexError, match=r"index 2 at position \((1, [01]|1,)\)"):
        _call(op, attributes, data, lib_.indices(indices), lib_.asarray(updates), out=out)
    assert_identical(lib_.to_numpy(whole), sentinel)
    assert_identical(lib_.to_numpy(data), values)


def _strided(lib_: Library, base: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    """A view of ``base`` (float32) with the given strides, in elements."""
    if lib_.name == "numpy":
        return np.lib.stride_tricks.as_strided(base, shape, tuple(4 * s for s in strides))
    return base.as_strided(shape, strides)


@pytest.mark.parametrize(
    ("shape", "strides", "refused"),
    [
        ((3,), (0,), True),  # every element one cell (torch: expand)
        ((3, 2), (1, 1), True),  # (0, 1) and (1, 0) one cell, no stride 0
        ((3, 2), (2, 3), False),  # distinct cells, strides not nested
        ((1, 3), (0, 1), False),  # a stride 0 on a dim of size 1 overlaps nothing
    ],
)
@pytest.mark.parametrize("lib_", [lib for lib in LIBS if lib.name in ("numpy", "torch")],
                         ids=lambda lib: lib.name)  # fmt: skip
def test_an_out_that_overlaps_itself_is_refused(
    lib_: Library, shape: tuple[int, ...], strides: tuple[int, ...], refused: bool
) -> None:
    """Two elements of ``out`` in one memory cell: a ValueError naming out, before any write."""
    base = lib_.asarray(np.zeros(8, F32))
    out = _strided(lib_, base, shape, strides)
    n = shape[0]
    case = scatter("overlapping-out", SE, np.arange(math.prod(shape), dtype=F32).reshape(shape),
                   np.zeros(shape, np.int64) + (n - 1), np.ones(shape, F32) * 9)  # fmt: skip
    arrays = (lib_.asarray(case.data), lib_.indices(case.indices), lib_.asarray(case.updates))
    if refused:
        with pytest.raises(ValueError, match=re.escape(f"out of shape {shape} overlaps itself")):
            _ops.call(SE, *arrays, out=out)
        assert not lib_.to_numpy(base).any()
    else:
        assert _ops.call(SE, *arrays, out=out) is out
        assert_identical(lib_.to_numpy(out), oracle_answer(case))


@NUMPY_ONLY
@pytest.mark.parametrize("layout", ["transposed", "strided", "fortran-updates", "int32"])
def test_views_and_layouts_give_the_same_bits(layout: str, route: str) -> None:
    """Data, indices and updates of any strides: the sweep again, on views."""
    ran = 0
    for case in SWEEP[:200]:
        if case.data.dtype.kind == "O" or case.data.ndim < 2 or not case.check_bounds:
            continue
        try:
            want = oracle_answer(case)
        except IndexError:
            continue
        data, indices, updates = case.data, case.indices, case.updates
        if layout == "transposed":
            data = np.ascontiguousarray(data.T).T
        elif layout == "strided":
            wide = np.zeros((*data.shape[:-1], data.shape[-1] * 2), data.dtype)
            wide[..., ::2] = data
            data = wide[..., ::2]
        elif layout == "fortran-updates" and updates.ndim:  # (0-d: asfortranarray makes 1-d)
            updates = np.asfortranarray(updates)
        else:
            indices = indices.astype(np.int32)
        arrays = (data, indices, updates)
        got = _ops.call(case.op, *arrays, opset=case.opset, **case.attributes)
        assert_identical(got, want)
        ran += 1
    assert ran > 20


def _peer_disagreement(got: Any, want: np.ndarray) -> str | None:
    """None where a peer's answer is ours, else the class of the difference.

    The classes docs/conformance.md explains (its table "The scatters' peers").
    """
    if isinstance(got, Exception):
        text = str(got)
        if "not supported" in text or "not currently registered" in text:
            return "no kernel for the type"
        if "Numpy_type" in text or "Unable to handle object" in text:
            return "input the Python binding cannot take"
        return f"error: {text[:200]}"
    got = np.asarray(got)
    if difference(got, want) is None:
        return None
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape or dtype: {difference(got, want)}"
    kinds = onnx_peers.float_differences(got, want)
    if kinds is None:
        return f"values: {difference(got, want)}".replace(", ", "; ")
    return ", ".join(sorted(kinds))


#: What the peers may do otherwise, and why (docs/conformance.md).
_EXPLAINED = {
    "no kernel for the type",  # ORT: complex ScatterElements, ScatterND float16/bool reductions
    "input the Python binding cannot take",  # ORT's binding: bfloat16, 0-d bool arrays
    "which NaN",  # a NaN from add/mul keeps an operand's payload there; ours is canonical
    "a NaN dropped",  # max/min in std::max / Python max: a NaN loses to a number
    "signed zero",  # max/min: -0.0 == +0.0 to them, whichever came first stays
}


@NUMPY_ONLY
def test_peers_disagree_only_where_explained() -> None:
    """ONNX Runtime's CPU kernels and the reference evaluator on the sweep's checked calls."""
    import warnings

    import onnx
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    ort.set_default_logger_severity(4)  # (its errors are counted here, not logged)
    found: dict[str, set[str]] = {"onnxruntime": set()}
    # The reference evaluator's scatters raised errors of their own on valid inputs before
    # the releases that fixed them (onnx 1.16, the floor: negative indices, slices, mul;
    # DESIGN.md cites onnx#8096 and #7842): compared from the release the table was
    # measured with.
    if tuple(int(p) for p in onnx.__version__.split(".")[:2]) >= (1, 23):
        found["reference"] = set()
    for case in SWEEP:
        if case.data.dtype.kind == "O" or not case.check_bounds:
            continue
        try:
            want: Any = oracle_answer(case)
        except IndexError:
            want = None
        op = _ops.get(case.op)
        arrays = (case.data, case.indices.astype(np.int64), case.updates)
        types = [str(x.dtype) for x in arrays]
        model = op.onnx_model(case.opset, types, [x.shape for x in arrays], case.attributes)
        feed = dict(zip(op.inputs, arrays, strict=True))
        for peer in found:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if peer == "onnxruntime":
                        session = ort.InferenceSession(
                            model.SerializeToString(), providers=["CPUExecutionProvider"]
                        )
                        got = session.run(None, feed)[0]
                    else:
                        got = ReferenceEvaluator(model).run(None, feed)[0]
            except Exception as exc:
                got = exc
            if want is None:  # out of range: every peer raises
                assert isinstance(got, Exception), (peer, case.id)
                continue
            kind = _peer_disagreement(got, want)
            if kind is not None:
                found[peer].update(kind.split(", "))
    for classes in found.values():
        assert classes <= _EXPLAINED, found
