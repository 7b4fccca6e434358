"""The examples printed in the operator specifications, with the results they print.

``python -m onnx_gather`` runs them on every installed library; the test suite's case
table includes them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_gather._ops import (
    GATHER,
    GATHER_ELEMENTS,
    GATHER_ND,
    OPENVINO_GATHER,
    OPENVINO_GATHER_ELEMENTS,
    OPENVINO_GATHER_ND,
    SCATTER,
    SCATTER_ELEMENTS,
    SCATTER_ND,
    TENSOR_SCATTER,
    get,
)


@dataclass(frozen=True)
class Example:
    """One printed example: operator, inputs, attributes, opset and printed output."""

    name: str
    op: str  # a registry name: onnx_gather._ops.OPS
    data: Any
    indices: Any
    attributes: dict[str, Any]
    expected: Any
    opset: int | None = None  # None: the operator's default
    updates: Any = None  # a scatter's third input

    @property
    def arrays(self) -> tuple[Any, ...]:
        """The inputs in the operator's order."""
        return get(self.op).in_order(self.data, self.indices, self.updates)


def _f(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def _i(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def _gather(
    name: str, data: Any, indices: Any, axis: int, expected: Any, opset: int | None = None
) -> Example:
    return Example(name, GATHER.name, data, indices, {"axis": axis}, expected, opset)


def _elements(
    name: str, data: Any, indices: Any, axis: int, expected: Any, opset: int | None = None
) -> Example:
    return Example(name, GATHER_ELEMENTS.name, data, indices, {"axis": axis}, expected, opset)


def _openvino(name: str, data: Any, indices: Any, axis: int, expected: Any) -> Example:
    return Example(name, OPENVINO_GATHER_ELEMENTS.name, data, indices, {"axis": axis}, expected)


def _openvino_nd(
    name: str, data: Any, indices: Any, batch_dims: int, expected: Any, version: int
) -> Example:
    op = OPENVINO_GATHER_ND.name
    return Example(name, op, data, indices, {"batch_dims": batch_dims}, expected, version)


def _openvino_gather(
    name: str, data: Any, indices: Any, axis: int, batch_dims: int, expected: Any, version: int
) -> Example:
    attributes = {"axis": axis, "batch_dims": batch_dims}
    return Example(name, OPENVINO_GATHER.name, data, indices, attributes, expected, version)


#: OpenVINO Gather's examples 1-5, printed alike on the Gather-7 and Gather-8 pages:
#: (data, indices, axis, batch_dims, output).
_OV_GATHER = (
    ([1, 2, 3, 4, 5], [0, 0, 4], 0, 0, [1, 1, 5]),
    ([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], [[0, 0, 4], [4, 0, 0]], 1, 1, [[1, 1, 5], [10, 6, 6]]),
    (np.arange(1, 21).reshape(2, 2, 5), [[[0, 0, 4], [4, 0, 0]], [[1, 2, 4], [4, 3, 2]]], 2, 2,
     [[[1, 1, 5], [10, 6, 6]], [[12, 13, 15], [20, 19, 18]]]),
    (np.arange(1, 41).reshape(2, 1, 5, 4), [[1, 2, 4], [4, 3, 2]], 2, 1,
     [[[[5, 6, 7, 8], [9, 10, 11, 12], [17, 18, 19, 20]]],
      [[[37, 38, 39, 40], [33, 34, 35, 36], [29, 30, 31, 32]]]]),
    ([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]], [[0, 0, 4], [4, 0, 0]], 1, -1, [[1, 1, 5], [10, 6, 6]]),
)  # fmt: skip


def _nd(
    name: str, data: Any, indices: Any, batch_dims: int, expected: Any, opset: int | None = None
) -> Example:
    return Example(name, GATHER_ND.name, data, indices, {"batch_dims": batch_dims}, expected, opset)


def _scatter_elements(
    name: str, data: Any, indices: Any, updates: Any, axis: int, expected: Any
) -> Example:
    attributes = {"axis": axis, "reduction": "none"}
    op = SCATTER_ELEMENTS.name
    return Example(name, op, data, indices, attributes, expected, updates=updates)


def _scatter(
    name: str, data: Any, indices: Any, updates: Any, axis: int, expected: Any, opset: int
) -> Example:
    return Example(name, SCATTER.name, data, indices, {"axis": axis}, expected, opset,
                   updates=updates)  # fmt: skip


def _tensor_scatter(
    name: str, cache: Any, update: Any, starts: Any, axis: int, mode: str, expected: Any
) -> Example:
    return Example(name, TENSOR_SCATTER.name, cache, starts, {"axis": axis, "mode": mode},
                   expected, updates=update)  # fmt: skip


def _scatter_nd(name: str, data: Any, indices: Any, updates: Any, expected: Any) -> Example:
    return Example(name, SCATTER_ND.name, data, indices, {"reduction": "none"}, expected,
                   updates=updates)  # fmt: skip


def _ov_scatter(
    name: str, op: str, data: Any, indices: Any, updates: Any, attributes: dict[str, Any],
    expected: Any, version: int | None = None,
) -> Example:  # fmt: skip
    return Example(name, op, data, indices, attributes, expected, version, updates=updates)


_OV_SU = "openvino.scatter_update"
_OV_SEU = "openvino.scatter_elements_update"
_OV_SNDU = "openvino.scatter_nd_update"
#: ScatterElementsUpdate-12's examples 1, 2 (1-D) and 3-5 (3x4): (use_init_val, reduction,
#: data, indices, updates, axis, output).
_OV_SEU12 = (
    (True, "sum", [2, 3, 4, 6], [1, 0, 0, -2, -1, 2], [10, 20, 30, 40, 70, 60], 0,
     [52, 13, 104, 76]),
    (False, "sum", [2, 3, 4, 6], [1, 0, 0, 2, 3, 2], [10, 20, 30, 40, 70, 60], 0,
     [50, 10, 100, 70]),
    (True, "none", np.zeros((3, 4)), [[1, 2], [0, 3]], [[11, 12], [13, 14]], 1,
     [[0, 11, 12, 0], [13, 0, 0, 14], [0, 0, 0, 0]]),
    (True, "sum", np.ones((3, 4)), [[1, 1], [0, 3]], [[11, 12], [13, 14]], 1,
     [[1, 24, 1, 1], [14, 1, 1, 15], [1, 1, 1, 1]]),
    (True, "prod", np.full((3, 4), 2), [[1, 1], [0, 3]], [[11, 12], [13, 14]], 1,
     [[2, 264, 2, 2], [26, 2, 2, 28], [2, 2, 2, 2]]),
)  # fmt: skip
#: ScatterNDUpdate-15's XML examples 1-4, with the outputs the rule gives (its printed
#: ones for none and prod hold arithmetic slips: DESIGN.md, spec/openvino/README.md).
_OV_SNDU15 = (
    ("none", [50, 40, 20, 4]),
    ("sum", [61, 72, 23, 4]),
    ("sub", [-59, -68, -17, 4]),
    ("prod", [500, 2400, 60, 4]),
)

_G1 = [[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]]
_G2 = [[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]]
_G1_OUT = [[[1.0, 1.2], [2.3, 3.4]], [[2.3, 3.4], [4.5, 5.7]]]
_SQUARE = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
_CUBE = [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
_ND2_DATA = [
    [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
    [[1, 2, 3, 4], [5, 6, 7, 8], [8, 7, 6, 5], [4, 3, 2, 1]],
    [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]],
    [[8, 7, 6, 5], [4, 3, 2, 1], [1, 2, 3, 4], [5, 6, 7, 8]],
]
_ND2_UPDATES = [
    [[5, 5, 5, 5], [6, 6, 6, 6], [7, 7, 7, 7], [8, 8, 8, 8]],
    [[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3], [4, 4, 4, 4]],
]
_ND2_OUT = [_ND2_UPDATES[0], _ND2_DATA[1], _ND2_UPDATES[1], _ND2_DATA[3]]

_OV24 = np.arange(1, 25).reshape(2, 3, 4)
_OV_B2 = [[[[1]], [[0]], [[2]]], [[[0]], [[2]], [[2]]]]  # (2, 3, 1, 1)

EXAMPLES: tuple[Example, ...] = (
    _gather("Gather example 1", _f(_G1), _i([[0, 1], [1, 2]]), 0, _f(_G1_OUT)),
    _gather("Gather example 2", _f(_G2), _i([[0, 2]]), 1, _f([[[1.0, 1.9]], [[2.3, 3.9]], [[4.5, 5.9]]])),
    _gather("Gather negative indices", np.arange(10, dtype=np.float32), _i([0, -9, -10]), 0, _f([0, 1, 0])),
    _gather("Gather-11 example 1", _f(_G1), _i([[0, 1], [1, 2]]), 0, _f(_G1_OUT), opset=11),
    _gather("Gather-1 example 1", _f(_G1), _i([[0, 1], [1, 2]]), 0, _f(_G1_OUT), opset=1),
    _elements("GatherElements example 1", _f([[1, 2], [3, 4]]), _i([[0, 0], [1, 0]]), 1, _f([[1, 1], [4, 3]])),
    _elements("GatherElements example 2", _f(_SQUARE), _i([[1, 2, 0], [2, 0, 0]]), 0, _f([[4, 8, 3], [7, 2, 3]])),
    _elements("GatherElements negative indices", _f(_SQUARE), _i([[-1, -2, 0], [-2, 0, 0]]), 0, _f([[7, 5, 3], [4, 2, 3]])),
    _elements("GatherElements-11 example 1", _f([[1, 2], [3, 4]]), _i([[0, 0], [1, 0]]), 1, _f([[1, 1], [4, 3]]), opset=11),
    _openvino("OpenVINO GatherElements-6 example 1", _f([[1, 2], [3, 4]]), _i([[0, 1], [0, 0]]), 0, _f([[1, 4], [1, 2]])),
    _openvino("OpenVINO GatherElements-6 example 2", _f([[1, 7], [4, 3]]), _i([[1, 1, 0], [1, 0, 1]]), 1, _f([[7, 7, 1], [3, 4, 3]])),
    _openvino("OpenVINO GatherElements-6 example 3", _f(_SQUARE), _i([[1, 0, 1], [1, 2, 0]]), 0, _f([[4, 2, 6], [4, 8, 3]])),
    _nd("GatherND example 1", _i([[0, 1], [2, 3]]), _i([[0, 0], [1, 1]]), 0, _i([0, 3])),
    _nd("GatherND example 2", _i([[0, 1], [2, 3]]), _i([[1], [0]]), 0, _i([[2, 3], [0, 1]])),
    _nd("GatherND example 3", _f(_CUBE), _i([[0, 1], [1, 0]]), 0, _f([[2, 3], [4, 5]])),
    _nd("GatherND example 4", _f(_CUBE), _i([[[0, 1]], [[1, 0]]]), 0, _f([[[2, 3]], [[4, 5]]])),
    _nd("GatherND example 5", _f(_CUBE), _i([[1], [0]]), 1, _f([[2, 3], [4, 5]])),
    _nd("GatherND-11 example 1", _i([[0, 1], [2, 3]]), _i([[0, 0], [1, 1]]), 0, _i([0, 3]), opset=11),
    _nd("GatherND-12 example 5", _f(_CUBE), _i([[1], [0]]), 1, _f([[2, 3], [4, 5]]), opset=12),
    _openvino_nd("OpenVINO GatherND-8 example 1", _i([[1, 2], [3, 4]]), _i([[0, 0], [1, 0]]), 0, _i([1, 3]), 8),
    _openvino_nd("OpenVINO GatherND-8 example 2", _i([[1, 2], [3, 4]]), _i([[1], [0]]), 0, _i([[3, 4], [1, 2]]), 8),
    _openvino_nd("OpenVINO GatherND-8 example 3", _i([[1, 2], [3, 4]]), _i([[[1]], [[0]]]), 0, _i([[[3, 4]], [[1, 2]]]), 8),
    _openvino_nd("OpenVINO GatherND-8 example 4", _i([[1, 2], [3, 4]]), _i([[1], [0]]), 1, _i([2, 3]), 8),
    _openvino_nd("OpenVINO GatherND-8 example 5", _i(_OV24), _i([[1], [0]]), 1, _i([[5, 6, 7, 8], [13, 14, 15, 16]]), 8),
    _openvino_nd("OpenVINO GatherND-8 example 6", _i(_OV24), _i(_OV_B2), 2, _i([[[2], [5], [11]], [[13], [19], [23]]]), 8),
    _openvino_nd("OpenVINO GatherND-8 example 7", _i(np.arange(1, 17).reshape(1, 2, 2, 4)), _i([[[[1], [0]], [[3], [2]]]]), 3, _i([[[2, 5], [12, 15]]]), 8),
    *(
        _openvino_gather(f"OpenVINO Gather-{v} example {n}", _i(d), _i(i), a, b, _i(o), v)
        for v in (7, 8)
        for n, (d, i, a, b, o) in enumerate(_OV_GATHER, 1)
    ),
    _openvino_gather("OpenVINO Gather-8 example 6", _i([1, 2, 3, 4, 5]), _i([0, -2, -1]), 0, 0, _i([1, 4, 5]), 8),
    _openvino_gather("OpenVINO Gather-8 example 7", _i([1, 2, 3, 4, 5]), _i([3, 10, -20]), 0, 0, _i([4, 0, 0]), 8),
    _openvino_nd("OpenVINO GatherND-5 example 4", _i([[1, 2], [3, 4]]), _i([[1], [0]]), 1, _i([2, 3]), 5),
    _openvino_nd("OpenVINO GatherND-5 example 5", _i(_OV24), _i([[1], [0]]), 1, _i([[5, 6, 7, 8], [13, 14, 15, 16]]), 5),
    _openvino_nd("OpenVINO GatherND-5 example 6", _i(_OV24), _i(_OV_B2), 2, _i([[2], [5], [11], [13], [19], [23]]), 5),
    _scatter_elements("ScatterElements example 1", _f(np.zeros((3, 3))), _i([[1, 0, 2], [0, 2, 1]]),
                      _f([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]]), 0,
                      _f([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]])),
    _scatter_elements("ScatterElements example 2", _f([[1, 2, 3, 4, 5]]), _i([[1, 3]]),
                      _f([[1.1, 2.1]]), 1, _f([[1.0, 1.1, 3.0, 2.1, 5.0]])),
    _scatter_nd("ScatterND example 1", _f([1, 2, 3, 4, 5, 6, 7, 8]), _i([[4], [3], [1], [7]]),
                _f([9, 10, 11, 12]), _f([1, 11, 3, 10, 9, 6, 7, 12])),
    _scatter_nd("ScatterND example 2", _f(_ND2_DATA), _i([[0], [2]]), _f(_ND2_UPDATES),
                _f(_ND2_OUT)),
    _scatter("Scatter-9 example 1", _f(np.zeros((3, 3))), _i([[1, 0, 2], [0, 2, 1]]),
             _f([[1.0, 1.1, 1.2], [2.0, 2.1, 2.2]]), 0,
             _f([[2.0, 1.1, 0.0], [1.0, 0.0, 2.2], [0.0, 2.1, 1.2]]), 9),
    _scatter("Scatter-9 example 2", _f([[1, 2, 3, 4, 5]]), _i([[1, 3]]), _f([[1.1, 2.1]]), 1,
             _f([[1.0, 1.1, 3.0, 2.1, 5.0]]), 9),
    _ov_scatter("OpenVINO ScatterUpdate-3 example 2", _OV_SU,
                _f([[-1, 1, -1, 3, 4], [-1, 6, -1, 8, 9], [-1, 11, 1, 13, 14]]), _i([0, 2]),
                _f([[1, 1], [1, 1], [1, 2]]), {"axis": 1},
                _f([[1, 1, 1, 3, 4], [1, 6, 1, 8, 9], [1, 11, 2, 13, 14]])),
    *(
        _ov_scatter(f"OpenVINO ScatterElementsUpdate-12 example {n}", _OV_SEU, _f(d), _i(i),
                    _f(u), {"axis": ax, "reduction": r, "use_init_val": init}, _f(o), 12)
        for n, (init, r, d, i, u, ax, o) in enumerate(_OV_SEU12, 1)
    ),
    _ov_scatter("OpenVINO ScatterNDUpdate-3 example 1", _OV_SNDU, _f([1, 2, 3, 4, 5, 6, 7, 8]),
                _i([[4], [3], [1], [7]]), _f([9, 10, 11, 12]), {"reduction": "none"},
                _f([1, 11, 3, 10, 9, 6, 7, 12]), 3),
    _ov_scatter("OpenVINO ScatterNDUpdate-3 example 2", _OV_SNDU, _f(_ND2_DATA), _i([[0], [2]]),
                _f(_ND2_UPDATES), {"reduction": "none"}, _f(_ND2_OUT), 3),
    # (Its text prints 4 at position 4, which index -4 writes 14 to: the -14 page prints 14.)
    _ov_scatter("OpenVINO ScatterNDUpdate-15 example 1", _OV_SNDU, _f([1, 2, 3, 4, 5, 6, 7, 8]),
                _i([[4], [3], [1], [7], [-2], [-4]]), _f([9, 10, 11, 12, 13, 14]),
                {"reduction": "none"}, _f([1, 11, 3, 10, 14, 6, 13, 12]), 15),
    *(
        _ov_scatter(f"OpenVINO ScatterNDUpdate-15 XML example {n} ({r})", _OV_SNDU,
                    _f([1, 2, 3, 4]), _i([[0], [2], [-3], [-3], [0]]), _f([10, 20, 30, 40, 50]),
                    {"reduction": r}, _f(o), 15)
        for n, (r, o) in enumerate(_OV_SNDU15, 1)
    ),
    _tensor_scatter("TensorScatter decode step", _f(np.zeros((2, 4))), _f([[1], [2]]),
                    _i([3, 1]), 1, "linear", _f([[0, 0, 0, 1], [0, 2, 0, 0]])),
    _tensor_scatter("TensorScatter circular", _f(np.zeros((1, 3))), _f([[7, 8]]), _i([2]), 1,
                    "circular", _f([[8, 0, 7]])),
)  # fmt: skip
