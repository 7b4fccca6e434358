"""The shared table of cases: every behaviour the library promises, run on every backend.

Each case names the operator, its inputs, its attributes, ``opset`` and either the expected
exception (type and a pattern its message must contain: the bad value) or the expected
result. Results come from the specs: literally where a spec prints the example (or where a
runtime's answer is the point of the case), else from the loop oracle in ``oracle.py``,
which reads the spec's equations directly; a literal must also be the oracle's answer.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from case_type import Case
from libs import BFLOAT16
from openvino_scatter_cases import OPENVINO_SCATTER_CASES
from scatter_cases import SCATTER_CASES

from onnx_gather import _ops
from onnx_gather._conformance import oracle as _oracle
from onnx_gather._examples import EXAMPLES

GATHER = _ops.GATHER.name
ELEMENTS = _ops.GATHER_ELEMENTS.name
OPENVINO = _ops.OPENVINO_GATHER_ELEMENTS.name
ND = _ops.GATHER_ND.name
OV_ND = _ops.OPENVINO_GATHER_ND.name
OV_GATHER = _ops.OPENVINO_GATHER.name


def case(
    id: str,
    op: str,
    data: np.ndarray,
    indices: Any,
    *,
    opset: int | None = None,
    check_bounds: bool = True,
    raises: type[Exception] | None = None,
    match: str | None = None,
    expected: Any = None,
    written: Any = None,
    updates: np.ndarray | None = None,
    **attributes: Any,
) -> Case:
    """A case, its attributes by name (the operator's defaults where left out)."""
    given = dict(_ops.get(op).attributes)
    given.update(attributes)
    return Case(id, op, data, indices, given, opset, check_bounds, raises, match, expected, written,
                updates)  # fmt: skip


def a(values: Any, dtype: Any = None) -> np.ndarray:
    return np.array(values, dtype=dtype)


def i64(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def i32(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int32)


SQUARE = a([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.int32)
RNG = np.random.default_rng(20261122)


def _special_values(name: str) -> np.ndarray:
    """Eight values of a dtype, including its edge cases (bit patterns preserved)."""
    if name == "bool":
        return a([True, False, True, True, False, False, True, False])
    if name == "string":
        return a(["", "a", "ÿ-ü", "abc", "x" * 40, "\x00z", "日本", " "], object)
    if name == "bfloat16":
        assert BFLOAT16 is not None
        bits = np.array([0x0000, 0x8000, 0x7FC1, 0x7F80, 0xFF80, 0x3F80, 0x0001, 0xC2F7], np.uint16)
        return bits.view(BFLOAT16)
    dtype = np.dtype(name)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([info.min, info.max, 0, 1, info.max - 1, 3, info.min + 1, 7], dtype)
    if dtype.kind == "f":
        bits_dtype = np.dtype(f"u{dtype.itemsize}")
        finfo = np.finfo(dtype)
        values = np.array([-0.0, 0.0, np.inf, -np.inf, finfo.tiny, finfo.max, 1.5, -2.25], dtype)
        # A quiet NaN with a payload: it must arrive with the same bits.
        nan = np.array([np.nan], dtype).view(bits_dtype) | bits_dtype.type(1)
        values[6] = nan.view(dtype)[0]
        return values
    if dtype.kind == "c":
        part = np.float32 if dtype.itemsize == 8 else np.float64
        real = _special_values(np.dtype(part).name)
        out = np.empty(real.shape, dtype)
        out.real, out.imag = real, real[::-1]  # assignment keeps the bits; arithmetic would not
        return out
    raise AssertionError(name)


_DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64", "complex64", "complex128", "string"]  # fmt: skip


def _dtype_cases() -> list[Case]:
    names = list(_DTYPE_NAMES)
    if BFLOAT16 is not None:
        names.append("bfloat16")
    cases = []
    for name in names:
        data = _special_values(name).reshape(2, 4)
        cases += [
            case(f"dtype-{name}-gather", GATHER, data, i64([[3, -1], [0, 2]]), axis=1),
            case(f"dtype-{name}-gather-axis0", GATHER, data, i32([1, -2, 1]), axis=0),
            case(
                f"dtype-{name}-elements",
                ELEMENTS,
                data,
                i64([[3, 2, 1, 0, -1], [0, 0, 1, 1, -4]]),
                axis=1,
            ),
            case(f"dtype-{name}-elements-axis0", ELEMENTS, data, i32([[1, 0, 1, 0]]), axis=0),
            case(f"dtype-{name}-openvino", OPENVINO, data, i64([[3, -3, 1], [0, -1, 2]]), axis=1),
            # (out of range: zeros of the type)
            case(f"dtype-{name}-openvino-gather", OV_GATHER, data, i64([[3, -4], [9, -5]]), axis=1),
        ]
    string_kinds = [("U", a(["a", "bb", "ccc"])), ("S", a([b"a", b"bb", b"ccc"]))]
    if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType"):
        string_kinds.append(
            ("StringDType", np.array(["a", "bb", "ccc"], dtype=np.dtypes.StringDType()))
        )
    for label, data in string_kinds:
        cases += [
            case(f"dtype-string-{label}-gather", GATHER, data, i64([2, -3])),
            case(f"dtype-string-{label}-elements", ELEMENTS, data, i64([2, 0, -1, 1])),
            case(
                f"dtype-string-{label}-openvino-gather",
                OV_GATHER,
                data,
                i64([2, 3, -4, -1]),
                axis=0,
            ),
        ]
    if BFLOAT16 is not None:
        bf = _special_values("bfloat16").reshape(2, 4)
        cases += [
            case(
                "dtype-bfloat16-gather-opset12",
                GATHER,
                bf,
                i64([0]),
                opset=12,
                raises=TypeError,
                match="bfloat16",
            ),
            case(
                "dtype-bfloat16-gather-opset1",
                GATHER,
                bf,
                i64([0]),
                opset=1,
                raises=TypeError,
                match="bfloat16",
            ),
            case(
                "dtype-bfloat16-elements-opset11",
                ELEMENTS,
                bf,
                i64([[0, 0, 0, 0]]),
                opset=11,
                raises=TypeError,
                match="bfloat16",
            ),
            case("dtype-bfloat16-gather-opset21", GATHER, bf, i64([1]), opset=21),
        ]
    return cases


def _spec_examples() -> list[Case]:
    """The examples printed in the specs, with the results they print."""
    return [
        case(
            "spec-" + e.name.lower().replace(" ", "-"),
            e.op,
            e.data,
            e.indices,
            opset=e.opset,
            expected=e.expected,
            updates=e.updates,
            **e.attributes,
        )
        for e in EXAMPLES
    ]


def _opset_cases() -> list[Case]:
    d = np.arange(6, dtype=np.float32).reshape(2, 3)
    return [
        case("opset-12-is-gather-11-negative-ok", GATHER, d, i64([-1]), axis=1, opset=12),
        case("opset-22-is-gather-13", GATHER, d, i64([-3, 2]), axis=1, opset=22),
        # Gather-1 counts negative indices from the end, as ONNX Runtime and the reference
        # evaluator do (torch's exporter emits them at opset 9; tests/test_torch_replay.py).
        case("opset-10-is-gather-1-negative-from-end", GATHER, d, i64([0, -1]), axis=1, opset=10),
        case("opset-9-gather-1-0d-negative", GATHER, d, i64(-1), axis=1, opset=9),
        case("opset-1-gather-ok", GATHER, d, i64([1, 0]), axis=0, opset=1),
        case("opset-0-gather", GATHER, d, i64([0]), opset=0, raises=ValueError, match="opset 0"),
        case("opset-negative-gather", GATHER, d, i64([0]), opset=-3, raises=ValueError, match="opset -3"),
        case("opset-10-elements", ELEMENTS, d, i64([[0, 0, 0]]), opset=10, raises=ValueError, match="opset 10"),
        case("opset-11-elements-negative-ok", ELEMENTS, d, i64([[-1, 0, -2]]), opset=11),
        case("opset-12-elements", ELEMENTS, d, i64([[1], [0]]), axis=1, opset=12),
        case("opset-18-elements", ELEMENTS, d, i64([[-3], [2]]), axis=1, opset=18),
    ]  # fmt: skip


def _index_type_cases() -> list[Case]:
    d = np.arange(6, dtype=np.float32).reshape(2, 3)
    cases = []
    for name in [
        "int8",
        "int16",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "bool",
    ]:
        idx = np.zeros((1, 3), dtype=name)
        cases += [
            case(f"indices-{name}-gather", GATHER, d, idx, raises=TypeError, match=name),
            case(f"indices-{name}-elements", ELEMENTS, d, idx, raises=TypeError, match=name),
            case(
                f"indices-{name}-openvino",
                OPENVINO,
                d,
                idx,
                axis=0,
                raises=TypeError,
                match=name,
            ),
        ]
    cases.append(case("indices-int32-gather", GATHER, d, i32([[1, -1]]), axis=1))
    return cases


def _bounds_cases() -> list[Case]:
    d = np.arange(12, dtype=np.float32).reshape(3, 4)
    msg = r"index {v} at position \({p}\) of indices is out of range for axis {ax} of size {n}"
    return [
        case("bounds-gather-too-big", GATHER, d, i64([[0, 1], [3, 2]]), raises=IndexError,
             match="Gather-13: " + msg.format(v=3, p="1, 0", ax=0, n=3)),
        case("bounds-gather-too-small", GATHER, d, i64([0, -5]), axis=1, raises=IndexError,
             match=msg.format(v=-5, p="1,", ax=1, n=4)),
        case("bounds-gather-edges-ok", GATHER, d, i64([-4, 3, -1, 0]), axis=-1),
        case("bounds-gather-0d-index", GATHER, d, i64(7), axis=1, raises=IndexError,
             match=r"index 7 at position \(\) of indices .* axis 1 of size 4"),
        case("bounds-gather-opset11-too-small", GATHER, d, i64([-4]), opset=11, raises=IndexError,
             match="Gather-11: " + msg.format(v=-4, p="0,", ax=0, n=3)),
        case("bounds-gather-empty-output", GATHER, np.zeros((0, 3), np.float32), i64([5]), axis=1,
             raises=IndexError, match=msg.format(v=5, p="0,", ax=1, n=3)),
        case("bounds-gather-empty-axis", GATHER, np.zeros((2, 0), np.float32), i64([0]), axis=1,
             raises=IndexError, match=msg.format(v=0, p="0,", ax=1, n=0)),
        case("bounds-gather-empty-indices-empty-axis", GATHER, np.zeros((2, 0), np.float32),
             np.zeros((0,), np.int64), axis=1),
        case("bounds-gather-huge-int64", GATHER, d, i64([0, 2**40]), raises=IndexError,
             match=msg.format(v=2**40, p="1,", ax=0, n=3)),
        case("bounds-gather-int64-min", GATHER, d, i64([np.iinfo(np.int64).min]), raises=IndexError,
             match=msg.format(v=np.iinfo(np.int64).min, p="0,", ax=0, n=3)),
        case("bounds-elements-too-big", ELEMENTS, d, i64([[0, 1, 2, 3], [0, 4, 0, 0]]), axis=1,
             raises=IndexError, match="GatherElements-13: " + msg.format(v=4, p="1, 1", ax=1, n=4)),
        case("bounds-elements-too-small", ELEMENTS, d, i32([[0], [-5]]), axis=-1, raises=IndexError,
             match=msg.format(v=-5, p="1, 0", ax=1, n=4)),
        case("bounds-elements-empty-output", ELEMENTS, np.zeros((3, 0), np.float32),
             np.zeros((2, 0), np.int64), axis=0),
        case("bounds-elements-empty-axis", ELEMENTS, np.zeros((0, 2), np.float32), i64([[0, 0]]),
             raises=IndexError, match=msg.format(v=0, p="0, 0", ax=0, n=0)),
        # Gather-1 and OpenVINO GatherElements-6 count negative indices from the end too:
        # [-s, s-1] in every version (ONNX Runtime and the reference evaluator for Gather-1;
        # OpenVINO's CPU runtime since openvinotoolkit/openvino#30800).
        case("bounds-gather-1-negative-edges", GATHER, d, i64([[-1, -4], [3, 0]]), axis=1, opset=1),
        case("bounds-gather-1-negative-int32", GATHER, d, i32([-3, 2, -1]), axis=0, opset=7),
        case("bounds-gather-1-too-small", GATHER, d, i64([-4, -5]), axis=1, opset=1, raises=IndexError,
             match="Gather-1: " + msg.format(v=-5, p="1,", ax=1, n=4)
             + re.escape("; valid indices are [-4, 3]")),
        case("bounds-gather-1-too-big", GATHER, d, i64([3]), opset=10, raises=IndexError,
             match="Gather-1: " + msg.format(v=3, p="0,", ax=0, n=3)
             + re.escape("; valid indices are [-3, 2]")),
        case("bounds-openvino-negative-from-end", OPENVINO, SQUARE,
             i64([[0, 1, 2], [0, -1, 2], [-3, -2, 0]]), axis=1),
        # On an axis of 4, -1 and -4 read elements 3 and 0 (OpenVINO 2026.4.1's CPU runtime
        # gives exactly this: tests/test_openvino_runtime.py).
        case("bounds-openvino-negative-edges", OPENVINO, a([[10, 11, 12, 13]], np.int32),
             i64([[-1, -4]]), axis=1, expected=a([[13, 10]], np.int32)),
        case("bounds-openvino-too-big-4", OPENVINO, a([[10, 11, 12, 13]], np.int32), i64([[0, 4]]),
             axis=1, raises=IndexError,
             match="OpenVINO GatherElements-6: " + msg.format(v=4, p="0, 1", ax=1, n=4)
             + re.escape("; valid indices are [-4, 3]")),
        case("bounds-openvino-too-small-4", OPENVINO, a([[10, 11, 12, 13]], np.int32),
             i64([[-4, -5]]), axis=1, raises=IndexError,
             match="OpenVINO GatherElements-6: " + msg.format(v=-5, p="0, 1", ax=1, n=4)
             + re.escape("; valid indices are [-4, 3]")),
        # An int64 index no int32 holds is out of range like any other (OpenVINO's CPU plugin
        # reads int64 indices as int32 and takes this one for 1: tests/test_openvino_runtime.py).
        case("bounds-openvino-int64-beyond-int32", OPENVINO, a([[10, 11, 12, 13]], np.int32),
             i64([[0, 2**32 + 1]]), axis=1, raises=IndexError,
             match=msg.format(v=2**32 + 1, p="0, 1", ax=1, n=4)),
        case("bounds-openvino-too-big", OPENVINO, SQUARE, i64([[3, 0, 0]]), axis=0,
             raises=IndexError, match=msg.format(v=3, p="0, 0", ax=0, n=3)),
        case("bounds-unchecked-valid", GATHER, d, i64([2, -1]), check_bounds=False),
        case("bounds-unchecked-valid-elements", ELEMENTS, d, i64([[2, -1, 0, 1]]), check_bounds=False),
    ]  # fmt: skip


def _shape_cases() -> list[Case]:
    d3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return [
        case("shape-gather-0d-indices", GATHER, d3, i64(1), axis=1),
        case("shape-gather-0d-indices-negative", GATHER, d3, i64(-1), axis=-1),
        case("shape-gather-3d-indices-middle-axis", GATHER, d3, RNG.integers(-3, 3, (2, 1, 2)), axis=1),
        case("shape-gather-empty-indices", GATHER, d3, np.zeros((0, 2), np.int64), axis=2),
        case("shape-gather-1d-data", GATHER, np.arange(5, dtype=np.int32), i64([[4], [0]])),
        case("shape-gather-axis-neg-rank", GATHER, d3, i64([1]), axis=-3),
        case("shape-elements-smaller-off-axis", ELEMENTS, SQUARE, i64([[2], [1]]), axis=1),
        case("shape-elements-smaller-off-axis-axis0", ELEMENTS, SQUARE, i64([[2, 0]]), axis=0),
        case("shape-elements-longer-on-axis", ELEMENTS, SQUARE, i64([[0, 1, 2, 2, 1, 0]] * 3), axis=1),
        case("shape-elements-3d", ELEMENTS, d3, RNG.integers(-4, 4, (2, 2, 6)), axis=2),
        case("shape-elements-3d-axis0", ELEMENTS, d3, RNG.integers(-2, 2, (5, 3, 1)), axis=0),
        case("shape-elements-1d", ELEMENTS, np.arange(4, dtype=np.int16), i64([3, 3, -4])),
        case("shape-elements-long-axis", ELEMENTS, RNG.standard_normal((2, 300)).astype(np.float32),
             RNG.integers(-300, 300, (2, 77)), axis=1),
        case("shape-elements-long-axis-64", ELEMENTS, RNG.standard_normal((64, 3)).astype(np.float32),
             RNG.integers(0, 64, (70, 3)), axis=0),
        case("shape-elements-larger-off-axis", ELEMENTS, SQUARE, i64([[0]] * 4), axis=1,
             raises=ValueError, match="dim 0 is 4"),
        case("shape-elements-rank-mismatch", ELEMENTS, SQUARE, i64([0, 1]), axis=0,
             raises=ValueError, match="rank 1"),
        case("shape-openvino-smaller-off-axis", OPENVINO, SQUARE, i64([[0], [1]]), axis=1,
             raises=ValueError, match="dim 0 is 2"),
        case("shape-openvino-rank-mismatch", OPENVINO, SQUARE, i64([0]), axis=0,
             raises=ValueError, match="rank 1"),
        case("axis-gather-too-big", GATHER, d3, i64([0]), axis=3, raises=ValueError, match="axis 3"),
        case("axis-gather-too-small", GATHER, d3, i64([0]), axis=-4, raises=ValueError, match="axis -4"),
        case("axis-elements-too-big", ELEMENTS, SQUARE, i64([[0]]), axis=2, raises=ValueError, match="axis 2"),
        case("axis-openvino-too-small", OPENVINO, SQUARE, SQUARE, axis=-3, raises=ValueError,
             match="axis -3"),
        case("rank-gather-0d-data", GATHER, np.array(1.0, np.float32), i64(0), raises=ValueError, match="rank"),
        case("rank-elements-0d-data", ELEMENTS, np.array(1.0, np.float32), i64(0), raises=ValueError, match="rank"),
        case("rank-openvino-0d-data", OPENVINO, np.array(1.0, np.float32), i64(0), axis=0,
             raises=ValueError, match="rank"),
    ]  # fmt: skip


def _written(values: Any) -> np.ndarray:
    return np.array(values, dtype=object)


def _beyond_int64_cases() -> list[Case]:
    """Python ints no ONNX index type holds are out-of-range indices, named as such.

    NumPy turns them into uint64, float64 or object arrays; the library reports the value
    and its position like any out-of-range index, checked or not. The spec cannot speak
    to them (no int64 tensor holds them), so this is the library's answer, not the oracle's.
    """
    d = np.arange(6, dtype=np.float32).reshape(2, 3)
    msg = r"^{op}: index {v} at position \({p}\) of indices is out of range for axis 1 of size 3"
    cases = []
    for cid, written, value, position in [
        ("2**70", [0, 2**70], 2**70, "1,"),  # NumPy makes an object array
        ("2**63", [2**63], 2**63, "0,"),  # ... a uint64 array
        ("-2**63-1", -(2**63) - 1, -(2**63) - 1, ""),
        ("mixed-2**63", [1, 2**63], 2**63, "1,"),  # ... a float64 array
        ("numpy-int-and-2**70", [np.int64(1), 2**70], 2**70, "1,"),
        ("first-bad-one", [7, 2**64], 7, "0,"),  # the first in C order, as always
    ]:
        for check_bounds in (True, False):
            cases.append(
                case(f"beyond-int64-gather-{cid}-{'checked' if check_bounds else 'unchecked'}",
                     GATHER, d, _written(written), axis=1, check_bounds=check_bounds,
                     raises=IndexError, written=written,
                     match=msg.format(op="Gather-13", v=value, p=position))
            )  # fmt: skip
    for cid, written, value, position in [
        ("2**63", [[2**63], [1]], 2**63, "0, 0"),
        ("first-bad-one", [[7, 2**64], [0, 1]], 7, "0, 0"),
    ]:
        cases.append(
            case(f"beyond-int64-elements-{cid}", ELEMENTS, d, _written(written), axis=1,
                 raises=IndexError, written=written,
                 match=msg.format(op="GatherElements-13", v=value, p=position))
        )  # fmt: skip
    # NumPy unsigned scalars are not Python ints: their dtype is what is wrong.
    for written, name in [([np.uint64(1)], "uint64"), ((np.uint32(1),), "uint32")]:
        cases.append(
            case(f"beyond-int64-not-numpy-{name}", GATHER, d, _written(written), axis=1,
                 raises=TypeError, written=written,
                 match=f"Gather-13: indices must be int32 or int64, got {name}")
        )  # fmt: skip
    return cases


def _campaign_cases() -> list[Case]:
    """Minimal examples of divergences the conformance campaign found (docs/conformance.md)."""
    snan = np.array([[0x7C01, 0x3C00], [0xFC01, 0x7D00]], np.uint16).view(np.float16)
    return [
        # numpy: np.take with 0-d indices and 1-d data returns a NumPy scalar, not an array.
        case("campaign-gather-0d-indices-1d-data", GATHER, a([0], np.int32), i64(0), opset=1),
        # jax: jnp.take returns its input when the axis and the indices are both empty.
        case("campaign-gather-empty-axis-2d-empty-indices", GATHER, np.zeros((0,), np.int32),
             np.zeros((0, 0), np.int64), opset=1),
        # torch: torch.gather quiets float16 signalling NaNs (0x7C01 -> 0x7E01).
        case("campaign-elements-float16-signalling-nan", ELEMENTS, snan, i64([[1, 0], [0, 1]])),
        # jax: inside one jitted call XLA's CPU code quieted a bfloat16 signalling NaN
        # (0x7F81 -> 0x7FC1) where the bits gather fused with its fill (jax 0.10.2).
        *(
            case("campaign-gather-bfloat16-signalling-nan-0d-index", GATHER,
                 np.array([[0x7F7F, 0x7F81]], np.uint16).view(BFLOAT16), i64(-1))
            for _ in [0] if BFLOAT16 is not None
        ),
        # torch: NumPy indices with negative strides (a reversed view) were rejected.
        case("campaign-elements-host-indices-negative-stride", ELEMENTS,
             np.arange(64, dtype=np.int32), i64([1, -4])[::-1], opset=11),
    ]  # fmt: skip


def _gather_nd_cases() -> list[Case]:
    """GatherND: every rule of its text and of DESIGN's family section, coordinate by coordinate."""
    d2 = np.arange(10, dtype=np.float32).reshape(2, 5)  # axes of different sizes
    d3 = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    d4 = np.arange(2 * 3 * 4 * 2, dtype=np.float64).reshape(2, 3, 4, 2)
    msg = r"index {v} at position \({p}\) of indices is out of range for axis {ax} of size {n}"
    cases = [
        # Negatives count from the end per coordinate: -5 is valid for axis 1 (size 5) only.
        case("nd-negative-per-coordinate", ND, d2, i64([[-1, -5], [-2, 4], [1, -1]])),
        case("nd-int32", ND, d2, i32([[1, 0], [0, -3]])),
        case("nd-slices-k1", ND, d3, i64([[2], [-3], [0]])),
        case("nd-slices-k2", ND, d3, i64([[[2, -1]], [[0, 3]]])),
        case("nd-full-coordinates-k3", ND, d3, i64([[2, 3, 4], [-3, -4, -5], [1, 0, 2]])),
        case("nd-1d-indices", ND, d3, i64([1, -1])),
        case("nd-1d-indices-k3", ND, d3, i64([0, 1, 2])),
        case("nd-repeated-tuples", ND, d3, i64([[1, 1], [1, 1], [0, 0]])),
        case("nd-batch-1", ND, d4, RNG.integers(-3, 3, (2, 5, 1)), batch_dims=1),
        case("nd-batch-1-k2", ND, d4, i64([[[0, 3], [-1, -4]], [[2, 0], [1, 1]]]), batch_dims=1),
        case("nd-batch-2", ND, d4, np.stack([RNG.integers(-4, 4, (2, 3)), RNG.integers(-2, 2, (2, 3))], -1),
             batch_dims=2),
        case("nd-batch-2-k2", ND, d4, RNG.integers(-2, 2, (2, 3, 4, 2)).clip(-2, 1), batch_dims=2),
        case("nd-batch-1-2d-data", ND, d2, i64([[4], [-5]]), batch_dims=1),
        case("nd-opset-12-batch", ND, d4, i64([[1], [2]]), batch_dims=1, opset=12),
        case("nd-opset-11-no-batch", ND, d3, i64([[0, 1]]), opset=11),
        case("nd-opset-18", ND, d3, i64([[0, 1]]), opset=18),
        case("nd-unchecked-valid", ND, d3, i64([[2, -1], [0, 0]]), check_bounds=False),
        # Empty outputs: no tuples, or slices of zero elements; every index still checked.
        case("nd-no-tuples", ND, d3, np.zeros((0, 2), np.int64)),
        case("nd-no-tuples-empty-axis", ND, np.zeros((0, 3), np.float32), np.zeros((0, 1), np.int64)),
        case("nd-empty-slices", ND, np.zeros((3, 0), np.float32), i64([[2], [-3]])),
        # The long campaign's one finding (dask cut empty host indices with auto chunks,
        # which divide by the block's size: ZeroDivisionError). Shrunk by hypothesis.
        case("campaign-nd-batch-no-tuples", ND, np.zeros((0, 0), np.int32),
             np.zeros((0, 0, 1), np.int64), batch_dims=1, opset=12),
        # Out of range: the first and the last coordinate, named with its position and axis.
        case("nd-bounds-first-coordinate", ND, d2, i64([[0, 0], [2, 1]]), raises=IndexError,
             match="GatherND-13: " + msg.format(v=2, p="1, 0", ax=0, n=2)),
        case("nd-bounds-last-coordinate", ND, d2, i64([[1, 4], [0, -6]]), raises=IndexError,
             match=msg.format(v=-6, p="1, 1", ax=1, n=5)),
        # 4 is valid for axis 1 (size 5), not for axis 0 (size 2), where it stands here.
        case("nd-bounds-valid-for-another-axis", ND, d2, i64([[4, 0]]), raises=IndexError,
             match=msg.format(v=4, p="0, 0", ax=0, n=2)
             + re.escape("; valid indices are [-2, 1]")),
        case("nd-bounds-batch-axis-named", ND, d4, i64([[[0, 0]], [[0, 4]]]), batch_dims=1,
             raises=IndexError, match="GatherND-13: " + msg.format(v=4, p="1, 0, 1", ax=2, n=4)),
        case("nd-bounds-first-bad-in-c-order", ND, d3, i64([[0, 9], [7, 0]]), raises=IndexError,
             match=msg.format(v=9, p="0, 1", ax=1, n=4)),
        case("nd-bounds-empty-output", ND, np.zeros((3, 0), np.float32), i64([[3]]),
             raises=IndexError, match=msg.format(v=3, p="0, 0", ax=0, n=3)),
        case("nd-bounds-empty-axis", ND, np.zeros((2, 0), np.float32), i64([[0, 0]]),
             raises=IndexError, match=msg.format(v=0, p="0, 1", ax=1, n=0)
             + "; the axis is empty"),
        case("nd-bounds-int64-min", ND, d2, i64([[np.iinfo(np.int64).min, 0]]), raises=IndexError,
             match=msg.format(v=np.iinfo(np.int64).min, p="0, 0", ax=0, n=2)),
        case("nd-bounds-opset-11", ND, d2, i64([[-3, 0]]), opset=11, raises=IndexError,
             match="GatherND-11: " + msg.format(v=-3, p="0, 0", ax=0, n=2)),
        # Shape rules, each a ValueError saying which one failed.
        case("nd-k-too-big", ND, d3, i64([[0, 0, 0, 0]]), raises=ValueError,
             match=r"indices.shape\[-1\] is 4, .* in \[1, 3\]"),
        case("nd-k-too-big-with-batch", ND, d3, i64([[0, 0, 0]] * 3), batch_dims=1,
             raises=ValueError, match=r"indices.shape\[-1\] is 3, .* in \[1, 2\]"),
        case("nd-k-zero", ND, d3, np.zeros((2, 0), np.int64), raises=ValueError,
             match=r"indices.shape\[-1\] is 0"),
        case("nd-indices-0d", ND, d3, i64(1), raises=ValueError, match="indices must have rank >= 1"),
        case("nd-data-0d", ND, np.array(1.0, np.float32), i64([0]), raises=ValueError, match="rank"),
        case("nd-batch-dims-equal-ranks", ND, d2, i64([[0], [1]]), batch_dims=2,
             raises=ValueError, match="batch_dims 2 is out of range"),
        case("nd-batch-dims-negative", ND, d3, i64([[0]]), batch_dims=-1, raises=ValueError,
             match="batch_dims -1 is out of range"),
        case("nd-batch-dims-differ", ND, d4, i64([[0], [1], [0]]), batch_dims=1,
             raises=ValueError, match=r"first batch_dims=1 dims .* data \(2, 3, 4, 2\) and indices \(3, 1\)"),
        case("nd-batch-dims-opset-11", ND, d4, i64([[1], [2]]), batch_dims=1, opset=11,
             raises=ValueError, match="batch_dims 1 needs version 12"),
        case("nd-opset-10", ND, d3, i64([[0]]), opset=10, raises=ValueError, match="opset 10"),
    ]  # fmt: skip
    for name in ["int8", "uint64", "float32", "bool"]:
        cases.append(case(f"nd-indices-{name}", ND, d3, np.zeros((1, 2), dtype=name),
                          raises=TypeError, match=name))  # fmt: skip
    for name in _DTYPE_NAMES + (["bfloat16"] if BFLOAT16 is not None else []):
        data = _special_values(name).reshape(2, 2, 2)
        cases += [
            case(f"dtype-{name}-nd", ND, data, i64([[1, -1], [0, 0], [-2, 1]])),
            case(f"dtype-{name}-nd-scalars", ND, data, i64([[1, -1, 0], [0, 1, -1]])),
            case(f"dtype-{name}-nd-batch", ND, data, i32([[[1]], [[0]]]), batch_dims=1),
        ]
    if BFLOAT16 is not None:
        bf = _special_values("bfloat16").reshape(2, 2, 2)
        cases.append(case("dtype-bfloat16-nd-opset12", ND, bf, i64([[0]]), opset=12,
                          raises=TypeError, match="bfloat16"))  # fmt: skip
    for cid, written, value, position in [
        ("2**70", [[0, 2**70]], 2**70, "0, 1"),
        ("-2**63-1", [[-(2**63) - 1, 0]], -(2**63) - 1, "0, 0"),
    ]:
        cases.append(case(f"beyond-int64-nd-{cid}", ND, d2, _written(written), raises=IndexError,
                          written=written, match=msg.format(v=value, p=position, ax=".", n=".")))  # fmt: skip
    return cases


def _openvino_gather_nd_cases() -> list[Case]:
    """OpenVINO GatherND-5/8: GatherND-13's rules; version 5 flattens the output's batch dims."""
    d2 = np.arange(10, dtype=np.float32).reshape(2, 5)
    d4 = np.arange(2 * 3 * 4 * 2, dtype=np.float64).reshape(2, 3, 4, 2)
    b2 = np.stack([RNG.integers(-4, 4, (2, 3)), RNG.integers(-2, 2, (2, 3))], -1)
    flat = _oracle.gather_nd(d4, b2, 2).reshape(6)  # GatherND-13's (2, 3) batch dims flattened
    msg = r"index {v} at position \({p}\) of indices is out of range for axis {ax} of size {n}"
    return [
        # Negatives count from the end per coordinate in both versions (the runtime's reading).
        case("ov-nd-negative-per-coordinate", OV_ND, d2, i64([[-1, -5], [-2, 4], [1, -1]])),
        case("ov-nd-5-negative", OV_ND, d2, i64([[-1, -5], [1, -1]]), opset=5),
        case("ov-nd-int32", OV_ND, d2, i32([[1, 0], [0, -3]])),
        case("ov-nd-8-batch-2-keeps-batch-dims", OV_ND, d4, b2, batch_dims=2),
        case("ov-nd-5-batch-2-flattens", OV_ND, d4, b2, batch_dims=2, opset=5, expected=flat),
        # Versions 6 and 7 are OpenVINO opsets that still hold GatherND-5.
        case("ov-nd-opset-7-is-version-5", OV_ND, d4, b2, batch_dims=2, opset=7, expected=flat),
        case("ov-nd-5-batch-1-same-shape", OV_ND, d4, i64([[1], [2]]), batch_dims=1, opset=5),
        case("ov-nd-5-no-batch", OV_ND, d4, i64([[1, 2], [-1, 0]]), opset=5),
        # Empty batch dims flattened (Dask's reshape of an empty array in several chunks).
        case("ov-nd-5-empty-batch", OV_ND, np.zeros((0, 0, 0, 0), np.int32),
             np.zeros((0, 0, 3, 2), np.int64), batch_dims=2, opset=5),
        # An empty result still checks its indices (Dask's reshape of an empty result in
        # several chunks dropped the check; found by the campaign on an empty axis).
        case("ov-nd-5-empty-result-bounds", OV_ND, np.zeros((3, 1, 2, 0), np.int32),
             i64([[[0]], [[-2]], [[2]]]), batch_dims=2, opset=5, raises=IndexError,
             match="OpenVINO GatherND-5: " + msg.format(v=2, p="2, 0, 0", ax=2, n=2)),
        case("ov-nd-opset-4", OV_ND, d2, i64([[0, 0]]), opset=4, raises=ValueError,
             match="opset 4 has no OpenVINO GatherND"),
        case("ov-nd-version-not-an-int", OV_ND, d2, i64([[0, 0]]), opset=8.0, raises=TypeError,
             match="version must be an int, got 8.0"),
        case("ov-nd-unchecked-valid", OV_ND, d2, i64([[1, -1], [0, 0]]), check_bounds=False),
        case("ov-nd-bounds", OV_ND, d2, i64([[1, 4], [0, -6]]), raises=IndexError,
             match="OpenVINO GatherND-8: " + msg.format(v=-6, p="1, 1", ax=1, n=5)),
        case("ov-nd-5-bounds-batch-axis", OV_ND, d4, i64([[[0, 0]], [[0, 4]]]), batch_dims=1,
             opset=5, raises=IndexError,
             match="OpenVINO GatherND-5: " + msg.format(v=4, p="1, 0, 1", ax=2, n=4)),
        # The runtime refuses batch dims that differ, which GatherND-8's text calls broadcastable.
        case("ov-nd-batch-dims-differ", OV_ND, d4, i64([[[0]]]), batch_dims=1, raises=ValueError,
             match="batch_dims=1 dims of data and indices must be equal"),
        case("ov-nd-batch-dims-out-of-range", OV_ND, d2, i64([[0], [1]]), batch_dims=2,
             raises=ValueError, match="batch_dims 2 is out of range"),
    ]  # fmt: skip


def _openvino_gather_cases() -> list[Case]:
    """OpenVINO Gather-7/8: zeros for an index out of range, batch dims up to the axis."""
    d2 = np.arange(10, dtype=np.float32).reshape(2, 5)
    d4 = np.arange(2 * 3 * 4 * 2, dtype=np.float64).reshape(2, 3, 4, 2)
    d3 = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)
    return [
        case("ov-gather-8-out-of-range-zeros", OV_GATHER, d2, i64([[3, 10, -20], [-1, -5, 5]]),
             axis=1, expected=a([[[3, 0, 0], [4, 0, 0]], [[8, 0, 0], [9, 5, 0]]], np.float32)),
        # Gather-7's text says [0, s-1]; the runtime reads a negative index as out of range.
        case("ov-gather-7-negatives-zeros", OV_GATHER, d2, i64([3, -1, -5, 5]), axis=1, opset=7,
             expected=a([[3, 0, 0, 0], [8, 0, 0, 0]], np.float32)),
        case("ov-gather-0d-index", OV_GATHER, d2, i64(-2), axis=1),
        case("ov-gather-int32", OV_GATHER, d2, i32([[1, -1], [7, 0]]), axis=0),
        case("ov-gather-axis-negative", OV_GATHER, d4, i64([1, -4, 4]), axis=-2),
        case("ov-gather-batch-1-axis-2", OV_GATHER, d4, RNG.integers(-6, 6, (2, 5)), axis=2,
             batch_dims=1),
        case("ov-gather-batch-2-axis-2", OV_GATHER, d3, RNG.integers(-5, 5, (2, 3, 2)), axis=2,
             batch_dims=2),
        case("ov-gather-batch-1-axis-3", OV_GATHER, d4, RNG.integers(-3, 3, (2, 2, 3)), axis=3,
             batch_dims=1),
        # batch_dims equal to the indices' rank: one index per batch.
        case("ov-gather-batch-is-all-of-indices", OV_GATHER, d3, i64([[1, -1, 9], [0, 3, -4]]),
             axis=2, batch_dims=2),
        case("ov-gather-negative-batch-dims", OV_GATHER, d2, i64([[0, 0, 4], [4, 0, 9]]), axis=1,
             batch_dims=-1, expected=a([[0, 0, 4], [9, 5, 0]], np.float32)),
        case("ov-gather-empty-axis-zeros", OV_GATHER, np.zeros((2, 0), np.float32), i64([0, -1]),
             axis=1, expected=np.zeros((2, 2), np.float32)),
        case("ov-gather-empty-axis-strings", OV_GATHER, np.zeros((0, 2), object), i64([0, -1]),
             axis=0, expected=np.full((2, 2), "", object)),
        case("ov-gather-empty-indices", OV_GATHER, d2, np.zeros((0, 3), np.int64), axis=0),
        # Python ints beyond int32 (JAX without 64-bit types narrows them on the device).
        case("ov-gather-beyond-int32", OV_GATHER, d2, i64([2**40, -(2**40), 1]), axis=1,
             written=[2**40, -(2**40), 1]),
        case("ov-gather-unchecked-flag-ignored", OV_GATHER, d2, i64([9, 1]), axis=1,
             check_bounds=False),
        case("ov-gather-opset-6", OV_GATHER, d2, i64([0]), axis=0, opset=6, raises=ValueError,
             match="opset 6 has no OpenVINO Gather"),
        case("ov-gather-version-not-an-int", OV_GATHER, d2, i64([0]), axis=0, opset=8.0,
             raises=TypeError, match="version must be an int, got 8.0"),
        case("ov-gather-batch-dims-above-axis", OV_GATHER, d2, i64([[0], [1]]), axis=0,
             batch_dims=1, raises=ValueError, match="batch_dims 1 .normalised 1. must not exceed axis 0"),
        case("ov-gather-batch-dims-differ", OV_GATHER, d2, i64([[0], [1], [1]]), axis=1,
             batch_dims=1, raises=ValueError,
             match="batch_dims=1 dims of data and indices must be equal"),
        case("ov-gather-batch-dims-out-of-range", OV_GATHER, d2, i64([[0], [1]]), axis=1,
             batch_dims=-3, raises=ValueError, match="batch_dims -3 is out of range"),
        case("ov-gather-axis-out-of-range", OV_GATHER, d2, i64([0]), axis=2, raises=ValueError,
             match="axis 2 is out of range"),
        case("ov-gather-rank-0-data", OV_GATHER, a(1.0, np.float32), i64([0]), axis=0,
             raises=ValueError, match="rank >= 1"),
        case("ov-gather-float-indices", OV_GATHER, d2, a([0.0]), axis=0, raises=TypeError,
             match="indices must be int32 or int64, got float64"),
    ]  # fmt: skip


def all_cases() -> list[Case]:
    cases = (
        _spec_examples()
        + _opset_cases()
        + _index_type_cases()
        + _bounds_cases()
        + _beyond_int64_cases()
        + _shape_cases()
        + _dtype_cases()
        + _campaign_cases()
        + _gather_nd_cases()
        + _openvino_gather_nd_cases()
        + _openvino_gather_cases()
        + SCATTER_CASES
        + OPENVINO_SCATTER_CASES
    )
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


CASES = all_cases()
