"""What ``torch.onnx.export`` writes for a call: the ONNX operator's own node (:func:`node`)."""

from __future__ import annotations

import inspect
import sys
from typing import TYPE_CHECKING, Any

import torch

from onnx_gather import _ops
from onnx_gather._backends._torch import _recorded
from onnx_gather._backends._torch._dtypes import name_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from onnx_gather._spec import Plan


def exporting() -> bool:
    """Whether ``torch.onnx.export`` is tracing the model now (either exporter).

    Torch's documented switch for code that exports differently
    (``torch.onnx.ops.symbolic``'s docs; set for ``dynamo=True`` since pytorch#149678).
    """
    return torch.onnx.is_in_onnx_export()


def node(method: str, plan: Plan, inputs: Sequence[torch.Tensor | None]) -> torch.Tensor:
    """The call of backend ``method`` with ``plan`` as the one ONNX node that computes it.

    The node of the ONNX operator whose semantics the call has (a variant's and an inner
    call's: :func:`onnx_gather._ops.onnx_operator`), at the newest version not newer than
    the opset of the model file, with the call's attributes
    (:meth:`onnx_gather._ops.Operator.exported_node`, which refuses what that version
    lacks). Its range check is the node's own: no other node around it.

    Under the dynamo exporter it is ``torch.onnx.ops.symbolic``, which the exporter writes
    as the node as it is (int32 indices of an operator that takes int64 only are widened
    first: a Cast). Under the TorchScript exporter it is ``onnx_gather::run_v1`` of the
    ONNX operator's own plan, whose symbolic function writes the node
    (:func:`._recorded.register_onnx_export`).
    """
    operator = _ops.onnx_operator(_ops.BY_MESSAGE_NAME[plan.op][0], method)
    data = inputs[0]
    assert data is not None  # (data is every operator's first input)
    attributes = plan.attributes()
    if torch._C._get_tracing_state() is not None:  # the TorchScript exporter
        version = operator.resolve(_torchscript_opset())
        shapes = tuple(tuple(x.shape) for x in inputs if x is not None)
        dtypes = tuple(x.dtype for x in inputs if x is not None)
        own = operator.plan(
            version, shapes, dtypes, attributes, plan.check_bounds, kept=False, names=name_of
        )
        _recorded.register_onnx_export()
        return _recorded.call(*(x for x in inputs if x is not None), plan=own)
    opset = dynamo_opset()
    op_type, version, values = operator.exported_node(
        operator.numbers[-1] if opset is None else opset, attributes, name_of(data.dtype)
    )
    at = operator.indices_at
    indices = inputs[at]
    if (
        indices is not None
        and indices.dtype != torch.int64
        and "int32" not in operator.onnx_index_types
    ):
        inputs = (*inputs[:at], indices.to(torch.int64), *inputs[at + 1 :])
    out: torch.Tensor = torch.onnx.ops.symbolic(
        op_type,
        inputs,
        values,
        dtype=data.dtype,
        shape=plan.out_shape,
        # Where the model's opset is unknown, the version the call needs: the exporter's
        # version converter then refuses a model opset below it.
        version=version if opset is None else None,
    )
    return out


def dynamo_opset() -> int | None:
    """The opset the running ``torch.onnx.export(..., dynamo=True)`` writes; None if unknown.

    Its ``opset_version`` argument, read from the call's frame: torch offers no way to
    ask while it traces the model, and its exporter first builds the model at opset 18 or
    newer and only then converts it down (keeping 18 where that fails), so a node chosen
    without it could name a version the file does not import (TensorScatter at 20), or
    hold an attribute its version lacks. None (the default) is torch's default opset.
    """
    code = inspect.unwrap(torch.onnx.export).__code__
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            opset: Any = frame.f_locals.get("opset_version")
            if opset is None:
                from torch.onnx import _constants

                opset = _constants.ONNX_DEFAULT_OPSET
            return int(opset)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _torchscript_opset() -> int:
    """The opset the running TorchScript export writes (``opset_version``)."""
    from torch.onnx import symbolic_helper

    return int(symbolic_helper.GLOBALS.export_onnx_opset_version)
