"""ONNX Scatter (versions 9 and 11, deprecated): ScatterElements-11's rule under its own name."""

from __future__ import annotations

from typing import Any

from onnx_gather import _spec
from onnx_gather._spec import scatter_elements
from onnx_gather._spec.reductions import Reduction
from onnx_gather._spec.scatter_elements import ScatterElementsPlan

#: The ScatterElements version whose rule both versions of Scatter follow.
_RULE = 11


class Named:
    """``op``'s rules for another operator's planner, which then names ``op``'s ``version``.

    (Scatter's through ScatterElements-11's planner; OpenVINO's scatters through ONNX's.)
    """

    def __init__(self, op: _spec.Rules, version: int) -> None:
        self._op, self._version = op, version
        self.bfloat16_from = op.bfloat16_from
        self.equal_off_axis = False
        self.attribute_since: dict[str, int] = {}  # (ScatterElements-11 has its attributes)

    def message_name(self, version: int) -> str:
        return self._op.message_name(self._version)


def plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> ScatterElementsPlan:
    """Check a Scatter call and return its plan: a ScatterElements-11 plan named "Scatter-9/11".

    ``attributes`` is ``(axis,)``; the reduction is always ``none``. Scatter-9's text gives
    no range for the indices: negatives count from the end in both versions, as for
    Gather-1 and as ONNX Runtime runs it. Neither version has bfloat16.

    Raises
    ------
    TypeError, ValueError
        As :func:`onnx_gather._spec.scatter_elements.plan` raises them.
    """
    named = Named(op, version)
    chosen = (attributes[0], Reduction.NONE)
    return scatter_elements.plan(named, _RULE, shapes, dtypes, chosen, check_bounds)
