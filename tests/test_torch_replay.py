"""Replay of real models: every node of the family torch's exporter writes.

Small PyTorch modules (an embedding lookup, ``x.shape[i]`` arithmetic, ``torch.gather``
and ``x[idx - 5]`` with in-graph negative indices, top-k then gather, ``index_select``;
and the scatters: ``x[idx - 4] = v``, ``scatter_add``, a decoder's key/value cache update
``cache[:, :, pos] = new``) are exported once per session with torch's TorchScript
exporter (``torch.onnx.export(..., dynamo=False)``; torch 2.13 still has it, deprecated:
the default ``dynamo=True`` exporter needs onnxscript and cannot emit opset 9) at opsets
9, 11, 13 and 17 (the scatters from 11). Each model runs in ONNX Runtime (CPU, graph
optimisations off, so every node runs as written) with every node of the family's inputs
and output made graph outputs; each captured node is then replayed through onnx_gather
with the node's attributes and the model's opset, on every library of the run, and must
equal ONNX Runtime's output bit for bit.

The inputs ORT runs on differ from the ones the export traced: ``idx - 5`` is
non-negative while tracing (eager ``torch.gather`` rejects negative indices) and negative
in the replayed run, so the nodes see negative indices, among them a Gather-1 node (opset
9), which counts them from the end like every later version; the scatters see repeated
indices, where the last update wins (none) or all add up.

Collected where torch is among the run's libraries (it exports the models; conftest.py):
the torch session, and ``nox -s replay``, which installs every library to replay on.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from helpers import assert_identical
from libs import Library
from replay import Model, Node, capture_all, opset_of, replay

import onnx_gather as og
from onnx_gather._conformance.libraries import type_name
from onnx_gather._ops import call

OPSETS = (9, 11, 13, 17)


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

    class IndexPut(nn.Module):
        def forward(self, x: Any, idx: Any, v: Any) -> Any:
            y = x.clone()
            y[idx - 4] = v  # ScatterND (opset 11 on)
            return y

    class ScatterAdd(nn.Module):
        def forward(self, x: Any, idx: Any, src: Any) -> Any:
            return torch.scatter_add(x, 1, idx, src)

    class KVCache(nn.Module):
        def forward(self, cache: Any, new: Any, pos: Any) -> Any:
            c = cache.clone()
            c[:, :, pos] = new  # a decoder's cache update: ScatterND
            return c

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
        # The scatters (no ScatterND/ScatterElements below opset 11). Run with repeated
        # and negative indices: the last update of a repeated row wins.
        Model("index-put", IndexPut(), (torch.randn(5, 4), torch.tensor([4, 6, 8]), torch.randn(3, 4)),
              ("x", "idx", "v"), {"idx": {0: "n"}, "v": {0: "n"}},
              {"x": f32(5, 4), "idx": np.array([0, 3, 0, 4, 1], np.int64), "v": f32(5, 4)},
              {o: (("ScatterND", 1),) for o in OPSETS[1:]}),
        # scatter_add: ScatterElements with reduction add from opset 16 (before, the
        # exporter scatters into zeros and adds).
        Model("scatter-add", ScatterAdd(), (torch.randn(3, 5), torch.tensor([[0, 4, 4], [1, 1, 2], [3, 0, 0]]), torch.randn(3, 3)),
              ("x", "idx", "src"), {"idx": {1: "k"}, "src": {1: "k"}},
              {"x": f32(3, 5), "idx": np.array([[0, 4, 4, 4], [1, 1, 2, 0], [3, 0, 0, 3]], np.int64),
               "src": f32(3, 4)}, {o: (("ScatterElements", 1),) for o in OPSETS[1:]}),
        Model("kv-cache", KVCache(), (torch.randn(2, 3, 8, 4), torch.randn(2, 3, 1, 4), torch.tensor([5])),
              ("cache", "new", "pos"), {}, {"cache": f32(2, 3, 8, 4), "new": f32(2, 3, 1, 4),
                                             "pos": np.array([6], np.int64)},
              {o: (("ScatterND", 1),) for o in OPSETS[1:]}),
    ]  # fmt: skip


MODELS = ["embedding", "shape", "gather-negative", "index-negative", "topk-gather", "index-select"]
#: The scatter models and the opsets the exporter writes them at.
SCATTER_MODELS = {"index-put": OPSETS[1:], "scatter-add": OPSETS[1:], "kv-cache": OPSETS[1:]}
PAIRS = [(m, o) for m in MODELS for o in OPSETS] + [
    (m, o) for m, opsets in SCATTER_MODELS.items() for o in opsets
]


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


@pytest.fixture(scope="session")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], list[Node]]:
    """Every model exported at every opset and run once in ORT (one export per session)."""
    return capture_all(_models(), OPSETS, _export, tmp_path_factory.mktemp("replay"))


@pytest.mark.parametrize(("model", "opset"), PAIRS)
def test_replay(
    lib: Library, model: str, opset: int, captured: dict[tuple[str, int], list[Node]]
) -> None:
    if not replay(lib, captured[model, opset], opset):
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


@pytest.mark.parametrize("opset", [16, 17])
def test_exported_scatter_reduce_max_at_opset_16_runs_as_ort_runs_it(
    tmp_path: Path, opset: int
) -> None:
    """torch's exporter writes scatter_reduce "amax" as ScatterElements-16 with reduction max.

    The spec adds max in version 18; ONNX Runtime runs this model, and so does the
    library (the decision in _spec/reductions.py): the model's output is our call's.
    """

    class ScatterMax(torch.nn.Module):
        def forward(self, x: Any, idx: Any, src: Any) -> Any:
            return torch.scatter_reduce(x, 1, idx, src, "amax")

    rng = np.random.default_rng(16)
    x, src = (rng.standard_normal(s).astype(np.float32) for s in ((3, 5), (3, 3)))
    idx = np.array([[0, 4, 4], [2, 2, 2], [3, 0, 1]], np.int64)
    args = tuple(torch.from_numpy(a) for a in (x, idx, src))
    path = tmp_path / "scatter-max.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(ScatterMax(), args, str(path), opset_version=opset, dynamo=False)
    model = onnx.load(str(path))
    (node,) = [n for n in model.graph.node if n.op_type == "ScatterElements"]
    assert opset_of(model) == opset
    assert any(a.name == "reduction" and a.s == b"max" for a in node.attribute)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    (want,) = session.run(None, dict(zip(names, (x, idx, src), strict=True)))
    got = og.scatter_elements(x, idx, src, 1, reduction="max", opset=opset)
    assert_identical(got, want)
