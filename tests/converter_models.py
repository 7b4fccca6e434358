"""The converters' model table: every operator of the family at each of its versions.

Single-node models (the opset that selects each version), in float32 and int64, with
negative indices, batch_dims, duplicates and reductions where the version has them, and
ONNX Runtime's outputs for them (:func:`ort_outputs`): the expected values of the
converter plug-ins' tests (tests/test_torch_onnx2torch.py,
tests/test_jax_jaxonnxruntime.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from onnx_gather import _ops

_ELEM = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "float16": TensorProto.FLOAT16}


@dataclass(frozen=True)
class Model:
    """One model of the table and its inputs."""

    name: str
    model: Any
    inputs: tuple[np.ndarray, ...]
    #: Whether only the family is in question (every node of the graph is the family's).
    family: bool = True


def _node_model(
    op_type: str,
    opset: int,
    inputs: tuple[np.ndarray, ...],
    names: tuple[str, ...],
    out_dtype: str,
    **attributes: Any,
) -> Any:
    """One node whose inputs are graph inputs (``""`` in ``names``: an absent optional one)."""
    node = helper.make_node(op_type, list(names), ["out"], **attributes)
    given = [(n, x) for n, x in zip(names, inputs, strict=True) if n]
    graph = helper.make_graph(
        [node],
        f"{op_type}_{opset}",
        [helper.make_tensor_value_info(n, _ELEM[str(x.dtype)], list(x.shape)) for n, x in given],
        [helper.make_tensor_value_info("out", _ELEM[out_dtype], None)],
    )
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(
        graph, opset_imports=opsets, ir_version=min(helper.find_min_ir_version_for(opsets), 10)
    )


#: Each reduction the scatters' models use, and the version whose text first has it.
_REDUCTIONS = {"add": 16, "mul": 16, "max": 18, "min": 18}


def _reductions(version: int) -> list[str]:
    return [r for r, since in _REDUCTIONS.items() if version >= since]


def family_models() -> list[Model]:
    """Every operator at each version, two dtypes, with what each version may be given."""
    rng = np.random.default_rng(36)
    models = []

    def add(
        op: _ops.Operator, version: int, label: str, arrays: tuple, names: tuple, **attrs: Any
    ) -> None:
        opset = max(version, 7)  # (ONNX Runtime runs opsets from 7; Gather-1 is still 1 there)
        for dtype in ("float32", "int64"):
            data = arrays[0].astype(dtype)
            rest = tuple(
                x.astype(dtype) if role == "updates" else x
                for role, x in zip(op.inputs[1:], arrays[1:], strict=True)
            )
            name = f"{op.op_type}-{version} {label} {dtype}"
            model = _node_model(op.op_type, opset, (data, *rest), names, dtype, **attrs)
            models.append(
                Model(name, model, tuple(x for x, n in zip((data, *rest), names, strict=True) if n))
            )

    x34 = rng.integers(-9, 9, (3, 4)).astype(np.float32)
    for op in _ops.BY_ONNX_OP_TYPE.values():
        for v in op.numbers:
            if op.op_type == "Gather":
                add(
                    op,
                    v,
                    "axis 1, negatives",
                    (x34, np.array([[0, -1], [-4, 2]])),
                    ("data", "indices"),
                    axis=1,
                )
            elif op.op_type == "GatherElements":
                i = np.array([[0, -1, 3], [-4, 2, 2], [1, -2, 0]])
                add(op, v, "axis 1, negatives", (x34, i), ("data", "indices"), axis=1)
                add(op, v, "axis 0", (x34, np.array([[2, 0, 1, -1]])), ("data", "indices"), axis=0)
            elif op.op_type == "GatherND":
                i = np.array([[0, -1], [-3, 2]])
                add(op, v, "negatives", (x34, i), ("data", "indices"))
                if v >= 12:
                    x234 = rng.integers(-9, 9, (2, 3, 4)).astype(np.float32)
                    i = np.array([[[2], [-1]], [[0], [1]]])
                    add(op, v, "batch_dims 1", (x234, i), ("data", "indices"), batch_dims=1)
            elif op.op_type in ("ScatterElements", "Scatter"):
                i = np.array([[0, -1], [2, 1], [-1, 0]])
                u = np.arange(1, 7).reshape(3, 2)
                add(op, v, "axis 1, negatives", (x34, i, u), ("data", "indices", "updates"), axis=1)
                dup = np.array([[1, 1], [3, 1], [0, 0]])
                for reduction in _reductions(v):
                    add(
                        op,
                        v,
                        f"{reduction}, duplicates",
                        (x34, dup, u),
                        ("data", "indices", "updates"),
                        axis=1,
                        reduction=reduction,
                    )
            elif op.op_type == "ScatterND":
                i = np.array([[0, -1], [-1, 2]])
                u = np.array([5, 7])
                add(op, v, "negatives", (x34, i, u), ("data", "indices", "updates"))
                rows = np.array([[2], [0], [2]])
                ur = np.arange(12).reshape(3, 4)
                for reduction in _reductions(v):
                    add(
                        op,
                        v,
                        f"{reduction}, duplicates",
                        (x34, rows, ur),
                        ("data", "indices", "updates"),
                        reduction=reduction,
                    )
            elif op.op_type == "TensorScatter":
                cache = rng.integers(-9, 9, (2, 3, 6, 4)).astype(np.float32)
                update = rng.integers(-9, 9, (2, 3, 2, 4)).astype(np.float32)
                starts = np.array([1, 4])
                names = ("data", "updates", "indices")
                add(op, v, "linear", (cache, update, starts), names)
                add(op, v, "no write indices", (cache, update, starts), ("data", "updates", ""))
                add(op, v, "circular", (cache, update, np.array([5, 0])), names, mode="circular")
            else:  # pragma: no cover - a new operator needs its rows here
                pytest.fail(f"no models for {op.op_type}")
    return models


#: The table.
MODELS = family_models()


def ort_outputs(model: Model) -> list[np.ndarray]:
    """ONNX Runtime's outputs; Scatter-11 (ORT refuses it) as ScatterElements-11, its twin."""
    proto = model.model
    if (
        any(n.op_type == "Scatter" for n in proto.graph.node)
        and proto.opset_import[0].version >= 11
    ):
        proto = onnx.ModelProto.FromString(proto.SerializeToString())
        proto.graph.node[0].op_type = "ScatterElements"
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [v.name for v in session.get_inputs()]
    return session.run(None, dict(zip(names, model.inputs, strict=True)))


def outcome(model: Model, run: Callable[[Model], list[np.ndarray]]) -> str:
    """``"equal"`` (to ONNX Runtime), ``"differs"``, or the exception ``run(model)`` raised.

    ``run``: a converter running the model (as it ships, its own failures are the point).
    """
    try:
        got = run(model)
    except Exception as e:
        return type(e).__name__
    want = ort_outputs(model)
    same = len(got) == len(want) and all(
        a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
        for a, b in zip(got, want, strict=True)
    )
    return "equal" if same else "differs"


def assert_equals_ort(model: Model, run: Callable[[Model], list[np.ndarray]]) -> None:
    """``run(model)`` gives ONNX Runtime's outputs bit for bit."""
    from helpers import assert_identical

    got, want = run(model), ort_outputs(model)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert_identical(a, b)
