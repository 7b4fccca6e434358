"""What ``torch.compile`` sees of a call: one step it does not trace into."""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
import threading
from typing import TYPE_CHECKING, Any

from onnx_gather import _ops

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

_DYNAMO = "torch._dynamo"
_LOCK = threading.Lock()
_INSTALLED: list[Callable[..., Any]] = []


def install(run: Callable[..., Any], body: Callable[..., Any]) -> None:
    """Make Dynamo call ``run`` as one opaque step, from the moment Dynamo exists.

    Dynamo would otherwise trace the library's Python in every call: about 190 guards a
    call on registry objects, caches and dicts the library grows (a recompile when they
    grow), and seconds of compile time. Instead it sees one call of a function it puts
    in the graph as it is (``allow_in_graph``) with the call's arrays and one string of
    its other arguments; AOTAutograd then runs ``body`` on fake tensors and records the
    torch operations it makes, which inductor compiles with the rest of the graph. The
    library's caches are not read then (``_api``: not while a compiler traces), so what
    the graph holds depends on the arguments alone.

    ``body`` is what ``run`` calls. Calls on other arrays than tensors, and calls whose
    arguments are not plain ints, strings and bools, are traced through it as before.

    Installing imports ``torch._dynamo`` (as long to import as torch itself), which an
    eager program never needs: so it happens when torch.compile (or torch.export) first
    imports it, before it can trace anything (:class:`_AfterImport`), or now where it
    already has.
    """
    module = sys.modules.get(_DYNAMO)
    if module is not None and hasattr(module, "allow_in_graph"):
        _install_once(run, body)
    else:
        sys.meta_path.insert(0, _AfterImport(_DYNAMO, lambda: _install_once(run, body)))


def _install_once(run: Callable[..., Any], body: Callable[..., Any]) -> None:
    with _LOCK:
        if not _INSTALLED:
            _substitute(run, body)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then`` right after the module ``name`` is imported (once).

    A finder first on ``sys.meta_path`` that finds the module's spec with the other
    finders and wraps its loader's ``exec_module``, so ``then`` runs before the importer
    goes on.
    """

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        execute = getattr(loader, "exec_module", None)
        if execute is None:
            return spec
        then = self.then

        parent, _, child = fullname.rpartition(".")

        def exec_module(module: ModuleType) -> None:
            execute(module)
            # What the import system does next, done first: ``then`` reaches the module
            # as an attribute of its package (``torch._dynamo``).
            if parent in sys.modules:
                setattr(sys.modules[parent], child, module)
            # Never break the framework's import: calls would trace as before.
            with contextlib.suppress(Exception):
                then()

        loader.exec_module = exec_module
        return spec


def _substitute(run: Callable[..., Any], body: Callable[..., Any]) -> None:
    import torch

    _INSTALLED.append(run)

    def _traced(call: str, *inputs: Any) -> Any:
        name, opset, check_bounds, attributes, outs = _decoded(call)
        arrays = inputs[: len(inputs) - outs]
        out = inputs[-1] if outs else None
        # ``out`` is checked, not written: the caller's graph writes it (see below).
        return body(_ops.BY_NAME[name], opset, arrays, attributes, check_bounds, out, False)

    _traced = torch.compiler.allow_in_graph(_traced)

    @torch.compiler.substitute_in_graph(run)
    def _run_in_graph(
        op: Any, opset: Any, arrays: Any, attributes: Any, check_bounds: Any, out: Any = None
    ) -> Any:
        call = _encoded(op.name, opset, check_bounds, attributes, out is not None)
        # Host indices (Python ints and lists, NumPy arrays) are traced through ``body``,
        # which checks and converts them as an eager call does (Dynamo would hand ints
        # over as symbolic sizes); so are arguments ``_encoded`` cannot hold.
        if call is None or not all(isinstance(x, torch.Tensor) for x in arrays):
            return body(op, opset, arrays, attributes, check_bounds, out)
        if out is None:
            return _traced(call, *arrays)
        # The result first, then one copy into ``out`` that Dynamo sees: every input is
        # read before ``out`` is written whatever they share, autograd records the
        # write, and inductor turns a scatter into ``out=data`` into a write of its
        # targets (it re-inplaces the scatter and drops the copy).
        out.copy_(_traced(call, *arrays, out))
        return out


#: Separates the fields of :func:`_encoded`'s string.
_SEP = "\x1f"


def _encoded(name: str, opset: Any, check_bounds: Any, attributes: Any, out: bool) -> str | None:
    """The call's plain arguments as one string; None where one is not a plain value.

    Dynamo flattens a ``nonstrict_trace`` function's arguments by tracing torch's pytree
    code, compile time for each container and value (docs/performance.md): one string
    makes it one value. An argument that is not a plain int, str or bool (an ``__index__`` object,
    a wrong type the planner explains) is not encoded: that call is traced as before.
    """
    if type(opset) is not int or type(check_bounds) is not bool:
        return None
    fields = [name, str(opset), "1" if check_bounds else "0", "1" if out else "0"]
    for a in attributes:
        if type(a) is int:
            fields.append("i" + str(a))
        elif type(a) is str and _SEP not in a:
            fields.append("s" + a)
        else:
            return None
    return _SEP.join(fields)


def _decoded(call: str) -> tuple[str, int, bool, tuple[Any, ...], int]:
    """:func:`_encoded`'s fields: name, opset, check_bounds, attributes, number of outs."""
    name, opset, check, out, *attributes = call.split(_SEP)
    values = tuple(int(a[1:]) if a[0] == "i" else a[1:] for a in attributes)
    return name, int(opset), check == "1", values, int(out)
