"""The official ONNX node test cases of every operator of the registry, on every library."""

from __future__ import annotations

import onnx
import pytest
from helpers import assert_identical
from libs import Library

# onnx (and its node test cases) is a test dependency: a missing one fails the run, where an
# importorskip would pass it green.
from onnx_gather import _ops
from onnx_gather._conformance.official import official_cases, official_runs
from onnx_gather._ops import call

CASES = official_cases()


def test_the_suite_has_every_operator() -> None:
    names = {c.name for c in CASES}
    assert {"test_gather_0", "test_gather_negative_indices", "test_gather_elements_0",
            "test_gather_elements_negative_indices", "test_gathernd_example_int32",
            "test_gathernd_example_float32", "test_gathernd_example_int32_batch_dim1",
            "test_scatter_elements_with_duplicate_indices",
            "test_scatter_elements_with_reduction_max", "test_scatternd_multiply",
            "test_scatternd_min"} <= names, names  # fmt: skip
    node_types = {c.model.graph.node[0].op_type for c in CASES}
    # Every operator the installed onnx defines (TensorScatter from onnx 1.19: the floor,
    # 1.16, has neither the operator nor its cases).
    defined = {op for op in _ops.BY_ONNX_OP_TYPE if onnx.defs.has(op)}
    assert node_types == defined, node_types
    assert {"test_tensorscatter", "test_tensorscatter_circular"} <= names or (
        "TensorScatter" not in defined
    )


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_official_case(lib: Library, case) -> None:
    for run in official_runs(case, lib.holds):
        got = call(run.op, *run.inputs(lib), opset=run.opset, **run.attributes)
        assert_identical(lib.to_numpy(got), run.expected)
