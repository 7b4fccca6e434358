"""The examples printed in the operator specifications, with the results they print.

``python -m onnx_gather`` runs them on every installed library; the test suite's case
table includes them too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_gather._ops import GATHER, GATHER_ELEMENTS, OPENVINO_GATHER_ELEMENTS


@dataclass(frozen=True)
class Example:
    """One printed example: operator, inputs, attributes and printed output."""

    name: str
    op: str  # one of onnx_gather._ops.OPS
    data: Any
    indices: Any
    axis: int
    expected: Any
    opset: int | None = 13


def _f(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def _i(values: Any) -> np.ndarray:
    return np.array(values, dtype=np.int64)


_G1 = [[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]]
_G2 = [[1.0, 1.2, 1.9], [2.3, 3.4, 3.9], [4.5, 5.7, 5.9]]
_G1_OUT = [[[1.0, 1.2], [2.3, 3.4]], [[2.3, 3.4], [4.5, 5.7]]]
_SQUARE = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]

EXAMPLES: tuple[Example, ...] = (
    Example("Gather example 1", GATHER, _f(_G1), _i([[0, 1], [1, 2]]), 0, _f(_G1_OUT)),
    Example("Gather example 2", GATHER, _f(_G2), _i([[0, 2]]), 1, _f([[[1.0, 1.9]], [[2.3, 3.9]], [[4.5, 5.9]]])),
    Example("Gather negative indices", GATHER, np.arange(10, dtype=np.float32), _i([0, -9, -10]), 0, _f([0, 1, 0])),
    Example("Gather-11 example 1", GATHER, _f(_G1), _i([[0, 1], [1, 2]]), 0, _f(_G1_OUT), opset=11),
    Example("Gather-1 example 1", GATHER, _f(_G1), _i([[0, 1], [1, 2]]), 0, _f(_G1_OUT), opset=1),
    Example("GatherElements example 1", GATHER_ELEMENTS, _f([[1, 2], [3, 4]]), _i([[0, 0], [1, 0]]), 1, _f([[1, 1], [4, 3]])),
    Example("GatherElements example 2", GATHER_ELEMENTS, _f(_SQUARE), _i([[1, 2, 0], [2, 0, 0]]), 0, _f([[4, 8, 3], [7, 2, 3]])),
    Example("GatherElements negative indices", GATHER_ELEMENTS, _f(_SQUARE), _i([[-1, -2, 0], [-2, 0, 0]]), 0, _f([[7, 5, 3], [4, 2, 3]])),
    Example("GatherElements-11 example 1", GATHER_ELEMENTS, _f([[1, 2], [3, 4]]), _i([[0, 0], [1, 0]]), 1, _f([[1, 1], [4, 3]]), opset=11),
    Example("OpenVINO GatherElements-6 example 1", OPENVINO_GATHER_ELEMENTS, _f([[1, 2], [3, 4]]), _i([[0, 1], [0, 0]]), 0, _f([[1, 4], [1, 2]]), opset=None),
    Example("OpenVINO GatherElements-6 example 2", OPENVINO_GATHER_ELEMENTS, _f([[1, 7], [4, 3]]), _i([[1, 1, 0], [1, 0, 1]]), 1, _f([[7, 7, 1], [3, 4, 3]]), opset=None),
    Example("OpenVINO GatherElements-6 example 3", OPENVINO_GATHER_ELEMENTS, _f(_SQUARE), _i([[1, 0, 1], [1, 2, 0]]), 0, _f([[4, 2, 6], [4, 8, 3]]), opset=None),
)  # fmt: skip
