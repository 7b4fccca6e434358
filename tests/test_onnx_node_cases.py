"""The official ONNX node test cases for Gather and GatherElements, on every library."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import assert_identical, call
from libs import Lib, dtype_name

onnx_case = pytest.importorskip("onnx.backend.test.case.node")


def _collect() -> list:
    with warnings.catch_warnings():
        # Building the whole suite evaluates other operators' cases, which warn.
        warnings.simplefilter("ignore")
        every = onnx_case.collect_testcases(None)
    seen, cases = set(), []
    for case in every:
        nodes = case.model.graph.node
        if (
            len(nodes) == 1
            and nodes[0].op_type in ("Gather", "GatherElements")
            and case.name not in seen
        ):
            seen.add(case.name)
            cases.append(case)
    return cases


CASES = _collect()


def test_the_suite_has_both_operators() -> None:
    names = {c.name for c in CASES}
    assert {"test_gather_0", "test_gather_negative_indices", "test_gather_elements_0",
            "test_gather_elements_negative_indices"} <= names, names  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_official_case(lib: Lib, case) -> None:
    node = case.model.graph.node[0]
    axis = next((attr.i for attr in node.attribute if attr.name == "axis"), 0)
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    op = "gather" if node.op_type == "Gather" else "gather_elements"
    for inputs, outputs in case.data_sets:
        data, indices = (np.asarray(x) for x in inputs)
        (want,) = outputs
        if dtype_name(data.dtype) not in lib.holds:
            # e.g. JAX without x64 cannot hold float64/int64 data; narrow as a user would.
            narrow = {"float64": np.float32, "int64": np.int32, "complex128": np.complex64}
            data, want = (
                data.astype(narrow[data.dtype.name]),
                np.asarray(want).astype(narrow[data.dtype.name]),
            )
        got = call(op, lib.asarray(data), lib.indices(indices), axis, opset)
        assert_identical(lib.to_numpy(got), np.asarray(want))
