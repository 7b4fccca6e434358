"""The scatters under JAX's transforms: jit and vmap give the eager bits, checkify the error."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from case_type import Case
from helpers import assert_identical, oracle_answer
from jax.experimental import checkify
from scatter_cases import SCATTER_CASES, SE, SN, scatter
from test_scatters import SWEEP

import onnx_gather as og
from onnx_gather import _ops


def _call(case: Case, *arrays: Any) -> Any:
    return _ops.call(
        case.op, *arrays, opset=case.opset, check_bounds=case.check_bounds, **case.attributes
    )


def _jax_cases() -> list[Case]:
    """Sweep calls JAX holds (no 64-bit types without x64, no strings), in range."""
    wide = (
        set() if jax.config.read("jax_enable_x64") else {"int64", "uint64", "float64", "complex128"}
    )
    chosen = []
    for case in SWEEP[:120]:
        if case.data.dtype.kind == "O" or case.data.dtype.name in wide:
            continue
        try:
            oracle_answer(case)
        except IndexError:
            continue
        chosen.append(case)
    return chosen


def _unchecked_table_cases() -> list[Case]:
    """The case table's unchecked ScatterElements and ScatterND calls (dropped updates)."""
    return [
        c
        for c in SCATTER_CASES
        if not c.check_bounds and c.op in (SE.name, SN.name) and c.data.dtype.itemsize <= 4
    ]


@pytest.mark.parametrize("case", _jax_cases(), ids=lambda c: c.id)
def test_jit_gives_the_eager_bits(case: Case) -> None:
    arrays = tuple(jnp.asarray(x) for x in (case.data, case.indices, case.updates))
    jitted = jax.jit(lambda d, i, u: _call(case, d, i, u))(*arrays)
    assert_identical(np.asarray(jitted), oracle_answer(case))


def test_vmap_gives_each_example_its_own_result() -> None:
    data = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    indices = jnp.asarray([[1, 1, 3], [0, 0, 0], [2, 3, 2]])
    updates = jnp.asarray(np.arange(9, dtype=np.float32).reshape(3, 3) * 0.5)
    case = scatter("vmap", SE, np.zeros(4, np.float32), np.zeros(3, np.int64), np.zeros(3, np.float32),
                   {"reduction": "add"})  # fmt: skip
    batched = jax.vmap(lambda d, i, u: _call(case, d, i, u))(data, indices, updates)
    for k in range(3):
        one = scatter("one", SE, np.asarray(data[k]), np.asarray(indices[k]), np.asarray(updates[k]),
                      {"reduction": "add"})  # fmt: skip
        assert_identical(np.asarray(batched[k]), oracle_answer(one))


@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
def test_under_jit_a_bad_index_drops_its_update_and_checkify_names_it(op: Any) -> None:
    data = jnp.zeros(4, jnp.float32)
    indices = jnp.asarray([1, 7, 2]) if op is SE else jnp.asarray([[1], [7], [2]])
    updates = jnp.asarray([1.0, 2.0, 3.0], jnp.float32)
    case = scatter(
        "jit", op, np.zeros(4, np.float32), np.zeros(3, np.int64), np.zeros(3, np.float32)
    )

    def f(d: Any, i: Any, u: Any) -> Any:
        return _call(case, d, i, u)

    assert np.asarray(jax.jit(f)(data, indices, updates)).tolist() == [0.0, 1.0, 3.0, 0.0]
    error, _ = jax.jit(checkify.checkify(f))(data, indices, updates)
    name = "ScatterElements-18" if op is SE else "ScatterND-18"
    position = "(1,)" if op is SE else r"(1, 0)"
    with pytest.raises(
        checkify.JaxRuntimeError, match=rf"{name}: index 7 at position \{position[:-1]}\)"
    ):
        error.throw()


def test_grad_of_none_reaches_the_winning_update() -> None:
    case = scatter(
        "grad", SE, np.zeros(3, np.float32), np.zeros(4, np.int64), np.zeros(4, np.float32)
    )
    indices = jnp.asarray([2, 0, 2, 2])

    def loss(d: Any, u: Any) -> Any:
        return jnp.sum(_call(case, d, indices, u) * jnp.asarray([10.0, 20.0, 30.0]))

    gd, gu = jax.grad(loss, argnums=(0, 1))(jnp.zeros(3), jnp.asarray([1.0, 2.0, 3.0, 4.0]))
    assert np.asarray(gd).tolist() == [0.0, 20.0, 0.0]
    assert np.asarray(gu).tolist() == [0.0, 10.0, 0.0, 30.0]


@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
def test_grad_of_add_is_the_upstream_at_each_target(op: Any) -> None:
    case = scatter("grad", op, np.zeros(3, np.float32), np.zeros(4, np.int64), np.zeros(4, np.float32),
                   {"reduction": "add"})  # fmt: skip
    indices = jnp.asarray([2, 0, 2, 2]) if op is SE else jnp.asarray([[2], [0], [2], [2]])
    weights = jnp.asarray([10.0, 20.0, 30.0])

    def loss(d: Any, u: Any) -> Any:
        return jnp.sum(_call(case, d, indices, u) * weights)

    gd, gu = jax.jit(jax.grad(loss, argnums=(0, 1)))(
        jnp.zeros(3), jnp.asarray([1.0, 2.0, 3.0, 4.0])
    )
    assert np.asarray(gd).tolist() == [10.0, 20.0, 30.0]
    assert np.asarray(gu).tolist() == [30.0, 10.0, 30.0, 30.0]


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
def test_jax_gradients_are_the_torch_formulas(op: Any, reduction: str) -> None:
    """The same gradients as PyTorch's (tests/test_torch_scatters.py checks those numerically)."""
    rng = np.random.default_rng(3)
    data = (rng.permutation(24).reshape(4, 6) + 0.5).astype(np.float32) / 8
    if op is SE:
        indices = np.array([[0, 1, 1, 3, 0, 2], [0, 1, 2, 3, 3, 2], [1, 1, 0, 0, 2, 3]])
        updates = (rng.permutation(18).reshape(3, 6) * 1.5 + 0.25).astype(np.float32) / 8
    else:
        indices = np.array([[1], [3], [1], [0]])
        updates = (rng.permutation(24).reshape(4, 6) * 1.5 + 0.25).astype(np.float32) / 8
    data[0, 0] = 0.0  # a zero factor for mul
    case = scatter("g", op, data, indices, updates, {"reduction": reduction})
    weights = jnp.asarray(rng.standard_normal(data.shape).astype(np.float32))

    def loss(d: Any, u: Any) -> Any:
        return jnp.sum(_call(case, d, jnp.asarray(indices), u) * weights)

    gd, gu = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(data), jnp.asarray(updates))
    want_d, want_u = _numeric(case, np.asarray(weights))
    np.testing.assert_allclose(np.asarray(gd), want_d, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(np.asarray(gu), want_u, rtol=2e-3, atol=2e-3)


def _numeric(case: Case, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Central differences of sum(oracle * weights), in float64 (no ties: well defined)."""
    data, updates = case.data.astype(np.float64), case.updates.astype(np.float64)

    def f(d: np.ndarray, u: np.ndarray) -> float:
        c = scatter("n", case.op, d, case.indices, u, case.attributes)
        return float(np.sum(oracle_answer(c) * weights))

    grads = []
    for x in (data, updates):
        g = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            step = 1e-6
            x[i] += step
            up = f(data, updates)
            x[i] -= 2 * step
            down = f(data, updates)
            x[i] += step
            g[i] = (up - down) / (2 * step)
        grads.append(g)
    return grads[0], grads[1]


def test_rounds_give_the_same_bits_where_updates_are_not_applied_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The route of devices whose scatters are not one ordered loop (GPUs), run on the CPU."""
    from onnx_gather._backends._jax import _scatter

    monkeypatch.setattr(_scatter, "serial_device", lambda data: False)
    ran = 0
    for case in _jax_cases() + _unchecked_table_cases():
        arrays = tuple(jnp.asarray(x) for x in (case.data, case.indices, case.updates))
        assert_identical(np.asarray(_call(case, *arrays)), oracle_answer(case))
        ran += 1
    assert ran > 50


def test_devices_without_ordered_scatters_write_each_target_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where a scatter's updates may land in any order (GPUs), only each target's last
    update in C order is written: the rows the write is given hold each target once."""
    from onnx_gather._backends._jax import _scatter

    monkeypatch.setattr(_scatter, "serial_device", lambda data: False)
    written = []
    real = _scatter._coordinates

    def spy(rows: Any, shape: Any) -> Any:
        written.append(np.asarray(rows))
        return real(rows, shape)

    monkeypatch.setattr(_scatter, "_coordinates", spy)
    updates = jnp.arange(10.0, dtype=jnp.float32).reshape(5, 2)
    with jax.disable_jit():  # (the rows as values)
        got = og.scatter_nd(jnp.zeros((4, 2), jnp.float32), jnp.array([[1], [3], [1], [-3], [5]]), updates,
                            check_bounds=False)  # fmt: skip
    assert np.asarray(got).tolist() == [[0, 0], [6, 7], [0, 0], [2, 3]]
    (rows,) = written
    assert sorted(rows[rows < 4].tolist()) == [1, 3]  # (row 1 once: its third update)


def test_export_of_a_float_reduction_needs_a_symbolic_shape() -> None:
    """On the CPU a float reduction calls back to the host, which jax.export cannot serialize.

    With a symbolic dim (what jax.export is for) it computes in XLA instead and exports;
    with static shapes JAX's own NotImplementedError says why (README, "Autograd, jit and
    devices").
    """
    from jax import export

    def f(d: Any, u: Any) -> Any:
        return _ops.SCATTER_ELEMENTS.function()(d, jnp.asarray([0, 0, 2]), u, reduction="add")

    (n,) = export.symbolic_shape("n", constraints=("n >= 3",))
    exported = export.export(jax.jit(f))(
        jax.ShapeDtypeStruct((n,), np.float32), jax.ShapeDtypeStruct((3,), np.float32)
    )
    u = jnp.asarray([1.0, 2.0, 4.0], jnp.float32)
    got = exported.call(jnp.zeros(4, jnp.float32), u)
    assert np.asarray(got).tolist() == [3.0, 0.0, 4.0, 0.0]
    static = (jax.ShapeDtypeStruct((4,), np.float32), jax.ShapeDtypeStruct((3,), np.float32))
    if jax.default_backend() != "cpu":  # a GPU computes in rounds: no callback to serialize
        got = export.export(jax.jit(f))(*static).call(jnp.zeros(4, jnp.float32), u)
        assert np.asarray(got).tolist() == [3.0, 0.0, 4.0, 0.0]
        return
    with pytest.raises(NotImplementedError, match="serialization of host_callbacks"):
        export.export(jax.jit(f))(*static)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_subnormals_are_ieee_on_the_cpu(reduction: str) -> None:
    """XLA's CPU arithmetic flushes subnormals; the scatters' results must not.

    Subnormal operands, a subnormal result of normal operands (2**-125 + 2**-148 minus
    2**-125), and normal values only (the add that stays in XLA), eagerly and under jit.
    """
    bits = np.array([1, 0x00800001, 0x3F800000, 0x80000003], np.uint32)  # 1e-45, ...
    data = bits.view(np.float32)
    updates = np.array([1, 0x80800000, 0x3F000000, 0x00000002], np.uint32).view(np.float32)
    indices = np.array([0, 1, 2, 3])
    large = np.float32(2.0**100)  # (a Python int that large is an object to NumPy 1.x)
    for d, u in ((data, updates), (data * large, updates * large)):
        case = scatter("s", SE, d, indices, u, {"reduction": reduction})
        arrays = tuple(jnp.asarray(x) for x in case.arrays)
        want = oracle_answer(case)
        assert_identical(np.asarray(_call(case, *arrays)), want)
        jitted = jax.jit(lambda *a, case=case: _call(case, *a))
        assert_identical(np.asarray(jitted(*arrays)), want)
