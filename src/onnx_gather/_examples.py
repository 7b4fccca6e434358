"""The examples printed in the operator specifications, with the results they print.

``python -m onnx_gather`` runs them on every installed library; the test suite's case
table includes them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_gather._ops import GATHER, GATHER_ELEMENTS, GATHER_ND, OPENVINO_GATHER_ELEMENTS


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


def _nd(
    name: str, data: Any, indices: Any, batch_dims: int, expected: Any, opset: int | None = None
) -> Example:
    return Example(name, GATHER_ND.name, data, indices, {"batch_dims": batch_dims}, expected, opset)


_G1 = [[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]]
_G2 = [[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]]
_G1_OUT = [[[1.0, 1.2], [2.3, 3.4]], [[2.3, 3.4], [4.5, 5.7]]]
_SQUARE = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
_CUBE = [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]

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
)  # fmt: skip
