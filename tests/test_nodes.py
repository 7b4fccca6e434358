"""run_node and reference_ops: ONNX nodes of the family through the registry."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_identical
from libs import Library

# onnx is a test dependency: a missing one fails the run (an importorskip would pass it).
from onnx import AttributeProto, helper
from onnx.reference import ReferenceEvaluator

import onnx_gather as og
from onnx_gather import _ops
from onnx_gather._conformance.official import official_cases, official_runs

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


def _with(node: Any, *attributes: Any) -> Any:
    """``node`` with ``attributes`` (AttributeProtos) appended as they are."""
    node.attribute.extend(attributes)
    return node


def _reference(name: str, refers_to: str) -> Any:
    """An INT attribute that refers to the attribute ``refers_to`` of an enclosing function."""
    attribute = helper.make_attribute_ref(name, AttributeProto.INT)
    attribute.ref_attr_name = refers_to
    return attribute


def _gather(**attributes: Any) -> Any:
    return helper.make_node("Gather", ["d", "i"], ["o"], name="g", **attributes)


def _scatter(**attributes: Any) -> Any:
    return helper.make_node("ScatterElements", ["d", "i", "u"], ["o"], name="s", **attributes)


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
            helper.make_node("Slice", ["d", "i", "u"], ["o"], name="s"),
            3,
            ValueError,
            "node 's' is a Slice; onnx_gather runs Gather, GatherElements, GatherND",
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
            r"GatherElements node 'e' takes 2 inputs \(data, indices\); the node lists 2, "
            "and 1 was given",
        ),
        # Item 8: a node listing one input, called with two arrays.
        (
            helper.make_node("Gather", ["d"], ["o"], name="g", axis=1),
            2,
            ValueError,
            r"Gather node 'g' takes 2 inputs \(data, indices\); the node lists 1, and 2 were",
        ),
        # Item 6: each read as axis 0 (a row instead of a column) before; ORT refuses them.
        (_gather(axis=1.0), 2, TypeError, "'g': attribute 'axis' is of type FLOAT, expected INT"),
        (_gather(axis=[1]), 2, TypeError, "'g': attribute 'axis' is of type INTS, expected INT"),
        (
            _scatter(reduction=["add"]),
            3,
            TypeError,
            "'s': attribute 'reduction' is of type STRINGS, expected STRING",
        ),
        (
            _with(_gather(), _reference("axis", "a")),
            2,
            ValueError,
            "'g': attribute 'axis' refers to the attribute 'a' of an enclosing function",
        ),
        # Item 7: the last one won before; ORT: "Attribute 'axis' appeared multiple times".
        (
            _with(_gather(), helper.make_attribute("axis", 1), helper.make_attribute("axis", 0)),
            2,
            ValueError,
            "Gather node 'g' has the attribute 'axis' more than once",
        ),
        # Reliability round 5, item 8: both ran before (ORT refuses them).
        (
            helper.make_node("Gather", ["d", "i"], ["o", "p"], name="g", axis=1),
            2,
            ValueError,
            r"Gather node 'g' has 1 output; the node lists 2: \['o', 'p'\]",
        ),
        (
            helper.make_node("Gather", ["d", "i"], [], name="g", axis=1),
            2,
            ValueError,
            r"Gather node 'g' has 1 output; the node lists 0: \[\]",
        ),
        # Round 5, item 4: an empty name is an absent input, which data cannot be.
        (
            helper.make_node("Gather", ["", "i"], ["o"], name="g", axis=1),
            2,
            ValueError,
            "Gather node 'g' leaves out its input data .an empty name., which Gather requires",
        ),
        # Item 8: UnicodeDecodeError before.
        (
            _scatter(reduction=b"\xffadd"),
            3,
            ValueError,
            r"'s': attribute 'reduction' is not UTF-8 text: b'\\xffadd'",
        ),
    ],
    ids=[
        "ok",
        "domain",
        "op_type",
        "attribute",
        "inputs",
        "inputs-listed",
        "float-axis",
        "ints-axis",
        "strings-reduction",
        "ref-attr-name",
        "duplicate",
        "outputs-2",
        "outputs-0",
        "required-input-empty",
        "not-utf8",
    ],
)
def test_run_node_errors(node: Any, inputs: int, error: Any, match: str | None) -> None:
    data = np.arange(6.0).reshape(2, 3)
    args = (data, np.array([[0, 1], [1, 0]]), np.ones((2, 2)))
    args = args[:inputs] if node.op_type.startswith("Gather") else args
    if error is None:
        assert_identical(og.run_node(node, *args), np.take(args[0], args[1], axis=1))
        return
    with pytest.raises(error, match=match):
        og.run_node(node, *args)


@pytest.mark.parametrize("node", ["Gather", None, {"op_type": "Gather"}])
def test_run_node_needs_a_node(node: Any) -> None:
    """Item 8: an AttributeError before; a NodeProto's own type is named."""
    with pytest.raises(TypeError, match=r"run_node expects an onnx\.NodeProto, got a Python "):
        og.run_node(node, np.arange(3.0), np.array([0]))


def test_run_node_reads_attributes_and_checks_bounds(lib: Library) -> None:
    node = helper.make_node("GatherND", ["data", "indices"], ["out"], batch_dims=1)
    data = lib.asarray(np.arange(8, dtype=np.float32).reshape(2, 2, 2))
    got = og.run_node(node, data, np.array([[1], [-2]]))
    assert_identical(lib.to_numpy(got), np.array([[2, 3], [4, 5]], np.float32))
    with pytest.raises(
        IndexError, match=r"GatherND-13: index 2 at position \(1, 0\) .* axis 1 of size 2"
    ):
        lib.to_numpy(og.run_node(node, data, np.array([[1], [2]])))


def test_run_node_takes_an_empty_name_as_an_absent_input(lib: Library) -> None:
    """Reliability round 5, item 4: ONNX's empty input name means the input is absent
    (``onnx.checker``, ONNX Runtime and the reference evaluator run such a node); the
    call gives the named inputs, or None at the empty name. Expected: ORT's zeros."""
    node = helper.make_node("TensorScatter", ["c", "u", ""], ["o"], axis=1)
    cache, update = np.zeros((2, 3), np.float32), np.array([[1.0], [2.0]], np.float32)
    want = np.array([[1, 0, 0], [2, 0, 0]], np.float32)
    for inputs in ((cache, update), (cache, update, None)):
        got = og.run_node(node, *(lib.asarray(x) if x is not None else x for x in inputs))
        assert_identical(lib.to_numpy(got), want)


@pytest.mark.parametrize(
    ("inputs", "match"),
    [
        (1, r"TensorScatter node 't' takes 2 to 3 inputs \(past_cache, update, write_indices\); "
            r"the node lists 3 \(2 named\), and 1 was given"),
        (3, r"TensorScatter node 't' leaves out its input write_indices \(an empty name\), "
            "and a NumPy ndarray was given for it"),
    ],
)  # fmt: skip
def test_run_node_names_the_operators_own_inputs(inputs: int, match: str) -> None:
    node = helper.make_node("TensorScatter", ["c", "u", ""], ["o"], name="t", axis=1)
    args = (np.zeros((2, 3)), np.ones((2, 1)), np.array([0, 1]))[:inputs]
    with pytest.raises(ValueError, match=match):
        og.run_node(node, *args)
