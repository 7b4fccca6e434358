"""Running a case on a library and comparing results bit for bit."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from cases import Case
from libs import LIBS, Library

from onnx_gather import _ops
from onnx_gather._conformance.libraries import type_name
from onnx_gather._conformance.runner import difference, run_oracle
from onnx_gather._ops import call


def without_compiled_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a build without the compiled kernel: ``_kernels`` None in each module holding it.

    Every backend of the run's libraries is loaded first: a module first imported under
    the patch (``from ... import _kernels`` reads it once) would keep None after it, and
    later tests would run a backend whose views and routes disagree (the torch backend's
    views took uint64 as int64 while its route ran the kernel's unsigned max on them).
    A module's own names for the kernel's functions become None too, and the bound calls
    are new ones: a call bound before holds what its binder read then. (A build without
    the kernel, ``nox -s no_compiler``'s, is that already: nothing to patch.)
    """
    from onnx_gather import _api
    from onnx_gather._backends._numpy import _kernels
    from onnx_gather._dispatch import backend_for
    from onnx_gather._memo import Memo

    if _kernels is None:
        return
    for lib in LIBS:
        backend_for(lib.asarray(np.zeros(1, np.float32)))
    for name, module in list(sys.modules.items()):
        if not name.startswith("onnx_gather.") or module is _kernels:
            continue
        for attribute, value in list(vars(module).items()):
            if value is _kernels or getattr(value, "__self__", None) is _kernels:
                monkeypatch.setattr(module, attribute, None)
    monkeypatch.setattr(_api, "_CALLS", Memo(4096))


def run_case(lib: Library, case: Case, indices: Any = None) -> Any:
    data = lib.asarray(case.data)
    if indices is None:
        indices = case.written if case.written is not None else lib.indices(case.indices)
    updates = None if case.updates is None else lib.asarray(case.updates)
    return call(
        case.op,
        *_ops.get(case.op).in_order(data, indices, updates),
        opset=case.opset,
        check_bounds=case.check_bounds,
        **case.attributes,
    )


def expected(case: Case) -> np.ndarray:
    """The case's literal (a spec's, or a runtime's), else the loop oracle's answer."""
    if case.expected is not None:
        return case.expected
    return oracle_answer(case)


def oracle_answer(case: Case) -> np.ndarray:
    """The loop oracle's answer for ``case`` (or its exception)."""
    return run_oracle(case.op, case.arrays, case.attributes, case.opset, case.check_bounds)


def assert_identical(actual: np.ndarray, want: np.ndarray) -> None:
    """Same shape, same dtype, same bits (NaN payloads and -0.0 included; strings by value)."""
    problem = difference(actual, want)
    assert problem is None, f"{problem}\nactual:\n{actual!r}\nexpected:\n{want!r}"


def applies(lib: Library, case: Case) -> bool:
    """Whether the library can hold the case's data types (data's, a scatter's updates')."""
    return all(type_name(x.dtype) in lib.holds for x in (case.data, case.updates) if x is not None)


def run_plugin_doctests(plugin: Any) -> None:
    """A converter plug-in's docstring examples (its API pages'), its registration restored.

    They run where the converter is installed: the converters session.
    """
    import doctest

    was = plugin.registered()
    try:
        result = doctest.testmod(plugin, optionflags=doctest.NORMALIZE_WHITESPACE)
    finally:
        (plugin.register if was else plugin.unregister)()
    assert result.attempted >= 5
    assert result.failed == 0
