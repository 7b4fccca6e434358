"""The operators, named once: each by the public function that runs it.

The conformance examples, the command line, the benchmarks and the test tables name an
operator by these keys (the column headers of ``python -m onnx_gather check``), and run it
with :func:`call`. ``_spec`` names the ONNX operators themselves ("Gather",
"GatherElements"), for versions and messages; :data:`ONNX_OP_TYPE` links the two.
"""

from __future__ import annotations

from typing import Any

from onnx_gather import _spec

GATHER = "gather"
GATHER_ELEMENTS = "gather_elements"
OPENVINO_GATHER_ELEMENTS = "openvino.gather_elements"
#: Every operator, in the order tables list them.
OPS = (GATHER, GATHER_ELEMENTS, OPENVINO_GATHER_ELEMENTS)

#: The ONNX node that computes each operator (OpenVINO's GatherElements-6 computes what
#: ONNX GatherElements does, on equal dims off the axis).
ONNX_OP_TYPE = {
    GATHER: _spec.GATHER,
    GATHER_ELEMENTS: _spec.GATHER_ELEMENTS,
    OPENVINO_GATHER_ELEMENTS: _spec.GATHER_ELEMENTS,
}


def call(
    op: str,
    data: Any,
    indices: Any,
    axis: int,
    opset: int | None = 13,
    check_bounds: bool = True,
) -> Any:
    """Run ``op`` (one of :data:`OPS`) through its public function.

    ``opset`` is the model's opset import (ignored by OpenVINO's operator, which has one
    version); None means the newest, 13.
    """
    import onnx_gather as og
    from onnx_gather import openvino

    if op == GATHER:
        return og.gather(data, indices, axis, opset=_newest(opset), check_bounds=check_bounds)
    if op == GATHER_ELEMENTS:
        return og.gather_elements(
            data, indices, axis, opset=_newest(opset), check_bounds=check_bounds
        )
    if op == OPENVINO_GATHER_ELEMENTS:
        return openvino.gather_elements(data, indices, axis, check_bounds=check_bounds)
    msg = f"unknown operator {op!r}; known: {', '.join(OPS)}"
    raise ValueError(msg)


def _newest(opset: int | None) -> int:
    return 13 if opset is None else opset
