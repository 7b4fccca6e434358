"""The ONNX backend test suite's cases of every operator of the registry, ready to call.

Shared by ``python -m onnx_gather check`` and the test suite. Needs the ``onnx`` package
(imported on first use only).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Collection, Iterator
from typing import Any, NamedTuple

import numpy as np

from onnx_gather import _ops

# Types a library without 64-bit support (JAX without x64) cannot hold: narrowed as a user
# of that library would.
_NARROW = {"float64": np.float32, "int64": np.int32, "complex128": np.complex64}


class OfficialRun(NamedTuple):
    """One data set of one official case: the call to make and its expected output."""

    op: str  # a registry name: onnx_gather._ops.OPS
    arrays: tuple[np.ndarray, ...]  # the inputs, in the operator's order
    attributes: dict[str, Any]
    opset: int
    expected: np.ndarray

    def inputs(self, lib: Any) -> tuple[Any, ...]:
        """The inputs as arrays of ``lib`` (a ``Library``)."""
        inputs: tuple[Any, ...] = lib.inputs(_ops.get(self.op).inputs, self.arrays)
        return inputs


def official_cases() -> list[Any]:
    """The suite's single-node cases of every ONNX operator of the registry, each once."""
    node = importlib.import_module("onnx.backend.test.case.node")
    with warnings.catch_warnings():
        # Building the suite evaluates every operator's cases; some of them warn.
        warnings.simplefilter("ignore")
        every = node.collect_testcases(None)
    seen: set[str] = set()
    cases = []
    for case in every:
        nodes = case.model.graph.node
        single = len(nodes) == 1 and nodes[0].op_type in _ops.BY_ONNX_OP_TYPE
        if single and case.name not in seen:
            seen.add(case.name)
            cases.append(case)
    return cases


def official_runs(case: Any, holds: Collection[str]) -> Iterator[OfficialRun]:
    """The calls of ``case``, with data narrowed to a type the library ``holds``."""
    node = case.model.graph.node[0]
    op = _ops.BY_ONNX_OP_TYPE[node.op_type]
    attributes = _ops.node_attributes(op, node)
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    for inputs, outputs in case.data_sets:
        arrays = tuple(np.asarray(x) for x in inputs)
        want = np.asarray(outputs[0])
        if want.dtype.name not in holds and want.dtype.name in _NARROW:
            # Data and the values written into it (a scatter's updates), not the indices.
            arrays = tuple(
                x.astype(_NARROW[x.dtype.name]) if role != "indices" else x
                for role, x in zip(op.inputs, arrays, strict=True)
            )
            want = want.astype(_NARROW[want.dtype.name])
        yield OfficialRun(op.name, arrays, attributes, opset, want)
