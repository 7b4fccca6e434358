"""Replay of real models from torch's dynamo exporter, which writes GatherND.

``torch.onnx.export(..., dynamo=True)`` (it needs onnxscript) turns advanced indexing with
several index tensors (``x[i, j]``, ``x[:, i, j]``, a row lookup ``x[rows, idx]``) into
one GatherND node; the TorchScript exporter of test_torch_replay.py writes Flatten and
Gather instead. Each model is exported at opsets 17, 18 and 20, run in ONNX Runtime with
every node of the family captured (replay.py), and each node is replayed through
onnx_gather on every library of the run, bit for bit. The indices the models compute are
negative in the replayed run (``i - 3``), so GatherND's per-coordinate counting from the
end is what ORT and we both do.

Runs where ONNX_GATHER_TOOLS names onnxscript: ``nox -s replay`` installs it (conftest.py).
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from libs import Library
from replay import Model, Node, capture_all, replay

pytestmark = pytest.mark.tool("onnxscript")

OPSETS = (17, 18, 20)


def _models() -> list[Model]:
    rng = np.random.default_rng(20261123)

    class TwoIndices(torch.nn.Module):
        def forward(self, x: Any, i: Any, j: Any) -> Any:
            return x[i - 3, j]  # GatherND over axes 0 and 1, slices of axis 2

    class MiddleAxes(torch.nn.Module):
        def forward(self, x: Any, i: Any, j: Any) -> Any:
            return x[:, i, j - 5]  # Transpose, GatherND, Transpose

    class RowLookup(torch.nn.Module):
        def forward(self, x: Any, idx: Any) -> Any:
            rows = torch.arange(x.shape[0]).unsqueeze(1)
            return x[rows, idx - 6]  # per row: a batch coordinate and a column

    class ScatterMax(torch.nn.Module):
        def forward(self, x: Any, idx: Any, src: Any) -> Any:
            return torch.scatter_reduce(x, 1, idx, src, "amax")

    class KVIndexCopy(torch.nn.Module):
        def forward(self, cache: Any, new: Any, pos: Any) -> Any:
            return torch.index_copy(cache, 2, pos, new)  # ScatterND

    nd = {opset: (("GatherND", 1),) for opset in OPSETS}
    f32 = np.float32
    x453 = rng.standard_normal((4, 5, 3)).astype(np.float32)
    return [
        # Traced with i - 3 in [0, 3]; run with i in [0, 6]: coordinates in [-3, 3].
        Model("two-indices", TwoIndices(),
              (torch.from_numpy(x453), torch.tensor([[3, 4], [5, 6]]), torch.tensor([[0, 1], [2, 4]])),
              ("x", "i", "j"), {}, {"x": x453, "i": np.array([[0, 6], [1, 3]], np.int64),
                                    "j": np.array([[4, 0], [3, 3]], np.int64)}, nd),
        Model("middle-axes", MiddleAxes(),
              (torch.from_numpy(x453.reshape(3, 4, 5)), torch.tensor([0, 3, 1]), torch.tensor([5, 9, 6])),
              ("x", "i", "j"), {}, {"x": x453.reshape(3, 4, 5), "i": np.array([3, 0, 2], np.int64),
                                    "j": np.array([0, 4, 1], np.int64)}, nd),
        Model("row-lookup", RowLookup(),
              (torch.from_numpy(x453.reshape(6, 10)), torch.tensor([[6, 7], [8, 9], [6, 6], [7, 8], [9, 9], [6, 15]])),
              ("x", "idx"), {}, {"x": x453.reshape(6, 10),
                                 "idx": rng.integers(0, 12, (6, 2)).astype(np.int64)}, nd),
        # scatter_reduce "amax" is ScatterElements with reduction max (the exporter asks
        # for opset 18 for it). Repeated targets: the largest stays.
        Model("scatter-max", ScatterMax(),
              (torch.randn(3, 5), torch.tensor([[0, 4, 4], [1, 1, 2], [3, 0, 0]]), torch.randn(3, 3)),
              ("x", "idx", "src"), {}, {"x": rng.standard_normal((3, 5)).astype(f32),
                                        "idx": np.array([[0, 4, 4], [2, 2, 2], [3, 0, 1]], np.int64),
                                        "src": rng.standard_normal((3, 3)).astype(f32)},
              {opset: (("ScatterElements", 1),) for opset in OPSETS[1:]}),
        # A decoder's cache update: one new position of a (batch, heads, seq, dim) cache.
        Model("kv-index-copy", KVIndexCopy(),
              (torch.randn(2, 3, 8, 4), torch.randn(2, 3, 1, 4), torch.tensor([5])),
              ("cache", "new", "pos"), {}, {"cache": rng.standard_normal((2, 3, 8, 4)).astype(f32),
                                             "new": rng.standard_normal((2, 3, 1, 4)).astype(f32),
                                             "pos": np.array([6], np.int64)},
              {opset: (("ScatterND", 1),) for opset in OPSETS}),
    ]  # fmt: skip


GATHER_ND_MODELS = ["two-indices", "middle-axes", "row-lookup"]
MODELS = [*GATHER_ND_MODELS, "scatter-max", "kv-index-copy"]


def _export(model: Model, opset: int, path: Path) -> None:
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        # The exporter reports its progress on stdout and through logging, and warns
        # about its own internals: none of it matters for a fixed small model.
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            program = torch.onnx.export(
                model.module, model.trace, dynamo=True, opset_version=opset,
                input_names=list(model.inputs),
            )  # fmt: skip
        finally:
            logging.disable(logging.NOTSET)
    program.save(str(path))


@pytest.fixture(scope="session")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], list[Node]]:
    """Every model exported at every opset and run once in ORT (one export per session)."""
    return capture_all(_models(), OPSETS, _export, tmp_path_factory.mktemp("replay-dynamo"))


#: Each model and the opsets it is exported at.
PAIRS = [(m, o) for m in MODELS for o in OPSETS if (m, o) != ("scatter-max", 17)]


@pytest.mark.parametrize(("model", "opset"), PAIRS)
def test_replay(
    lib: Library, model: str, opset: int, captured: dict[tuple[str, int], list[Node]]
) -> None:
    assert replay(lib, captured[model, opset], opset) == len(captured[model, opset])


def test_the_replay_has_negative_coordinates(
    captured: dict[tuple[str, int], list[Node]],
) -> None:
    """Every model's GatherND node sees negative coordinates, in its first or last one."""
    for model in GATHER_ND_MODELS:
        for opset in OPSETS:
            (node,) = captured[model, opset]
            assert node.op_type == "GatherND"
            assert (node.indices < 0).any(), (model, opset)
