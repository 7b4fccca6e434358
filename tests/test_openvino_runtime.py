"""OpenVINO's own runtime on every case of the shared table for OpenVINO's operators.

Each case runs as a one-node GatherElements-6 model on OpenVINO's CPU plugin
(``onnx_gather._conformance.openvino_peer``). A valid case must give our expected value
bit for bit; an error case must make OpenVINO raise too (it raises RuntimeError for
every kind of error, so only that it raises is compared). OpenVINO's known gaps (types it
has no kernel for) and its measured divergences (docs/conformance.md) are listed below,
each with its reason: a gap must still be a gap and a divergence must still diverge
(strict xfail), so a fixed runtime shows up here.

Runs on NumPy inputs only: OpenVINO is the library under test, not the array library.
"""

from __future__ import annotations

import numpy as np
import pytest
from cases import CASES, OPENVINO, OV_ND, Case
from helpers import assert_identical, expected

from onnx_gather import _ops
from onnx_gather._conformance import openvino_peer
from onnx_gather._conformance.onnx_peers import Gap, classify
from onnx_gather._conformance.openvino_peer import OpenVINO, stale_fill
from onnx_gather._conformance.runner import expected as runner_expected
from onnx_gather._conformance.strategies import Example

RUNTIME = OpenVINO()  # openvino is a test dependency: no skip

#: Cases whose data type OpenVINO cannot take at all.
GAPS = {
    "dtype-complex64-openvino": "no complex element types",
    "dtype-complex128-openvino": "no complex element types",
    "dtype-string-openvino": "the CPU plugin compiles no string GatherElements",
}
#: Cases where OpenVINO (CPU, 2026.4.1) differs from the operator's text.
DIVERGES = {
    "dtype-int64-openvino": "the CPU plugin computes int64 data as int32 (int64 max comes back as -1)",
    "dtype-float64-openvino": "the CPU plugin computes float64 as float32 (inf comes back as float32's max)",
    "bounds-openvino-int64-beyond-int32": "int64 indices are read as int32: 2**32 + 1 reads element 1",
}

OPENVINO_CASES = [c for c in CASES if c.op == OPENVINO]


def _param(case: Case) -> object:
    marks = []
    if case.id in DIVERGES:
        marks.append(pytest.mark.xfail(strict=True, reason=DIVERGES[case.id]))
    return pytest.param(case, id=case.id, marks=marks)


def test_every_openvino_case_is_covered() -> None:
    assert len(OPENVINO_CASES) > 20
    assert set(GAPS) | set(DIVERGES) <= {c.id for c in OPENVINO_CASES}


@pytest.mark.parametrize("case", [_param(c) for c in OPENVINO_CASES if c.id not in GAPS])
def test_case_on_openvino(case: Case) -> None:
    assert case.written is None  # every OpenVINO case holds its indices in an int array
    if case.raises is not None:
        with pytest.raises(Exception) as info:  # OpenVINO raises RuntimeError for everything
            RUNTIME.run(case.data, case.indices, case.attributes["axis"])
        assert not isinstance(info.value, Gap), info.value
        return
    assert_identical(RUNTIME.run(case.data, case.indices, case.attributes["axis"]), expected(case))


@pytest.mark.parametrize("case", [c for c in OPENVINO_CASES if c.id in GAPS], ids=lambda c: c.id)
def test_gap(case: Case) -> None:
    with pytest.raises(Gap):
        RUNTIME.run(case.data, case.indices, case.attributes["axis"])


# What the docs say about the runtime, measured here so that they stay true.


def test_negative_indices_count_from_the_end() -> None:
    """openvinotoolkit/openvino#30800: [-s, s-1], as onnx_gather's OpenVINO operator."""
    data = np.array([[10, 11, 12, 13]], np.int32)
    got = RUNTIME.run(data, np.array([[-1, -4, 3, 0]], np.int64), 1)
    assert got.tolist() == [[13, 10, 13, 10]]
    for bad in (4, -5):
        with pytest.raises(RuntimeError, match="exceed data size"):
            RUNTIME.run(data, np.array([[bad]], np.int64), 1)
    with pytest.raises(RuntimeError, match="not consistent"):
        RUNTIME.run(np.zeros((2, 4), np.int32), np.zeros((1, 4), np.int64), 1)


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        ("int64", [2**40 + 3, -(2**40), 5]),
        ("uint64", [2**40 + 3, 2**63, 5]),
        ("float64", [1e300, np.inf, 1.0 + 2.0**-40]),
    ],
)
def test_64_bit_data_is_narrowed(dtype: str, values: list[float]) -> None:
    """The CPU plugin runs 64-bit data types in 32 bits (a known divergence, counted)."""
    data = np.array([values], dtype)
    got = RUNTIME.run(data, np.array([[2, 1, 0]], np.int64), 1)
    assert got.dtype == data.dtype
    assert not np.array_equal(got, data[:, ::-1])


def native_float16() -> bool:
    """Whether this CPU computes float16 natively (AVX512-FP16), as the CPU plugin then does."""
    try:
        with open("/proc/cpuinfo") as info:
            return any(" avx512_fp16" in line for line in info if line.startswith("flags"))
    except OSError:
        return False


def test_float16_signalling_nans_are_quieted_without_native_float16() -> None:
    """Without AVX512-FP16 float16 goes through float32: 0x7C01 comes back 0x7E01; with it
    (Sapphire Rapids and later) the plugin computes float16 and keeps the bits. float32
    keeps them everywhere.
    """
    bits = np.array([[0x7C01, 0xFC01, 0x7E01, 0x0001]], np.uint16)
    got = RUNTIME.run(bits.view(np.float16), np.array([[0, 1, 2, 3]], np.int64), 1)
    quieted = [[0x7E01, 0xFE01, 0x7E01, 0x0001]]
    assert got.view(np.uint16).tolist() == (bits.tolist() if native_float16() else quieted)
    f32 = np.array([[0x7F800001, 0xFF800005]], np.uint32)
    got32 = RUNTIME.run(f32.view(np.float32), np.array([[0, 1]], np.int64), 1)
    assert got32.view(np.uint32).tolist() == f32.tolist()


def test_an_empty_axis_is_not_range_checked() -> None:
    """On an axis of size 0 every index is out of range; the CPU plugin returns anyway.

    The values are uninitialised memory (they vary from run to run), so only the shape is
    asserted. A known divergence, counted by the property tests.
    """
    got = RUNTIME.run(np.zeros((2, 0), np.float32), np.array([[7], [1]], np.int64), 1)
    assert got.shape == (2, 1)


def test_a_failed_call_leaves_its_output_shape_behind() -> None:
    """After an out-of-range error, empty indices may get the failed call's shape.

    Why the runner recompiles after every error. On one compiled model: empty indices,
    then three indices with a bad one (raises), then empty indices again: these return
    three elements of stale memory.
    """

    def call(compiled: object, size: int, indices: list[int]) -> np.ndarray:
        return compiled({0: np.zeros(size, bool), 1: np.array(indices, np.int64)})[0]  # type: ignore[operator]

    compiled = OpenVINO().compiled("bool", "int64", 1, 1, 0)  # a model of its own
    assert call(compiled, 0, []).shape == (0,)
    with pytest.raises(RuntimeError):
        call(compiled, 4, [0, 1, -9])
    assert call(compiled, 3, []).shape == (3,)
    # The runner's own calls never see it.
    assert RUNTIME.run(np.zeros(0, bool), np.zeros(0, np.int64), 0).shape == (0,)
    with pytest.raises(RuntimeError):
        RUNTIME.run(np.zeros(4, bool), np.array([0, 1, -9], np.int64), 0)
    assert RUNTIME.run(np.zeros(3, bool), np.zeros(0, np.int64), 0).shape == (0,)


# OpenVINO GatherND-5/8: the valid cases, bit for bit. Out-of-range coordinates are never
# run: the CPU plugin reads them unchecked (a segmentation fault, 2026.4.1).
#: (The version errors are the library's API: the runtime has an opset, not an argument.)
OPENVINO_ND_CASES = [
    c for c in CASES
    if c.op == OV_ND and c.raises in (None, ValueError) and c.id != "ov-nd-opset-4"
]  # fmt: skip


def _nd(case: Case) -> np.ndarray:
    op = _ops.OPENVINO_GATHER_ND
    version = op.resolve(op.default_opset if case.opset is None else case.opset)
    return RUNTIME.run(case.data, case.indices, case.attributes["batch_dims"], OV_ND, version)


@pytest.mark.parametrize("case", OPENVINO_ND_CASES, ids=lambda c: c.id)
def test_gather_nd_case_on_openvino(case: Case) -> None:
    if case.raises is not None:
        with pytest.raises(RuntimeError):
            _nd(case)
        return
    assert_identical(_nd(case), expected(case))


def test_gather_nd_5_flattens_and_8_keeps_the_batch_dims() -> None:
    data = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4, 1)
    indices = np.array([[[1], [0], [2]], [[0], [2], [-1]]], np.int64)
    assert RUNTIME.run(data, indices, 2, OV_ND, 5).shape == (6, 1)
    assert RUNTIME.run(data, indices, 2, OV_ND, 8).shape == (2, 3, 1)


# OpenVINO Gather-7/8: every case of the table the runtime can run, bit for bit (zeros for
# an index out of range); those it cannot run or reads otherwise, by name.
#: Not run: compiling a Gather with an empty output stops the process (SIGFPE, 2026.4.1);
#: the runtime has no complex types; strings are not fed to it.
GATHER_GAPS = {
    "ov-gather-empty-indices": "an empty output: compiling it stops the process (SIGFPE)",
    "dtype-complex64-openvino-gather": "no complex element types",
    "dtype-complex128-openvino-gather": "no complex element types",
    # (uninitialised memory: zeros at times, so no comparison can fail reliably)
    "ov-gather-empty-axis-zeros": "an empty axis: the output holds uninitialised memory",
    # (the library's API: the runtime has an opset, not an argument)
    "ov-gather-opset-6": "a version argument", "ov-gather-version-not-an-int": "a version argument",
    # (TypeErrors of the library's planner: the runtime builds no model of a float index)
    "ov-gather-float-indices": "a float index type",
    "ov-gather-rank-0-data": "0-d data: the runtime's Gather takes it",
    # (the runtime normalises batch_dims by the indices' rank only)
    "ov-gather-batch-dims-out-of-range": "batch_dims -3 with indices of rank 2: it reads 0-d",
}  # fmt: skip
GATHER_DIVERGES = {
    "ov-gather-beyond-int32": "int64 indices are read as int32: 2**40 reads element 0",
    "dtype-int64-openvino-gather": "the CPU plugin computes int64 data as int32",
    "dtype-float64-openvino-gather": "the CPU plugin computes float64 as float32",
}
OV_GATHER_CASES = [c for c in CASES if c.op == _ops.OPENVINO_GATHER.name]
#: Not run either: strings, which are not fed to the runtime (which kinds there are
#: depends on NumPy's version: StringDType from 2.0).
GATHER_STRINGS = {c.id for c in OV_GATHER_CASES if c.data.dtype.kind in "OUST"}
#: Nor integer data with an index out of range, which the CPU plugin fills
#: with stale memory at times (not zeros: a flaky comparison).
GATHER_STALE = {
    c.id for c in OV_GATHER_CASES
    if c.raises is None and c.id not in GATHER_GAPS.keys() | GATHER_STRINGS and stale_fill(
        c.data, c.indices, c.attributes["axis"],
        _ops.OPENVINO_GATHER.resolve(8 if c.opset is None else c.opset),
    )
}  # fmt: skip


def _gather(case: Case) -> np.ndarray:
    op = _ops.OPENVINO_GATHER
    version = op.resolve(op.default_opset if case.opset is None else case.opset)
    attribute = (case.attributes["axis"], case.attributes["batch_dims"])
    return RUNTIME.run(case.data, case.indices, attribute, op.name, version)


def _gather_param(case: Case) -> object:
    marks = []
    if case.id in GATHER_DIVERGES:
        marks.append(pytest.mark.xfail(strict=True, reason=GATHER_DIVERGES[case.id]))
    return pytest.param(case, id=case.id, marks=marks)


def test_every_openvino_gather_case_is_covered() -> None:
    ids = {c.id for c in OV_GATHER_CASES}
    assert len(ids) > 30
    assert set(GATHER_GAPS) | set(GATHER_DIVERGES) <= ids
    assert {"spec-openvino-gather-8-example-7", "dtype-int8-openvino-gather"} <= GATHER_STALE
    assert {"dtype-string-openvino-gather", "ov-gather-empty-axis-strings"} <= GATHER_STRINGS
    assert len(ids - set(GATHER_GAPS) - GATHER_STRINGS - GATHER_STALE) > 20  # (what runs)


@pytest.mark.parametrize(
    "case",
    [
        _gather_param(c)
        for c in OV_GATHER_CASES
        if c.id not in GATHER_GAPS.keys() | GATHER_STRINGS | GATHER_STALE
    ],
)
def test_gather_case_on_openvino(case: Case) -> None:
    if case.raises is not None:
        with pytest.raises(RuntimeError):
            _gather(case)
        return
    assert_identical(_gather(case), expected(case))


# --- OpenVINO's scatters ------------------------------------------------------------------

OV_SCATTER_CASES = [c for c in CASES if c.op in openvino_peer.SCATTERS]


def _scatter_example(case: Case) -> Example:
    return Example(case.op, case.data, case.indices, case.attributes, case.opset,
                   check_bounds=True, updates=case.updates)  # fmt: skip


def _scatter_class(case: Case) -> tuple[str, str | None]:
    """How the runtime's answer relates to the case's, and the known reason where it differs."""
    example = _scatter_example(case)  # (checked: the runtime has no unchecked mode)
    cls = classify(example, RUNTIME(example), runner_expected(example))
    known = (
        None
        if cls == "agrees" or cls.startswith("rejects: ")
        else (openvino_peer.known_divergence(example, cls))
    )
    return cls, known


def test_openvino_scatter_cases_agree_or_are_known() -> None:
    """Every scatter case on the runtime: the same value, the same refusal, or a known reason.

    Counted per class, so that the runtime agreeing on most of the table is part of the
    proof (not only that nothing unexplained happened).
    """
    classes: dict[str, int] = {}
    for case in OV_SCATTER_CASES:
        cls, known = _scatter_class(case)
        if cls != "agrees" and not cls.startswith("rejects: "):
            assert known is not None, f"{case.id}: {cls}"
        key = cls if known is None or known == cls else f"known: {known}"
        classes[key] = classes.get(key, 0) + 1
    # (Measured with openvino 2026.4.1: most of the table runs and agrees.)
    assert classes.get("agrees", 0) >= 60, classes
    assert sum(n for c, n in classes.items() if c.startswith("rejects: ")) >= 8, classes


@pytest.mark.parametrize(
    "case_id",
    [
        "spec-openvino-scatterndupdate-15-xml-example-1-(none)",
        "spec-openvino-scatterndupdate-15-xml-example-4-(prod)",
        "spec-openvino-scatterelementsupdate-12-example-2",
        "ov-seu-mean-float",
        "ov-seu-prod-no-init",
    ],
)
def test_openvino_scatter_confirms_the_decided_values(case_id: str) -> None:
    """The runtime gives the values DESIGN.md decides where the texts slip or say little.

    Run directly, duplicates and all (the peer leaves out duplicates whose order could
    matter: here the runtime's order is C order, the decided one).
    """
    (case,) = [c for c in OV_SCATTER_CASES if c.id == case_id]
    assert_identical(_direct(case), expected(case))


def _direct(case: Case) -> np.ndarray:
    op = _ops.get(case.op)
    version = op.numbers[-1] if case.opset is None else op.resolve(case.opset)
    named = openvino_peer.ATTRIBUTE[case.op]
    attribute = (
        tuple(case.attributes[n] for n in named)
        if isinstance(named, tuple)
        else (case.attributes[named])
    )
    return RUNTIME.run(case.data, case.indices, attribute, case.op, version, case.updates)


def test_openvino_scatter_integer_mean_truncates() -> None:
    """The CPU plugin truncates an integer mean; the text and the reference round it down."""
    (case,) = [c for c in OV_SCATTER_CASES if c.id == "ov-seu-mean-int-rounds-down"]
    cls, known = _scatter_class(case)
    assert cls == "WRONG values"
    assert known is not None
    assert "truncates" in known
    np.testing.assert_array_equal(_direct(case), [3, -1, 0])


def test_openvino_scatter_bool_sub_of_duplicates_subtracts_bytes() -> None:
    """Bool ``sub`` is XOR (the text), one update at a time: the CPU plugin's is not.

    Alone an update XORs; repeated, the plugin subtracts bytes (0 - 1 = 255, then 254:
    still true), so three True updates on True give True where XOR gives False.
    """
    (case,) = [c for c in OV_SCATTER_CASES if c.id == "ov-sndu-sub-bool-xor"]
    assert_identical(expected(case), np.array([False, True, True]))
    np.testing.assert_array_equal(_direct(case), [True, True, True])
