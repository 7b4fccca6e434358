"""Running a case on a library and comparing results bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import oracle
from cases import GATHER, OPENVINO, Case
from libs import Library

from onnx_gather._conformance.libraries import type_name
from onnx_gather._conformance.runner import difference
from onnx_gather._ops import call


def run_case(lib: Library, case: Case, indices: Any = None) -> Any:
    data = lib.asarray(case.data)
    if indices is None:
        indices = case.written if case.written is not None else lib.indices(case.indices)
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
    """Same shape, same dtype, same bits (NaN payloads and -0.0 included; strings by value)."""
    problem = difference(actual, want)
    assert problem is None, f"{problem}\nactual:\n{actual!r}\nexpected:\n{want!r}"


def applies(lib: Library, case: Case) -> bool:
    """Whether the library can hold the case's data type at all."""
    return type_name(case.data.dtype) in lib.holds
