"""The ONNX backend test suite's Gather and GatherElements cases, ready to call.

Shared by ``python -m onnx_gather check`` and the test suite. Needs the ``onnx`` package
(imported on first use only).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Collection, Iterator
from typing import Any, NamedTuple

import numpy as np

from onnx_gather import _spec
from onnx_gather._ops import GATHER, GATHER_ELEMENTS

# Types a library without 64-bit support (JAX without x64) cannot hold: narrowed as a user
# of that library would.
_NARROW = {"float64": np.float32, "int64": np.int32, "complex128": np.complex64}


class OfficialRun(NamedTuple):
    """One data set of one official case: the call to make and its expected output."""

    op: str  # onnx_gather._ops.GATHER or GATHER_ELEMENTS
    data: np.ndarray
    indices: np.ndarray
    axis: int
    opset: int
    expected: np.ndarray


def official_cases() -> list[Any]:
    """The suite's single-node Gather and GatherElements cases, each once."""
    node = importlib.import_module("onnx.backend.test.case.node")
    with warnings.catch_warnings():
        # Building the suite evaluates every operator's cases; some of them warn.
        warnings.simplefilter("ignore")
        every = node.collect_testcases(None)
    seen: set[str] = set()
    cases = []
    for case in every:
        nodes = case.model.graph.node
        single = len(nodes) == 1 and nodes[0].op_type in (_spec.GATHER, _spec.GATHER_ELEMENTS)
        if single and case.name not in seen:
            seen.add(case.name)
            cases.append(case)
    return cases


def official_runs(case: Any, holds: Collection[str]) -> Iterator[OfficialRun]:
    """The calls of ``case``, with data narrowed to a type the library ``holds``."""
    node = case.model.graph.node[0]
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    op = GATHER if node.op_type == _spec.GATHER else GATHER_ELEMENTS
    for inputs, outputs in case.data_sets:
        data, indices = (np.asarray(x) for x in inputs)
        want = np.asarray(outputs[0])
        if data.dtype.name not in holds and data.dtype.name in _NARROW:
            data = data.astype(_NARROW[data.dtype.name])
            want = want.astype(_NARROW[want.dtype.name])
        yield OfficialRun(op, data, indices, axis, opset, want)
