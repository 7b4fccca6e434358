"""Out through both of torch's ONNX exporters: each call one node, checked by the node.

For every ONNX operator of the family, a torch module calls it in each index form the
library takes under ``torch.export`` (an int64 tensor input with negative indices, an
int32 one, a Python list, a range, a NumPy array of either byte order, a scalar), with
each attribute and reduction
the version has, and through ``out=``. It is exported with the dynamo exporter (the
default since torch 2.9; needs onnxscript: ``nox -s converters``) and the TorchScript one
(``dynamo=False``, which the torch session runs too) at each opset that selects a
version. The file must hold exactly one node of the operator per call, at the opset
asked for, with the call's attributes, and nothing of the ``onnx_gather`` domain. ONNX
Runtime (and the reference evaluator, where it has the operator) runs it on inputs the
export did not see (negative indices, repeated targets), to the library's eager result
bit for bit; with an index out of range ONNX Runtime raises in that node: the check
travelled inside it. OpenVINO's functions export as standard operators (Gather-8's zeros:
a mask and a Where), which ONNX Runtime runs to the library's values.
"""

from __future__ import annotations

import functools
import io
import logging
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from helpers import assert_identical
from onnx.reference import ReferenceEvaluator

import onnx_gather as og
from onnx_gather import openvino as ov

DYNAMO = pytest.param("dynamo", marks=pytest.mark.tool("onnxscript"), id="dynamo")
TORCHSCRIPT = pytest.param("torchscript", id="torchscript")

#: Data with a -0.0 and a NaN of another payload than the canonical one: they must arrive.
X = (np.arange(24, dtype=np.float32).reshape(4, 6) - 7) / 4
X[0, 0] = -0.0
X[1, 1] = np.frombuffer(np.uint32(0x7FC00123).tobytes(), np.float32)[0]
X2 = (X[::-1] * 3).copy()  # the data ORT runs on (the export traced X)


@dataclass(frozen=True)
class Call:
    """One call of a module: what it computes, the node it must become, from which opset.

    ``node``: the op_type (or a function of the file's opset) and the attributes. ``since``
    / ``until``: the opsets the call can be exported at (an attribute value its version
    lacks, a node type its version renames).
    """

    run: Callable[[dict[str, torch.Tensor]], torch.Tensor]
    op_type: str | Callable[[int], str]
    attributes: dict[str, Any] | Callable[[int], dict[str, Any]]
    since: int = 1
    until: int = 99
    #: The TorchScript exporter cannot write ``copy_`` into a new tensor (torch's own
    #: ``torch.empty_like(x).copy_(y)``: "Exporting the operator 'aten::copy' ... is not
    #: supported", torch 2.13): ``out=`` a new tensor is the dynamo exporter's only.
    dynamo_only: bool = False

    def node(self, opset: int) -> tuple[str, dict[str, Any]]:
        op_type = self.op_type(opset) if callable(self.op_type) else self.op_type
        attributes = self.attributes(opset) if callable(self.attributes) else self.attributes
        return op_type, attributes


@dataclass(frozen=True)
class Family:
    """An operator's calls, the inputs the export traces, those ORT runs, and bad ones.

    ``bad`` holds, for each index input, a value with an index out of range; each index
    input feeds one call, whose node must then raise. ``dynamo``/``torchscript``: the
    opsets each exporter is run at (None: no opset_version, the exporter's default).
    """

    calls: tuple[Call, ...]
    traced: dict[str, np.ndarray]
    runs: dict[str, np.ndarray]
    bad: dict[str, np.ndarray]
    dynamo: tuple[int | None, ...]
    torchscript: tuple[int, ...]
    #: The opset from which the reference evaluator runs the file too (None: never; it
    #: lacks Scatter, and refuses GatherElements' indices smaller than data off the axis).
    reference_from: int | None = 1
    tolerance: dict[str, Any] = field(default_factory=dict)


def _scatter_type(opset: int) -> str:
    return "Scatter" if opset < 11 else "ScatterElements"


def _scatter_in_place(t: dict[str, torch.Tensor]) -> torch.Tensor:
    """``out=`` data itself: a cache updated in place (here a copy of the input)."""
    cache = t["x"].clone()
    og.scatter_elements(cache, t["j"], t["w"], axis=1, out=cache)
    return cache


def _elements_attributes(axis: int, reduction: str = "none") -> Callable[[int], dict[str, Any]]:
    return lambda opset: {"axis": axis, **({"reduction": reduction} if opset >= 16 else {})}


def _nd_attributes(reduction: str = "none") -> Callable[[int], dict[str, Any]]:
    return lambda opset: {"reduction": reduction} if opset >= 16 else {}


def _batch_dims(value: int) -> Callable[[int], dict[str, Any]]:
    return lambda opset: {"batch_dims": value} if opset >= 12 else {}


I64, I32 = np.int64, np.int32

# fmt: off
FAMILIES: dict[str, Family] = {
    "gather": Family(
        calls=(
            Call(lambda t: og.gather(t["x"], t["i"], axis=1), "Gather", {"axis": 1}),
            Call(lambda t: og.gather(t["x"], t["i32"], axis=0), "Gather", {"axis": 0}),
            Call(lambda t: og.gather(t["x"], [[0, -1], [2, 1]], axis=0), "Gather", {"axis": 0}),
            Call(lambda t: og.gather(t["x"], np.array([3, -6]), axis=-1), "Gather", {"axis": 1}),
            Call(lambda t: og.gather(t["x"], 2, axis=1), "Gather", {"axis": 1}),
            Call(lambda t: og.gather(t["x"], range(-2, 1), axis=0), "Gather", {"axis": 0}),
            Call(lambda t: og.gather(t["x"], np.array([1, -2], ">i8"), axis=1), "Gather", {"axis": 1}),
        ),
        traced={"x": X, "i": np.array([[0, 5], [1, 2]], I64), "i32": np.array([3, 0], I32)},
        runs={"x": X2, "i": np.array([[-1, 4], [-6, 0]], I64), "i32": np.array([-4, 2], I32)},
        bad={"i": np.array([[0, 6], [1, 2]], I64), "i32": np.array([-5, 0], I32)},
        dynamo=(16, 18, None),
        torchscript=(9, 11, 13, 17),
    ),
    "gather_elements": Family(
        calls=(
            Call(lambda t: og.gather_elements(t["x"], t["i"], axis=1), "GatherElements", {"axis": 1}),
            # (off the axis smaller than data: the output has the indices' shape)
            Call(lambda t: og.gather_elements(t["x"], t["i32"], axis=0), "GatherElements", {"axis": 0}),
            Call(lambda t: og.gather_elements(t["x"], [[0], [-1]], axis=-1), "GatherElements", {"axis": 1}),
            Call(lambda t: og.gather_elements(t["x"], np.array([[3, -4, 0]]), axis=0), "GatherElements", {"axis": 0}),
        ),
        traced={"x": X, "i": np.array([[0, 5], [1, 2], [3, 3], [4, 0]], I64),
                "i32": np.array([[1, 0, 2], [0, 3, 3]], I32)},
        runs={"x": X2, "i": np.array([[-1, 5], [-6, 2], [3, -3], [0, 0]], I64),
              "i32": np.array([[-4, 0, 2], [3, -1, 1]], I32)},
        bad={"i": np.array([[0, 5], [1, 2], [3, -7], [4, 0]], I64),
             "i32": np.array([[1, 0, 2], [0, 4, 3]], I32)},
        dynamo=(16, 18, None),
        torchscript=(11, 13, 17),
        reference_from=None,
    ),
    "gather_nd": Family(
        calls=(
            Call(lambda t: og.gather_nd(t["x"], t["k"]), "GatherND", _batch_dims(0)),
            Call(lambda t: og.gather_nd(t["x"], t["k32"]), "GatherND", _batch_dims(0)),
            Call(lambda t: og.gather_nd(t["x"], t["b"], batch_dims=1), "GatherND", _batch_dims(1), since=12),
            Call(lambda t: og.gather_nd(t["x"], [[1, -1], [0, 2]]), "GatherND", _batch_dims(0)),
        ),
        traced={"x": X, "k": np.array([[0, 1], [3, 5]], I64), "k32": np.array([[2], [1]], I32),
                "b": np.array([[0], [1], [2], [5]], I64)},
        runs={"x": X2, "k": np.array([[-1, -6], [2, 0]], I64), "k32": np.array([[-4], [3]], I32),
              "b": np.array([[-1], [0], [-6], [4]], I64)},
        bad={"k": np.array([[0, 1], [4, 5]], I64), "k32": np.array([[2], [-5]], I32),
             "b": np.array([[0], [1], [6], [5]], I64)},
        dynamo=(16, 18, None),
        torchscript=(11, 12, 13, 17),
    ),
    "scatter_elements": Family(
        calls=(
            # Repeated targets: the last update wins.
            Call(lambda t: og.scatter_elements(t["x"], t["i"], t["u"], axis=1), "ScatterElements", _elements_attributes(1)),
            Call(lambda t: og.scatter_elements(t["x"], t["i32"], t["u"], axis=1, reduction="add"), "ScatterElements", _elements_attributes(1, "add"), since=16),
            Call(lambda t: og.scatter_elements(t["x"], t["j"], t["u"], axis=1, reduction="mul"), "ScatterElements", _elements_attributes(1, "mul"), since=16),
            Call(lambda t: og.scatter_elements(t["x"], t["i"], t["u"], axis=1, reduction="max"), "ScatterElements", _elements_attributes(1, "max"), since=18),
            Call(lambda t: og.scatter_elements(t["x"], t["i"], t["u"], axis=1, reduction="min"), "ScatterElements", _elements_attributes(1, "min"), since=18),
            Call(lambda t: og.scatter_elements(t["x"], [[0], [-1]], t["u21"], axis=0), "ScatterElements", _elements_attributes(0)),
            Call(lambda t: og.scatter_elements(t["x"], np.array([[5, -6]]), t["u12"], axis=-1), "ScatterElements", _elements_attributes(1)),
            Call(lambda t: og.scatter_elements(t["x"], t["j"], t["u"], axis=1, out=torch.empty_like(t["x"])), "ScatterElements", _elements_attributes(1), dynamo_only=True),
            Call(_scatter_in_place, "ScatterElements", _elements_attributes(1)),
        ),
        traced={"x": X, "i": np.array([[0, 1], [2, 3], [4, 5], [1, 0]], I64),
                "i32": np.array([[0, 5], [1, 1], [2, 3], [4, 4]], I32),
                "j": np.array([[1, 2], [3, 4], [5, 0], [0, 1]], I64),
                "u": np.arange(8, dtype=np.float32).reshape(4, 2) - 3.5,
                "w": np.arange(8, dtype=np.float32).reshape(4, 2) * 2,
                "u21": np.array([[1.5], [2.5]], np.float32), "u12": np.array([[4.5, -1.5]], np.float32)},
        runs={"x": X2, "i": np.array([[-1, -1], [2, -3], [0, 5], [1, 1]], I64),
              "i32": np.array([[2, 2], [-6, 0], [3, 3], [5, -1]], I32),
              "j": np.array([[-2, 2], [0, 4], [5, -6], [3, 1]], I64),
              "u": (np.arange(8, dtype=np.float32).reshape(4, 2) - 2.25) * 1.5,
              "w": -np.arange(8, dtype=np.float32).reshape(4, 2),
              "u21": np.array([[-7.5], [0.25]], np.float32), "u12": np.array([[3.0, 9.5]], np.float32)},
        bad={"i": np.array([[0, 1], [2, 6], [4, 5], [1, 0]], I64),
             "i32": np.array([[0, 5], [1, 1], [-7, 3], [4, 4]], I32),
             "j": np.array([[1, 2], [3, 4], [5, 0], [0, 9]], I64)},
        dynamo=(16, 18, None),
        torchscript=(11, 13, 16, 17),
    ),
    "scatter_nd": Family(
        calls=(
            Call(lambda t: og.scatter_nd(t["x"], t["k"], t["r"]), "ScatterND", _nd_attributes()),
            Call(lambda t: og.scatter_nd(t["x"], t["k32"], t["r"], reduction="add"), "ScatterND", _nd_attributes("add"), since=16),
            Call(lambda t: og.scatter_nd(t["x"], t["k"], t["r"], reduction="mul"), "ScatterND", _nd_attributes("mul"), since=16),
            Call(lambda t: og.scatter_nd(t["x"], t["e"], t["v"], reduction="max"), "ScatterND", _nd_attributes("max"), since=18),
            Call(lambda t: og.scatter_nd(t["x"], t["e"], t["v"], reduction="min"), "ScatterND", _nd_attributes("min"), since=18),
            Call(lambda t: og.scatter_nd(t["x"], [[-1, 0]], t["v1"]), "ScatterND", _nd_attributes()),
            Call(lambda t: og.scatter_nd(t["x"], t["e"], t["v"], out=t["x"].clone()), "ScatterND", _nd_attributes(), dynamo_only=True),
        ),
        traced={"x": X, "k": np.array([[0], [3]], I64), "k32": np.array([[1], [2]], I32),
                "r": np.arange(12, dtype=np.float32).reshape(2, 6) - 5.5,
                "e": np.array([[0, 1], [3, 5], [2, 2]], I64),
                "v": np.array([7.5, -0.0, 3.25], np.float32), "v1": np.array([1.25], np.float32)},
        runs={"x": X2, "k": np.array([[-1], [1]], I64), "k32": np.array([[-4], [3]], I32),
              "r": (np.arange(12, dtype=np.float32).reshape(2, 6) - 3) * 2.5,
              "e": np.array([[-1, -1], [0, 0], [2, -6]], I64),
              "v": np.array([np.inf, 0.0, -8.5], np.float32), "v1": np.array([-6.0], np.float32)},
        bad={"k": np.array([[0], [4]], I64), "k32": np.array([[1], [-5]], I32),
             "e": np.array([[0, 1], [3, 6], [2, 2]], I64)},
        dynamo=(16, 18, None),
        torchscript=(11, 13, 16, 17),
    ),
    "scatter": Family(
        calls=(
            Call(lambda t: og.scatter(t["x"], t["i"], t["u"], axis=1), _scatter_type, {"axis": 1}),
            Call(lambda t: og.scatter(t["x"], t["i32"], t["u"], axis=0), _scatter_type, {"axis": 0}),
            Call(lambda t: og.scatter(t["x"], [[1, -1]], t["u12"], axis=1), _scatter_type, {"axis": 1}),
        ),
        traced={"x": X, "i": np.array([[0, 1], [2, 3], [4, 5], [1, 0]], I64),
                "i32": np.array([[0, 3], [1, 1], [2, 3], [3, 0]], I32),
                "u": np.arange(8, dtype=np.float32).reshape(4, 2) - 3.5,
                "u12": np.array([[4.5, -1.5]], np.float32)},
        runs={"x": X2, "i": np.array([[-1, -1], [2, -3], [0, 5], [1, 1]], I64),
              "i32": np.array([[-1, 2], [0, 0], [3, -4], [2, 1]], I32),
              "u": (np.arange(8, dtype=np.float32).reshape(4, 2) - 2.25) * 1.5,
              "u12": np.array([[3.0, 9.5]], np.float32)},
        bad={"i": np.array([[0, 1], [2, 3], [4, 6], [1, 0]], I64),
             "i32": np.array([[0, 5], [1, 1], [2, 3], [4, 0]], I32)},
        dynamo=(16, 18, None),
        torchscript=(9, 10, 11, 17),
        reference_from=11,  # (the reference evaluator has no Scatter)
    ),
    "tensor_scatter": Family(
        calls=(
            Call(lambda t: og.tensor_scatter(t["c"], t["n"], t["w"]), "TensorScatter", {"axis": 2, "mode": "linear"}),
            Call(lambda t: og.tensor_scatter(t["c"], t["n"], t["w"], mode="circular"), "TensorScatter", {"axis": 2, "mode": "circular"}),
            Call(lambda t: og.tensor_scatter(t["c"], t["n"]), "TensorScatter", {"axis": 2, "mode": "linear"}),
            Call(lambda t: og.tensor_scatter(t["c"], t["n1"], [2, 0], axis=3, out=t["c"].clone()), "TensorScatter", {"axis": 3, "mode": "linear"}),
        ),
        traced={"c": np.zeros((2, 3, 5, 4), np.float32), "n": np.ones((2, 3, 2, 4), np.float32),
                "w": np.array([0, 3], I64), "n1": np.ones((2, 3, 5, 1), np.float32)},
        runs={"c": np.arange(120, dtype=np.float32).reshape(2, 3, 5, 4) / 8,
              "n": -np.arange(48, dtype=np.float32).reshape(2, 3, 2, 4), "w": np.array([3, 1], I64),
              "n1": np.arange(30, dtype=np.float32).reshape(2, 3, 5, 1) + 0.5},
        bad={"w": np.array([4, 0], I64)},
        dynamo=(24,),
        torchscript=(),  # (its newest opset, 20, has no TensorScatter: see below)
    ),
}
# fmt: on


class _Module(torch.nn.Module):
    def __init__(self, calls: tuple[Call, ...], names: tuple[str, ...]) -> None:
        super().__init__()
        self.calls, self.names = calls, names

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        t = dict(zip(self.names, inputs, strict=True))
        return tuple(call.run(t) for call in self.calls)


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated (torch 2.13) and warns, as its tracer
        # does; the dynamo exporter warns that the model is in training mode.
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)  # (the exporters' progress and version notes)
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)


def export(
    module: torch.nn.Module,
    inputs: dict[str, np.ndarray],
    exporter: str,
    opset: int | None,
    **options: Any,
) -> onnx.ModelProto:
    """``module`` exported with ``exporter`` at ``opset`` (None: the call users make)."""
    args = tuple(torch.from_numpy(v.copy()) for v in inputs.values())
    keywords: dict[str, Any] = {"input_names": list(inputs), **options}
    if opset is not None:
        keywords["opset_version"] = opset
    if exporter == "torchscript":
        buffer = io.BytesIO()
        torch.onnx.export(module, args, buffer, dynamo=False, **keywords)
        return onnx.load_from_string(buffer.getvalue())
    if opset is not None:
        keywords["dynamo"] = True
    program = torch.onnx.export(module, args, verbose=False, **keywords)
    assert program is not None
    return program.model_proto


def ort_run(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 4  # (a raising node logs its error too: the test reads it)
    # No graph optimisation: every node runs as the file writes it.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    wanted = {i.name for i in session.get_inputs()}
    return session.run(None, {k: v for k, v in inputs.items() if k in wanted})


def family_nodes(model: onnx.ModelProto, op_types: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The nodes of ``op_types`` in file order, with their attributes (strings decoded)."""
    found = []
    for node in model.graph.node:
        if node.op_type in op_types:
            values = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            found.append(
                (node.op_type, {k: v.decode() if isinstance(v, bytes) else v for k, v in values.items()})
            )  # fmt: skip
    return found


def opset_of(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def eager(module: torch.nn.Module, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    return [y.numpy() for y in module(*(torch.from_numpy(v.copy()) for v in inputs.values()))]


FAMILY_TYPES = {"Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "Scatter", "TensorScatter"}  # fmt: skip
#: torch.onnx.export's default opset (torch 2.13), which the file of a call without
#: opset_version imports.
DEFAULT_OPSET = 20


def _cases() -> Iterator[Any]:
    for name, family in FAMILIES.items():
        for exporter, opsets in ((DYNAMO, family.dynamo), (TORCHSCRIPT, family.torchscript)):
            for opset in opsets:
                yield pytest.param(name, exporter.values[0], opset, marks=exporter.marks,
                                   id=f"{name}-{exporter.id}-{opset or 'default'}")  # fmt: skip


@pytest.mark.parametrize(("name", "exporter", "opset"), list(_cases()))
def test_each_call_is_its_node(name: str, exporter: str, opset: int | None) -> None:
    family = FAMILIES[name]
    file_opset = DEFAULT_OPSET if opset is None else opset
    calls = tuple(
        c
        for c in family.calls
        if c.since <= file_opset <= c.until and (exporter == "dynamo" or not c.dynamo_only)
    )
    module = _Module(calls, tuple(family.traced))
    model = export(module, family.traced, exporter, opset)

    assert opset_of(model) == file_opset
    assert {o.domain for o in model.opset_import} <= {"", "ai.onnx"}
    assert not [n for n in model.graph.node if n.domain not in ("", "ai.onnx")]
    assert family_nodes(model, FAMILY_TYPES) == [c.node(file_opset) for c in calls]

    want = eager(module, family.runs)
    got = ort_run(model, family.runs)
    for value, expected in zip(got, want, strict=True):
        assert_identical(value, expected)
    if (
        family.reference_from is not None
        and file_opset >= family.reference_from
        and not _reference_lacks_a_reduction(model)
    ):
        reference = ReferenceEvaluator(model).run(None, _fed(model, family.runs))
        for value, expected in zip(reference, want, strict=True):
            assert_identical(np.asarray(value), expected)

    for input_name, bad in family.bad.items():
        readers = [c.node(file_opset)[0] for c in calls if _reads(c, input_name, family)]
        if not readers:  # (its calls need a newer opset)
            continue
        with pytest.raises(Exception, match=rf"running {readers[0]} node"):
            ort_run(model, {**family.runs, input_name: bad})


@functools.cache
def _reference_multiplies() -> bool:
    """Whether this onnx's reference evaluator has ScatterElements' ``mul``: before
    onnx/onnx#7842 it wrote the update instead (onnx 1.16, the floor, does)."""
    node = onnx.helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], reduction="mul")
    (got,) = ReferenceEvaluator(node).run(
        None,
        {"d": np.array([3.0], np.float32), "i": np.array([0]), "u": np.array([2.0], np.float32)},
    )
    return bool(got[0] == 6.0)


def _reference_lacks_a_reduction(model: onnx.ModelProto) -> bool:
    """A file the reference evaluator would run wrongly (ONNX Runtime still runs it)."""
    multiplies = any(
        n.op_type == "ScatterElements"
        and any(a.name == "reduction" and a.s == b"mul" for a in n.attribute)
        for n in model.graph.node
    )
    return multiplies and not _reference_multiplies()


def _reads(call: Call, input_name: str, family: Family) -> bool:
    """Whether ``call`` reads the input ``input_name`` (a traced run that spies on it)."""
    seen: set[str] = set()

    class Spy(dict[str, torch.Tensor]):
        def __getitem__(self, key: str) -> torch.Tensor:
            seen.add(key)
            return super().__getitem__(key)

    call.run(Spy({k: torch.from_numpy(v.copy()) for k, v in family.traced.items()}))
    return input_name in seen


def _fed(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = {i.name for i in model.graph.input}
    return {k: v for k, v in inputs.items() if k in names}


@pytest.mark.tool("onnxscript")
def test_the_default_export_writes_the_nodes(tmp_path: Any) -> None:
    """The call users make, ``torch.onnx.export(model, args, f)``: no exporter, no opset.

    (Guards the default exporter path: torch 2.9 made it dynamo, which refused every
    checked call before.)
    """

    class Model(torch.nn.Module):
        def forward(self, x: Any, g: Any, i: Any, k: Any, u: Any) -> Any:
            return (
                og.gather(x, g, axis=1),
                og.gather_elements(x, i, axis=1),
                og.gather_nd(x, k),
                og.scatter_elements(x, i, u, axis=1, reduction="add"),
                og.scatter_nd(x, k, x[:2] * 2),
                og.scatter(x, i, u, axis=1),
            )

    x, g = torch.from_numpy(X), torch.tensor([[0, -1]])
    i = torch.tensor([[0, -1], [5, 2], [1, 1], [-6, 3]])
    k = torch.tensor([[3], [-4]])
    u = torch.ones(4, 2)
    path = tmp_path / "model.onnx"
    torch.onnx.export(Model(), (x, g, i, k, u), path)
    model = onnx.load(path)
    assert opset_of(model) == DEFAULT_OPSET
    assert [n for n, _ in family_nodes(model, FAMILY_TYPES)] == [
        "Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "ScatterElements",
    ]  # fmt: skip
    inputs = {n.name: v for n, v in zip(model.graph.input, (X, g.numpy(), i.numpy(), k.numpy(), u.numpy()), strict=True)}  # fmt: skip
    for got, want in zip(ort_run(model, inputs), Model()(x, g, i, k, u), strict=True):
        assert_identical(got, want.numpy())


@pytest.mark.parametrize(
    ("exporter", "opset", "call", "message"),
    [
        pytest.param(
            "dynamo", None, lambda x, i: og.tensor_scatter(x[None], x[None, :2], i),
            r"opset 20 has no TensorScatter: the operator exists from opset 24",
            marks=pytest.mark.tool("onnxscript"), id="tensor_scatter-dynamo-default",
        ),
        pytest.param(
            "torchscript", 20, lambda x, i: og.tensor_scatter(x[None], x[None, :2], i),
            r"opset 20 has no TensorScatter: the operator exists from opset 24",
            id="tensor_scatter-torchscript-20",
        ),
        pytest.param(
            "dynamo", 16, lambda x, i: og.tensor_scatter(x[None], x[None, :2], i),
            r"opset 16 has no TensorScatter", marks=pytest.mark.tool("onnxscript"),
            id="tensor_scatter-dynamo-16",
        ),
        pytest.param(
            "dynamo", 13, lambda x, i: og.scatter_elements(x, i[None], x[:1, :1], reduction="add"),
            r"reduction=add cannot be exported at opset 13: ScatterElements-13 has no "
            r"reduction \(opset 16 adds it\)",
            marks=pytest.mark.tool("onnxscript"), id="reduction-dynamo-13",
        ),
        pytest.param(
            "torchscript", 13, lambda x, i: og.scatter_nd(x, i[:, None], x[:1], reduction="mul"),
            r"reduction=mul cannot be exported at opset 13: ScatterND-13 has no reduction "
            r"\(opset 16 adds it\)",
            id="reduction-torchscript-13",
        ),
        pytest.param(
            "torchscript", 11, lambda x, i: og.gather_nd(x[None], i[None, :, None], batch_dims=1),
            r"batch_dims=1 cannot be exported at opset 11: GatherND-11 has no batch_dims "
            r"\(opset 12 adds it\)",
            id="batch_dims-torchscript-11",
        ),
        pytest.param(
            "torchscript", 11, lambda x, i: og.gather(x.to(torch.bfloat16), i),
            r"bfloat16 cannot be exported at opset 11: Gather-11 has no bfloat16 \(opset 13",
            id="bfloat16-torchscript-11",
        ),
    ],
)  # fmt: skip
def test_what_the_opset_lacks_is_refused(
    exporter: str, opset: int | None, call: Callable[..., Any], message: str
) -> None:
    """A call the file's opset cannot hold fails the export, naming the opset (never a
    node of another version, never a file that imports an opset without it)."""

    class Model(torch.nn.Module):
        def forward(self, x: Any, i: Any) -> Any:
            return call(x, i)

    inputs = {"x": X, "i": np.array([1], I64)}
    with pytest.raises(Exception, match=message) as caught:
        export(Model(), inputs, exporter, opset)
    assert isinstance(_root(caught.value), (ValueError, TypeError))


def _root(error: BaseException) -> BaseException:
    """The first cause of ``error`` (the dynamo exporter wraps what its capture raised)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


@pytest.mark.tool("onnxscript")
def test_dynamic_shapes() -> None:
    """Dims marked dynamic stay symbolic: the file runs on other sizes, checks there too."""

    class Model(torch.nn.Module):
        def forward(self, x: Any, i: Any, k: Any) -> Any:
            return og.gather(x, i, axis=1), og.gather_nd(x, k), og.scatter_nd(x, k, x[: k.shape[0]])

    rows, n = torch.export.Dim("rows", min=2), torch.export.Dim("n")
    traced = {"x": X, "i": np.array([0, -1], I64), "k": np.array([[1], [0]], I64)}
    model = export(Model(), traced, "dynamo", 18, dynamic_shapes=({0: rows}, {0: n}, {0: n}))
    assert [t for t, _ in family_nodes(model, FAMILY_TYPES)] == ["Gather", "GatherND", "ScatterND"]
    x = np.arange(42, dtype=np.float32).reshape(7, 6)
    runs = {"x": x, "i": np.array([4, -6, 2], I64), "k": np.array([[-7], [6], [3]], I64)}
    for got, want in zip(ort_run(model, runs), eager(Model(), runs), strict=True):
        assert_identical(got, want)
    with pytest.raises(Exception, match=r"running (GatherND|ScatterND) node"):
        ort_run(model, {**runs, "k": np.array([[7], [0], [1]], I64)})


# -- OpenVINO's functions: standard ONNX operators ---------------------------------------

OPENVINO_CALLS: dict[str, tuple[Callable[[dict[str, torch.Tensor]], torch.Tensor], set[str]]] = {
    # Gather-8: [-s, s-1], anything else zeros (a mask and a Where); Gather-7: [0, s-1].
    "gather-8": (lambda t: ov.gather(t["x"], t["i"], axis=1), {"Gather", "Where"}),
    "gather-7": (lambda t: ov.gather(t["x"], t["i"], axis=1, version=7), {"Gather", "Where"}),
    "gather-8-batch": (lambda t: ov.gather(t["x3"], t["b"], axis=2, batch_dims=1), {"GatherND", "Where"}),
    "gather_elements-6": (lambda t: ov.gather_elements(t["x"], t["e"], axis=1), {"GatherElements"}),
    "gather_nd-8": (lambda t: ov.gather_nd(t["x3"], t["k"], batch_dims=1), {"GatherND"}),
    "gather_nd-5": (lambda t: ov.gather_nd(t["x4"], t["k4"], batch_dims=2, version=5), {"GatherND", "Reshape"}),
    "scatter_update-3": (lambda t: ov.scatter_update(t["x"], t["s"], t["u"], axis=1), {"ScatterElements"}),
    "scatter_elements_update-12-sum": (lambda t: ov.scatter_elements_update(t["x"], t["e"], t["v"], axis=1, reduction="sum"), {"ScatterElements"}),
    "scatter_elements_update-12-max-no-init": (lambda t: ov.scatter_elements_update(t["x"], t["e"], t["v"], axis=1, reduction="max", use_init_val=False), {"ScatterElements"}),
    "scatter_elements_update-12-mean": (lambda t: ov.scatter_elements_update(t["x"], t["e"], t["v"], axis=1, reduction="mean"), {"ScatterElements", "Div"}),
    "scatter_nd_update-15-sub": (lambda t: ov.scatter_nd_update(t["x"], t["r"], t["w"], reduction="sub"), {"ScatterND", "Sub"}),
    "scatter_nd_update-15-prod": (lambda t: ov.scatter_nd_update(t["x"], t["r"], t["w"], reduction="prod"), {"ScatterND"}),
    # Unsigned sub wraps around (ONNX's Neg has no unsigned type: a Sub from zero);
    # integer mean rounds down, negatives too.
    "scatter_nd_update-15-sub-uint8": (lambda t: ov.scatter_nd_update(t["q"], t["r"], t["qv"], reduction="sub"), {"ScatterND", "Sub"}),
    "scatter_elements_update-12-mean-int32": (lambda t: ov.scatter_elements_update(t["m"], t["e"], t["mv"], axis=1, reduction="mean"), {"ScatterElements"}),
}  # fmt: skip
OPENVINO_TRACED = {
    "x": X2 * 0 + np.arange(24, dtype=np.float32).reshape(4, 6),
    "i": np.array([[0, 5], [-1, 2]], I64),
    "x3": np.arange(60, dtype=np.float32).reshape(3, 4, 5),
    "b": np.array([[0, 4], [1, -1], [2, 3]], I64),
    "e": np.array([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [1, 1, 1, 1, 1, 1], [0, 0, 2, 2, 4, 4]], I64),
    "k": np.array([[[1, 2]], [[3, 4]], [[0, 0]]], I64),
    "x4": np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5),
    "k4": np.array([[[[1]], [[2]], [[3]]], [[[0]], [[1]], [[2]]]], I64),
    "s": np.array([0, 3], I64),
    "u": np.full((4, 2), 2.5, np.float32),
    "v": np.arange(24, dtype=np.float32).reshape(4, 6) - 11.5,
    "r": np.array([[0, 1], [3, 5], [0, 1]], I64),
    "w": np.array([1.5, -2.0, 4.0], np.float32),
    "q": np.arange(24, dtype=np.uint8).reshape(4, 6) * 7,
    "qv": np.array([200, 3, 255], np.uint8),
    "m": np.arange(24, dtype=np.int32).reshape(4, 6) - 12,
    "mv": np.arange(24, dtype=np.int32).reshape(4, 6) * -5 + 17,
}  # fmt: skip
OPENVINO_RUNS = {
    **OPENVINO_TRACED,
    "x": np.arange(24, dtype=np.float32).reshape(4, 6) * 1.5 - 4,
    # Out of range for Gather-8 (zeros): 6 and -7; for Gather-7 negatives too.
    "i": np.array([[6, -1], [-7, 3]], I64),
    "b": np.array([[5, -5], [1, -1], [4, 0]], I64),
    "e": np.array([[-1, 1, -4, 3, 4, 5], [5, 4, 3, 2, 1, 0], [0, 0, 0, 0, 0, 0], [3, 3, 2, 2, -6, 4]], I64),
    "s": np.array([2, 5], I64),
}  # fmt: skip
#: Indices out of range for a checked function: the node raises (ScatterUpdate's negative
#: ones too, which it makes out of range for the node).
OPENVINO_BAD = {
    "e": np.array([[0, 1, 2, 3, 4, 6], [5, 4, 3, 2, 1, 0], [1] * 6, [0, 0, 2, 2, 4, 4]], I64),
    "s": np.array([-1, 3], I64),
    "k": np.array([[[1, 2]], [[4, 4]], [[0, 0]]], I64),
}  # fmt: skip


@pytest.mark.parametrize("exporter", [DYNAMO, TORCHSCRIPT])
def test_openvino_functions_export_as_standard_operators(exporter: str) -> None:
    names = tuple(OPENVINO_CALLS)
    calls = tuple(Call(OPENVINO_CALLS[n][0], "", {}) for n in names)
    module = _Module(calls, tuple(OPENVINO_TRACED))
    model = export(module, OPENVINO_TRACED, exporter, 18 if exporter == "dynamo" else 17)
    assert {o.domain for o in model.opset_import} <= {"", "ai.onnx"}
    assert all(n.domain in ("", "ai.onnx") for n in model.graph.node)
    written = {n.op_type for n in model.graph.node}
    for name in names:
        assert OPENVINO_CALLS[name][1] <= written, name
    for got, want in zip(ort_run(model, OPENVINO_RUNS), eager(module, OPENVINO_RUNS), strict=True):
        assert_identical(got, want)
    for input_name, bad in OPENVINO_BAD.items():
        with pytest.raises(
            Exception, match=r"running Scatter(Elements|ND)? node|running Gather\w* node"
        ):
            ort_run(model, {**OPENVINO_RUNS, input_name: bad})
