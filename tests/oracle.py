"""The loop oracle: the operators read literally from the spec (see the module it re-exports).

It lives in ``onnx_gather._conformance.oracle`` so that ``python -m onnx_gather check`` can
use it without a source checkout; it shares no code with the library it checks.
"""

from __future__ import annotations

from onnx_gather._conformance.oracle import gather, gather_elements, openvino_gather_elements

__all__ = ["gather", "gather_elements", "openvino_gather_elements"]
