"""jaxonnxruntime with and without the plug-in, against ONNX Runtime, bit for bit.

The family's models of tests/converter_models.py run in ONNX Runtime (the expected
values), in jaxonnxruntime as it ships, and in jaxonnxruntime with
``onnx_gather.integrations.jaxonnxruntime.register()``. int64 data needs JAX's x64 mode,
which the ``converters`` session turns on.
"""

from __future__ import annotations

import gc
from typing import Any

import jax
import numpy as np
import pytest
from converter_models import MODELS, Model, assert_equals_ort, outcome
from helpers import run_plugin_doctests

from onnx_gather import _ops
from onnx_gather.integrations import jaxonnxruntime as plugin

pytestmark = pytest.mark.tool("jaxonnxruntime")

backend = pytest.importorskip("jaxonnxruntime.backend")  # (collected only where it is named)
handler = pytest.importorskip("jaxonnxruntime.core.handler")

if not jax.config.jax_enable_x64:
    pytest.fail("the converters session runs JAX with JAX_ENABLE_X64=1", pytrace=False)


def _run(model: Model) -> list[np.ndarray]:
    rep = backend.Backend.prepare(model.model)
    names = [v.name for v in model.model.graph.input]
    outputs = rep.run(dict(zip(names, model.inputs, strict=True)))
    return [np.asarray(x) for x in outputs]


def _outcome(model: Model) -> str:
    return outcome(model, _run)


@pytest.fixture
def plugged() -> Any:
    plugin.register()
    yield
    plugin.unregister()


@pytest.mark.parametrize("model", MODELS, ids=[m.name for m in MODELS])
def test_every_model_equals_onnx_runtime_with_the_plug_in(plugged: None, model: Model) -> None:
    assert_equals_ort(model, _run)


#: What jaxonnxruntime 0.3.0 as shipped makes of the models (all others: equal to ORT).
#: Observed against ORT 1.32 on 2026-11-27. It has handlers for Gather and GatherElements-13
#: only, and its GatherElements wraps out-of-range indices (none here: all are in range).
SHIPPED_EQUAL = ("Gather-", "GatherElements-13")


def test_the_runtime_as_shipped_fails_where_the_plug_in_is_needed() -> None:
    assert not plugin.registered()
    outcomes = {m.name: _outcome(m) for m in MODELS}
    equal = {name for name, outcome in outcomes.items() if outcome == "equal"}
    assert equal == {n for n in outcomes if n.startswith(SHIPPED_EQUAL)}, outcomes
    print(f"\njaxonnxruntime as shipped: {len(equal)} of {len(outcomes)} family models equal ORT")


def test_an_out_of_range_index_raises_where_the_shipped_handler_wraps() -> None:
    model = next(m for m in MODELS if m.name == "GatherElements-13 axis 1, negatives float32")
    data, bad = model.inputs[0], model.inputs[1].copy()
    bad[1, 2] = 4  # one past the axis of 4
    wrong = Model(model.name, model.model, (data, bad))
    assert _run(wrong)[0][1, 2] == data[1, 0]  # shipped: jnp.choose(mode="wrap") reads index 0
    plugin.register()
    try:
        with pytest.raises(IndexError, match=r"GatherElements-13: index 4 at position \(1, 2\)"):
            _run(wrong)
    finally:
        plugin.unregister()


def test_register_twice_then_unregister_restores_the_handlers() -> None:
    def handlers() -> dict[str, str]:
        """Each op_type's handler by name, as jaxonnxruntime's lookup finds it (the last wins).

        Names, not the classes: a reference held here would keep a dropped handler alive.
        """
        found: dict[str, str] = {}
        for h in handler.Handler.__subclasses__():
            found[h.OP_TYPE] = f"{h.__module__}.{h.__qualname__}"
        return found

    before = handlers()
    plugin.register()
    plugin.register()
    try:
        now = handlers()
        family = {op.op_type for op in _ops.BY_ONNX_OP_TYPE.values()}
        assert {k for k in now if now[k] != before.get(k)} == family
        assert all(now[k].startswith(plugin.__name__) for k in family)
    finally:
        plugin.unregister()
    gc.collect()
    assert handlers() == before


def test_the_plug_in_docstring_examples() -> None:
    """The API pages' examples of the plug-in run (only where jaxonnxruntime is installed)."""
    run_plugin_doctests(plugin)
