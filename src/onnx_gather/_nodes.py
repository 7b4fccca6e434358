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
        The node's inputs in its order (``data``, ``indices``, and a scatter's
        ``updates``; TensorScatter's ``past_cache``, ``update``, ``write_indices``), of
        any supported library; the same rules as the public functions (indices may be
        NumPy or Python sequences). An optional input that the node leaves out, or names
        ``""`` (ONNX's absent input), is absent: give one array per named input, or one
        per listed name with None at an empty one.
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
        a node that lists another number of inputs or outputs than the operator takes, or
        leaves out (``""``) a required input, or other inputs given than it names; and
        every error of the operator's public function.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx import helper
    >>> import onnx_gather as og
    >>> node = helper.make_node(
    ...     "GatherND", ["data", "indices"], ["out"], batch_dims=1
    ... )
    >>> data = np.arange(8).reshape(2, 2, 2)
    >>> og.run_node(node, data, np.array([[1], [0]]))
    array([[2, 3],
           [4, 5]])
    """
    if not is_node(node):
        msg = f"run_node expects an onnx.NodeProto, got {describe(node)}"
        raise TypeError(msg)
    op = operator_of(node)
    if len(node.output) != 1:
        msg = (
            f"{op.op_type} node {node.name!r} has 1 output; the node lists "
            f"{len(node.output)}: {list(node.output)}"
        )
        raise ValueError(msg)
    given = _inputs(op, node, inputs)
    attributes = _ops.node_attributes(op, node)
    return _ops.call(op, *given, opset=opset, check_bounds=check_bounds, **attributes)


def _inputs(op: _ops.Operator, node: Any, inputs: tuple[Any, ...]) -> list[Any]:
    """The call's inputs in the operator's order, None for each one the node leaves out.

    An optional input the node does not list, or lists with ONNX's empty name ``""``, is
    absent. ``inputs`` holds one array per named input, or one per listed name (None at
    an empty one).
    """
    listed = list(node.input)
    names = op.input_names
    least = len(op.inputs) - len(op.optional_inputs)
    named = [i for i, name in enumerate(listed) if name != ""]
    if len(listed) <= len(names):
        for i, name in enumerate(listed):
            if name == "" and op.inputs[i] not in op.optional_inputs:
                msg = (
                    f"{op.op_type} node {node.name!r} leaves out its input {names[i]} (an "
                    f"empty name), which {op.op_type} requires"
                )
                raise ValueError(msg)
    if len(inputs) == len(listed) and least <= len(listed) <= len(names):
        for i, x in enumerate(inputs):
            if listed[i] == "" and x is not None:
                msg = (
                    f"{op.op_type} node {node.name!r} leaves out its input {names[i]} (an "
                    f"empty name), and {describe(x)} was given for it; give None or nothing"
                )
                raise ValueError(msg)
        return [None if name == "" else x for name, x in zip(listed, inputs, strict=True)]
    if len(inputs) == len(named) < len(listed) and least <= len(listed) <= len(names):
        given: list[Any] = [None] * len(listed)
        for i, x in zip(named, inputs, strict=True):
            given[i] = x
        return given
    takes = f"{len(names)}" if not op.optional_inputs else f"{least} to {len(names)}"
    lists = f"{len(listed)}" if len(named) == len(listed) else f"{len(listed)} ({len(named)} named)"
    msg = (
        f"{op.op_type} node {node.name!r} takes {takes} inputs ({', '.join(names)}); the "
        f"node lists {lists}, and {len(inputs)} {'was' if len(inputs) == 1 else 'were'} given"
    )
    raise ValueError(msg)


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
