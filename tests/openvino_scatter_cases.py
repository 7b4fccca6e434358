"""OpenVINO's scatters in the shared case table: ScatterUpdate-3, ScatterElementsUpdate-3/12,
ScatterNDUpdate-3/15.

Every rule of DESIGN.md's section on them, each error, and every type. Expected results are
literals where the point is the value (a reduction's rounding, the decided identity of
``use_init_val=False``), each also the loop oracle's answer; elsewhere the oracle's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from case_type import Case
from libs import BFLOAT16

from onnx_gather import _ops

SU = _ops.OPENVINO_SCATTER_UPDATE
SEU = _ops.OPENVINO_SCATTER_ELEMENTS_UPDATE
SNDU = _ops.OPENVINO_SCATTER_ND_UPDATE
F32, I64 = np.float32, np.int64


def ov(
    id: str,
    op: _ops.Operator,
    data: np.ndarray,
    indices: Any,
    updates: np.ndarray,
    *,
    version: int | None = None,
    check_bounds: bool = True,
    raises: type[Exception] | None = None,
    match: str | None = None,
    expected: Any = None,
    **attributes: Any,
) -> Case:
    """An OpenVINO scatter's case (``version``: the OpenVINO opset, None: the newest)."""
    given = dict(op.attributes) | attributes
    indices = (
        np.asarray(indices, dtype=np.int64) if not isinstance(indices, np.ndarray) else indices
    )
    return Case(f"ov-{id}", op.name, data, indices, given, version, check_bounds, raises, match,
                expected, updates=updates)  # fmt: skip


def a(values: Any, dtype: Any = None) -> np.ndarray:
    return np.array(values, dtype=dtype)


D34 = np.arange(12, dtype=F32).reshape(3, 4)

UPDATE = [
    ov("su-axis-0-rows", SU, D34, [2, 0], a([[10, 11, 12, 13], [20, 21, 22, 23]], F32), axis=0,
       expected=a([[20, 21, 22, 23], [4, 5, 6, 7], [10, 11, 12, 13]], F32)),
    ov("su-0d-index", SU, D34, a(1, I64), a([9, 9, 9], F32), axis=1,
       expected=a([[0, 9, 2, 3], [4, 9, 6, 7], [8, 9, 10, 11]], F32)),
    ov("su-2d-indices-axis-1", SU, D34, [[3, 0], [1, 1]], np.arange(12, dtype=F32).reshape(3, 2, 2) + 100,
       axis=-1),
    # Duplicates: the last in C order of the indices wins.
    ov("su-duplicates-last-wins", SU, D34, [1, 1, 1], a([[1, 2, 9], [3, 4, 9], [5, 6, 9]], F32),
       axis=1, expected=a([[0, 9, 2, 3], [4, 9, 6, 7], [8, 9, 10, 11]], F32)),
    ov("su-int32-indices", SU, D34, a([2], np.int32), a([[7, 7, 7, 7]], F32), axis=0),
    ov("su-empty-indices", SU, D34, np.zeros((0,), I64), np.zeros((0, 4), F32), axis=0,
       expected=D34),
    ov("su-strings", SU, a(["a", "b", "c"], object), [2, 0], a(["z", "y"], object), axis=0,
       expected=a(["y", "b", "z"], object)),
    ov("su-bool", SU, a([[True, False], [False, False]]), [1], a([[True], [True]]), axis=1),
    # Negative indices are errors (the text and the runtime), checked or not.
    ov("su-negative-index", SU, D34, [0, -1], np.zeros((2, 4), F32), axis=0, raises=IndexError,
       match=r"index -1 at position \(1,\) of indices is out of range for axis 0 of size 3; "
             r"valid indices are \[0, 2\]"),
    ov("su-index-too-large", SU, D34, [[4]], np.zeros((3, 1, 1), F32), axis=1, raises=IndexError,
       match=r"index 4 at position \(0, 0\) of indices is out of range for axis 1 of size 4"),
    ov("su-unchecked-drops", SU, D34, [-1, 2, 3, -4], np.arange(16, dtype=F32).reshape(4, 4) + 50,
       axis=0, check_bounds=False,
       expected=a([[0, 1, 2, 3], [4, 5, 6, 7], [54, 55, 56, 57]], F32)),
    ov("su-empty-axis", SU, np.zeros((2, 0), F32), [0], np.zeros((2, 1), F32), axis=1,
       raises=IndexError, match="index 0 at position .0,. of indices is out of range for axis 1 of size 0"),
    ov("su-updates-shape", SU, D34, [0, 1], np.zeros((2, 3), F32), axis=0, raises=ValueError,
       match=r"updates must have shape .* = \(2, 4\), got \(2, 3\)"),
    ov("su-updates-dtype", SU, D34, [0], np.zeros((1, 4), np.float64), axis=0, raises=TypeError,
       match="updates must have data's type float32, got float64"),
    ov("su-axis-out-of-range", SU, D34, [0], np.zeros((1, 4), F32), axis=2, raises=ValueError,
       match="axis 2 is out of range"),
    ov("su-rank-0-data", SU, a(1.0, F32), [0], a([1.0], F32), axis=0, raises=ValueError,
       match="rank >= 1"),
    ov("su-float-indices", SU, D34, a([0.0]), np.zeros((1, 4), F32), axis=0, raises=TypeError,
       match="indices must be int32 or int64, got float64"),
]  # fmt: skip

E4 = a([2, 3, 4, 6], F32)
E6 = a([10, 20, 30, 40, 70, 60], F32)
NAN = np.float32("nan")

ELEMENTS = [
    # mean: added in C order, divided once; integers round down, toward -inf.
    ov("seu-mean-float", SEU, E4, [1, 0, 0, 2, 3, 2], E6, axis=0, reduction="mean",
       expected=a([52 / 3, 6.5, 104 / 3, 38], F32)),
    ov("seu-mean-float-no-init", SEU, E4, [1, 0, 0, 2, 3, 2], E6, axis=0, reduction="mean",
       use_init_val=False, expected=a([25, 10, 50, 70], F32)),
    ov("seu-mean-int-rounds-down", SEU, a([7, 7, 7], np.int32), [0, 0, 1, 2], a([1, 2, -10, -8], np.int32),
       axis=0, reduction="mean", expected=a([3, -2, -1], np.int32)),
    ov("seu-mean-int-no-init", SEU, a([7, 7, 7], np.int64), [0, 0, 1], a([-3, -4, 5], np.int64),
       axis=0, reduction="mean", use_init_val=False, expected=a([-4, 5, 7], np.int64)),
    # More updates on one element than int8 holds: the sum wraps (-328 is -72), the count
    # does not (201; as int8, -55 would give 1).
    ov("seu-mean-int8-many", SEU, a([-128, 0], np.int8), np.zeros(200, I64), np.full(200, -1, np.int8),
       axis=0, reduction="mean", expected=a([-1, 0], np.int8)),
    ov("seu-mean-uint64-large", SEU, a([2**64 - 2, 5], np.uint64), [0, 0], a([2**63, 2**63], np.uint64),
       axis=0, reduction="mean"),
    # float16 adds step by step in float16 (2048 + 1 rounds back to 2048), then divides once.
    ov("seu-mean-float16-steps", SEU, a([2048], np.float16), [0, 0], a([1, 1], np.float16),
       axis=0, reduction="mean", expected=a([682.5], np.float16)),
    ov("seu-sum-float16-steps", SEU, a([2048], np.float16), [0, 0], a([1, 1], np.float16),
       axis=0, reduction="sum", expected=a([2048], np.float16)),
    # Subnormal quotients, rounded to nearest even (XLA's CPU code would flush them: JAX
    # divides from the bits there): 1.5 * 2**-149 is 2 * 2**-149.
    # A NaN quotient is the canonical quiet NaN, as a NaN sum is (the torch campaign: torch
    # widens a float16 NaN of one element to float32 as 0x7FFFFFFF, which came back 0x7FFF);
    # an element nothing lands on keeps data's NaN bits.
    ov("seu-mean-nan-is-canonical", SEU, np.array([0x7E00, 0x7C01], np.uint16).view(np.float16),
       [0], a([0.5], np.float16), axis=0, reduction="mean",
       expected=np.array([0x7E00, 0x7C01], np.uint16).view(np.float16)),
    ov("seu-mean-nan-payload-is-canonical", SEU, np.array([0x7F800001], np.uint32).view(F32),
       [0, 0], a([1, 2], F32), axis=0, reduction="mean",
       expected=np.array([0x7FC00000], np.uint32).view(F32)),
    ov("seu-mean-subnormal", SEU, a([0, 5], F32), [0], np.array([3], np.uint32).view(F32),
       axis=0, reduction="mean", expected=np.array([2, 0x40A00000], np.uint32).view(F32)),
    ov("seu-mean-subnormal-no-init", SEU, a([0, 5], F32), [0], np.array([1], np.uint32).view(F32),
       axis=0, reduction="mean", use_init_val=False,
       expected=np.array([1, 0x40A00000], np.uint32).view(F32)),
    # use_init_val=False: touched elements start from the identity; untouched keep data.
    ov("seu-prod-no-init", SEU, E4, [1, 0, 1], a([10, 20, 30], F32), axis=0, reduction="prod",
       use_init_val=False, expected=a([20, 300, 4, 6], F32)),
    ov("seu-max-no-init", SEU, a([5, 5, 5], F32), [0, 1], a([-7, 2], F32), axis=0, reduction="max",
       use_init_val=False, expected=a([-7, 2, 5], F32)),
    ov("seu-min-no-init-int", SEU, a([-5, -5], np.int16), [0], a([7], np.int16), axis=0,
       reduction="min", use_init_val=False, expected=a([7, -5], np.int16)),
    ov("seu-max-no-init-uint8", SEU, a([200, 9], np.uint8), [0], a([3], np.uint8), axis=0,
       reduction="max", use_init_val=False, expected=a([3, 9], np.uint8)),
    ov("seu-max-no-init-inf", SEU, a([1], F32), [0], a([-np.inf], F32), axis=0, reduction="max",
       use_init_val=False, expected=a([-np.inf], F32)),
    ov("seu-none-ignores-use-init-val", SEU, E4, [1], a([9], F32), axis=0, use_init_val=False,
       expected=a([2, 9, 4, 6], F32)),
    # max and min: IEEE 754-2019 (NaN wins; -0.0 < +0.0), as the ONNX scatters.
    ov("seu-max-nan", SEU, a([1, 2], F32), [0, 0, 1], a([NAN, 5, -0.0], F32), axis=0,
       reduction="max", expected=a([NAN, 2], F32)),
    ov("seu-min-signed-zero", SEU, a([0.0], F32), [0], a([-0.0], F32), axis=0, reduction="min",
       expected=a([-0.0], F32)),
    # bool: sum OR, prod AND, max OR, min AND.
    *(
        ov(f"seu-bool-{r}-init-{init}", SEU, a([True, False, True, False]), [0, 1, 2, 2, 3],
           a([False, True, False, True, False]), axis=0, reduction=r, use_init_val=init)
        for r in ("sum", "prod", "min", "max") for init in (True, False)
    ),
    ov("seu-2d-axis-1-smaller-indices", SEU, D34, [[3, 3], [0, -4]], a([[1, 2], [3, 4]], F32),
       axis=1, reduction="mean"),
    ov("seu-3-negative-ok", SEU, E4, [-1, -4], a([8, 9], F32), axis=0, version=3,
       expected=a([9, 3, 4, 8], F32)),
    ov("seu-version-11-is-3", SEU, E4, [0], a([1], F32), axis=0, version=11),
    ov("seu-unchecked-mean-drops", SEU, E4, [0, 4, -5, 0], a([10, 99, 99, 20], F32), axis=0,
       reduction="mean", check_bounds=False, expected=a([32 / 3, 3, 4, 6], F32)),
    ov("seu-unchecked-no-init-drops", SEU, E4, [9, 1], a([10, 20], F32), axis=0, reduction="sum",
       use_init_val=False, check_bounds=False, expected=a([2, 20, 4, 6], F32)),
    ov("seu-index-out-of-range", SEU, E4, [0, 4], a([1, 2], F32), axis=0, reduction="mean",
       raises=IndexError,
       match=r"index 4 at position \(1,\) of indices is out of range for axis 0 of size 4; valid indices are \[-4, 3\]"),
    ov("seu-index-out-of-range-no-init", SEU, E4, [-5], a([1], F32), axis=0, reduction="sum",
       use_init_val=False, raises=IndexError, match="index -5 at position"),
    ov("seu-mean-bool", SEU, a([True]), [0], a([True]), axis=0, reduction="mean",
       raises=TypeError, match="reduction 'mean' does not take bool data"),
    ov("seu-mean-complex", SEU, a([1j], np.complex64), [0], a([1j], np.complex64), axis=0,
       reduction="mean", raises=TypeError, match="reduction 'mean' does not take complex64"),
    ov("seu-max-complex", SEU, a([1j], np.complex64), [0], a([1j], np.complex64), axis=0,
       reduction="max", raises=TypeError, match="reduction 'max' needs ordered values"),
    ov("seu-sum-strings", SEU, a(["a"], object), [0], a(["b"], object), axis=0,
       reduction="sum", raises=TypeError, match="reduction 'sum' needs numbers"),
    ov("seu-onnx-name", SEU, E4, [0], a([1], F32), axis=0, reduction="add", raises=ValueError,
       match=r"unknown reduction 'add'; valid: 'none', 'sum', 'prod', 'min', 'max', 'mean'"),
    ov("seu-sub-is-nd-only", SEU, E4, [0], a([1], F32), axis=0, reduction="sub",
       raises=ValueError, match="unknown reduction 'sub'"),
    ov("seu-3-reduction", SEU, E4, [0], a([1], F32), axis=0, reduction="sum", version=3,
       raises=ValueError, match="reduction 'sum' needs version 12 or newer"),
    ov("seu-3-no-init", SEU, E4, [0], a([1], F32), axis=0, reduction="none", use_init_val=False,
       version=3, raises=ValueError, match="use_init_val=False needs version 12"),
    ov("seu-use-init-val-not-bool", SEU, E4, [0], a([1], F32), axis=0, use_init_val=2,
       raises=TypeError, match="use_init_val must be a bool, got 2"),
    # Reliability round 5, item 9: 0 and 1 were taken as bools (and "False" refused).
    ov("seu-use-init-val-0", SEU, E4, [0], a([1], F32), axis=0, reduction="sum",
       use_init_val=0, raises=TypeError, match="use_init_val must be a bool, got 0 of type int"),
    ov("seu-use-init-val-1", SEU, E4, [0], a([1], F32), axis=0, reduction="sum",
       use_init_val=1, raises=TypeError, match="use_init_val must be a bool, got 1 of type int"),
    ov("seu-use-init-val-str", SEU, E4, [0], a([1], F32), axis=0, reduction="sum",
       use_init_val="False", raises=TypeError,
       match="use_init_val must be a bool, got 'False' of type str"),
    ov("seu-version-2", SEU, E4, [0], a([1], F32), axis=0, version=2, raises=ValueError,
       match="opset 2 has no OpenVINO ScatterElementsUpdate"),
    ov("seu-ranks-differ", SEU, E4, [[0]], a([[1]], F32), axis=0, raises=ValueError,
       match="indices must have the same rank as data"),
]  # fmt: skip

N4 = a([1, 2, 3, 4], np.int32)
NIDX = [[0], [2], [-3], [-3], [0]]
N5 = a([10, 20, 30, 40, 50], np.int32)

ND = [
    ov("sndu-sub-float", SNDU, a([1, 2, 3, 4], F32), NIDX, a([10, 20, 30, 40, 50], F32),
       reduction="sub", expected=a([-59, -68, -17, 4], F32)),
    ov("sndu-sub-int-wraps", SNDU, a([-128, 0], np.int8), [[0], [1]], a([1, -128], np.int8),
       reduction="sub", expected=a([127, -128], np.int8)),
    ov("sndu-sub-uint-wraps", SNDU, a([1, 2], np.uint32), [[0], [0]], a([1, 3], np.uint32),
       reduction="sub", expected=a([2**32 - 3, 2], np.uint32)),
    ov("sndu-sub-uint64", SNDU, a([1, 2], np.uint64), [[1]], a([2**64 - 1], np.uint64),
       reduction="sub", expected=a([1, 3], np.uint64)),
    # bool sub: XOR (the text), each update in turn.
    ov("sndu-sub-bool-xor", SNDU, a([True, False, True]), [[0], [0], [1], [2], [0]],
       a([True, True, True, False, True]), reduction="sub", expected=a([False, True, True])),
    ov("sndu-bool-sum-or", SNDU, a([True, False]), [[1], [1]], a([False, True]), reduction="sum",
       expected=a([True, True])),
    ov("sndu-bool-prod-and", SNDU, a([True, True]), [[1], [0]], a([False, True]), reduction="prod",
       expected=a([True, False])),
    ov("sndu-bool-min-max", SNDU, a([True, False]), [[0], [1]], a([False, True]), reduction="max",
       expected=a([True, True])),
    ov("sndu-slices-sub", SNDU, np.arange(12, dtype=np.int64).reshape(2, 3, 2), [[1, -1], [1, 2]],
       a([[1, 1], [5, 5]], np.int64), reduction="sub",
       expected=a([[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9], [4, 5]]], np.int64)),
    ov("sndu-complex-sub", SNDU, a([1 + 2j], np.complex128), [[0]], a([3 - 1j], np.complex128),
       reduction="sub", expected=a([-2 + 3j], np.complex128)),
    ov("sndu-3-negative-ok", SNDU, N4, [[-1]], a([9], np.int32), version=3,
       expected=a([1, 2, 3, 9], np.int32)),
    ov("sndu-unchecked-drops", SNDU, N4, [[0], [4], [-5], [1]], N4 * 10, reduction="sub",
       check_bounds=False, expected=a([-9, -38, 3, 4], np.int32)),
    ov("sndu-coordinate-out-of-range", SNDU, np.zeros((2, 3), F32), [[1, 3]], a([1], F32),
       reduction="sum", raises=IndexError,
       match=r"index 3 at position \(0, 1\) of indices is out of range for axis 1 of size 3"),
    ov("sndu-3-reduction", SNDU, N4, [[0]], a([1], np.int32), reduction="sub", version=3,
       raises=ValueError, match="reduction 'sub' needs version 15 or newer"),
    ov("sndu-mean-is-elements-only", SNDU, N4, [[0]], a([1], np.int32), reduction="mean",
       raises=ValueError, match=r"unknown reduction 'mean'; valid: 'none', 'sum', 'sub'"),
    ov("sndu-sub-strings", SNDU, a(["a"], object), [[0]], a(["b"], object), reduction="sub",
       raises=TypeError, match="reduction 'sub' needs numbers"),
    ov("sndu-updates-shape", SNDU, N4, [[0], [1]], a([1], np.int32), raises=ValueError,
       match=r"updates must have shape indices.shape\[:-1\] \+ data.shape\[1:\] = \(2,\)"),
    ov("sndu-k-too-large", SNDU, N4, [[0, 0]], a([1], np.int32), raises=ValueError,
       match=r"indices.shape\[-1\] is 2"),
    # ONNX ScatterND's tuples of length 0 are not OpenVINO's (its runtime ignores them).
    ov("sndu-k-0", SNDU, N4, np.zeros((2, 0), np.int64), np.ones((2, 4), np.int32),
       raises=ValueError, match=r"indices.shape\[-1\] is 0; index tuples of length 0 are "
                                r"ONNX ScatterND's alone: it must be in \[1, 1\] here"),
]  # fmt: skip


def _dtype_cases() -> list[Case]:
    """Every type through each operator; the reductions that every number type takes."""
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64", "complex64", "complex128", "string"]  # fmt: skip
    if BFLOAT16 is not None:
        names.append("bfloat16")
    cases = []
    rng = np.random.default_rng(20261127)
    for name in names:
        dtype = (
            np.dtype(object)
            if name == "string"
            else BFLOAT16
            if name == "bfloat16"
            else np.dtype(name)
        )
        if name == "string":
            data, updates = a(["p", "q", "r", "s"], object), a(["x", "y", "z"], object)
        elif name == "bool":
            data, updates = a([True, False, False, True]), a([True, True, False])
        else:
            data = (rng.integers(-9, 9, 4) if name[0] != "u" else rng.integers(0, 9, 4)).astype(
                dtype
            )
            updates = (rng.integers(-9, 9, 3) if name[0] != "u" else rng.integers(0, 9, 3)).astype(
                dtype
            )
        cases.append(ov(f"dtype-{name}-su", SU, data, [3, 0, 3], updates, axis=0))
        cases.append(ov(f"dtype-{name}-seu", SEU, data, [1, 1, -1], updates, axis=0))
        cases.append(ov(f"dtype-{name}-sndu", SNDU, data, [[2], [-4], [2]], updates))
        if name == "string":
            continue
        cases.append(ov(f"dtype-{name}-sndu-sub", SNDU, data, [[2], [-4], [2]], updates,
                        reduction="sub"))  # fmt: skip
        cases.append(ov(f"dtype-{name}-seu-prod-no-init", SEU, data, [1, 1, -1], updates, axis=0,
                        reduction="prod", use_init_val=False))  # fmt: skip
        if name != "bool" and not name.startswith("complex"):
            cases.append(ov(f"dtype-{name}-seu-mean", SEU, data, [1, 1, -1], updates, axis=0,
                            reduction="mean"))  # fmt: skip
            cases.append(ov(f"dtype-{name}-seu-max-no-init", SEU, data, [1, 1, -1], updates,
                            axis=0, reduction="max", use_init_val=False))  # fmt: skip
            cases.append(ov(f"dtype-{name}-sndu-min", SNDU, data, [[2], [-4], [2]], updates,
                            reduction="min"))  # fmt: skip
    return cases


OPENVINO_SCATTER_CASES = UPDATE + ELEMENTS + ND + _dtype_cases()
