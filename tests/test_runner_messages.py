"""The conformance runner judges ValueError and TypeError by their messages too (issue 33, item 13).

The README promises that each error names the rule that failed and the bad value. The
oracle's errors say what a library's message must name (``names``: ``axis 5``,
``reduction 'sum'``, ``indices.shape[-1] is 3``); here one example breaks each of the
oracle's rules, every library of the run must raise the oracle's type with such a message,
and the runner must refuse a message that names something else.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from libs import LIBS

from onnx_gather._conformance.runner import Outcome, check, expected, mismatch
from onnx_gather._conformance.strategies import Example, numpy_dtype

F = np.arange(6, dtype=np.float32).reshape(2, 3)
I2 = np.array([[0, 1]])
ONE = np.ones((1, 2), np.float32)


def _bf16() -> Any:
    return F.astype(numpy_dtype("bfloat16"))


#: (id, op, data, indices, updates, attributes, opset, the names the message must hold).
RULES: list[tuple[Any, ...]] = [
    ("opset", "gather_elements", F, I2, None, {"axis": 0}, 10, ["opset 10"]),
    ("data-rank-0", "gather", np.float32(1.0), np.array([0]), None, {"axis": 0}, None,
     ["rank >= 1"]),
    ("bfloat16-before-13", "gather", "bf16", I2, None, {"axis": 0}, 11, ["bfloat16"]),
    ("axis", "gather", F, I2, None, {"axis": -3}, None, ["axis -3"]),
    ("elements-rank", "gather_elements", F, np.array([0]), None, {"axis": 0}, None,
     ["same rank", "rank 1"]),
    ("elements-larger", "gather_elements", F, np.zeros((3, 1), np.int64), None, {"axis": 1},
     None, ["indices dim 0 is 3", "larger"]),
    ("openvino-equal", "openvino.gather_elements", F, np.zeros((1, 3), np.int64), None,
     {"axis": 1}, None, ["indices dim 0 is 1", "equal"]),
    ("nd-batch-dims-11", "gather_nd", F, I2.T, None, {"batch_dims": 1}, 11,
     ["batch_dims 1", "version 12"]),
    ("nd-indices-rank-0", "gather_nd", F, np.array(0), None, {"batch_dims": 0}, None,
     ["rank >= 1"]),
    ("nd-batch-dims-range", "gather_nd", F, I2, None, {"batch_dims": 2}, None,
     ["batch_dims 2 is out of range"]),
    ("nd-batch-differ", "gather_nd", F, np.zeros((3, 1), np.int64), None, {"batch_dims": 1},
     None, ["batch_dims=1"]),
    ("nd-k", "gather_nd", F, np.zeros((1, 3), np.int64), None, {"batch_dims": 0}, None,
     ["indices.shape[-1] is 3"]),
    ("updates-type", "scatter_elements", F, I2, ONE.astype(np.int32), {"axis": 0}, None,
     ["updates", "float32", "int32"]),
    ("reduction-unknown", "scatter_elements", F, I2, ONE, {"axis": 0, "reduction": "sum"},
     None, ["reduction 'sum'"]),
    ("reduction-version", "scatter_nd", F, np.zeros((1, 1), np.int64), F[:1],
     {"reduction": "max"}, 13, ["reduction 'max'"]),
    ("reduction-complex", "scatter_elements", F.astype(np.complex64), I2,
     ONE.astype(np.complex64), {"axis": 0, "reduction": "min"}, None,
     ["reduction 'min'", "complex64"]),
    ("reduction-strings", "scatter_nd", F.astype(str).astype(object),
     np.zeros((1, 1), np.int64), F[:1].astype(str).astype(object), {"reduction": "mul"},
     None, ["reduction 'mul'", "string"]),
    ("scatter-rank", "scatter_elements", F, np.array([0]), np.ones(1, np.float32),
     {"axis": 0}, None, ["same rank", "rank 1"]),
    ("scatter-updates-shape", "scatter_elements", F, I2, np.ones((1, 3), np.float32),
     {"axis": 0}, None, ["updates", "(1, 3)"]),
    ("scatter-larger", "scatter_elements", F, np.zeros((3, 1), np.int64),
     np.ones((3, 1), np.float32), {"axis": 1}, None, ["indices dim 0 is 3", "larger"]),
    ("scatter-nd-k", "scatter_nd", F, np.zeros((1, 3), np.int64), np.ones(1, np.float32), {},
     None, ["indices.shape[-1] is 3"]),
    ("scatter-nd-updates", "scatter_nd", F, np.zeros((1, 1), np.int64),
     np.ones((1, 2), np.float32), {}, None, ["updates", "(1, 2)"]),
]  # fmt: skip


def _example(rule: tuple[Any, ...]) -> Example:
    _, op, data, indices, updates, attributes, opset, _ = rule
    data = _bf16() if isinstance(data, str) else data
    return Example(op, data, indices, attributes, opset, updates=updates)


def _held(rule: tuple[Any, ...]) -> bool:
    """Whether a library of this run holds the rule's data type (else: not collected here;
    the run of a library that holds it tests it, never a skip that reports green)."""
    return any(_example(rule).dtype_name in lib.holds for lib in LIBS)


HELD = [rule for rule in RULES if _held(rule)]


@pytest.mark.parametrize("rule", HELD, ids=[r[0] for r in HELD])
def test_every_library_names_the_rule(rule: tuple[Any, ...]) -> None:
    example = _example(rule)
    want = expected(example)
    assert isinstance(want.error, ValueError | TypeError), want
    assert list(getattr(want.error, "names", ())) == rule[-1]  # the table says what it tests
    check(example, LIBS)


def test_the_runner_refuses_a_message_that_names_another_value() -> None:
    """Before, any ValueError passed where the oracle raised one."""
    example = _example(RULES[3])  # axis -3 of data of rank 2
    want = expected(example)
    assert mismatch(example, Outcome(error=ValueError("axis -3 is out of range")), want) is None
    problem = mismatch(example, Outcome(error=ValueError("axis 2 is out of range")), want)
    assert problem is not None
    assert "does not name 'axis -3'" in problem
    wrong_type = mismatch(example, Outcome(error=TypeError("axis -3")), want)
    assert wrong_type is not None
    assert wrong_type.startswith("raised TypeError")
