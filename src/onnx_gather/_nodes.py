"""ONNX nodes of the family, run through the registry: for converter and runtime authors.

:func:`run_node` runs one ``onnx.NodeProto``; :func:`reference_ops` hands the family to
``onnx.reference.ReferenceEvaluator``. Neither imports onnx until it must.
"""

from __future__ import annotations

import importlib
from typing import Any

from onnx_gather import _ops
from onnx_gather._dispatch import describe

#: The ONNX domain names of the default operator set.
_DEFAULT_DOMAINS = ("", "ai.onnx")


def run_node(
    node: Any, /, *inputs: Any, opset: int | None = None, check_bounds: bool = True
) -> Any:
    """Run one ONNX node of the family (any ONNX operator of the registry) on ``inputs``.

    Parameters
    ----------
    node : onnx.NodeProto
        The node. Its ``op_type`` selects the operator and its attributes (``axis``,
        ``batch_dims``, ``reduction``) are read from it; attributes it leaves out take
        ONNX's defaults.
    *inputs : array
        The node's inputs in order (``data``, ``indices``, and a scatter's ``updates``),
        of any supported library; the same rules as the public functions (indices may be
        NumPy or Python sequences).
    opset : int, optional
        The model's opset import for the default domain, which selects the operator's
        version. Default: the operator's newest version.
    check_bounds : bool, optional
        As for the public functions. Default True.

    Returns
    -------
    array
        The node's one output, of ``data``'s library, dtype and device.

    Raises
    ------
    TypeError
        ``node`` is not an ``onnx.NodeProto``, or an attribute has another type than the
        operator's (a FLOAT or INTS ``axis``, a STRINGS ``reduction``), as ONNX Runtime
        refuses it.
    ValueError
        A node of another domain or op_type than the family's; an attribute the operator
        does not have, one given twice, one that refers to an enclosing function's
        attribute (``ref_attr_name``) or is not UTF-8 text; a required attribute left out;
        a node that lists another number of inputs than the operator takes, or other
        inputs given than it lists; and every error of the operator's public function.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx import helper
    >>> import onnx_gather as og
    >>> node = helper.make_node("GatherND", ["data", "indices"], ["out"], batch_dims=1)
    >>> og.run_node(node, np.arange(8).reshape(2, 2, 2), np.array([[1], [0]]))
    array([[2, 3],
           [4, 5]])
    """
    if not is_node(node):
        msg = f"run_node expects an onnx.NodeProto, got {describe(node)}"
        raise TypeError(msg)
    op = operator_of(node)
    listed = len(node.input)
    least = len(op.inputs) - len(op.optional_inputs)
    if len(inputs) != listed or not least <= listed <= len(op.inputs):
        takes = f"{len(op.inputs)}" if not op.optional_inputs else f"{least} to {len(op.inputs)}"
        msg = (
            f"{op.op_type} node {node.name!r} takes {takes} inputs "
            f"({', '.join(op.inputs)}); the node lists {listed}, and {len(inputs)} "
            f"{'was' if len(inputs) == 1 else 'were'} given"
        )
        raise ValueError(msg)
    # An optional input the node leaves out, or names "" (ONNX's empty name): absent.
    given = [None if name == "" else x for name, x in zip(node.input, inputs, strict=True)]
    attributes = _ops.node_attributes(op, node)
    return _ops.call(op, *given, opset=opset, check_bounds=check_bounds, **attributes)


def is_node(node: Any) -> bool:
    """Whether ``node`` is an ``onnx.NodeProto``, asked without importing onnx.

    By its protobuf descriptor's name: a NodeProto's module imported onnx already, and a
    copy of ONNX's protos compiled into another package keeps the name.
    """
    descriptor = getattr(type(node), "DESCRIPTOR", None)
    return getattr(descriptor, "full_name", None) == "onnx.NodeProto"


def operator_of(node: Any) -> _ops.Operator:
    """The registry's operator that runs ``node``; ValueError for any other node."""
    op = _ops.BY_ONNX_OP_TYPE.get(node.op_type) if node.domain in _DEFAULT_DOMAINS else None
    if op is None:
        known = ", ".join(_ops.BY_ONNX_OP_TYPE)
        domain = f" of domain {node.domain!r}" if node.domain not in _DEFAULT_DOMAINS else ""
        msg = f"node {node.name!r} is a {node.op_type}{domain}; onnx_gather runs {known}"
        raise ValueError(msg)
    return op


def reference_ops() -> list[type]:
    """The family as operators for ``onnx.reference.ReferenceEvaluator(model, new_ops=...)``.

    One ``OpRun`` subclass per ONNX operator of the registry, named after its op_type, each
    running onnx_gather on the evaluator's NumPy arrays at the model's opset: exact, and
    raising the library's IndexError for an out-of-range index where the evaluator's own
    GatherElements wraps around. Needs onnx.

    Examples
    --------
    >>> from onnx.reference import ReferenceEvaluator
    >>> import onnx_gather as og
    >>> evaluator = ReferenceEvaluator(model, new_ops=og.reference_ops())  # doctest: +SKIP
    """
    op_run = importlib.import_module("onnx.reference.op_run").OpRun
    return [_op_run(op_run, op) for op in _ops.BY_ONNX_OP_TYPE.values()]


def _op_run(base: type, op: _ops.Operator) -> type:
    """An ``OpRun`` subclass that runs ``op`` at the evaluator's opset."""

    def _run(self: Any, *inputs: Any, **attributes: Any) -> tuple[Any]:
        opset = self.run_params["opsets"].get("", op.default_opset)
        given = {name: value for name, value in attributes.items() if value is not None}
        return (_ops.call(op, *inputs, opset=opset, **given),)

    return type(op.op_type, (base,), {"op_domain": "", "_run": _run, "__module__": __name__})
