"""Running a case on a library and comparing results bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import oracle
from cases import ELEMENTS, GATHER, OPENVINO, Case
from libs import Lib, dtype_name

import onnx_gather as og
from onnx_gather import openvino


def call(
    op: str, data: Any, indices: Any, axis: int, opset: int | None, check_bounds: bool = True
) -> Any:
    if op == GATHER:
        return og.gather(data, indices, axis, opset=opset, check_bounds=check_bounds)
    if op == ELEMENTS:
        return og.gather_elements(data, indices, axis, opset=opset, check_bounds=check_bounds)
    assert op == OPENVINO
    return openvino.gather_elements(data, indices, axis, check_bounds=check_bounds)


def run_case(lib: Lib, case: Case, indices: Any = None) -> Any:
    data = lib.asarray(case.data)
    if indices is None:
        indices = lib.indices(case.indices)
    return call(case.op, data, indices, case.axis, case.opset, case.check_bounds)


def expected(case: Case) -> np.ndarray:
    if case.expected is not None:
        return case.expected
    if case.op == GATHER:
        return oracle.gather(case.data, case.indices, case.axis, case.opset)
    return oracle.gather_elements(
        case.data, case.indices, case.axis, None if case.op == OPENVINO else case.opset
    )


def assert_identical(actual: np.ndarray, want: np.ndarray) -> None:
    """Same shape, same dtype, same bits (NaN payloads and -0.0 included)."""
    assert actual.shape == want.shape, (actual.shape, want.shape)
    if dtype_name(want.dtype) == "string":
        assert dtype_name(actual.dtype) == "string", actual.dtype
        assert actual.tolist() == want.tolist()
        return
    assert actual.dtype == want.dtype, (actual.dtype, want.dtype)
    got = np.ascontiguousarray(actual).view(np.uint8)
    ref = np.ascontiguousarray(want).view(np.uint8)
    assert got.tobytes() == ref.tobytes(), f"\nactual:\n{actual!r}\nexpected:\n{want!r}"


def applies(lib: Lib, case: Case) -> bool:
    """Whether the library can hold the case's data type at all."""
    return dtype_name(case.data.dtype) in lib.holds
