"""run_node and reference_ops: ONNX nodes of the family through the registry."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_identical
from libs import Library

import onnx_gather as og
from onnx_gather import _ops

onnx = pytest.importorskip("onnx")  # a test dependency: never skipped in the matrix
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from onnx_gather._conformance.official import official_cases, official_runs  # noqa: E402

CASES = official_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_run_node_on_the_official_cases(lib: Library, case: Any) -> None:
    """Every official node case of every operator, its attributes read from its node."""
    node = case.model.graph.node[0]
    for run in official_runs(case, lib.holds):
        got = og.run_node(node, *run.inputs(lib), opset=run.opset)
        assert_identical(lib.to_numpy(got), run.expected)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reference_ops_on_the_official_cases(case: Any) -> None:
    """The reference evaluator with the family replaced gives the official outputs."""
    evaluator = ReferenceEvaluator(case.model, new_ops=og.reference_ops())
    names = [i.name for i in case.model.graph.input]
    for inputs, outputs in case.data_sets:
        (got,) = evaluator.run(None, dict(zip(names, inputs, strict=True)))
        assert_identical(np.asarray(got), np.asarray(outputs[0]))


def _model(op_type: str, opset: int, **attributes: Any) -> Any:
    op = _ops.BY_ONNX_OP_TYPE[op_type]
    return op.onnx_model(opset, ["float32", "int64"], [None, None], attributes)


def test_reference_ops_raise_where_the_evaluator_wraps() -> None:
    """The evaluator's own GatherElements reads element 0 for index 3 of 3; ours raises."""
    model = _model("GatherElements", 13, axis=0)
    feeds = {"data": np.array([10.0, 11.0, 12.0], np.float32), "indices": np.array([3])}
    (wrapped,) = ReferenceEvaluator(model).run(None, feeds)
    assert wrapped.tolist() == [10.0]  # the defect reference_ops replaces
    with pytest.raises(IndexError, match=r"GatherElements-13: index 3 at position \(0,\)"):
        ReferenceEvaluator(model, new_ops=og.reference_ops()).run(None, feeds)


def test_reference_ops_use_the_models_opset() -> None:
    """A GatherND-11 model: batch_dims does not exist there; bfloat16 is refused at 12."""
    model = _model("GatherND", 11)
    evaluator = ReferenceEvaluator(model, new_ops=og.reference_ops())
    data = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    (got,) = evaluator.run(None, {"data": data, "indices": np.array([[1, -1]])})
    assert_identical(got, data[1, 1][None])
    with pytest.raises(IndexError, match=r"GatherND-11: index 2 at position \(0, 0\)"):
        evaluator.run(None, {"data": data, "indices": np.array([[2, 0]])})


def test_reference_ops_are_one_per_onnx_operator() -> None:
    classes = og.reference_ops()
    assert [c.__name__ for c in classes] == list(_ops.BY_ONNX_OP_TYPE)
    assert all(c.op_domain == "" for c in classes)


@pytest.mark.parametrize(
    ("node", "inputs", "error", "match"),
    [
        (helper.make_node("Gather", ["d", "i"], ["o"], axis=1), 2, None, None),
        (
            helper.make_node("Gather", ["d", "i"], ["o"], name="g", domain="com.example"),
            2,
            ValueError,
            "node 'g' is a Gather of domain 'com.example'",
        ),
        (
            helper.make_node("Scatter", ["d", "i", "u"], ["o"], name="s"),
            3,
            ValueError,
            "node 's' is a Scatter; onnx_gather runs Gather, GatherElements, GatherND",
        ),
        (
            helper.make_node("GatherND", ["d", "i"], ["o"], name="n", axis=0),
            2,
            ValueError,
            "GatherND node 'n' has an attribute 'axis', which GatherND does not have",
        ),
        (
            helper.make_node("GatherElements", ["d", "i"], ["o"], name="e"),
            1,
            ValueError,
            r"GatherElements node 'e' takes 2 inputs \(data, indices\), got 1",
        ),
    ],
    ids=["ok", "domain", "op_type", "attribute", "inputs"],
)
def test_run_node_errors(node: Any, inputs: int, error: Any, match: str | None) -> None:
    args = (np.arange(6.0).reshape(2, 3), np.array([[0, 1], [1, 0]]))[:inputs]
    if inputs == 3:
        args = (*args, args[0])
    if error is None:
        assert_identical(og.run_node(node, *args), np.take(args[0], args[1], axis=1))
        return
    with pytest.raises(error, match=match):
        og.run_node(node, *args)


def test_run_node_reads_attributes_and_checks_bounds(lib: Library) -> None:
    node = helper.make_node("GatherND", ["data", "indices"], ["out"], batch_dims=1)
    data = lib.asarray(np.arange(8, dtype=np.float32).reshape(2, 2, 2))
    got = og.run_node(node, data, np.array([[1], [-2]]))
    assert_identical(lib.to_numpy(got), np.array([[2, 3], [4, 5]], np.float32))
    with pytest.raises(
        IndexError, match=r"GatherND-13: index 2 at position \(1, 0\) .* axis 1 of size 2"
    ):
        lib.to_numpy(og.run_node(node, data, np.array([[1], [2]])))
