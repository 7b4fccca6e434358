"""jaxonnxruntime's handlers for the family, running onnx_gather (:func:`register`).

jaxonnxruntime (ONNX on JAX) runs GatherElements with ``jnp.choose(mode="wrap")``, which
silently wraps an out-of-range index, and has no handler for GatherND, ScatterElements,
ScatterND, Scatter or TensorScatter. After :func:`register`, every operator of the family
at every version runs ``onnx_gather`` on the model's JAX arrays: exact eagerly, and with
the library's ``jax.jit`` semantics where the caller jits the model.

jaxonnxruntime finds its handlers as the subclasses of its ``Handler``, the newest last and
winning, so registering defines one subclass per operator after its own. Python holds
subclasses weakly: :func:`unregister` drops ours and collects them, and its own are found
again.
"""

from __future__ import annotations

import gc
import importlib
from typing import Any

from onnx_gather import _ops

__all__ = ["register", "registered", "unregister"]

#: The handler classes :func:`register` defined; None while unregistered.
_HANDLERS: list[type] | None = None


def register() -> None:
    """Make jaxonnxruntime run every operator of the family with ``onnx_gather``.

    Gather, GatherElements, GatherND, ScatterElements, ScatterND, Scatter and
    TensorScatter, at each of their versions (the model's opset selects one). Calling it
    again changes nothing; :func:`unregister` restores jaxonnxruntime's own handlers.

    Examples
    --------
    >>> from onnx_gather.integrations import jaxonnxruntime as plugin
    >>> plugin.register()  # doctest: +SKIP
    >>> jaxonnxruntime.backend.Backend.prepare(model).run(inputs)  # doctest: +SKIP
    """
    global _HANDLERS
    if _HANDLERS is not None:
        return
    importlib.import_module("jaxonnxruntime.call_onnx")  # (its own handlers: defined first)
    base = importlib.import_module("jaxonnxruntime.core.handler").Handler
    _HANDLERS = [_handler(base, op) for op in _ops.BY_ONNX_OP_TYPE.values()]


def unregister() -> None:
    """Restore jaxonnxruntime's own handlers (nothing if :func:`register` has not run).

    Examples
    --------
    >>> from onnx_gather.integrations import jaxonnxruntime as plugin
    >>> plugin.register()
    >>> plugin.unregister()
    >>> plugin.registered()
    False
    """
    global _HANDLERS
    if _HANDLERS is None:
        return
    _HANDLERS = None
    gc.collect()  # (a class refers to itself: only the collector frees it)


def registered() -> bool:
    """Whether jaxonnxruntime runs the family with ``onnx_gather`` now.

    Returns
    -------
    bool
        True between :func:`register` and :func:`unregister`.

    Examples
    --------
    >>> from onnx_gather.integrations import jaxonnxruntime as plugin
    >>> plugin.register()
    >>> plugin.registered()
    True
    >>> plugin.unregister()
    """
    return _HANDLERS is not None


def _handler(base: type, op: _ops.Operator) -> type:
    """A handler of ``op``: each node becomes a call of its public function at its version."""

    def handle(cls: Any, node: Any, inputs: Any, /, **_: Any) -> Any:
        attributes = _ops.node_attributes(op, node.node_proto)
        version = cls.SINCE_VERSION  # (set per model by jaxonnxruntime)

        def run(*arrays: Any) -> Any:
            return _ops.call(op, *arrays, opset=version, **attributes)

        return run

    return type(
        f"OnnxGather{op.op_type}",
        (base,),
        {
            "DOMAIN": "",
            "OP_TYPE": op.op_type,
            "handle": classmethod(handle),
            "__module__": __name__,
        },
    )
