"""JAX transformations: grad/vjp, jit, vmap, checkify and devices.

Runs when jax is among the backends of this run (ONNX_GATHER_BACKENDS); a run that names
jax fails in conftest if jax cannot be imported, so this never skips there. Passes with
JAX_ENABLE_X64=0 and =1 (the nox jax session runs both). Expected gradients come from
grad_oracle's loops, never from a backend's output.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from grad_oracle import ELEMENTS, FUNCTIONS, GATHER, GRAD_CASES, GradCase, data, upstream
from helpers import assert_identical
from jax.experimental import checkify

import onnx_gather as og
from onnx_gather import openvino
from onnx_gather._conformance import oracle


def apply(op: str, x: Any, idx: Any, axis: int, **kw: Any) -> Any:
    return FUNCTIONS[op](x, idx, axis, **kw)


def i32(a: np.ndarray) -> jax.Array:
    return jnp.asarray(np.asarray(a, np.int32))


def _gpus() -> list[Any]:
    try:
        return list(jax.devices("gpu"))
    except RuntimeError:  # no GPU backend
        return []


X = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
INDICES = {
    GATHER: np.array([[0, -1], [4, 0], [-5, 2]], np.int32),
    ELEMENTS: np.array([[0, -1], [4, 4], [-5, 2]], np.int32),
}


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("form", ["jax", "numpy"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_grad_is_scatter_add(case: GradCase, form: str) -> None:
    idx = i32(case.indices) if form == "jax" else case.indices
    g = upstream(case, np.float32)
    grad = jax.grad(lambda x: (case.apply(x, idx) * g).sum())(jnp.asarray(data(case, np.float32)))
    # Small integers: the sums are exact in float32.
    assert_identical(np.asarray(grad), case.grad(g))


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_vjp_is_scatter_add_under_jit(case: GradCase) -> None:
    g = upstream(case, np.float32)

    @jax.jit
    def pullback(x: jax.Array, idx: jax.Array, g: jax.Array) -> jax.Array:
        _, vjp = jax.vjp(lambda t: case.apply(t, idx), x)
        return vjp(g)[0]

    got = pullback(jnp.asarray(data(case, np.float32)), i32(case.indices), jnp.asarray(g))
    assert_identical(np.asarray(got), case.grad(g))


def test_bfloat16_grad() -> None:
    case = GRAD_CASES[3]
    g = upstream(case, np.float32)
    grad = jax.grad(
        lambda x: (og.gather_elements(x, i32(case.indices), 1).astype(jnp.float32) * g).sum()
    )(jnp.asarray(data(case, np.float32)).astype(jnp.bfloat16))
    assert grad.dtype == jnp.bfloat16
    assert_identical(np.asarray(grad.astype(jnp.float32)), case.grad(g))


def test_per_sample_grad() -> None:
    """vmap(grad) over a batch of data and indices: one oracle gradient per sample."""
    case = GRAD_CASES[3]
    batch_idx = np.stack([case.indices, -1 - case.indices[..., ::-1, :]]).astype(np.int32)
    xs = jnp.asarray(np.stack([data(case, np.float32, seed=s) for s in (1, 2)]))
    g = upstream(case, np.float32)

    def loss(x: jax.Array, i: jax.Array) -> jax.Array:
        return (og.gather_elements(x, i, axis=1) * g).sum()

    grads = jax.jit(jax.vmap(jax.grad(loss)))(xs, jnp.asarray(batch_idx))
    for b in range(2):
        want = GradCase("", ELEMENTS, case.data_shape, batch_idx[b], {"axis": 1}).grad(g)
        assert_identical(np.asarray(grads[b]), want)


# --------------------------------------------------------------------------- jit and vmap


@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize("traced", ["data", "indices", "both"])
def test_jit_matches_eager(op: str, traced: str) -> None:
    x, idx = jnp.asarray(X), i32(INDICES[op])
    want = np.asarray(apply(op, x, idx, 1))
    if traced == "data":
        got = jax.jit(lambda x: apply(op, x, idx, 1))(x)
    elif traced == "indices":
        got = jax.jit(lambda i: apply(op, x, i, 1))(idx)
    else:
        got = jax.jit(lambda x, i: apply(op, x, i, 1))(x, idx)
    assert_identical(np.asarray(got), want)


def test_jit_with_host_indices_checks_at_trace_time() -> None:
    """Lists and NumPy arrays are known while tracing: they are checked then, and raise."""
    x = jnp.asarray(X)
    got = jax.jit(lambda x: og.gather(x, [[0, -1]], axis=1))(x)
    assert_identical(np.asarray(got), np.asarray(og.gather(x, [[0, -1]], axis=1)))
    with pytest.raises(IndexError, match=r"index 5 at position \(0, 1\)"):
        jax.jit(lambda x: og.gather_elements(x, np.array([[0, 5]]), axis=1))(x)


@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize("over", ["data", "indices", "both"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_vmap_matches_a_loop(op: str, over: str, jit: bool) -> None:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 3, 5)).astype(np.float32)
    base = INDICES[op]
    idx = np.stack([base, -1 - base, base[::-1], base % 3]).astype(np.int32)
    in_axes = {"data": (0, None), "indices": (None, 0), "both": (0, 0)}[over]
    x_arg = xs if in_axes[0] == 0 else xs[0]
    i_arg = idx if in_axes[1] == 0 else idx[0]
    fn = jax.vmap(lambda x, i: apply(op, x, i, 1), in_axes=in_axes)
    out = (jax.jit(fn) if jit else fn)(jnp.asarray(x_arg), jnp.asarray(i_arg))
    for b in range(4):
        want = apply(
            op,
            jnp.asarray(x_arg[b] if in_axes[0] == 0 else x_arg),
            jnp.asarray(i_arg[b] if in_axes[1] == 0 else i_arg),
            1,
        )
        assert_identical(np.asarray(out[b]), np.asarray(want))


# --------------------------------------------------------------------------- out of range

FILL = {
    "float32": np.float32(np.nan),
    "bfloat16": np.nan,
    "int32": np.iinfo(np.int32).min,
    "int8": np.iinfo(np.int8).min,
    "uint8": np.iinfo(np.uint8).max,
    "bool": True,
}


def _typed(dtype: str) -> jax.Array:
    values = (np.arange(15).reshape(3, 5) % 7).astype(np.float32)
    if dtype == "bool":
        return jnp.asarray(values == 0)  # mostly False: a fill of True shows
    return jnp.asarray(values).astype(dtype)


def _assert_filled(got: Any, want_valid: np.ndarray, bad: np.ndarray, dtype: str) -> None:
    got = np.asarray(got.astype(jnp.float32) if dtype == "bfloat16" else got)
    np.testing.assert_array_equal(got[~bad], want_valid[~bad])
    if dtype in ("float32", "bfloat16"):
        assert np.isnan(got[bad]).all(), got
    else:
        assert (got[bad] == FILL[dtype]).all(), got


@pytest.mark.parametrize("dtype", list(FILL))
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize("bad_value", [5, -6, 2**31 - 1, -(2**31)])
def test_jit_out_of_range_gives_the_fill_value(op: str, dtype: str, bad_value: int) -> None:
    """Never another element's value: each bad index reads the fill value, the rest are right."""
    x = _typed(dtype)
    idx = INDICES[op].copy()
    idx[1, 1] = bad_value
    good = np.where(idx == bad_value, 0, idx)
    want_valid = np.asarray(apply(op, x, i32(good), 1))
    if dtype == "bfloat16":
        want_valid = want_valid.astype(np.float32)
    got = jax.jit(lambda x, i: apply(op, x, i, 1))(x, i32(idx))
    bad = np.zeros(want_valid.shape, bool)
    if op == GATHER:
        bad[:, 1, 1] = True  # output (row, j0, j1) reads indices[j0, j1]
    else:
        bad[1, 1] = True
    _assert_filled(got, want_valid, bad, dtype)


#: GatherND tuples into (3, 4, 5) data, per number of coordinates: each bad tuple has one
#: coordinate out of its own axis' range (3 for axis 0, 4 for axis 1, -6 for axis 2).
ND_TUPLES = {
    1: [[0], [3], [-3], [-4]],
    2: [[0, -1], [3, 0], [-3, 2], [2, 4], [-3, -4]],
    3: [[0, -1, 4], [2, 3, -6], [-1, 0, 0], [1, -5, 1]],
}


@pytest.mark.parametrize("k", list(ND_TUPLES))
def test_jit_gather_nd_fills_each_tuple_with_a_bad_coordinate(k: int) -> None:
    """The whole slice of a bad tuple holds the fill; checkify names the first bad one."""
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    idx = np.array(ND_TUPLES[k], np.int32)
    want = oracle.gather_nd(x, idx, check_bounds=False, fill=True)
    fn = jax.jit(lambda x, i: og.gather_nd(x, i))
    assert_identical(np.asarray(fn(jnp.asarray(x), i32(idx))), want)
    bad = np.argwhere((idx < -np.array(x.shape[:k])) | (idx >= np.array(x.shape[:k])))[0]
    message = _checkified_message(fn, jnp.asarray(x), i32(idx))
    assert message is not None
    assert f"index {idx[tuple(bad)]} at position {tuple(int(p) for p in bad)}" in message


def test_eager_vmap_out_of_range_gives_the_fill_value() -> None:
    """Eager vmap traces too: no raise there, and no other element's value either."""
    x = jnp.arange(3.0)
    got = jax.vmap(lambda i: og.gather(x, i))(i32(np.array([[0, 3], [-4, 1]])))
    assert np.isnan(np.asarray(got)).tolist() == [[False, True], [True, False]]


@pytest.mark.parametrize(
    "call",
    [lambda x, i: og.gather(x, i, opset=1), lambda x, i: openvino.gather_elements(x, i, 0)],
    ids=["gather-1", "openvino"],
)
def test_jit_negative_index_counts_from_the_end_in_every_version(call: Any) -> None:
    """Gather-1 and OpenVINO-6 count negative indices from the end too: [-s, s-1].

    Under jit -1 and -3 read elements 2 and 0; -4 is out of range, the fill value.
    """
    got = np.asarray(jax.jit(call)(jnp.arange(3.0), i32(np.array([2, -1, -3, -4]))))
    assert got[:3].tolist() == [2.0, 2.0, 0.0]
    assert np.isnan(got[3])


# --------------------------------------------------------------------------- checkify


def _checkified_message(fn: Any, *args: Any) -> str | None:
    err, _ = checkify.checkify(fn)(*args)
    return err.get()


@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize("bad_value", [5, -6])
@pytest.mark.parametrize("jit", [False, True], ids=["checkify", "checkify-jit"])
def test_checkify_surfaces_the_eager_index_error(op: str, bad_value: int, jit: bool) -> None:
    x = jnp.asarray(X)
    idx = INDICES[op].copy()
    idx[2, 1] = bad_value
    with pytest.raises(IndexError) as info:
        apply(op, x, i32(idx), 1)
    eager = str(info.value)
    assert f"index {bad_value} at position (2, 1)" in eager

    def fn(x: jax.Array, i: jax.Array) -> jax.Array:
        return apply(op, x, i, 1)

    if not jit:
        # Outside jit checkify hands concrete arrays through (jax 0.10.2): the values are
        # known, so the eager check raises, with the same text.
        with pytest.raises(IndexError) as again:
            checkify.checkify(fn)(x, i32(idx))
        assert str(again.value) == eager
        return
    checked = checkify.checkify(jax.jit(fn))
    err, _ = checked(x, i32(idx))
    message = err.get()
    assert message is not None
    # checkify appends its own note: "(`check` failed)".
    assert message.startswith(eager), (message, eager)
    with pytest.raises(checkify.JaxRuntimeError, match="position"):
        err.throw()
    # In range: no error.
    err, _ = checked(x, i32(INDICES[op]))
    assert err.get() is None


def test_checkify_reports_the_version_rules() -> None:
    msg = _checkified_message(
        jax.jit(lambda i: og.gather(jnp.arange(3.0), i, opset=1)), i32(np.array([-1, -4]))
    )
    assert msg is not None
    assert msg.startswith(
        "Gather-1: index -4 at position (1,) of indices is out of range for axis 0 of size 3; "
        "valid indices are [-3, 2]"
    )


def test_checkify_under_vmap() -> None:
    x = jnp.asarray(X)
    fn = jax.vmap(lambda i: og.gather_elements(x, i, axis=1))
    batch = np.stack([INDICES[ELEMENTS], INDICES[ELEMENTS]])
    batch[1, 0, 1] = 9
    msg = _checkified_message(jax.jit(fn), i32(batch))
    assert msg is not None
    assert "GatherElements-13: index 9 at position (0, 1) of indices" in msg


def test_checkify_records_nothing_without_check_bounds() -> None:
    idx = i32(np.array([0, 7]))
    fn = jax.jit(lambda x, i: og.gather(x, i, check_bounds=False))
    err, out = checkify.checkify(fn)(jnp.arange(3.0), idx)
    assert err.get() is None
    assert np.asarray(out)[0] == 0.0


# --------------------------------------------------------------------------- devices


@pytest.mark.parametrize("form", ["list", "numpy", "jax"])
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_result_on_data_device(op: str, form: str) -> None:
    device = jax.devices("cpu")[0]
    x = jax.device_put(X, device)
    idx = {"list": INDICES[op].tolist(), "numpy": INDICES[op], "jax": i32(INDICES[op])}[form]
    out = apply(op, x, idx, 1)
    assert out.devices() == {device}


@pytest.mark.gpu
@pytest.mark.skipif(not _gpus(), reason="needs a JAX GPU device")
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_gpu(op: str) -> None:
    """On a GPU: placement, jit, the fill value and checkify, as on the CPU."""
    gpu = _gpus()[0]
    x = jax.device_put(X, gpu)
    for idx in (INDICES[op].tolist(), INDICES[op], jnp.asarray(INDICES[op])):
        out = apply(op, x, idx, 1)
        assert out.devices() == {gpu}
        assert_identical(
            np.asarray(out), np.asarray(apply(op, jnp.asarray(X), i32(INDICES[op]), 1))
        )
    bad = INDICES[op].copy()
    bad[0, 0] = 5
    got = np.asarray(jax.jit(lambda x, i: apply(op, x, i, 1))(x, jax.device_put(bad, gpu)))
    assert np.isnan(got).sum() == (3 if op == GATHER else 1)
    err, _ = checkify.checkify(jax.jit(lambda x, i: apply(op, x, i, 1)))(
        x, jax.device_put(bad, gpu)
    )
    assert err.get() is not None
    assert "index 5 at position (0, 0)" in err.get()


def test_openvino_gather_nd_5_flattens_the_batch_dims_under_every_transform() -> None:
    """GatherND-5's result shape holds under jit, grad and vmap (its own reshape)."""
    d = np.arange(2 * 3 * 4 * 2, dtype=np.float32).reshape(2, 3, 4, 2)
    i = np.array([[[1], [0], [-1]], [[0], [2], [3]]], np.int32)
    want = oracle.gather_nd(d, i, 2).reshape(6, 2)  # GatherND-13's (2, 3) batch dims as one

    def f(x: Any) -> Any:
        return openvino.gather_nd(x, jnp.asarray(i), batch_dims=2, version=5)

    assert_identical(np.asarray(jax.jit(f)(jnp.asarray(d))), want)
    counts = np.zeros_like(d)
    for b0, b1 in np.ndindex(2, 3):
        counts[b0, b1, i[b0, b1, 0]] += 1
    assert_identical(np.asarray(jax.grad(lambda x: f(x).sum())(jnp.asarray(d))), counts)
    batched = jax.vmap(f)(jnp.stack([jnp.asarray(d)] * 2))
    assert_identical(np.asarray(batched), np.stack([want] * 2))


def test_openvino_gather_zeros_and_batches_under_every_transform() -> None:
    """Gather-8 with a batch dim before the axis under jit, grad (zero gradient where an
    index is out of range) and vmap; bfloat16 NaN payloads kept under jit."""
    d = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    i = np.array([[1, -1, 9], [-5, 0, 3]], np.int32)
    want = oracle.openvino_gather(d, i, axis=2, batch_dims=1)

    def f(x: Any) -> Any:
        return openvino.gather(x, jnp.asarray(i), axis=2, batch_dims=1)

    assert_identical(np.asarray(jax.jit(f)(jnp.asarray(d))), want)
    counts = np.zeros_like(d)
    for b, j in np.ndindex(2, 3):
        if -4 <= i[b, j] < 4:
            counts[b, :, i[b, j]] += 1
    assert_identical(np.asarray(jax.grad(lambda x: f(x).sum())(jnp.asarray(d))), counts)
    batched = jax.vmap(f)(jnp.stack([jnp.asarray(d)] * 2))
    assert_identical(np.asarray(batched), np.stack([want] * 2))
    payloads = np.array([0x7FC1, 0xFF81, 0x0001, 0x3F80], np.uint16).view(jnp.bfloat16)
    got = jax.jit(lambda x: openvino.gather(x, jnp.asarray([3, 0, 7, -3]), axis=0))(payloads)
    want16 = oracle.openvino_gather(payloads, np.array([3, 0, 7, -3]), axis=0)
    assert_identical(np.asarray(got), want16)
    grad16 = jax.grad(
        lambda x: openvino.gather(x, jnp.asarray([3, 9]), axis=0).astype(jnp.float32).sum()
    )(jnp.ones(4, jnp.bfloat16))
    assert_identical(np.asarray(grad16), np.array([0, 0, 0, 1], np.float32).astype(jnp.bfloat16))


def test_openvino_scatters_under_every_transform() -> None:
    """OpenVINO's scatters under jit (checkify names a bad index), vmap and grad."""
    from onnx_gather import openvino

    d = np.arange(12, dtype=np.float32).reshape(3, 4)
    calls = [
        (
            lambda x, i: openvino.scatter_update(x, i, jnp.ones((3, 2), jnp.float32), axis=1),
            np.array([3, 0]),
            1,
        ),
        (
            lambda x, i: openvino.scatter_elements_update(
                x, i, jnp.ones((3, 2), jnp.float32), axis=1, reduction="mean", use_init_val=False
            ),
            np.array([[1, 1], [0, -1], [2, 2]], np.int32),
            1,
        ),
        (
            lambda x, i: openvino.scatter_nd_update(
                x, i, jnp.ones((2, 4), jnp.float32), reduction="sub"
            ),
            np.array([[0], [-1]], np.int32),
            0,
        ),
    ]
    for fn, i, axis in calls:
        want = fn(jnp.asarray(d), i)  # (eager: the case table holds it to the oracle)
        assert_identical(np.asarray(jax.jit(fn)(jnp.asarray(d), jnp.asarray(i))), np.asarray(want))
        batched = jax.vmap(lambda x, fn=fn, i=i: fn(x, jnp.asarray(i)))(jnp.stack([d, d]))
        assert_identical(np.asarray(batched), np.stack([np.asarray(want)] * 2))
        grad = jax.grad(lambda x, fn=fn, i=i: fn(x, jnp.asarray(i)).sum())(jnp.asarray(d))
        assert grad.shape == d.shape
        bad = np.array(i).copy()
        bad.reshape(-1)[0] = 9
        err, _ = checkify.checkify(jax.jit(fn))(jnp.asarray(d), jnp.asarray(bad))
        message = err.get()
        assert message is not None
        assert (
            f"index 9 at position {(0,) * bad.ndim} of indices is out of range for axis {axis}"
            in message
        )
