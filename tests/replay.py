"""Replaying real models: run an exported model in ONNX Runtime, capture every node of the
family with its inputs and output, and replay each through onnx_gather.

Shared by the replay tests of torch's two exporters (test_torch_replay.py: the TorchScript
exporter; test_torch_replay_dynamo.py: the dynamo exporter, which writes GatherND).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from helpers import assert_identical
from libs import Library

from onnx_gather import _ops
from onnx_gather._conformance.libraries import type_name
from onnx_gather._ops import call

#: Our operator for each node type replayed: every ONNX operator of the registry.
OPS = _ops.BY_ONNX_OP_TYPE


@dataclass(frozen=True)
class Model:
    """A module to export: tracing inputs, input names, dynamic dims and the inputs ORT runs."""

    name: str
    module: Any
    trace: tuple[Any, ...]
    inputs: tuple[str, ...]
    dynamic: dict[str, dict[int, str]]
    feeds: dict[str, np.ndarray]
    # Per opset it is exported at: the (op_type, count) of nodes the export must contain,
    # so the test cannot pass on a model that lost its nodes. An opset left out: the model
    # is not exported at it (the exporter has no such operator there).
    nodes: dict[int, tuple[tuple[str, int], ...]]


@dataclass(frozen=True)
class Node:
    """One node of the family as ORT ran it."""

    name: str
    op_type: str
    opset: int
    attributes: dict[str, Any]
    inputs: tuple[np.ndarray, ...]  # data, indices (and a scatter's updates)
    output: np.ndarray

    @property
    def data(self) -> np.ndarray:
        return self.inputs[0]

    @property
    def indices(self) -> np.ndarray:
        return self.inputs[1]


def opset_of(onnx_model: Any) -> int:
    return next(int(o.version) for o in onnx_model.opset_import if o.domain in ("", "ai.onnx"))


def capture(path: Path, feeds: dict[str, np.ndarray]) -> list[Node]:
    """Run the model in ORT with every node of the family's tensors as outputs."""
    model = onnx.load(str(path))
    graph = model.graph
    inferred = onnx.shape_inference.infer_shapes(model).graph
    types = {v.name: v for v in [*inferred.value_info, *inferred.input, *inferred.output]}
    known = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    known.update(feeds)
    outputs = {o.name for o in graph.output}
    nodes = [n for n in graph.node if n.op_type in OPS and n.domain in ("", "ai.onnx")]
    for node in nodes:
        for name in (*node.input, node.output[0]):
            if name not in known and name not in outputs:
                # Its type without the inferred shape, which an exporter may have got wrong
                # (a scatter_reduce export declares (15,) for a (3, 5) tensor).
                value = copy.deepcopy(types[name])
                value.type.tensor_type.ClearField("shape")
                graph.output.append(value)
                outputs.add(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    values = {**dict(zip(names, session.run(None, feeds), strict=True)), **known}
    opset = opset_of(model)
    return [
        Node(
            name=n.name,
            op_type=n.op_type,
            opset=opset,
            attributes=_ops.node_attributes(OPS[n.op_type], n),
            inputs=tuple(np.asarray(values[name]) for name in n.input),
            output=np.asarray(values[n.output[0]]),
        )
        for n in nodes
    ]


def counts(nodes: list[Node]) -> tuple[tuple[str, int], ...]:
    """How many nodes of each type of the family, in the registry's order."""
    return tuple((op, n) for op in OPS if (n := sum(node.op_type == op for node in nodes)))


def capture_all(
    models: list[Model],
    opsets: list[int],
    export: Callable[[Model, int, Path], None],
    folder: Path,
) -> dict[tuple[str, int], list[Node]]:
    """Every model exported at every opset by ``export`` and run once in ONNX Runtime.

    Asserts that each export has its opset and the family's nodes the model expects.
    """
    out = {}
    for model in models:
        for opset in (o for o in opsets if o in model.nodes):
            path = folder / f"{model.name}-{opset}.onnx"
            export(model, opset, path)
            assert opset_of(onnx.load(str(path))) == opset
            nodes = capture(path, model.feeds)
            assert counts(nodes) == model.nodes[opset], (model.name, opset, counts(nodes))
            out[model.name, opset] = nodes
    return out


def replay(lib: Library, nodes: list[Node], opset: int) -> int:
    """Replay ``nodes`` on ``lib``: each must give ORT's output bit for bit; how many ran."""
    replayed = 0
    for node in nodes:
        if type_name(node.data.dtype) not in lib.holds:
            continue  # JAX without x64: no int64 shape tensors
        op = OPS[node.op_type]
        got = call(op, *lib.inputs(op.inputs, node.inputs), opset=opset, **node.attributes)
        assert_identical(lib.to_numpy(got), node.output)
        replayed += 1
    return replayed
