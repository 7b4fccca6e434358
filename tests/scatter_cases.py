"""The scatters' part of the shared case table (``tests/cases.py`` runs it on every backend).

The official examples of every version, every rule of DESIGN.md's scatter section and
every error. Every expected result is a spec's literal or the loop oracle's answer
(``onnx_gather._conformance.oracle``, the spec's loops read literally); a literal must be
the oracle's too. Unchecked cases expect the decided result: an update out of range is
dropped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from case_type import Case
from libs import BFLOAT16

from onnx_gather import _ops

SE, SN, SC = _ops.SCATTER_ELEMENTS, _ops.SCATTER_ND, _ops.SCATTER
TS = _ops.TENSOR_SCATTER


def scatter(
    id: str,
    op: _ops.Operator | str,
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    attributes: dict[str, Any] | None = None,
    *,
    opset: int = 18,
    check_bounds: bool = True,
    raises: type[Exception] | None = None,
    match: str | None = None,
    expected: np.ndarray | None = None,
) -> Case:
    """A scatter's case, its attributes by name (the operator's defaults where left out)."""
    op = _ops.get(op)
    given = dict(op.attributes) | (attributes or {})
    return Case(id, op.name, data, indices, given, opset, check_bounds, raises, match, expected,
                updates=updates)  # fmt: skip


def a(values: Any, dtype: Any = None) -> np.ndarray:
    return np.array(values, dtype=dtype)


F32 = np.float32
ZERO33 = np.zeros((3, 3), F32)
NAN1 = np.array([0x7FC00001], np.uint32).view(F32)[0]  # quiet NaNs with payloads
NAN2 = np.array([0x7FC00002], np.uint32).view(F32)[0]

SPEC = [
    # ONNX's node tests: scatter_elements_with_negative_indices, _with_duplicate_indices,
    # _with_reduction_max / _min.
    scatter("se-negative", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, -3]]),
            a([[1.1, 2.1]], F32), {"axis": 1}, expected=a([[1.0, 1.1, 2.1, 4.0, 5.0]], F32)),
    scatter("se-duplicates-add", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 1]]),
            a([[1.1, 2.1]], F32), {"axis": 1, "reduction": "add"},
            expected=a([[1.0, 5.2, 3.0, 4.0, 5.0]], F32)),
    scatter("se-max", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 1]]),
            a([[1.1, 2.1]], F32), {"axis": 1, "reduction": "max"},
            expected=a([[1.0, 2.1, 3.0, 4.0, 5.0]], F32)),
    scatter("se-min", SE, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 1]]),
            a([[1.1, 2.1]], F32), {"axis": 1, "reduction": "min"},
            expected=a([[1.0, 1.1, 3.0, 4.0, 5.0]], F32)),
    # ONNX's node test scatternd_add: the two updates of index 0 both land.
    scatter("snd-add-duplicates", SN, a([[1, 2], [3, 4]], F32), a([[0], [0]]),
            a([[5, 6], [7, 8]], F32), {"reduction": "add"}, expected=a([[13, 16], [3, 4]], F32)),
    scatter("snd-mul-duplicates", SN, a([[1, 2], [3, 4]], F32), a([[0], [0]]),
            a([[5, 6], [7, 8]], F32), {"reduction": "mul"}, expected=a([[35, 96], [3, 4]], F32)),
]  # fmt: skip

#: Every rule in DESIGN.md's scatter section, the expected answer the oracle's.
RULES = [
    scatter("se-none-last-duplicate-wins", SE, a([0, 0, 0], F32), a([2, 0, 2, 2]),
            a([1, 2, 3, 4], F32), expected=a([2, 0, 4], F32)),
    scatter("snd-none-last-duplicate-wins", SN, a([[0, 0], [0, 0]], np.int64), a([[1], [0], [1]]),
            a([[1, 1], [2, 2], [3, 3]], np.int64), expected=a([[2, 2], [3, 3]], np.int64)),
    scatter("se-float16-rounds-every-step", SE, a([1024], np.float16), a([0, 0, 0, 0]),
            a([0.5, 0.5, 0.5, 0.5], np.float16), {"reduction": "add"},
            expected=a([1024], np.float16)),  # 1024.5 rounds to 1024, four times
    scatter("se-float16-mul", SE, a([1.0009765625], np.float16), a([0, 0, 0]),
            a([1.0009765625] * 3, np.float16), {"reduction": "mul"}),
    scatter("se-int8-add-wraps", SE, a([120, -120], np.int8), a([0, 0, 1]),
            a([5, 5, -10], np.int8), {"reduction": "add"}, expected=a([-126, 126], np.int8)),
    scatter("se-int8-mul-wraps", SE, a([16], np.int8), a([0, 0]), a([4, 3], np.int8),
            {"reduction": "mul"}, expected=a([-64], np.int8)),
    scatter("se-uint8-add-wraps", SE, a([250], np.uint8), a([0, 0]), a([5, 3], np.uint8),
            {"reduction": "add"}, expected=a([2], np.uint8)),
    scatter("snd-uint64-max", SN, a([2**64 - 2, 0], np.uint64), a([[0], [1], [1]]),
            a([2**64 - 1, 2**63, 5], np.uint64), {"reduction": "max"}),
    scatter("se-int64-min", SE, a([0, 0], np.int64), a([0, 1, 1]),
            a([-(2**63), 2**62, -5], np.int64), {"reduction": "min"}),
    *(scatter(f"se-bool-{r}", SE, a([True, False, True, False]), a([0, 1, 2, 3, 1, 3]),
              a([False, False, False, True, True, True]), {"reduction": r})
      for r in ("add", "mul", "max", "min")),
    scatter("se-max-signed-zeros", SE, a([-0.0, 0.0, -0.0, 0.0], F32), a([0, 1, 2, 3, 2]),
            a([0.0, -0.0, -0.0, 0.0, -0.0], F32), {"reduction": "max"},
            expected=a([0.0, 0.0, -0.0, 0.0], F32)),
    scatter("se-min-signed-zeros", SE, a([-0.0, 0.0, 0.0, 0.0], F32), a([0, 1, 2, 3, 2]),
            a([0.0, -0.0, 0.0, 0.0, 0.0], F32), {"reduction": "min"},
            expected=a([-0.0, -0.0, 0.0, 0.0], F32)),
    *(scatter(f"se-{r}-signed-zeros-{np.dtype(t).name}", SE, a([-0.0, 0.0, -0.0], t),
              a([0, 1, 2, 2]), a([0.0, -0.0, 0.0, -0.0], t), {"reduction": r})
      for r in ("max", "min") for t in (np.float16, np.float64)),
    scatter("se-max-nan-first-wins", SE, a([1.0, NAN1, 1.0], F32), a([0, 0, 1, 2, 2]),
            a([NAN2, NAN1, NAN2, 5.0, NAN2], F32), {"reduction": "max"},
            expected=a([NAN2, NAN1, NAN2], F32)),
    scatter("snd-min-nan-first-wins", SN, a([[1.0, 2.0], [NAN1, 0.0]], F32), a([[0], [1], [0]]),
            a([[NAN1, 3.0], [NAN2, NAN2], [NAN2, NAN2]], F32), {"reduction": "min"},
            expected=a([[NAN1, NAN2], [NAN1, NAN2]], F32)),
    scatter("se-complex-add", SE, a([1 + 2j, 0], np.complex64), a([0, 0, 1]),
            a([0.5 - 1j, 3j, -1], np.complex64), {"reduction": "add"}),
    scatter("snd-complex-mul", SN, a([1 + 2j, 0], np.complex128), a([[0], [0]]),
            a([0.5 - 1j, 3j], np.complex128), {"reduction": "mul"}),
    # Fixed-width NumPy strings: the result is wide enough for every update (ONNX Runtime
    # keeps 's11' whole; a '<U2' result would cut it). Found by the campaign.
    scatter("se-strings-wider-updates", SE, a([["\x00z"]], "<U2"), a([[0], [-1]]),
            a([["s8"], ["s11"]], "<U3"), expected=a([["s11"]], "<U3")),
    scatter("snd-strings", SN, a(["a", "b", "c"], object), a([[2], [0], [2]]),
            a(["x", "y", "z"], object), expected=a(["y", "b", "z"], object)),
    scatter("se-trim-off-axis", SE, np.arange(12, dtype=F32).reshape(3, 4), a([[2], [0]]),
            a([[-1], [-2]], F32), {"axis": 1}),
    scatter("se-axis-negative-rank3", SE, np.arange(24, dtype=np.int32).reshape(2, 3, 4),
            a([[[0, -1, 2, 0]], [[1, 1, -2, 0]]]), -a([[[1, 2, 3, 4]], [[5, 6, 7, 8]]], np.int32),
            {"axis": -2, "reduction": "add"}),
    scatter("snd-full-coordinates", SN, np.arange(12, dtype=np.int16).reshape(3, 4),
            a([[0, -1], [2, 3], [0, 3], [-3, 0]], np.int32), a([100, 200, 300, 400], np.int16)),
    scatter("snd-0d-updates", SN, a([1.0, 2.0], F32), a([-1]), a(7.0, F32),
            expected=a([1.0, 7.0], F32)),
    scatter("snd-empty-updates", SN, np.zeros((3, 0), F32), a([[1], [2]]), np.zeros((2, 0), F32)),
    scatter("se-empty-updates", SE, a([[1.0, 2.0]], F32), np.zeros((0, 2), np.int64),
            np.zeros((0, 2), F32)),
    # Unchecked: an update out of range is dropped, the rest land.
    scatter("se-unchecked-drops", SE, a([1, 2, 3], np.int32), a([0, 3, -4, 7, -1]),
            a([10, 20, 30, 40, 50], np.int32), check_bounds=False,
            expected=a([10, 2, 50], np.int32)),
    scatter("snd-unchecked-drops", SN, a([[1, 2], [3, 4]], np.int32),
            a([[0, 2], [5, 0], [-3, 1], [1, -1]]), a([10, 20, 30, 40], np.int32),
            {"reduction": "add"}, check_bounds=False, expected=a([[1, 2], [3, 44]], np.int32)),
    # Unchecked into empty data: every update is dropped (found on a GPU, where JAX's
    # scatter first finds each target's winner: it read row -1 of nothing).
    scatter("snd-unchecked-into-empty-data", SN, np.zeros(0, np.int32), a([0]),
            a(5, np.int32), check_bounds=False, expected=np.zeros(0, np.int32)),
    scatter("se-unchecked-into-empty-data", SE, np.zeros((2, 0), F32), np.zeros((2, 0), np.int64),
            np.zeros((2, 0), F32), check_bounds=False, expected=np.zeros((2, 0), F32)),
    scatter("se-opset-11", SE, a([1, 2], np.int64), a([1, 1]), a([5, 6], np.int64), opset=11,
            expected=a([1, 6], np.int64)),
    # Subnormal operands and a subnormal result of normal ones (2**-125 + 2**-148 minus
    # 2**-125): IEEE bits on every backend (XLA's CPU arithmetic flushes them to zero).
    *(scatter(f"se-{r}-subnormals", SE,
              a([1, 0x00800001, 0x80000003], np.uint32).view(F32), a([0, 0, 1, 2]),
              a([1, 1, 0x80800000, 2], np.uint32).view(F32), {"reduction": r})
      for r in ("add", "mul", "max", "min")),
    # max and min at versions 16 and 17, as torch's exporter writes them and ORT runs them.
    scatter("se-max-at-opset-16", SE, a([1.0, 5.0, 3.0], F32), a([0, 1, 0]), a([4.0, 4.0, 2.0], F32),
            {"reduction": "max"}, opset=16, expected=a([4.0, 5.0, 3.0], F32)),
    scatter("snd-min-at-opset-17", SN, a([1.0, 5.0, 3.0], F32), a([[0], [1]]), a([4.0, 4.0], F32),
            {"reduction": "min"}, opset=17, expected=a([1.0, 4.0, 3.0], F32)),
    scatter("snd-opset-16-mul", SN, a([2, 3], np.int64), a([[1], [1]]), a([5, 6], np.int64),
            {"reduction": "mul"}, opset=16, expected=a([2, 90], np.int64)),
]  # fmt: skip
if BFLOAT16 is not None:
    RULES.append(
        scatter("se-bfloat16-rounds-every-step", SE, a([256], BFLOAT16), a([0, 0, 0]),
                a([0.5, 0.5, 1.5], BFLOAT16), {"reduction": "add"},
                expected=a([258], BFLOAT16))  # 256.5 -> 256 twice, then 257.5 -> 258
    )  # fmt: skip

ERRORS = [
    scatter("se-out-of-range", SE, ZERO33, a([[1, 0, 3]]), a([[1.0, 2.0, 3.0]], F32),
            raises=IndexError,
            match=r"ScatterElements-18: index 3 at position \(0, 2\) of indices is out of "
                  r"range for axis 0 of size 3"),
    scatter("se-out-of-range-negative", SE, ZERO33, a([[0], [-4]]), a([[1.0], [2.0]], F32),
            {"axis": 1}, raises=IndexError, match=r"index -4 at position \(1, 0\).*axis 1 of size 3"),
    scatter("snd-out-of-range-coordinate", SN, np.zeros((2, 5), F32), a([[1, 4], [0, 5]]),
            a([1.0, 2.0], F32), raises=IndexError,
            match=r"ScatterND-18: index 5 at position \(1, 1\) of indices is out of range for "
                  r"axis 1 of size 5"),
    scatter("snd-out-of-range-empty-updates", SN, np.zeros((3, 0), F32), a([[3]]),
            np.zeros((1, 0), F32), raises=IndexError, match=r"index 3 at position \(0, 0\)"),
    scatter("se-updates-dtype", SE, ZERO33, a([[0]]), a([[1.0]], np.float64), raises=TypeError,
            match="updates must have data's type float32, got float64"),
    scatter("se-index-dtype", SE, ZERO33, a([[0]], np.int16), a([[1.0]], F32), raises=TypeError,
            match="int16"),
    scatter("se-reduction-unknown", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"reduction": "sum"},
            raises=ValueError, match="unknown reduction 'sum'"),
    scatter("se-reduction-too-new", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"reduction": "add"},
            opset=13, raises=ValueError, match="reduction 'add' needs version 16"),
    scatter("snd-max-too-new", SN, ZERO33, a([[0]]), a([[1.0, 2.0, 3.0]], F32),
            {"reduction": "max"}, opset=13, raises=ValueError, match="reduction 'max' needs version 16"),
    scatter("se-reduction-not-a-str", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"reduction": 1},
            raises=TypeError, match="reduction must be a str, got 1"),
    scatter("se-complex-max", SE, a([1j]), a([0]), a([2j]), {"reduction": "max"},
            raises=TypeError, match="'max' needs ordered values; complex128"),
    scatter("snd-string-mul", SN, a(["a"], object), a([[0]]), a(["b"], object),
            {"reduction": "mul"}, raises=TypeError,
            match="reduction 'mul' needs numbers; string data takes reduction 'none' and 'add'"),
    scatter("se-string-max", SE, a(["a"], object), a([0]), a(["b"], object),
            {"reduction": "max"}, raises=TypeError, match="reduction 'max' needs numbers"),
    scatter("se-bfloat16-before-13", SE, ZERO33.astype(BFLOAT16 or F32), a([[0]]),
            a([[1.0]], BFLOAT16 or F32), opset=11, raises=TypeError, match="bfloat16"),
    scatter("se-rank", SE, ZERO33, a([0]), a([1.0], F32), raises=ValueError,
            match=r"same rank as data \(2\), got rank 1"),
    scatter("se-updates-shape", SE, ZERO33, a([[0, 1]]), a([[1.0]], F32), raises=ValueError,
            match=r"updates must have the indices' shape \(1, 2\), got \(1, 1\)"),
    scatter("se-larger-off-axis", SE, ZERO33, np.zeros((1, 4), np.int64),
            np.zeros((1, 4), F32), raises=ValueError, match="indices dim 1 is 4, larger than data's 3"),
    scatter("se-axis", SE, ZERO33, a([[0]]), a([[1.0]], F32), {"axis": 2}, raises=ValueError,
            match="axis 2 is out of range"),
    # Reliability round 5: index tuples of length 0 (ScatterND's text bounds k only from
    # above): each update is the whole of data. Expected values: ONNX Runtime's (its own
    # tests hold the case: ScatterND zero index depth).
    scatter("snd-k0-last-wins", SN, np.ones((2, 2), F32), np.zeros((3, 0), np.int64),
            np.arange(12, dtype=F32).reshape(3, 2, 2), expected=a([[8, 9], [10, 11]], F32)),
    scatter("snd-k0-add-all", SN, np.ones((2, 2), F32), np.zeros((3, 0), np.int64),
            np.arange(12, dtype=F32).reshape(3, 2, 2), {"reduction": "add"},
            expected=a([[13, 16], [19, 22]], F32)),
    scatter("snd-k0-mul", SN, np.ones((2, 2), F32), np.zeros((3, 0), np.int32),
            np.arange(12, dtype=F32).reshape(3, 2, 2), {"reduction": "mul"},
            expected=a([[0, 45], [120, 231]], F32)),
    scatter("snd-k0-min", SN, np.ones((2, 2), F32), np.zeros((3, 0), np.int64),
            np.arange(12, dtype=F32).reshape(3, 2, 2), {"reduction": "min"},
            expected=a([[0, 1], [1, 1]], F32)),
    scatter("snd-k0-empty-data", SN, np.zeros((0, 2), F32), np.zeros((3, 0), np.int64),
            np.zeros((3, 0, 2), F32), expected=np.zeros((0, 2), F32)),
    scatter("snd-k0-no-updates", SN, np.ones((2, 2), F32), np.zeros((0, 0), np.int64),
            np.zeros((0, 2, 2), F32), expected=np.ones((2, 2), F32)),
    scatter("snd-k0-unchecked", SN, a([1, 2], np.int64), np.zeros((2, 0), np.int64),
            a([[5, 6], [7, 8]], np.int64), check_bounds=False, expected=a([7, 8], np.int64)),
    # Reliability round 5: strings' add concatenates, in C order (ONNX Runtime's own test:
    # ["base-first-second-last", "untouched"]; the reference evaluator agrees).
    scatter("se-strings-add-concatenates", SE, a(["base", "untouched"], object), a([0, 0, 0]),
            a(["-first", "-second", "-last"], object), {"reduction": "add"},
            expected=a(["base-first-second-last", "untouched"], object)),
    scatter("snd-strings-add-concatenates", SN, a([["a", "b"], ["c", "d"]], object),
            a([[1], [0], [1]]), a([["1", "2"], ["3", "4"], ["5", "6"]], object),
            {"reduction": "add"}, expected=a([["a3", "b4"], ["c15", "d26"]], object)),
    scatter("snd-k-too-large", SN, ZERO33, a([[0, 0, 0]]), a([1.0], F32), raises=ValueError,
            match=r"indices.shape\[-1\] is 3"),
    scatter("snd-updates-shape", SN, ZERO33, a([[0], [1]]), a([[1.0, 2.0, 3.0]], F32),
            raises=ValueError, match=r"updates must have shape indices.shape\[:-1\] \+ "
                                     r"data.shape\[1:\] = \(2, 3\), got \(1, 3\)"),
    scatter("snd-rank-0-indices", SN, ZERO33, a(0), a(1.0, F32), raises=ValueError,
            match="indices must have rank >= 1"),
    scatter("snd-opset-10", SN, ZERO33, a([[0]]), a([[1.0, 2.0, 3.0]], F32), opset=10,
            raises=ValueError, match="opset 10 has no ScatterND"),
]  # fmt: skip


#: The deprecated Scatter-9/11 (DESIGN.md): ScatterElements-11's rule under its old name.
DEPRECATED = [
    # Scatter-9's two examples, literally (ONNX's node tests scatter_without_axis and
    # scatter_with_axis run them at opset 10 too).
    scatter("scatter-9-example-1", SC, ZERO33, a([[1, 0, 2], [0, 2, 1]]),
            a([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]], F32), opset=9,
            expected=a([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]], F32)),
    scatter("scatter-9-example-2", SC, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, 3]]),
            a([[1.1, 2.1]], F32), {"axis": 1}, opset=9,
            expected=a([[1.0, 1.1, 3.0, 2.1, 5.0]], F32)),
    # Version 9's text gives no range: negatives count from the end (as ORT runs it).
    scatter("scatter-9-negative", SC, a([[1.0, 2.0, 3.0, 4.0, 5.0]], F32), a([[1, -3]]),
            a([[1.1, 2.1]], F32), {"axis": 1}, opset=9,
            expected=a([[1.0, 1.1, 2.1, 4.0, 5.0]], F32)),
    scatter("scatter-11-last-duplicate-wins", SC, a([0, 0, 0], np.int32), a([2, 0, 2, 2]),
            a([1, 2, 3, 4], np.int32), opset=11, expected=a([2, 0, 4], np.int32)),
    scatter("scatter-opset-18-is-11", SC, a(["a", "b"], object), a([1, -1]), a(["x", "y"], object),
            opset=18, expected=a(["a", "y"], object)),
    scatter("scatter-unchecked-drops", SC, a([0, 0, 0], F32), a([1, 3, -4]), a([1.0, 2.0, 3.0], F32),
            check_bounds=False, opset=11, expected=a([0.0, 1.0, 0.0], F32)),
    scatter("scatter-out-of-range", SC, ZERO33, a([[1, 0, 3]]), a([[1.0, 2.0, 3.0]], F32),
            opset=9, raises=IndexError,
            match=r"Scatter-9: index 3 at position \(0, 2\) of indices is out of range for "
                  r"axis 0 of size 3"),
    scatter("scatter-opset-8", SC, ZERO33, a([[0]]), a([[1.0]], F32), opset=8, raises=ValueError,
            match="opset 8 has no Scatter"),
    scatter("scatter-bfloat16", SC, ZERO33.astype(BFLOAT16 or F32), a([[0]]),
            a([[1.0]], BFLOAT16 or F32), opset=11, raises=TypeError,
            match="bfloat16 is not supported .no version of the operator has bfloat16"),
    scatter("scatter-updates-shape", SC, ZERO33, a([[0, 1]]), a([[1.0]], F32), opset=11,
            raises=ValueError, match=r"Scatter-11: updates must have the indices' shape"),
]  # fmt: skip


def ts(id: str, cache: np.ndarray, update: np.ndarray, starts: Any, **given: Any) -> Case:
    """A TensorScatter case: ``starts`` are the write indices (int64 unless an array)."""
    starts = starts if isinstance(starts, np.ndarray) else a(starts, np.int64)
    attributes = {k: given.pop(k) for k in ("axis", "mode") if k in given}
    return scatter(id, TS, cache, starts, update, attributes, opset=given.pop("opset", 24),
                   **given)  # fmt: skip


_DECODE = np.zeros((2, 1, 4, 2), F32)
_ONES = np.ones((2, 1, 1, 2), F32)

#: TensorScatter-24 (DESIGN.md): the text's loop; ONNX Runtime's rule for write indices.
TENSOR = [
    # A decode step: each batch entry's one new position, at its own index (axis -2).
    ts("ts-decode", _DECODE, _ONES, [3, 1],
       expected=np.array([[[[0, 0], [0, 0], [0, 0], [1, 1]]], [[[0, 0], [1, 1], [0, 0], [0, 0]]]],
                         F32)),
    ts("ts-prefill-from-zero", np.zeros((2, 4), np.int32), a([[1, 2], [3, 4]], np.int32), [0, 0],
       axis=1, expected=a([[1, 2, 0, 0], [3, 4, 0, 0]], np.int32)),
    ts("ts-fills-to-the-end", np.zeros((1, 3), np.int64), a([[5, 6]], np.int64), [1], axis=1,
       expected=a([[0, 5, 6]], np.int64)),
    # Circular: only the sequence position wraps (ORT's kernel; the reference evaluator
    # wraps prefix coordinates too, which is not followed).
    ts("ts-circular-wraps", np.zeros((1, 3), F32), a([[7.0, 8.0]], F32), [2], axis=1,
       mode="circular", expected=a([[8.0, 0.0, 7.0]], F32)),
    ts("ts-circular-index-past-the-end", np.zeros((2, 3), np.int8), a([[1], [2]], np.int8),
       [7, 3], axis=1, mode="circular", expected=a([[0, 1, 0], [2, 0, 0]], np.int8)),
    # Reliability round 5: a start near the integer limit plus an offset passed it and
    # wrapped (every backend: a wrong position; torch.compile: a write outside the cache).
    # Expected values: ONNX Runtime's (its modulo is exact; the reference evaluator wraps).
    ts("ts-circular-near-int64-max", np.zeros((2, 3, 1), F32),
       np.arange(1, 7, dtype=F32).reshape(2, 3, 1), [2**63 - 1, 2**63 - 2], axis=1,
       mode="circular", expected=a([[3, 1, 2], [4, 5, 6]], F32).reshape(2, 3, 1)),
    ts("ts-circular-near-int32-max", np.zeros((2, 3, 1), F32),
       np.arange(1, 7, dtype=F32).reshape(2, 3, 1), a([2**31 - 1, 2**31 - 2], np.int32),
       axis=1, mode="circular", expected=a([[3, 1, 2], [4, 5, 6]], F32).reshape(2, 3, 1)),
    ts("ts-linear-near-int64-max", np.zeros((2, 3), F32), np.ones((2, 2), F32),
       [2**63 - 1, 0], axis=1, raises=IndexError,
       match=r"index 9223372036854775807 at position \(0,\) of write_indices"),
    ts("ts-unchecked-linear-near-the-limits", np.zeros((2, 3), F32), np.ones((2, 2), F32),
       [2**63 - 1, -(2**63)], axis=1, check_bounds=False, expected=np.zeros((2, 3), F32)),
    ts("ts-axis-last", np.zeros((2, 2, 3), np.uint16), np.full((2, 2, 1), 9, np.uint16), [2, 0],
       axis=-1, expected=a([[[0, 0, 9], [0, 0, 9]], [[9, 0, 0], [9, 0, 0]]], np.uint16)),
    ts("ts-axis-1-of-rank-3", np.zeros((1, 3, 2), np.bool_), np.ones((1, 1, 2), np.bool_), [1],
       axis=1, expected=a([[[False, False], [True, True], [False, False]]])),
    ts("ts-empty-update-at-the-end", a([[1.0, 2.0]], F32), np.zeros((1, 0), F32), [2], axis=1,
       expected=a([[1.0, 2.0]], F32)),
    ts("ts-nan-payloads-kept", np.zeros((1, 2), F32), a([[NAN1, NAN2]], F32), [0], axis=1,
       expected=a([[NAN1, NAN2]], F32)),
    ts("ts-strings", a([["a", "b", "c"]], object), a([["x"]], object), [1], axis=1,
       expected=a([["a", "x", "c"]], object)),
    # Fixed-width strings: the result as wide as the update's (Dask's declared data's
    # width and cut the update; found by the campaign).
    ts("ts-strings-wider-update", a([[b"s9", b"a"]], "S2"), a([[b"\x00z", b"abcdef"]], "S6"),
       [0], axis=1, expected=a([[b"\x00z", b"abcdef"]], "S6")),
    ts("ts-int32-write-indices", np.zeros((1, 2), F32), a([[1.0]], F32), a([1], np.int32),
       axis=1, expected=a([[0.0, 1.0]], F32)),
    # Unchecked: the writes that fall outside are dropped (all of a negative index's in
    # circular mode; the ones below 0 in linear mode).
    ts("ts-unchecked-past-the-end", np.zeros((1, 3), F32), a([[1.0, 2.0]], F32), [2], axis=1,
       check_bounds=False, expected=a([[0.0, 0.0, 1.0]], F32)),
    # (uint16: torch on CUDA has no mask indexing of it; found on a GPU)
    ts("ts-unchecked-uint16-drops", np.zeros((2, 3), np.uint16), a([[7, 8], [9, 10]], np.uint16),
       [1, 2], axis=1, check_bounds=False, expected=a([[0, 7, 8], [0, 0, 9]], np.uint16)),
    ts("ts-unchecked-negative-linear", np.zeros((1, 3), F32), a([[1.0, 2.0]], F32), [-1],
       axis=1, check_bounds=False, expected=a([[2.0, 0.0, 0.0]], F32)),
    ts("ts-unchecked-negative-circular", np.zeros((1, 3), F32), a([[1.0, 2.0]], F32), [-1],
       axis=1, mode="circular", check_bounds=False, expected=a([[0.0, 0.0, 0.0]], F32)),
    ts("ts-negative", np.zeros((2, 3), F32), a([[1.0], [2.0]], F32), [0, -1], axis=1,
       raises=IndexError,
       match=r"TensorScatter-24: index -1 at position \(1,\) of write_indices is out of "
             r"range for axis 1 of size 3: a write index must be >= 0"),
    ts("ts-negative-circular", np.zeros((1, 3), F32), a([[1.0]], F32), [-2], axis=1,
       mode="circular", raises=IndexError, match=r"index -2 at position \(0,\)"),
    ts("ts-linear-past-the-end", np.zeros((2, 3), F32), a([[1.0, 2.0], [3.0, 4.0]], F32), [1, 2],
       axis=1, raises=IndexError,
       match=r"index 2 at position \(1,\) of write_indices is out of range for axis 1 of "
             r"size 3 with an update of length 2: linear mode needs write_indices\[b\] \+ 2 "
             r"<= 3"),
    ts("ts-batch-axis", np.zeros((2, 3), F32), np.zeros((2, 3), F32), [0, 0], axis=0,
       raises=ValueError, match="axis 0 is the batch axis 0"),
    ts("ts-batch-axis-negative", np.zeros((2, 3), F32), np.zeros((2, 3), F32), [0, 0], axis=-2,
       raises=ValueError, match="axis -2 is the batch axis 0"),
    ts("ts-axis-out-of-range", np.zeros((2, 3), F32), np.zeros((2, 3), F32), [0, 0], axis=2,
       raises=ValueError, match="axis 2"),
    ts("ts-mode-unknown", np.zeros((1, 3), F32), a([[1.0]], F32), [0], axis=1, mode="wrap",
       raises=ValueError, match="unknown mode 'wrap'"),
    ts("ts-mode-not-a-str", np.zeros((1, 3), F32), a([[1.0]], F32), [0], axis=1, mode=1,
       raises=TypeError, match="mode must be a str, got 1"),
    ts("ts-update-longer", np.zeros((1, 2), F32), np.zeros((1, 3), F32), [0], axis=1,
       raises=ValueError, match="length 3 along axis 1 is longer than past_cache's 2"),
    ts("ts-update-other-dims", np.zeros((2, 3), F32), np.zeros((1, 1), F32), [0, 0], axis=1,
       raises=ValueError, match=r"update must have past_cache's shape \(2, 3\) off axis 1"),
    ts("ts-write-indices-shape", np.zeros((2, 3), F32), np.zeros((2, 1), F32), [0], axis=1,
       raises=ValueError, match=r"write_indices must have shape \(2,\)"),
    ts("ts-update-dtype", np.zeros((1, 3), F32), np.zeros((1, 1), np.float64), [0], axis=1,
       raises=TypeError, match="update must have past_cache's type float32, got float64"),
    ts("ts-write-indices-dtype", np.zeros((1, 3), F32), np.zeros((1, 1), F32),
       a([0], np.int16), axis=1, raises=TypeError, match="int16"),
    ts("ts-opset-23", np.zeros((1, 3), F32), np.zeros((1, 1), F32), [0], axis=1, opset=23,
       raises=ValueError, match="opset 23 has no TensorScatter"),
]  # fmt: skip
if BFLOAT16 is not None:
    TENSOR.append(
        ts("ts-bfloat16-bits", np.zeros((1, 2), BFLOAT16),
           np.array([[0x7F81, 0xFFC3]], np.uint16).view(BFLOAT16), [0], axis=1,
           expected=np.array([[0x7F81, 0xFFC3]], np.uint16).view(BFLOAT16))
    )  # fmt: skip


SCATTER_CASES = SPEC + RULES + ERRORS + DEPRECATED + TENSOR
