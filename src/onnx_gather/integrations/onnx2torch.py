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

__all__ = ["FamilyModule", "register", "registered", "unregister"]

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
    """Restore the converters :func:`register` replaced (nothing if it has not run)."""
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
    """Whether onnx2torch converts the family with ``onnx_gather`` now."""
    return _REPLACED is not None


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
    >>> FamilyModule("gather_elements", 13, {"axis": 1})(torch.tensor([[1, 2]]), torch.tensor([[-1, 0]]))
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
