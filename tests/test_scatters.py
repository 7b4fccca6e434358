"""ScatterElements and ScatterND (issue 22): the write-side table, and the random sweep.

The scatters are not public yet: they run through ``_api.run`` on the libraries whose
backends serve them so far (NumPy's exact kernels, PyTorch's eager calls, JAX, Dask,
and the array-API base, which runs NumPy's on the host). Every expected result is a spec's
literal or the loop oracle's answer (``oracle.py``, the spec's loops read literally); a
literal must be the oracle's too.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from helpers import assert_identical
from libs import BFLOAT16, LIBS, Library

from onnx_gather import _api, _ops
from onnx_gather._backends import _numpy as _numpy_backend
from onnx_gather._conformance import oracle
from onnx_gather._conformance.runner import difference

SE, SN = _ops.SCATTER_ELEMENTS, _ops.SCATTER_ND
#: Tests of NumPy's kernels, the oracle or the peers alone: run in NumPy's session only.
NUMPY_ONLY = pytest.mark.backend("numpy")
#: The libraries whose backends serve the scatters so far; the rest join with their kernels.
SERVED = [lib for lib in LIBS if lib.name in ("numpy", "array-api-strict", "torch", "jax", "dask")]


@dataclass(frozen=True)
class Scatter:
    id: str
    op: _ops.Operator
    data: np.ndarray
    indices: np.ndarray
    updates: np.ndarray
    attributes: dict[str, Any] = field(default_factory=dict)
    opset: int = 18
    check_bounds: bool = True
    raises: type[Exception] | None = None
    match: str | None = None
    expected: np.ndarray | None = None

    def attribute_values(self) -> tuple[Any, ...]:
        given = dict(self.op.attributes)
        given.update(self.attributes)
        return tuple(given[name] for name, _ in self.op.attributes)

    def oracle(self) -> np.ndarray:
        """The loop oracle's answer; unchecked, over the updates in range only."""
        run = oracle.scatter_elements if self.op is SE else oracle.scatter_nd
        given = dict(self.op.attributes)
        given.update(self.attributes)
        if not self.check_bounds:
            return _oracle_dropping(self, given["reduction"])
        return run(self.data, self.indices, self.updates, **given, opset=self.opset)


def a(values: Any, dtype: Any = None) -> np.ndarray:
    return np.array(values, dtype=dtype)


F32 = np.float32
ZERO33 = np.zeros((3, 3), F32)
NAN1 = np.array([0x7FC00001], np.uint32).view(F32)[0]  # quiet NaNs with payloads
NAN2 = np.array([0x7FC00002], np.uint32).view(F32)[0]

SPEC = [
    Scatter("se-example-1", SE, ZERO33, a([[1, 0, 2], [0, 2, 1]]),
            a([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], F32),
            expected=a([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]], F32)),
    Scatter("se-example-2", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 3]]),
            a([[1.1, 2.1]], F32), {"axis": 1}, expected=a([[1.0, 1.1, 3.0, 2.1, 5.0]], F32)),
    # ONNX's node tests: scatter_elements_with_negative_indices, _with_duplicate_indices,
    # _with_reduction_max / _min.
    Scatter("se-negative", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, -3]]),
            a([[1.1, 2.1]], F32), {"axis": 1}, expected=a([[1.0, 1.1, 2.1, 4.0, 5.0]], F32)),
    Scatter("se-duplicates-add", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 1]]),
            a([[1.1, 2.1]], F32), {"axis": 1, "reduction": "add"},
            expected=a([[1.0, 5.2, 3.0, 4.0, 5.0]], F32)),
    Scatter("se-max", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 1]]),
            a([[1.1, 2.1]], F32), {"axis": 1, "reduction": "max"},
            expected=a([[1.0, 2.1, 3.0, 4.0, 5.0]], F32)),
    Scatter("se-min", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 1]]),
            a([[1.1, 2.1]], F32), {"axis": 1, "reduction": "min"},
            expected=a([[1.0, 1.1, 3.0, 4.0, 5.0]], F32)),
    Scatter("nd-example-1", SN, a([1, 2, 3, 4, 5, 6, 7, 8], F32), a([[4], [3], [1], [7]]),
            a([9, 10, 11, 12], F32), expected=a([1, 11, 3, 10, 9, 6, 7, 12], F32)),
    Scatter("nd-example-2", SN,
            a([[[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
               [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
               [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]],
               [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]]], F32),
            a([[0], [2]]),
            a([[[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7], [8, 8, 8, 8]],
               [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]]], F32),
            expected=a([[[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7], [8, 8, 8, 8]],
                        [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
                        [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]],
                        [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]]], F32)),
    # ONNX's node test scatternd_add: the two updates of index 0 both land.
    Scatter("nd-add-duplicates", SN, a([[1, 2], [3, 4]], F32), a([[0], [0]]),
            a([[5, 6], [7, 8]], F32), {"reduction": "add"}, expected=a([[13, 16], [3, 4]], F32)),
    Scatter("nd-mul-duplicates", SN, a([[1, 2], [3, 4]], F32), a([[0], [0]]),
            a([[5, 6], [7, 8]], F32), {"reduction": "mul"}, expected=a([[35, 96], [3, 4]], F32)),
]  # fmt: skip

#: Every rule in DESIGN.md's scatter section, the expected answer the oracle's.
RULES = [
    Scatter("se-none-last-duplicate-wins", SE, a([0, 0, 0], F32), a([2, 0, 2, 2]),
            a([1, 2, 3, 4], F32), expected=a([2, 0, 4], F32)),
    Scatter("nd-none-last-duplicate-wins", SN, a([[0, 0], [0, 0]], np.int64), a([[1], [0], [1]]),
            a([[1, 1], [2, 2], [3, 3]], np.int64), expected=a([[2, 2], [3, 3]], np.int64)),
    Scatter("se-float16-rounds-every-step", SE, a([1024], np.float16), a([0, 0, 0, 0]),
            a([0.5, 0.5, 0.5, 0.5], np.float16), {"reduction": "add"},
            expected=a([1024], np.float16)),  # 1024.5 rounds to 1024, four times
    Scatter("se-float16-mul", SE, a([1.0009765625], np.float16), a([0, 0, 0]),
            a([1.0009765625] * 3, np.float16), {"reduction": "mul"}),
    Scatter("se-int8-add-wraps", SE, a([120, -120], np.int8), a([0, 0, 1]),
            a([5, 5, -10], np.int8), {"reduction": "add"}, expected=a([-126, 126], np.int8)),
    Scatter("se-int8-mul-wraps", SE, a([16], np.int8), a([0, 0]), a([4, 3], np.int8),
            {"reduction": "mul"}, expected=a([-64], np.int8)),
    Scatter("se-uint8-add-wraps", SE, a([250], np.uint8), a([0, 0]), a([5, 3], np.uint8),
            {"reduction": "add"}, expected=a([2], np.uint8)),
    Scatter("nd-uint64-max", SN, a([2**64 - 2, 0], np.uint64), a([[0], [1], [1]]),
            a([2**64 - 1, 2**63, 5], np.uint64), {"reduction": "max"}),
    Scatter("se-int64-min", SE, a([0, 0], np.int64), a([0, 1, 1]),
            a([-(2**63), 2**62, -5], np.int64), {"reduction": "min"}),
    *(Scatter(f"se-bool-{r}", SE, a([True, False, True, False]), a([0, 1, 2, 3, 1, 3]),
              a([False, False, False, True, True, True]), {"reduction": r})
      for r in ("add", "mul", "max", "min")),
    Scatter("se-max-signed-zeros", SE, a([-0.0, 0.0, -0.0, 0.0], F32), a([0, 1, 2, 3, 2]),
            a([0.0, -0.0, -0.0, 0.0, -0.0], F32), {"reduction": "max"},
            expected=a([0.0, 0.0, -0.0, 0.0], F32)),
    Scatter("se-min-signed-zeros", SE, a([-0.0, 0.0, 0.0, 0.0], F32), a([0, 1, 2, 3, 2]),
            a([0.0, -0.0, 0.0, 0.0, 0.0], F32), {"reduction": "min"},
            expected=a([-0.0, -0.0, 0.0, 0.0], F32)),
    *(Scatter(f"se-{r}-signed-zeros-{np.dtype(t).name}", SE, a([-0.0, 0.0, -0.0], t),
              a([0, 1, 2, 2]), a([0.0, -0.0, 0.0, -0.0], t), {"reduction": r})
      for r in ("max", "min") for t in (np.float16, np.float64)),
    Scatter("se-max-nan-first-wins", SE, a([1.0, NAN1, 1.0], F32), a([0, 0, 1, 2, 2]),
            a([NAN2, NAN1, NAN2, 5.0, NAN2], F32), {"reduction": "max"},
            expected=a([NAN2, NAN1, NAN2], F32)),
    Scatter("nd-min-nan-first-wins", SN, a([[1.0, 2.0], [NAN1, 0.0]], F32), a([[0], [1], [0]]),
            a([[NAN1, 3.0], [NAN2, NAN2], [NAN2, NAN2]], F32), {"reduction": "min"},
            expected=a([[NAN1, NAN2], [NAN1, NAN2]], F32)),
    Scatter("se-complex-add", SE, a([1 + 2j, 0], np.complex64), a([0, 0, 1]),
            a([0.5 - 1j, 3j, -1], np.complex64), {"reduction": "add"}),
    Scatter("nd-complex-mul", SN, a([1 + 2j, 0], np.complex128), a([[0], [0]]),
            a([0.5 - 1j, 3j], np.complex128), {"reduction": "mul"}),
    Scatter("nd-strings", SN, a(["a", "b", "c"], object), a([[2], [0], [2]]),
            a(["x", "y", "z"], object), expected=a(["y", "b", "z"], object)),
    Scatter("se-trim-off-axis", SE, np.arange(12, dtype=F32).reshape(3, 4), a([[2], [0]]),
            a([[-1], [-2]], F32), {"axis": 1}),
    Scatter("se-axis-negative-rank3", SE, np.arange(24, dtype=np.int32).reshape(2, 3, 4),
            a([[[0, -1, 2, 0]], [[1, 1, -2, 0]]]), -a([[[1, 2, 3, 4]], [[5, 6, 7, 8]]], np.int32),
            {"axis": -2, "reduction": "add"}),
    Scatter("nd-full-coordinates", SN, np.arange(12, dtype=np.int16).reshape(3, 4),
            a([[0, -1], [2, 3], [0, 3], [-3, 0]], np.int32), a([100, 200, 300, 400], np.int16)),
    Scatter("nd-0d-updates", SN, a([1.0, 2.0], F32), a([-1]), a(7.0, F32),
            expected=a([1.0, 7.0], F32)),
    Scatter("nd-empty-updates", SN, np.zeros((3, 0), F32), a([[1], [2]]), np.zeros((2, 0), F32)),
    Scatter("se-empty-updates", SE, a([[1.0, 2.0]], F32), np.zeros((0, 2), np.int64),
            np.zeros((0, 2), F32)),
    # Unchecked: an update out of range is dropped, the rest land.
    Scatter("se-unchecked-drops", SE, a([1, 2, 3], np.int32), a([0, 3, -4, 7, -1]),
            a([10, 20, 30, 40, 50], np.int32), check_bounds=False,
            expected=a([10, 2, 50], np.int32)),
    Scatter("nd-unchecked-drops", SN, a([[1, 2], [3, 4]], np.int32),
            a([[0, 2], [5, 0], [-3, 1], [1, -1]]), a([10, 20, 30, 40], np.int32),
            {"reduction": "add"}, check_bounds=False, expected=a([[1, 2], [3, 44]], np.int32)),
    Scatter("se-opset-11", SE, a([1, 2], np.int64), a([1, 1]), a([5, 6], np.int64), opset=11,
            expected=a([1, 6], np.int64)),
    Scatter("nd-opset-16-mul", SN, a([2, 3], np.int64), a([[1], [1]]), a([5, 6], np.int64),
            {"reduction": "mul"}, opset=16, expected=a([2, 90], np.int64)),
]  # fmt: skip
if BFLOAT16 is not None:
    RULES.append(
        Scatter("se-bfloat16-rounds-every-step", SE, a([256], BFLOAT16), a([0, 0, 0]),
                a([0.5, 0.5, 1.5], BFLOAT16), {"reduction": "add"},
                expected=a([258], BFLOAT16))  # 256.5 -> 256 twice, then 257.5 -> 258
    )  # fmt: skip

ERRORS = [
    Scatter("se-out-of-range", SE, ZERO33, a([[1, 0, 3]]), a([[1.0, 2.0, 3.0]], F32),
            raises=IndexError,
            match=r"ScatterElements-18: index 3 at position \(0, 2\) of indices is out of "
                  r"range for axis 0 of size 3"),
    Scatter("se-out-of-range-negative", SE, ZERO33, a([[0], [-4]]), a([[1.0], [2.0]], F32),
            {"axis": 1}, raises=IndexError, match=r"index -4 at position \(1, 0\).*axis 1 of size 3"),
    Scatter("nd-out-of-range-coordinate", SN, np.zeros((2, 5), F32), a([[1, 4], [0, 5]]),
            a([1.0, 2.0], F32), raises=IndexError,
            match=r"ScatterND-18: index 5 at position \(1, 1\) of indices is out of range for "
                  r"axis 1 of size 5"),
    Scatter("nd-out-of-range-empty-updates", SN, np.zeros((3, 0), F32), a([[3]]),
            np.zeros((1, 0), F32), raises=IndexError, match=r"index 3 at position \(0, 0\)"),
    Scatter("se-updates-dtype", SE, ZERO33, a([[0]]), a([[1.0]], np.float64), raises=TypeError,
            match="updates must have data's type float32, got float64"),
    Scatter("se-index-dtype", SE, ZERO33, a([[0]], np.int16), a([[1.0]], F32), raises=TypeError,
            match="int16"),
    Scatter("se-reduction-unknown", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"reduction": "sum"},
            raises=ValueError, match="unknown reduction 'sum'"),
    Scatter("se-reduction-too-new", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"reduction": "add"},
            opset=13, raises=ValueError, match="reduction 'add' needs version 16"),
    Scatter("nd-max-too-new", SN, ZERO33, a([[0]]), a([[1.0, 2.0, 3.0]], F32),
            {"reduction": "max"}, opset=17, raises=ValueError, match="reduction 'max' needs version 18"),
    Scatter("se-reduction-not-a-str", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"reduction": 1},
            raises=TypeError, match="reduction must be a str, got 1"),
    Scatter("se-complex-max", SE, a([1j]), a([0]), a([2j]), {"reduction": "max"},
            raises=TypeError, match="'max' needs ordered values; complex128"),
    Scatter("nd-string-add", SN, a(["a"], object), a([[0]]), a(["b"], object),
            {"reduction": "add"}, raises=TypeError, match="'add' needs numbers"),
    Scatter("se-bfloat16-before-13", SE, ZERO33.astype(BFLOAT16 or F32), a([[0]]),
            a([[1.0]], BFLOAT16 or F32), opset=11, raises=TypeError, match="bfloat16"),
    Scatter("se-rank", SE, ZERO33, a([0]), a([1.0], F32), raises=ValueError,
            match=r"same rank as data \(2\), got rank 1"),
    Scatter("se-updates-shape", SE, ZERO33, a([[0, 1]]), a([[1.0]], F32), raises=ValueError,
            match=r"updates must have the indices' shape \(1, 2\), got \(1, 1\)"),
    Scatter("se-larger-off-axis", SE, ZERO33, np.zeros((1, 4), np.int64),
            np.zeros((1, 4), F32), raises=ValueError, match="indices dim 1 is 4, larger than data's 3"),
    Scatter("se-axis", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"axis": 2}, raises=ValueError,
            match="axis 2 is out of range"),
    Scatter("nd-k-too-large", SN, ZERO33, a([[0, 0, 0]]), a([1.0], F32), raises=ValueError,
            match=r"indices.shape\[-1\] is 3"),
    Scatter("nd-updates-shape", SN, ZERO33, a([[0], [1]]), a([[1.0, 2.0, 3.0]], F32),
            raises=ValueError, match=r"updates must have shape indices.shape\[:-1\] \+ "
                                     r"data.shape\[1:\] = \(2, 3\), got \(1, 3\)"),
    Scatter("nd-rank-0-indices", SN, ZERO33, a(0), a(1.0, F32), raises=ValueError,
            match="indices must have rank >= 1"),
    Scatter("nd-opset-10", SN, ZERO33, a([[0]]), a([[1.0, 2.0, 3.0]], F32), opset=10,
            raises=ValueError, match="opset 10 has no ScatterND"),
]  # fmt: skip

CASES = SPEC + RULES + ERRORS


def _run(lib: Library, case: Scatter, out: Any = None) -> Any:
    arrays = (lib.asarray(case.data), lib.indices(case.indices), lib.asarray(case.updates))
    attributes = case.attribute_values()
    return _api.run(case.op, case.opset, arrays, attributes, case.check_bounds, out)


def _held(lib: Library, case: Scatter) -> bool:
    from onnx_gather._conformance.libraries import type_name

    return type_name(case.data.dtype) in lib.holds and type_name(case.updates.dtype) in lib.holds


PARAMS = [
    pytest.param(lib, case, id=f"{lib.name}-{case.id}")
    for lib in SERVED
    for case in CASES
    if _held(lib, case)
]


@pytest.mark.parametrize(("lib_", "case"), PARAMS)
def test_case(lib_: Library, case: Scatter) -> None:
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.match):
            # Read back too: a lazy library (Dask) raises index errors when it computes.
            lib_.to_numpy(_run(lib_, case))
        return
    assert_identical(lib_.to_numpy(_run(lib_, case)), case.oracle())


@NUMPY_ONLY
@pytest.mark.parametrize("case", [c for c in CASES if c.raises is None], ids=lambda c: c.id)
def test_inputs_are_not_modified(case: Scatter) -> None:
    data, indices, updates = (x.copy() for x in (case.data, case.indices, case.updates))
    result = _api.run(
        case.op, case.opset, (data, indices, updates), case.attribute_values(), case.check_bounds
    )
    assert not np.shares_memory(result, data)
    for given, kept in ((data, case.data), (indices, case.indices), (updates, case.updates)):
        assert_identical(given, kept)


@NUMPY_ONLY
@pytest.mark.parametrize(
    "case", [c for c in SPEC + RULES if c.expected is not None], ids=lambda c: c.id
)
def test_oracle_agrees_with_literals(case: Scatter) -> None:
    assert_identical(case.oracle(), case.expected)


@NUMPY_ONLY
@pytest.mark.parametrize("case", ERRORS, ids=lambda c: c.id)
def test_oracle_raises_the_same_type(case: Scatter) -> None:
    with pytest.raises(case.raises):
        case.oracle()


#: Libraries whose arrays a scatter can write into (JAX's are immutable).
WRITABLE = [
    p for p in PARAMS if p.values[1].raises is None and p.values[0].name not in ("jax", "dask")
]


@pytest.mark.parametrize(("lib_", "case"), WRITABLE)
def test_out_receives_the_result(lib_: Library, case: Scatter) -> None:
    """``out=`` returns ``out`` holding the result; ``out=data`` updates data itself."""
    want = case.oracle()
    out = lib_.asarray(
        np.zeros_like(case.data) if case.data.dtype.kind != "O" else case.data.copy()
    )
    assert _run(lib_, case, out) is out
    assert_identical(lib_.to_numpy(out), want)
    data = lib_.asarray(case.data)
    arrays = (data, lib_.indices(case.indices), lib_.asarray(case.updates))
    result = _api.run(case.op, case.opset, arrays, case.attribute_values(), case.check_bounds, data)
    assert result is data
    assert_identical(lib_.to_numpy(data), want)


@pytest.mark.parametrize(
    "lib_", [lib for lib in SERVED if lib.name == "jax"], ids=lambda lib: lib.name
)
def test_out_of_an_immutable_library_points_to_donation(lib_: Library) -> None:
    data = lib_.asarray(np.zeros(3, F32))
    arrays = (data, lib_.indices(a([1])), lib_.asarray(a([1.0], F32)))
    with pytest.raises(TypeError, match=r"immutable.*donate_argnums"):
        _api.run(SE, 18, arrays, (0, "none"), True, data)


@NUMPY_ONLY
def test_out_on_a_strided_view_and_its_errors() -> None:
    base = np.zeros((4, 6), np.int32)
    view = base[::2, ::2]  # (2, 3), not contiguous
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    result = _api.run(
        SE, 18, (data, a([[1, 0, 1]]), a([[7, 8, 9]], np.int32)), (0, "none"), True, view
    )
    assert result is view
    assert_identical(base[::2, ::2], a([[0, 8, 2], [7, 4, 9]], np.int32))
    assert not base[1::2].any()
    assert not base[:, 1::2].any()
    args = (data, a([[0]]), a([[1]], np.int32))
    with pytest.raises(ValueError, match=r"out has shape \(3, 2\), the result has \(2, 3\)"):
        _api.run(SE, 18, args, (0, "none"), True, np.zeros((3, 2), np.int32))
    with pytest.raises(TypeError, match="out has dtype int64, the result has data's int32"):
        _api.run(SE, 18, args, (0, "none"), True, np.zeros((2, 3), np.int64))
    with pytest.raises(TypeError, match="out is a Python list"):
        _api.run(SE, 18, args, (0, "none"), True, [[0, 0, 0], [0, 0, 0]])
    frozen = np.zeros((2, 3), np.int32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        _api.run(SE, 18, args, (0, "none"), True, frozen)
    with pytest.raises(TypeError, match="updates is a Python list"):
        _api.run(SE, 18, (data, a([[0]]), [[1]]), (0, "none"), True)


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
    result = _api.run(SN, 18, (cache, idx, new), ("none",), True, cache)
    assert result is cache
    assert twin[:, 5].all()
    assert not twin[:, :5].any()
    assert not twin[:, 6:].any()
    copied = _api.run(SN, 18, (cache, idx, 2 * new), ("none",), True)
    assert not np.shares_memory(copied, cache)
    assert twin[:, 5].max() == 1


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


def _sweep(seed: int, count: int) -> list[Scatter]:
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
                Scatter(
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
                Scatter(
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


def _without_compiled_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_numpy_backend, "_kernels", None)


#: NumPy's routes: the compiled kernel where it is built (tests/test_compiled_kernel.py
#: holds its presence to what the session expects), and NumPy's own kernels.
ROUTES = (["compiled"] if _numpy_backend._kernels is not None else []) + ["numpy-kernels"]


@pytest.fixture(params=ROUTES)
def route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """NumPy's two routes: the compiled kernel, and NumPy's own kernels without it."""
    if request.param == "numpy-kernels":
        _without_compiled_kernel(monkeypatch)
    return str(request.param)


#: The libraries with a route through the compiled kernel run without it too (PyTorch
#: then runs its own operations: the route of CUDA tensors and autograd).
def _sweep_routes(lib: Library) -> tuple[bool, ...]:
    if lib.name not in ("numpy", "torch"):
        return (True,)  # (no route through the compiled kernel: as it is)
    return (True, False) if _numpy_backend._kernels is not None else (False,)


SWEEP_PARAMS = [
    pytest.param(lib, compiled, id=f"{lib.name}-{'compiled' if compiled else 'without'}")
    for lib in SERVED
    for compiled in _sweep_routes(lib)
]


@pytest.mark.parametrize(("lib_", "compiled"), SWEEP_PARAMS)
def test_sweep_is_bit_identical_to_the_oracle(
    lib_: Library, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """400 random calls (every dtype and reduction, duplicates, unchecked drops) agree."""
    if not compiled:
        _without_compiled_kernel(monkeypatch)
    ran = 0
    for case in SWEEP:
        if not _held(lib_, case):
            continue
        try:
            want = case.oracle()
        except IndexError:
            with pytest.raises(IndexError):
                lib_.to_numpy(_run(lib_, case))
            continue
        assert_identical(lib_.to_numpy(_run(lib_, case)), want), case.id
        ran += 1
    assert ran > 200


def _oracle_dropping(case: Scatter, reduction: str) -> np.ndarray:
    """What an unchecked call must give: the oracle's loop over the updates in range only."""
    if case.op is SN:
        k = case.indices.shape[-1]
        sizes = np.array(case.data.shape[:k])
        ok = ((case.indices >= -sizes) & (case.indices < sizes)).all(axis=-1)
        return oracle.scatter_nd(case.data, case.indices[ok], case.updates[ok], reduction)
    # ScatterElements: each update in C order of its position, as a one-element ScatterND.
    axis = case.attributes.get("axis", 0) % case.data.ndim
    size = case.data.shape[axis]
    out = case.data
    for pos in itertools.product(*map(range, case.indices.shape)):
        value = int(case.indices[pos])
        if -size <= value < size:
            target = np.array([[*pos[:axis], value % size, *pos[axis + 1 :]]], np.int64)
            update = np.asarray([case.updates[pos]], case.data.dtype)
            out = oracle.scatter_nd(out, target, update, reduction)
    return out


def _large_cases() -> list[Scatter]:
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
                Scatter(
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
            Scatter(
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
            Scatter(
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
    case: Scatter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads split by destination: each destination sees its updates in C order."""
    arrays = (case.data, case.indices, case.updates)
    compiled = _api.run(case.op, 18, arrays, case.attribute_values(), True)
    monkeypatch.setattr(_numpy_backend, "_kernels", None)
    assert_identical(compiled, _api.run(case.op, 18, arrays, case.attribute_values(), True))


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
        got = _api.run(SE, 18, (data, np.arange(2**16), updates), (0, reduction), True)
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
        attributes: tuple[Any, ...] = (0, "none")
    else:
        arrays = (data, a([[0], [2], [1], [3]]), -np.ones((4, 4), F32))
        attributes = ("none",)
    with pytest.raises(IndexError, match=r"index 3 at position \((1, 2|3, 0)\)"):
        _api.run(op, 18, arrays, attributes, True, data)
    assert_identical(data, before)


@NUMPY_ONLY
@pytest.mark.parametrize("layout", ["transposed", "strided", "fortran-updates", "int32"])
def test_views_and_layouts_give_the_same_bits(layout: str, route: str) -> None:
    """Data, indices and updates of any strides: the sweep again, on views."""
    ran = 0
    for case in SWEEP[:200]:
        if case.data.dtype.kind == "O" or case.data.ndim < 2 or not case.check_bounds:
            continue
        try:
            want = case.oracle()
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
        got = _api.run(case.op, case.opset, arrays, case.attribute_values(), True)
        assert_identical(got, want)
        ran += 1
    assert ran > 20


def _official() -> list[Any]:
    """The ONNX backend test suite's single-node ScatterElements and ScatterND cases."""
    node = pytest.importorskip("onnx.backend.test.case.node")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (building the suite evaluates cases that warn)
        every = node.collect_testcases(None)
    kinds = {SE.op_type, SN.op_type}
    chosen = {}
    for case in every:
        nodes = case.model.graph.node
        if len(nodes) == 1 and nodes[0].op_type in kinds:
            chosen.setdefault(case.name, case)
    return list(chosen.values())


OFFICIAL = _official()


@NUMPY_ONLY
def test_the_suite_has_both_operators_and_every_reduction() -> None:
    names = {case.name for case in OFFICIAL}
    # (onnx 1.16, the floor, has these; later releases add mul and element-wise max/min.)
    assert {"test_scatter_elements_with_duplicate_indices", "test_scatter_elements_with_reduction_max",
            "test_scatternd_multiply", "test_scatternd_min"} <= names, names  # fmt: skip


@pytest.mark.parametrize("lib_", SERVED, ids=lambda lib: lib.name)
@pytest.mark.parametrize("case", OFFICIAL, ids=lambda c: c.name)
def test_official_case(lib_: Library, case: Any) -> None:
    node = case.model.graph.node[0]
    op = SE if node.op_type == SE.op_type else SN
    attributes = _ops.node_attributes(op, node)
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    for inputs, outputs in case.data_sets:
        data, indices, updates = (np.asarray(x) for x in inputs)
        arrays = (lib_.asarray(data), lib_.indices(indices), lib_.asarray(updates))
        values = tuple(attributes[name] for name, _ in op.attributes)
        got = _api.run(op, opset, arrays, values, True)
        assert_identical(lib_.to_numpy(got), np.asarray(outputs[0]))


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
    a, b = got.reshape(-1), want.reshape(-1)
    with np.errstate(invalid="ignore"):
        differ = a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1)
    classes = set()
    for i in np.flatnonzero(differ.any(axis=1)):
        x, y = (complex(a[i]), complex(b[i])) if a.dtype.kind == "c" else (float(a[i]), float(b[i]))
        if np.isnan(x) and np.isnan(y):
            classes.add("which NaN")
        elif np.isnan(y):
            classes.add("max/min drop a NaN")
        elif x == y == 0:
            classes.add("signed zero in max/min")
        else:
            classes.add(f"value: {x} vs {y}")
    return ", ".join(sorted(classes))


#: What the peers may do otherwise, and why (docs/conformance.md).
_EXPLAINED = {
    "no kernel for the type",  # ORT: complex ScatterElements, ScatterND float16/bool reductions
    "input the Python binding cannot take",  # ORT's binding: bfloat16, 0-d bool arrays
    "which NaN",  # a NaN from add/mul keeps an operand's payload there; ours is canonical
    "max/min drop a NaN",  # std::max / Python max: a NaN loses to a number
    "signed zero in max/min",  # -0.0 == +0.0 to them: whichever came first stays
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
            want: Any = case.oracle()
        except IndexError:
            want = None
        given = dict(case.op.attributes) | case.attributes
        arrays = (case.data, case.indices.astype(np.int64), case.updates)
        types = [str(x.dtype) for x in arrays]
        model = case.op.onnx_model(case.opset, types, [x.shape for x in arrays], given)
        feed = dict(zip(case.op.inputs, arrays, strict=True))
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
