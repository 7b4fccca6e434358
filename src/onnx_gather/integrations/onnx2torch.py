"""onnx2torch's converters for the family, running onnx_gather (:func:`register`).

onnx2torch (ONNX to PyTorch) converts the family with torch's own calls, which refuse
negative GatherElements indices, leave GatherND's ``batch_dims`` unimplemented, have no
ScatterElements and no ScatterND-18 or reductions. After :func:`register`, every operator
of the family at every version converts to a module that calls ``onnx_gather``: exact,
on any device, under ``torch.compile``, ``torch.jit.trace`` and autograd, and exported
back to the same ONNX node by ``torch.onnx.export(..., dynamo=False)``.

onnx2torch's registry refuses to replace a converter (``add_converter`` raises), so the
plug-in writes its table, ``onnx2torch.node_converters.registry._CONVERTER_REGISTRY``,
and keeps what it replaced for :func:`unregister`. Its converters receive the node and the
graph, not the model's opset: one converter per version carries it, as onnx2torch's own.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from onnx_gather import _ops

__all__ = ["FamilyModule", "flatten", "register", "registered", "unregister"]

#: The converters :func:`register` replaced, by onnx2torch's key (None: it had none);
#: None while unregistered.
_REPLACED: dict[Any, Any] | None = None


def _onnx2torch(module: str) -> Any:
    return importlib.import_module(f"onnx2torch.{module}")


def register() -> None:
    """Make onnx2torch convert every operator of the family by calling ``onnx_gather``.

    Gather, GatherElements, GatherND, ScatterElements, ScatterND, Scatter and
    TensorScatter, at each of their versions. Calling it again changes nothing;
    :func:`unregister` restores onnx2torch's own converters.

    Examples
    --------
    >>> from onnx_gather.integrations import onnx2torch as plugin
    >>> plugin.register()  # doctest: +SKIP
    >>> module = onnx2torch.convert(model)  # doctest: +SKIP
    """
    global _REPLACED
    registry = _onnx2torch("node_converters.registry")
    table = registry._CONVERTER_REGISTRY
    replaced = {} if _REPLACED is None else _REPLACED
    for op in _ops.BY_ONNX_OP_TYPE.values():
        for version in op.numbers:
            key = registry.OperationDescription(
                domain="", operation_type=op.op_type, version=version
            )
            if _REPLACED is None:
                replaced[key] = table.get(key)
            table[key] = _converter(op, version)
    _REPLACED = replaced


def unregister() -> None:
    """Restore the converters :func:`register` replaced (nothing if it has not run).

    Examples
    --------
    >>> from onnx_gather.integrations import onnx2torch as plugin
    >>> plugin.register()
    >>> plugin.unregister()
    >>> plugin.registered()
    False
    """
    global _REPLACED
    if _REPLACED is None:
        return
    table = _onnx2torch("node_converters.registry")._CONVERTER_REGISTRY
    for key, converter in _REPLACED.items():
        if converter is None:
            table.pop(key, None)
        else:
            table[key] = converter
    _REPLACED = None


def registered() -> bool:
    """Whether onnx2torch converts the family with ``onnx_gather`` now.

    Returns
    -------
    bool
        True between :func:`register` and :func:`unregister`.

    Examples
    --------
    >>> from onnx_gather.integrations import onnx2torch as plugin
    >>> plugin.register()
    >>> plugin.registered()
    True
    >>> plugin.unregister()
    """
    return _REPLACED is not None


class _Inliner(torch.fx.Tracer):  # type: ignore[misc]
    """Traces a converted model through every module whose Python traces symbolically.

    ``FamilyModule`` stays a call (:func:`flatten` makes it a call of the function), and
    so does a module that cannot be traced (onnx2torch's Reshape and Slice branch on
    tensor values); with ``inline=False`` every module does.
    """

    def __init__(self, inline: bool) -> None:
        super().__init__()
        self._inline = inline
        self._traceable: dict[int, bool] = {}

    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        if isinstance(m, FamilyModule) or not self._inline:
            return True
        if id(m) not in self._traceable:
            self._traceable[id(m)] = _traces(m)
        return not self._traceable[id(m)]


#: What symbolic tracing raises for Python that needs a value (a branch, a conversion).
_UNTRACEABLE = (torch.fx.proxy.TraceError, TypeError, ValueError, RuntimeError)


def _traces(m: torch.nn.Module) -> bool:
    """Whether ``m`` alone traces symbolically (its family modules kept as calls)."""
    try:
        _Inliner(inline=False).trace(m)
    except _UNTRACEABLE:
        return False
    return True


def flatten(module: torch.nn.Module) -> torch.fx.GraphModule:
    """A converted model as one graph of plain calls, for ``torch.compile``.

    onnx2torch makes each node a module. Dynamo guards on every module's attributes each
    time a compiled model is called (about 1600 guards for 39 small gathers), which cost a
    third of the compiled call, and traces each module's Python when it compiles. Here
    onnx2torch's modules are inlined (``torch.fx`` symbolic tracing) and each node of the
    family becomes a direct call of its ``onnx_gather`` function, with its attributes and
    version as arguments. The results are the same, bit for bit.

    A module of onnx2torch's that cannot be traced symbolically (its Reshape and Slice
    branch on tensor values) stays a module; the rest of the graph is still inlined.

    Export (``torch.onnx.export``) the module onnx2torch made, not this one: its family
    modules write their nodes back.

    Parameters
    ----------
    module : torch.nn.Module
        What ``onnx2torch.convert`` returned, with :func:`register` in effect.

    Returns
    -------
    torch.fx.GraphModule
        The same computation; its buffers are the model's initializers.

    Examples
    --------
    >>> from onnx_gather.integrations import onnx2torch as plugin
    >>> plugin.register()  # doctest: +SKIP
    >>> module = plugin.flatten(onnx2torch.convert(proto))  # doctest: +SKIP
    >>> model = torch.compile(module, fullgraph=True)  # doctest: +SKIP
    """
    try:
        graph = _Inliner(inline=True).trace(module)
    except _UNTRACEABLE:  # (a module traced alone but not where it is called)
        graph = _Inliner(inline=False).trace(module)
    flat = torch.fx.GraphModule(module, graph)
    for node in flat.graph.nodes:
        if node.op != "call_module":
            continue
        called = flat.get_submodule(node.target)
        if isinstance(called, FamilyModule):
            node.op, node.target = "call_function", called._function
            node.args = tuple(node.args)[: len(called._op.inputs)]
            node.kwargs = dict(called._keywords)
    flat.delete_all_unused_submodules()
    flat.recompile()
    return flat


def _converter(op: _ops.Operator, version: int) -> Any:
    """onnx2torch's converter of ``op`` at ``version``: ``(node, graph) -> result``."""
    common = _onnx2torch("utils.common")

    def convert(node: Any, graph: Any) -> Any:
        attributes = _ops.node_attributes(op, node.proto)
        return common.OperationConverterResult(
            torch_module=FamilyModule(op.name, version, attributes),
            onnx_mapping=common.onnx_mapping_from_node(node),
        )

    convert.__name__ = f"convert_{op.name}_{version}"
    return convert


def _export_base() -> type:
    """onnx2torch's marker for modules that export themselves (``object`` without it)."""
    try:
        return _onnx2torch("utils.custom_export_to_onnx").OnnxToTorchModuleWithCustomExport  # type: ignore[no-any-return]
    except ImportError:  # (the module works without onnx2torch: it is plain torch)
        return object


class FamilyModule(torch.nn.Module, _export_base()):  # type: ignore[misc]
    """One node of the family as a torch module calling ``onnx_gather``.

    Parameters
    ----------
    name : str
        The operator's public function (``"gather_nd"``, ``"tensor_scatter"``).
    version : int
        Its ONNX version (the model's opset resolves to it).
    attributes : dict
        The node's attributes by name (``axis``, ``batch_dims``, ``reduction``, ``mode``).

    Examples
    --------
    >>> import torch
    >>> from onnx_gather.integrations.onnx2torch import FamilyModule
    >>> call = FamilyModule("gather_elements", 13, {"axis": 1})
    >>> call(torch.tensor([[1, 2]]), torch.tensor([[-1, 0]]))
    tensor([[2, 1]])
    """

    def __init__(self, name: str, version: int, attributes: dict[str, Any]) -> None:
        super().__init__()
        self._op = _ops.BY_NAME[name]
        self._version = version
        self._attributes = dict(attributes)
        self._function = self._op.function()
        # Resolved once: the call below is all that Dynamo traces of this module.
        self._keywords = {**self._attributes, "opset": version}

    def extra_repr(self) -> str:
        """The operator, its version and attributes, as ``print(module)`` shows them."""
        given = ", ".join(f"{k}={v!r}" for k, v in self._attributes.items())
        return f"{self._op.message_name(self._version)}{', ' if given else ''}{given}"

    def forward(self, first: Any, second: Any, third: Any = None) -> Any:
        """The node's output for its inputs in ONNX's order (an absent optional one: None)."""
        inputs = (first, second, third)[: len(self._op.inputs)]
        if torch.onnx.is_in_onnx_export():
            return self._exported(inputs)
        return self._function(*inputs, **self._keywords)

    def _exported(self, inputs: tuple[Any, ...]) -> Any:
        """The same call, recorded as the node itself by torch's TorchScript exporter."""
        export = _onnx2torch("utils.custom_export_to_onnx").DefaultExportToOnnx
        present = tuple(x for x in inputs if x is not None)
        version = self._version
        attributes = {
            f"{name}_{'s' if isinstance(value, str) else 'i'}": value
            for name, value in self._attributes.items()
            if self._op.attribute_since.get(name, 0) <= version
        }
        return export.export(
            lambda: self._function(*inputs, **self._keywords),
            self._op.op_type,
            *present,
            attributes,
        )
