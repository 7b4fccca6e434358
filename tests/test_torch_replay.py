"""Replay of real models: every Gather/GatherElements node torch's exporter writes.

Small PyTorch modules (an embedding lookup, ``x.shape[i]`` arithmetic, ``torch.gather``
and ``x[idx - 5]`` with in-graph negative indices, top-k then gather, ``index_select``)
are exported once per session with torch's TorchScript exporter (``torch.onnx.export(...,
dynamo=False)``; torch 2.13 still has it, deprecated: the default ``dynamo=True`` exporter
needs onnxscript and cannot emit opset 9) at opsets 9, 11, 13 and 17. Each model runs in
ONNX Runtime (CPU, graph optimisations off, so every node runs as written) with every
Gather/GatherElements node's inputs and output made graph outputs; each captured node is
then replayed through ``onnx_gather.gather`` / ``gather_elements`` with the node's axis and
the model's opset, on every library of the run, and must equal ONNX Runtime's output bit
for bit.

The inputs ORT runs on differ from the ones the export traced: ``idx - 5`` is
non-negative while tracing (eager ``torch.gather`` rejects negative indices) and negative
in the replayed run, so the nodes see negative indices, among them a Gather-1 node (opset
9), which counts them from the end like every later version.

Collected where torch is among the run's libraries (it exports the models; conftest.py):
the torch session, and ``nox -s replay``, which installs every library to replay on.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from helpers import assert_identical
from libs import Library

from onnx_gather import _ops
from onnx_gather._conformance.libraries import type_name
from onnx_gather._ops import call

OPSETS = (9, 11, 13, 17)
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
    # Per opset: the (op_type, count) of nodes the export must contain, so the test cannot
    # pass on a model that lost its nodes.
    nodes: dict[int, tuple[tuple[str, int], ...]]


@dataclass(frozen=True)
class Node:
    """One node of the family as ORT ran it."""

    name: str
    op_type: str
    opset: int
    attributes: dict[str, Any]
    data: np.ndarray
    indices: np.ndarray
    output: np.ndarray


def _models() -> list[Model]:
    nn = torch.nn
    torch.manual_seed(20261122)
    rng = np.random.default_rng(20261122)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    class Embedding(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Embedding(10, 4)

        def forward(self, ids: Any) -> Any:
            return self.table(ids)

    class ShapeArithmetic(nn.Module):
        def forward(self, x: Any) -> Any:
            # Shape -> Gather with 0-d indices, three times.
            return x.reshape(x.shape[0] * x.shape[1], -1) + x.shape[-1]

    class GatherNegative(nn.Module):
        def forward(self, x: Any, idx: Any) -> Any:
            return torch.gather(x, 1, idx - 5)

    class IndexNegative(nn.Module):
        def forward(self, x: Any, idx: Any) -> Any:
            return x[idx - 5], x[:, idx - 5]

    class TopKGather(nn.Module):
        def forward(self, x: Any, y: Any) -> Any:
            _, top = x.topk(3, dim=1)
            return torch.gather(y, 1, top)

    class IndexSelect(nn.Module):
        def forward(self, x: Any, idx: Any) -> Any:
            return torch.index_select(x, 1, idx)

    every = {opset: (("Gather", 1),) for opset in OPSETS}
    # torch.gather: GatherElements from opset 11; at 9 a OneHot composite, whose one
    # Gather reads the data's shape.
    elements = {9: (("Gather", 1),), **{o: (("GatherElements", 1),) for o in OPSETS[1:]}}
    return [
        Model("embedding", Embedding(), (torch.tensor([[1, 9, 0], [3, 3, 7]]),), ("ids",),
              {"ids": {0: "batch", 1: "tokens"}},
              {"ids": np.array([[1, 9, 0, 4], [9, 9, 2, 5], [0, 0, 0, 3]], np.int64)}, every),
        Model("shape", ShapeArithmetic(), (torch.randn(2, 3, 4),), ("x",),
              {"x": {0: "a", 1: "b", 2: "c"}}, {"x": f32(3, 2, 5)},
              {opset: (("Gather", 3),) for opset in OPSETS}),
        # Traced with idx - 5 in [0, 4] (torch.gather rejects negative indices); run with
        # idx in [0, 4], so the node gets [-5, -1].
        Model("gather-negative", GatherNegative(), (torch.randn(3, 5), torch.tensor([[5, 9], [6, 6], [9, 5]])),
              ("x", "idx"), {"x": {0: "rows"}, "idx": {0: "rows", 1: "k"}},
              {"x": f32(4, 5), "idx": np.array([[0, 4, 2], [1, 1, 3], [4, 0, 0], [2, 3, 4]], np.int64)},
              elements),
        # x[idx - 5] is a Gather with negative indices at every opset: Gather-1 at opset 9.
        Model("index-negative", IndexNegative(), (torch.randn(5, 5), torch.tensor([[5, 9], [7, 6]])),
              ("x", "idx"), {"idx": {0: "i", 1: "j"}},
              {"x": f32(5, 5), "idx": np.array([[0, 4, 2], [1, 3, 3]], np.int64)},
              {opset: (("Gather", 2),) for opset in OPSETS}),
        Model("topk-gather", TopKGather(), (torch.randn(2, 6), torch.randn(2, 6)), ("x", "y"),
              {"x": {0: "rows"}, "y": {0: "rows"}}, {"x": f32(4, 6), "y": f32(4, 6)}, elements),
        Model("index-select", IndexSelect(), (torch.randn(5, 4), torch.tensor([3, 0, 0])),
              ("x", "idx"), {"x": {0: "rows"}, "idx": {0: "n"}},
              {"x": f32(3, 4), "idx": np.array([3, 0, 0, 2, 1], np.int64)}, every),
    ]  # fmt: skip


MODELS = ["embedding", "shape", "gather-negative", "index-negative", "topk-gather", "index-select"]


def _export(model: Model, opset: int, path: Path) -> None:
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated (DeprecationWarning) and traces shapes
        # into Python ints (TracerWarning); neither matters for a fixed small model.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model.module,
            model.trace,
            str(path),
            opset_version=opset,
            dynamo=False,
            input_names=list(model.inputs),
            dynamic_axes=model.dynamic,
        )


def _opset(onnx_model: Any) -> int:
    return next(int(o.version) for o in onnx_model.opset_import if o.domain in ("", "ai.onnx"))


def capture(path: Path, feeds: dict[str, np.ndarray]) -> list[Node]:
    """Run the model in ORT with every Gather/GatherElements node's tensors as outputs."""
    model = onnx.load(str(path))
    graph = model.graph
    inferred = onnx.shape_inference.infer_shapes(model).graph
    types = {v.name: v for v in [*inferred.value_info, *inferred.input, *inferred.output]}
    known = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    known.update(feeds)
    outputs = {o.name for o in graph.output}
    nodes = [n for n in graph.node if n.op_type in OPS and n.domain in ("", "ai.onnx")]
    for node in nodes:
        for name in (node.input[0], node.input[1], node.output[0]):
            if name not in known and name not in outputs:
                graph.output.append(copy.deepcopy(types[name]))
                outputs.add(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    values = {**dict(zip(names, session.run(None, feeds), strict=True)), **known}
    opset = _opset(model)
    return [
        Node(
            name=n.name,
            op_type=n.op_type,
            opset=opset,
            attributes=_ops.node_attributes(OPS[n.op_type], n),
            data=np.asarray(values[n.input[0]]),
            indices=np.asarray(values[n.input[1]]),
            output=np.asarray(values[n.output[0]]),
        )
        for n in nodes
    ]


@pytest.fixture(scope="session")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], list[Node]]:
    """Every model exported at every opset and run once in ORT (one export per session)."""
    folder = tmp_path_factory.mktemp("replay")
    out = {}
    for model in _models():
        for opset in OPSETS:
            path = folder / f"{model.name}-{opset}.onnx"
            _export(model, opset, path)
            assert _opset(onnx.load(str(path))) == opset
            nodes = capture(path, model.feeds)
            counts = tuple(
                (op, n) for op in OPS if (n := sum(node.op_type == op for node in nodes))
            )
            assert counts == model.nodes[opset], (model.name, opset, counts)
            out[model.name, opset] = nodes
    return out


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("model", MODELS)
def test_replay(
    lib: Library, model: str, opset: int, captured: dict[tuple[str, int], list[Node]]
) -> None:
    replayed = 0
    for node in captured[model, opset]:
        if type_name(node.data.dtype) not in lib.holds:
            continue  # JAX without x64: no int64 shape tensors
        arrays = (lib.asarray(node.data), lib.indices(node.indices))
        got = call(OPS[node.op_type], *arrays, opset=opset, **node.attributes)
        assert_identical(lib.to_numpy(got), node.output)
        replayed += 1
    if not replayed:
        types = sorted({type_name(n.data.dtype) for n in captured[model, opset]})
        pytest.skip(f"{lib.name} holds none of the nodes' data types {types}")


def test_the_replay_has_negative_indices(captured: dict[tuple[str, int], list[Node]]) -> None:
    """The nodes the replay covers include negative indices, in Gather-1 too."""
    gather_1 = [n for n in captured["index-negative", 9] if n.op_type == "Gather"]
    assert gather_1
    assert all(n.opset == 9 and (n.indices < 0).all() for n in gather_1)
    assert {n.attributes["axis"] for n in gather_1} == {0, 1}
    for opset in OPSETS[1:]:
        (elements,) = captured["gather-negative", opset]
        assert elements.op_type == "GatherElements"
        assert (elements.indices < 0).all()
    shape_nodes = captured["shape", 9]
    assert all(n.indices.ndim == 0 for n in shape_nodes)


def test_gather_1_negative_indices_read_from_the_end(
    captured: dict[tuple[str, int], list[Node]],
) -> None:
    """The node the library used to reject (Gather-1, negative indices) is ONNX Runtime's."""
    for node in captured["index-negative", 9]:
        got = call("gather", node.data, node.indices, opset=9, **node.attributes)
        assert_identical(got, node.output)
        axis = node.attributes["axis"]
        size = node.data.shape[axis]
        assert_identical(got, np.take(node.data, node.indices + size, axis=axis))
