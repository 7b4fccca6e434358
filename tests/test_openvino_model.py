"""An OpenVINO model holding each of OpenVINO's indexing operators, replayed node by node.

The model is built with OpenVINO's Python opset API (Gather-8 and -7, GatherND-8 and -5,
GatherElements-6, ScatterUpdate-3, ScatterElementsUpdate-12 and -3, ScatterNDUpdate-15
and -3), some fed by others' results, and compiled for the CPU plugin. The replay walks
the model's ops in order and runs each indexing node through ``onnx_gather.openvino`` on
every library of the session, its attributes and version read from the node; every
output must equal the runtime's bit for bit. Values are small whole numbers in float32,
so every order of the runtime's arithmetic gives the same bits, and no node has an
index out of range where its operator calls that an error.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from libs import LIBS, Library

from onnx_gather import openvino

sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]  # (openvino_peer)
ov = pytest.importorskip("openvino")  # a test dependency: its absence fails the import below
from openvino import opset3, opset4, opset5, opset6, opset7, opset8, opset12, opset15  # noqa: E402

F32 = np.float32


def _c(values: Any, dtype: Any = np.int64) -> Any:
    return opset8.constant(np.asarray(values, dtype=dtype))


def build() -> Any:
    """The model: two inputs, each operator at least once, results feeding later nodes."""
    x = opset8.parameter([3, 4], ov.Type.f32, name="x")
    y = opset8.parameter([2, 3, 4], ov.Type.f32, name="y")
    axis0, axis1 = _c(0), _c(1)
    su = opset3.scatter_update(x, _c([2, 0]), _c(np.arange(8).reshape(2, 4) + 20, F32), axis0)
    seu = opset12.scatter_elements_update(
        su, _c([[1, 1, 0, -1]]), _c([[5, 6, 7, 8]], F32), axis0, "max", False
    )
    seu_mean = opset12.scatter_elements_update(
        x, _c([[0, 0], [3, -1], [1, 1]]), _c([[2, 4], [6, 8], [1, 3]], F32), axis1, "mean", True
    )
    seu3 = opset3.scatter_elements_update(
        seu, _c([[2], [0], [-1]]), _c([[9], [9], [9]], F32), axis1
    )
    sndu = opset15.scatter_nd_update(
        y, _c([[0, 1], [1, -1], [0, 1]]), _c(np.ones((3, 4)) * 3, F32), "sub"
    )
    sndu3 = opset4.scatter_nd_update(sndu, _c([[1, 0, 3]]), _c([-5], F32))
    g8 = opset8.gather(seu3, _c([[1, -1], [5, 0]]), axis1, batch_dims=0)  # (5: zeros)
    g7 = opset7.gather(sndu3, _c([[2, 0], [1, 1]]), _c(2), batch_dims=1)
    gnd8 = opset8.gather_nd(sndu3, _c([[[1], [0]], [[2], [2]]]), batch_dims=1)
    gnd5 = opset5.gather_nd(sndu3, _c([[[1, 3]], [[0, -1]]]), batch_dims=1)
    ge = opset6.gather_elements(seu_mean, _c([[3, 0, 1, 1], [0, 0, 2, 3], [1, 2, 3, 0]]), 1)
    outputs = [su, seu, seu_mean, seu3, sndu, sndu3, g8, g7, gnd8, gnd5, ge]
    return ov.Model(outputs, [x, y], "openvino_indexing")


INPUTS = {
    "x": np.arange(12, dtype=F32).reshape(3, 4),
    "y": np.arange(24, dtype=F32).reshape(2, 3, 4) - 8,
}


def _runtime(model: Any) -> list[np.ndarray]:
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {"EXECUTION_MODE_HINT": "ACCURACY"})
    results = compiled({"x": INPUTS["x"], "y": INPUTS["y"]})
    return [np.asarray(results[out]) for out in compiled.outputs]


def _version(op: Any) -> int:
    return int(op.get_type_info().version_id.removeprefix("opset"))


def replay(model: Any, lib: Library) -> list[np.ndarray]:
    """Every result of ``model`` computed by ``onnx_gather.openvino`` on ``lib``'s arrays."""
    values: dict[str, Any] = {}

    def arg(op: Any, n: int) -> Any:
        return values[op.input(n).get_source_output().get_node().get_friendly_name()]

    def host(op: Any, n: int) -> np.ndarray:
        return np.asarray(lib.to_numpy(arg(op, n)))

    outputs: dict[str, np.ndarray] = {}
    for op in model.get_ordered_ops():
        kind, attributes, name = op.get_type_name(), op.get_attributes(), op.get_friendly_name()
        if kind == "Parameter":
            values[name] = lib.asarray(INPUTS[name])
        elif kind == "Constant":
            data = np.asarray(op.get_data())
            # (indices and axes stay host arrays: the library takes them so)
            values[name] = lib.asarray(data) if data.dtype == F32 else data
        elif kind == "Result":
            outputs[name] = lib.to_numpy(arg(op, 0))
        elif kind == "Gather":
            axis = int(host(op, 2)) if not isinstance(arg(op, 2), np.ndarray) else int(arg(op, 2))
            values[name] = openvino.gather(
                arg(op, 0), arg(op, 1), axis, batch_dims=attributes["batch_dims"],
                version=_version(op),
            )  # fmt: skip
        elif kind == "GatherND":
            values[name] = openvino.gather_nd(
                arg(op, 0), arg(op, 1), batch_dims=attributes["batch_dims"], version=_version(op)
            )
        elif kind == "GatherElements":
            values[name] = openvino.gather_elements(arg(op, 0), arg(op, 1), attributes["axis"])
        elif kind == "ScatterUpdate":
            values[name] = openvino.scatter_update(
                arg(op, 0), arg(op, 1), arg(op, 2), int(arg(op, 3))
            )
        elif kind == "ScatterElementsUpdate":
            values[name] = openvino.scatter_elements_update(
                arg(op, 0), arg(op, 1), arg(op, 2), int(arg(op, 3)),
                reduction=attributes.get("reduction", "none"),
                use_init_val=attributes.get("use_init_val", True), version=_version(op),
            )  # fmt: skip
        elif kind == "ScatterNDUpdate":
            values[name] = openvino.scatter_nd_update(
                arg(op, 0), arg(op, 1), arg(op, 2), reduction=attributes.get("reduction", "none"),
                version=_version(op),
            )  # fmt: skip
        else:
            raise AssertionError(f"unexpected node {kind}")
    return [outputs[result.get_friendly_name()] for result in model.get_results()]


MODEL = build()
WANT = _runtime(MODEL)


def test_the_model_holds_every_operator_and_version() -> None:
    held = {(op.get_type_name(), _version(op)) for op in MODEL.get_ordered_ops()}
    assert {
        ("Gather", 8), ("Gather", 7), ("GatherND", 8), ("GatherND", 5), ("GatherElements", 6),
        ("ScatterUpdate", 3), ("ScatterElementsUpdate", 12), ("ScatterElementsUpdate", 3),
        ("ScatterNDUpdate", 15), ("ScatterNDUpdate", 4),  # (version 3, in the opset4 module)
    } <= held  # fmt: skip


@pytest.mark.parametrize(
    "library", [lib for lib in LIBS if "float32" in lib.holds], ids=lambda lib: lib.name
)
def test_replay_matches_the_runtime(library: Library) -> None:
    got = replay(MODEL, library)
    assert len(got) == len(WANT)
    for n, (mine, theirs) in enumerate(zip(got, WANT, strict=True)):
        assert mine.dtype == theirs.dtype, n
        assert mine.shape == theirs.shape, (n, mine.shape, theirs.shape)
        np.testing.assert_array_equal(mine, theirs, err_msg=f"output {n}")
