"""Every index form under every transform, before and after eager calls (issue 16, item 1).

The table: index form (Python int, nested list, NumPy array, the data's own array) x
transform x whether eager calls ran first, for every operator of the registry, ONNX's and
OpenVINO's (the scatters write or add a slice of the data itself, so gradients reach
both), on the CPU. A bad index raises, under each transform, or (OpenVINO's Gather)
reads zeros.

* torch: ``torch.compile(fullgraph=True)`` static and ``dynamic=True``, ``torch.func.vmap``,
  ``torch.func.grad``; also ``torch.export.export``.
* jax: ``jax.jit``, ``jax.vmap``, ``jax.grad``, ``jax.export`` with a symbolic axis size.

"Eager first" runs eager calls of other shapes and every index form before the transform
(they fill the plan cache and the backend cache, where compilers used to break) and again
after it, which must not recompile a torch.compile'd function. "Not eager first" starts
from empty caches. Expected values come from the loop oracle and grad_oracle, never from a
backend. Skips the parts of a library that is not among ONNX_GATHER_BACKENDS.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np
import pytest
from grad_oracle import ELEMENTS, FUNCTIONS, GATHER, GRADS, ND, GradCase
from helpers import assert_identical

import onnx_gather as og
from onnx_gather import _api, _dispatch, openvino
from onnx_gather._conformance.runner import oracle_of, run_oracle
from onnx_gather._memo import Memo

SE, SN = "scatter_elements", "scatter_nd"
SC, TS = "scatter", "tensor_scatter"
OV_G, OV_ND = "openvino.gather", "openvino.gather_nd"
OV_SU, OV_SEU, OV_SNU = (
    "openvino.scatter_update",
    "openvino.scatter_elements_update",
    "openvino.scatter_nd_update",
)
#: The operators whose third input is the updates, with their public functions.
SCATTERS = {
    SE: og.scatter_elements,
    SN: og.scatter_nd,
    SC: og.scatter,
    OV_SU: openvino.scatter_update,
    OV_SEU: openvino.scatter_elements_update,
    OV_SNU: openvino.scatter_nd_update,
}
GATHERS = {**FUNCTIONS, OV_G: openvino.gather, OV_ND: openvino.gather_nd}

needs_torch = pytest.mark.backend("torch")
needs_jax = pytest.mark.backend("jax")

X = np.arange(15, dtype=np.float32).reshape(3, 5) / 8  # exact in float32
INDICES = {
    GATHER: np.array([[0, -1], [4, 0], [-5, 2]], np.int64),
    ELEMENTS: np.array([[0, -1], [4, 4], [-5, 2]], np.int64),
    # One batch dim (data's rows), one coordinate into axis 1.
    ND: np.array([[[0], [-1]], [[4], [0]], [[-5], [2]]], np.int64),
    # Row 1 writes column 4 twice: the second update wins.
    SE: np.array([[0, -1], [4, 4], [-5, 2]], np.int64),
    # (row, column) tuples, rows valid in two-row data too; (0, -1) twice: both add up.
    SN: np.array([[0, -1], [1, 4], [-2, 4], [0, -1]], np.int64),
    SC: np.array([[0, -1], [4, 4], [-5, 2]], np.int64),
    # One write position per row of the cache (its batch), two columns written from each.
    TS: np.array([0, 3, 1], np.int64),
    OV_G: np.array([[0, -1], [4, 0], [-5, 2]], np.int64),
    OV_ND: np.array([[[0], [-1]], [[4], [0]], [[-5], [2]]], np.int64),
    # ScatterUpdate takes no negative index; column 4 written twice: the second wins.
    OV_SU: np.array([[0, 3], [4, 4]], np.int64),
    OV_SEU: np.array([[0, -1], [4, 4], [-5, 2]], np.int64),
    OV_SNU: np.array([[0, -1], [1, 4], [-2, 4], [0, -1]], np.int64),
}
#: Every operator addresses axis 1 of X (size 5): the same index values are valid for all.
ATTRIBUTES = {
    GATHER: {"axis": 1},
    ELEMENTS: {"axis": 1},
    ND: {"batch_dims": 1},
    SE: {"axis": 1, "reduction": "none"},
    SN: {"reduction": "add"},
    SC: {"axis": 1},
    TS: {"axis": 1},
    OV_G: {"axis": 1},
    OV_ND: {"batch_dims": 1},
    OV_SU: {"axis": 1},
    OV_SEU: {"axis": 1, "reduction": "none"},
    OV_SNU: {"reduction": "sum"},
}
#: Rows of the second data shape each operator takes: GatherElements' indices may be
#: smaller than data off the axis but not larger, GatherND's batch dim must match, and so
#: must TensorScatter's.
SECOND_ROWS = {
    GATHER: 4,
    ELEMENTS: 3,
    ND: 3,
    SE: 3,
    SN: 4,
    SC: 3,
    TS: 3,
    OV_G: 4,
    OV_ND: 3,
    OV_SU: 4,
    OV_SEU: 3,
    OV_SNU: 4,
}
FORMS = ["int", "list", "numpy", "own"]
#: A Python int is a 0-d index: the Gathers alone take one.
ROWS = [(op, form) for op in INDICES for form in FORMS if form != "int" or op in (GATHER, OV_G)]
ROW_IDS = [f"{op}-{form}" for op, form in ROWS]
#: The rows whose bad index is an error: OpenVINO's Gather defines zeros in its place.
ERROR_ROWS = [(op, form) for op, form in ROWS if op != OV_G]
ERROR_IDS = [f"{op}-{form}" for op, form in ERROR_ROWS]
ZERO_ROWS = [(op, form) for op, form in ROWS if op == OV_G]
ZERO_IDS = [f"{op}-{form}" for op, form in ZERO_ROWS]
VALID = re.escape("valid indices are [-5, 4]")
#: What the eager error of the bad index (``host_indices(..., bad=True)``) says.
BAD_INDEX = {
    **{op: r"index 5 at position .*" + VALID for op in INDICES},
    OV_SU: r"index 5 at position .*" + re.escape("valid indices are [0, 4]"),
    TS: r"index 4 at position \(1,\) of write_indices .*write_indices\[b\] \+ 2 <= 5",
}


def host_indices(op: str, form: str, bad: bool = False) -> Any:
    """The indices in ``form`` (not "own").

    ``bad`` puts 5 (one past the end) at (1, 1); for TensorScatter 4 at (1,), whose two
    writes would end past the end.
    """
    if form == "int":
        return 5 if bad else -1
    values = INDICES[op].copy()
    if bad and op == TS:
        values[1] = 4
    elif bad:
        values[1, 1] = 5
    return values.tolist() if form == "list" else values


def indices_array(op: str, form: str) -> np.ndarray:
    return np.asarray(host_indices(op, form))


def updates_of(op: str, x: Any, idx_shape: tuple[int, ...]) -> Any:
    """A scatter's updates: a slice of ``x`` itself (twice it), so gradients reach both."""
    if op in (SE, SC, OV_SEU):
        return x[: idx_shape[0], : idx_shape[1]] * 2
    if op == OV_SU:  # data.shape[:1] + indices.shape
        count = int(np.prod(idx_shape))
        return x[:, :count].reshape((x.shape[0], *idx_shape)) * 2
    if op == TS:  # two columns per row of the cache
        return x[:, :2] * 2
    return x[0, : idx_shape[0]] * 2  # ScatterND: one element per (row, column) tuple


def apply(op: str, x: Any, idx: Any, **attributes: Any) -> Any:
    """The operator's public function, with the table's attributes (or ``attributes``)."""
    given = attributes or ATTRIBUTES[op]
    if op == TS:
        return og.tensor_scatter(x, updates_of(op, x, ()), idx, **given)
    if op in SCATTERS:
        shape = tuple(np.shape(idx))  # (a list's, an array's or a tensor's)
        return SCATTERS[op](x, idx, updates_of(op, x, shape), **given)
    return GATHERS[op](x, idx, **given)


def _arrays(op: str, x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """The operator's inputs in its order (as the oracle takes them)."""
    if op == TS:
        return (x, updates_of(op, x, ()), idx)
    if op in SCATTERS:
        return (x, idx, updates_of(op, x, idx.shape))
    return (x, idx)


def want(
    op: str, form: str, x: np.ndarray = X, check_bounds: bool = True, bad: bool = False
) -> np.ndarray:
    arrays = _arrays(op, x, np.asarray(host_indices(op, form, bad)))
    return run_oracle(op, arrays, ATTRIBUTES[op], None, check_bounds)


def want_grad(op: str, form: str, g: np.ndarray, bad: bool = False) -> np.ndarray:
    if op in GRADS:
        return GradCase("", op, X.shape, indices_array(op, form), ATTRIBUTES[op]).grad(g)
    # Every other operator of the table (a scatter of x's own slice, with reduction none
    # or add; OpenVINO's gathers) is linear in x: its gradient is sum(g * f(e_j)) for each
    # unit vector e_j (exact: small integers).
    grad = np.zeros(X.size, np.float32)
    for j in range(X.size):
        unit = np.zeros(X.size, np.float32)
        unit[j] = 1
        grad[j] = np.sum(g * want(op, form, unit.reshape(X.shape), bad=bad))
    return grad.reshape(X.shape)


def upstream(op: str, form: str) -> np.ndarray:
    shape = want(op, form).shape
    return np.random.default_rng(0).integers(-4, 5, shape).astype(np.float32)


@pytest.fixture
def empty_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backend and plan caches as in a fresh process."""
    monkeypatch.setattr(_dispatch, "_BY_TYPE", Memo(256))
    monkeypatch.setattr(_api, "_CALLS", Memo(4096))


def eager_calls(make: Any, to_index: Any) -> None:
    """Eager calls of both operators, every form, two data shapes: what a program does."""
    for shape in ((3, 5), (2, 7)):
        x = make(np.ones(shape, np.float32))
        for op, form in ROWS:
            idx = indices_array(op, form)
            idx = idx[: shape[0]] if idx.ndim >= 2 or op == TS else idx
            given = to_index(idx) if form == "own" else (idx.tolist() if form != "numpy" else idx)
            apply(op, x, given)


# --------------------------------------------------------------------------- torch

TORCH_TRANSFORMS = ["compile", "compile-dynamic", "vmap", "grad"]


def _torch() -> Any:
    import torch

    return torch


def torch_indices(op: str, form: str, bad: bool = False) -> Any:
    torch = _torch()
    if form == "own":
        return torch.from_numpy(np.asarray(host_indices(op, "numpy", bad)))
    return host_indices(op, form, bad)


def _compile(fn: Any, dynamic: bool) -> Any:
    torch = _torch()
    with warnings.catch_warnings():
        # Importing inductor imports torch.utils.mkldnn, which warns about TorchScript.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        import torch._inductor.compile_fx
    return torch.compile(fn, fullgraph=True, dynamic=dynamic)


def _torch_eager_calls() -> None:
    torch = _torch()
    eager_calls(torch.from_numpy, torch.from_numpy)


@needs_torch
@pytest.mark.parametrize("eager_first", [False, True], ids=["fresh", "eager-first"])
@pytest.mark.parametrize("transform", TORCH_TRANSFORMS)
@pytest.mark.parametrize(("op", "form"), ROWS, ids=ROW_IDS)
def test_torch_table(
    empty_caches: None, op: str, form: str, transform: str, eager_first: bool
) -> None:
    torch = _torch()
    torch._dynamo.reset()
    if eager_first:
        _torch_eager_calls()
    idx = torch_indices(op, form)
    x = torch.from_numpy(X.copy())
    if transform.startswith("compile"):
        dynamic = transform == "compile-dynamic"
        fn = _compile(lambda t: apply(op, t, idx), dynamic)
        np.testing.assert_array_equal(fn(x).numpy(), want(op, form))
        # Another axis size (and, for Gather, batch size): a new graph when static, the
        # same one when dynamic. Rows beyond the indices' are trimmed by GatherElements.
        x2 = (np.arange(4 * 7, dtype=np.float32).reshape(4, 7) / 8)[: SECOND_ROWS[op]]
        got2 = fn(torch.from_numpy(x2.copy()))
        np.testing.assert_array_equal(got2.numpy(), want(op, form, x2))
        # Eager calls afterwards must not invalidate the compiled code (no guard on a
        # cache of this package); a dynamic graph serves both shapes without recompiling.
        _torch_eager_calls()
        stance = "fail_on_recompile" if dynamic else "default"
        with torch.compiler.set_stance(stance):
            np.testing.assert_array_equal(fn(x).numpy(), want(op, form))
            np.testing.assert_array_equal(
                fn(torch.from_numpy(x2.copy())).numpy(), want(op, form, x2)
            )
    elif transform == "vmap":
        xs = np.stack([X, X[::-1].copy() * 2])
        out = torch.func.vmap(lambda t: apply(op, t, idx))(torch.from_numpy(xs))
        for b in range(2):
            np.testing.assert_array_equal(out[b].numpy(), want(op, form, xs[b]))
    else:
        g = upstream(op, form)
        grad = torch.func.grad(lambda t: (apply(op, t, idx) * torch.from_numpy(g)).sum())(x)
        np.testing.assert_array_equal(grad.numpy(), want_grad(op, form, g))
    if eager_first:
        _torch_eager_calls()


@needs_torch
@pytest.mark.parametrize("transform", TORCH_TRANSFORMS)
@pytest.mark.parametrize(("op", "form"), ERROR_ROWS, ids=ERROR_IDS)
def test_torch_table_out_of_range(op: str, form: str, transform: str) -> None:
    """Every form, every transform: an error when the graph runs, never a value.

    The eager IndexError under ``torch.func``; under ``torch.compile`` the compiled
    kernel's check or the fused operator's IndexError.
    """
    torch = _torch()
    torch._dynamo.reset()
    idx = torch_indices(op, form, bad=True)
    x = torch.from_numpy(X.copy())
    with pytest.raises(IndexError) as eager:
        apply(op, x, idx)
    assert re.search(BAD_INDEX[op], str(eager.value))
    if transform.startswith("compile"):
        run = _compile(lambda t: apply(op, t, idx), transform == "compile-dynamic")
    elif transform == "vmap":
        run = torch.func.vmap(lambda t: apply(op, t, idx))
        x = torch.stack([x, x])
    else:
        run = torch.func.grad(lambda t: apply(op, t, idx).sum())
    if transform.startswith("compile"):
        # Compiled: torch's operations raise the compiled kernel's own RuntimeError (the
        # README's semantics table); the fused operator the eager IndexError, to which
        # Dynamo may append the user code's location when it runs while compiling.
        with pytest.raises((IndexError, RuntimeError)) as info:
            run(x)
        if isinstance(info.value, IndexError):
            assert str(info.value).startswith(str(eager.value))
        else:
            assert "index out of bounds" in str(info.value)
        return
    with pytest.raises(IndexError) as info:
        run(x)
    assert str(info.value) == str(eager.value)


@needs_torch
@pytest.mark.parametrize("transform", TORCH_TRANSFORMS)
@pytest.mark.parametrize(("op", "form"), ZERO_ROWS, ids=ZERO_IDS)
def test_torch_table_out_of_range_reads_zeros(op: str, form: str, transform: str) -> None:
    """OpenVINO's Gather defines the value of an out-of-range index: zeros, everywhere."""
    torch = _torch()
    torch._dynamo.reset()
    idx = torch_indices(op, form, bad=True)
    x = torch.from_numpy(X.copy())
    zeros = want(op, form, bad=True)
    assert (zeros == 0).any()
    np.testing.assert_array_equal(apply(op, x, idx).numpy(), zeros)
    if transform.startswith("compile"):
        run = _compile(lambda t: apply(op, t, idx), transform == "compile-dynamic")
        np.testing.assert_array_equal(run(x).numpy(), zeros)
    elif transform == "vmap":
        out = torch.func.vmap(lambda t: apply(op, t, idx))(torch.stack([x, x]))
        for b in range(2):
            np.testing.assert_array_equal(out[b].numpy(), zeros)
    else:
        g = upstream(op, form)
        grad = torch.func.grad(lambda t: (apply(op, t, idx) * torch.from_numpy(g)).sum())(x)
        np.testing.assert_array_equal(grad.numpy(), want_grad(op, form, g, bad=True))


@needs_torch
@pytest.mark.parametrize(("op", "form"), ROWS, ids=ROW_IDS)
def test_torch_export(op: str, form: str) -> None:
    torch = _torch()
    idx = torch_indices(op, form)

    class Module(torch.nn.Module):
        def forward(self, x: Any, i: Any) -> Any:
            return apply(op, x, i if form == "own" else idx) * 2

    args = (torch.from_numpy(X.copy()), torch_indices(op, "own"))
    exported = torch.export.export(Module(), args)
    got = exported.module()(*args)
    np.testing.assert_array_equal(got.numpy(), want(op, form) * 2)
    if form == "own" and op == OV_G:
        bad = torch_indices(op, "own", bad=True)
        np.testing.assert_array_equal(
            exported.module()(args[0], bad).numpy(), want(op, "numpy", bad=True) * 2
        )
    elif form == "own" and op == TS:
        # Its check is in the graph: the bad write goes past the axis, and the exported
        # index_put's own check raises (the README's semantics table), naming no value.
        bad = torch_indices(op, "own", bad=True)
        with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 5"):
            exported.module()(args[0], bad)
    elif form == "own":
        bad = torch_indices(op, "own", bad=True)
        with pytest.raises(IndexError, match=BAD_INDEX[op]):
            exported.module()(args[0], bad)


@needs_torch
def test_torch_export_any_size() -> None:
    """A dim declared to take any size stays symbolic: the route chosen for speed places
    no guard on it (a GatherElements of ``2 * n`` outputs once guarded ``n <= 131071``,
    which torch.export refuses as a violated constraint)."""
    torch = _torch()

    class Module(torch.nn.Module):
        def forward(self, x: Any, i: Any) -> Any:
            return (og.gather(x, i[:, 0], axis=0), og.gather_elements(x, i, axis=1),
                    og.gather_nd(x, i[:, :1], batch_dims=1), og.scatter_elements(x, i, -x[:, :2], axis=1))  # fmt: skip

    n = torch.export.Dim("n")
    i = torch.tensor([[0, -1], [4, 0], [-5, 2]])
    exported = torch.export.export(
        Module(), (torch.from_numpy(X.copy()), i), dynamic_shapes=({0: n}, {0: n})
    )
    x = torch.arange(35, dtype=torch.float32).reshape(7, 5)
    other = torch.tensor([[1, -2], [3, 4], [-1, 0], [2, 2], [0, -5], [4, 1], [-3, 3]])
    for got, expected in zip(exported.module()(x, other), Module()(x, other), strict=True):
        assert torch.equal(got, expected)
    with pytest.raises(
        IndexError, match=r"index 5 at position \(1, 1\) of indices is out of range"
    ):
        exported.module()(x, other.where(other != 4, 5))


@needs_torch
def test_torch_compile_list_indices_issue_example() -> None:
    """The report: a list inside a compiled function failed with "Unsupported ndarray ..."."""
    torch = _torch()
    torch._dynamo.reset()
    t = torch.arange(5.0)
    fn = _compile(lambda a: og.gather(a, [0, -1], 0), dynamic=False)
    assert fn(t).tolist() == [0.0, 4.0]
    empty = _compile(lambda a: og.gather(a, [], 0), dynamic=False)(t)
    assert empty.shape == (0,)
    # Under fullgraph=True Dynamo reports any exception the traced code raises as its own
    # "Observed exception" (torch 2.13.0); without it the frame runs eagerly and raises ours.
    floats = torch.compile(lambda a: og.gather(a, [0.5], 0))
    with pytest.raises(TypeError, match="indices must be int32 or int64, got float64"):
        floats(t)


# --------------------------------------------------------------------------- jax

JAX_TRANSFORMS = ["jit", "vmap", "grad", "export"]


def _jax() -> Any:
    import jax

    return jax


def jax_indices(op: str, form: str, bad: bool = False) -> Any:
    import jax.numpy as jnp

    if form == "own":
        return jnp.asarray(np.asarray(host_indices(op, "numpy", bad)).astype(np.int32))
    return host_indices(op, form, bad)


def _jax_eager_calls() -> None:
    import jax.numpy as jnp

    eager_calls(jnp.asarray, lambda a: jnp.asarray(a.astype(np.int32)))


def _symbolic_axis() -> Any:
    """Data of shape (3, n), n >= 5: the plan's axis size is symbolic."""
    jax = _jax()
    from jax import export

    shape = export.symbolic_shape("3, n", constraints=("n >= 5",))
    return jax.ShapeDtypeStruct(shape, np.float32)


@needs_jax
@pytest.mark.parametrize("eager_first", [False, True], ids=["fresh", "eager-first"])
@pytest.mark.parametrize("transform", JAX_TRANSFORMS)
@pytest.mark.parametrize(("op", "form"), ROWS, ids=ROW_IDS)
def test_jax_table(
    empty_caches: None, op: str, form: str, transform: str, eager_first: bool
) -> None:
    jax = _jax()
    import jax.numpy as jnp
    from jax import export

    if eager_first:
        _jax_eager_calls()
    idx = jax_indices(op, form)
    x = jnp.asarray(X)
    if transform == "jit":
        got = jax.jit(lambda t: apply(op, t, idx))(x)
        np.testing.assert_array_equal(np.asarray(got), want(op, form))
    elif transform == "vmap":
        xs = np.stack([X, X[::-1] * 2])
        out = jax.vmap(lambda t: apply(op, t, idx))(jnp.asarray(xs))
        for b in range(2):
            np.testing.assert_array_equal(np.asarray(out[b]), want(op, form, xs[b]))
    elif transform == "grad":
        g = upstream(op, form)
        grad = jax.grad(lambda t: (apply(op, t, idx) * g).sum())(x)
        np.testing.assert_array_equal(np.asarray(grad), want_grad(op, form, g))
    else:
        exported = export.export(jax.jit(lambda t: apply(op, t, idx)))(_symbolic_axis())
        np.testing.assert_array_equal(np.asarray(exported.call(x)), want(op, form))
        x7 = np.arange(21, dtype=np.float32).reshape(3, 7) / 8
        got7 = exported.call(jnp.asarray(x7))
        # The size is symbolic: -1 counts from the end of this call's axis.
        np.testing.assert_array_equal(np.asarray(got7), want(op, form, x7))
    if eager_first:
        _jax_eager_calls()


@needs_jax
@pytest.mark.parametrize("transform", JAX_TRANSFORMS)
@pytest.mark.parametrize(("op", "form"), ERROR_ROWS, ids=ERROR_IDS)
def test_jax_table_out_of_range(op: str, form: str, transform: str) -> None:
    """Host indices are constants: checked at trace time, the eager IndexError.

    Traced own indices under jit cannot raise: each bad position holds the fill value
    (test_jax_transforms covers checkify). Against a symbolic size (export) no host index
    can be checked at trace time either: fill value too.
    """
    jax = _jax()
    import jax.numpy as jnp
    from jax import export

    idx = jax_indices(op, form, bad=True)
    x = jnp.asarray(X)
    with pytest.raises(IndexError) as eager:
        apply(op, x, idx)
    assert re.search(BAD_INDEX[op], str(eager.value))
    if transform == "export":
        exported = export.export(jax.jit(lambda t: apply(op, t, idx)))(_symbolic_axis())
        _assert_unchecked(op, form, np.asarray(exported.call(x)))
        return
    if transform == "jit" and form == "own":
        _assert_unchecked(op, form, np.asarray(jax.jit(lambda t, i: apply(op, t, i))(x, idx)))
        return
    if transform == "jit":
        run = jax.jit(lambda t: apply(op, t, idx))
    elif transform == "vmap":
        run = jax.vmap(lambda t: apply(op, t, idx))
        x = jnp.stack([x, x])
    else:
        run = jax.grad(lambda t: apply(op, t, idx).sum())
    with pytest.raises(IndexError) as info:
        run(x)
    assert str(info.value) == str(eager.value)


@needs_jax
@pytest.mark.parametrize("transform", JAX_TRANSFORMS)
@pytest.mark.parametrize(("op", "form"), ZERO_ROWS, ids=ZERO_IDS)
def test_jax_table_out_of_range_reads_zeros(op: str, form: str, transform: str) -> None:
    """OpenVINO's Gather defines the value of an out-of-range index: zeros, traced or not."""
    jax = _jax()
    import jax.numpy as jnp
    from jax import export

    idx = jax_indices(op, form, bad=True)
    x = jnp.asarray(X)
    zeros = want(op, form, bad=True)
    assert (zeros == 0).any()
    np.testing.assert_array_equal(np.asarray(apply(op, x, idx)), zeros)
    if transform == "jit" and form == "own":  # traced indices
        got = jax.jit(lambda t, i: apply(op, t, i))(x, idx)
        np.testing.assert_array_equal(np.asarray(got), zeros)
    elif transform == "jit":  # constants
        got = jax.jit(lambda t: apply(op, t, idx))(x)
        np.testing.assert_array_equal(np.asarray(got), zeros)
    elif transform == "vmap":
        out = jax.vmap(lambda t: apply(op, t, idx))(jnp.stack([x, x]))
        for b in range(2):
            np.testing.assert_array_equal(np.asarray(out[b]), zeros)
    elif transform == "grad":
        g = upstream(op, form)
        grad = jax.grad(lambda t: (apply(op, t, idx) * g).sum())(x)
        np.testing.assert_array_equal(np.asarray(grad), want_grad(op, form, g, bad=True))
    else:
        exported = export.export(jax.jit(lambda t: apply(op, t, idx)))(_symbolic_axis())
        np.testing.assert_array_equal(np.asarray(exported.call(x)), zeros)


@needs_jax
def test_jax_export_openvino_gather_far_indices() -> None:
    """Host int64 indices against a symbolic size go to JAX unchecked: without x64 they
    saturate into int32 rather than wrap (2**32 + 1 read element 1, not zeros)."""
    jax = _jax()
    import jax.numpy as jnp
    from jax import export

    idx = np.array([0, 2**32 + 1, -1, 2**31, -(2**40)], np.int64)
    fn = jax.jit(lambda t: openvino.gather(t, idx, axis=1))
    exported = export.export(fn)(_symbolic_axis())
    got = np.asarray(exported.call(jnp.asarray(X)))
    np.testing.assert_array_equal(got, run_oracle(OV_G, (X, idx), {"axis": 1}, None, True))


def _assert_unchecked(op: str, form: str, got: np.ndarray) -> None:
    """What a call that cannot check its bad index (5 at (1, 1)) gives under tracing.

    A scatter drops that update, a gather reads JAX's fill value there (NaN for float
    data) and real values elsewhere: the oracle's unchecked answers.
    """
    bad = np.asarray(host_indices(op, "numpy" if form != "int" else form, bad=True))
    arrays = _arrays(op, X, bad)
    if oracle_of(op).drops:
        np.testing.assert_array_equal(got, run_oracle(op, arrays, ATTRIBUTES[op], None, False))
        return
    want = run_oracle(op, arrays, ATTRIBUTES[op], None, False, fill=True)
    assert np.isnan(want).any()
    assert_identical(got, want)


# --------------------------------------------------------------------------- bit-exactness

# NaN payloads that gathers have been seen to rewrite (issue 15, item 16), per dtype, as
# the unsigned bits: a signalling NaN, a quiet NaN with payload, a negative one.
PAYLOADS = {
    "float16": [0x7C01, 0x7E01, 0xFC01, 0x7D00, 0x3C00],
    "bfloat16": [0x7FC1, 0x7F81, 0xFFC1, 0x7FA0, 0x3F80],
    "float32": [0x7F800001, 0x7FC00001, 0xFF800001, 0x7FA00000, 0x3F800000],
}
PERMUTATION = [[4, 0, 3, 1, 2, 2]]


def _permuting(op: str, make: Any) -> Any:
    """A call of ``op`` that reads row 0 of (1, 5) data in PERMUTATION's order: (1, 6) out.

    ``make`` turns the indices (a nested list) into the library's array.
    """
    perm = PERMUTATION[0]
    given = {
        GATHER: (make(perm), {"axis": 1}),  # (1, 6)
        ELEMENTS: (make(PERMUTATION), {"axis": 1}),  # (1, 6)
        ND: (make([[[0, j] for j in perm]]), {"batch_dims": 0}),  # (1, 6) tuples of (row, col)
    }
    indices, attributes = given[op]
    return lambda t: FUNCTIONS[op](t, indices, **attributes)


def _torch_payload_data(dtype: str) -> Any:
    torch = _torch()
    bits = np.array([PAYLOADS[dtype]], np.uint16 if dtype != "float32" else np.uint32)
    signed = bits.view(np.int16 if dtype != "float32" else np.int32)
    return torch.from_numpy(signed).view(getattr(torch, dtype))


def _expected_bits(dtype: str) -> list[list[int]]:
    return [[PAYLOADS[dtype][j] for j in PERMUTATION[0]]]


def _torch_bits(t: Any) -> list[list[int]]:
    torch = _torch()
    raw = t.detach().view(torch.int16 if t.element_size() == 2 else torch.int32)
    mask = 0xFFFF if t.element_size() == 2 else 0xFFFFFFFF
    return [[v & mask for v in row] for row in raw.tolist()]


@needs_torch
# Dynamo instantiates the bits gather's autograd.Function itself, and torch warns about it
# (torch 2.13.0): not our call.
@pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")
@pytest.mark.parametrize("dtype", list(PAYLOADS))
@pytest.mark.parametrize("op", [GATHER, ELEMENTS, ND])
@pytest.mark.parametrize("path", ["requires_grad", "func.grad", "compile", "vmap"])
def test_torch_nan_payloads_are_kept(op: str, dtype: str, path: str) -> None:
    torch = _torch()
    x = _torch_payload_data(dtype)
    fn = _permuting(op, torch.tensor)

    if path == "requires_grad":
        out = fn(x.clone().requires_grad_())
        assert out.requires_grad
    elif path == "func.grad":
        seen: list[Any] = []

        def loss(t: Any) -> Any:
            out = fn(t)
            seen.append(out)
            return out.sum()  # NaN, but its gradient is 1 everywhere

        grad = torch.func.grad(loss)(x.clone())
        assert grad.tolist() == [[1.0, 1.0, 2.0, 1.0, 1.0]]
        out = torch._C._functorch.get_unwrapped(seen[0])
    elif path == "compile":
        torch._dynamo.reset()
        out = _compile(fn, dynamic=False)(x.clone().requires_grad_())
    else:
        out = torch.func.vmap(fn)(torch.stack([x, x]))[1]
    assert _torch_bits(out) == _expected_bits(dtype)


@needs_torch
def test_torch_double_backward_of_bits_gather() -> None:
    """bfloat16 GatherElements with a gradient goes through the bits Function: d2 works."""
    torch = _torch()
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.bfloat16).requires_grad_()
    idx = torch.tensor([[2, 2, 0], [1, 0, 1]])
    y = og.gather_elements(x, idx, 1)
    (g,) = torch.autograd.grad((y**2).sum(), x, create_graph=True)
    # g = scatter_add(2 y): 2 x times how often each element is read.
    assert g.tolist() == [[2.0, 0.0, 12.0], [8.0, 20.0, 0.0]]
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.tolist() == [[2.0, 0.0, 4.0], [2.0, 4.0, 0.0]]


def _jax_bits(a: Any) -> list[list[int]]:
    arr = np.asarray(a)
    return arr.view(np.uint16 if arr.itemsize == 2 else np.uint32).tolist()


@needs_jax
@pytest.mark.parametrize("dtype", list(PAYLOADS))
@pytest.mark.parametrize("op", [GATHER, ELEMENTS, ND])
@pytest.mark.parametrize("path", ["eager", "jit", "vmap", "vjp"])
def test_jax_nan_payloads_are_kept(op: str, dtype: str, path: str) -> None:
    jax = _jax()
    import jax.numpy as jnp

    bits = np.array([PAYLOADS[dtype]], np.uint16 if dtype != "float32" else np.uint32)
    x = jax.lax.bitcast_convert_type(jnp.asarray(bits), jnp.dtype(dtype))
    fn = _permuting(op, lambda a: jnp.asarray(np.asarray(a, np.int32)))

    if path == "eager":
        out = fn(x)
    elif path == "jit":
        out = jax.jit(fn)(x)
    elif path == "vmap":
        # Batched and read on the host: jnp.stack and indexing quiet bfloat16 NaNs too.
        batch = jax.lax.bitcast_convert_type(jnp.asarray(np.stack([bits, bits])), x.dtype)
        out = np.asarray(jax.jit(jax.vmap(fn))(batch))[1]
    else:
        out, pullback = jax.vjp(jax.jit(fn), x)
        (grad,) = pullback(jnp.ones_like(out))
        assert np.asarray(grad.astype(jnp.float32)).tolist() == [[1.0, 1.0, 2.0, 1.0, 1.0]]
    assert _jax_bits(out) == _expected_bits(dtype)


# --------------------------------------------------------------------------- jax: x64, empty axis

HUGE = [2**62, 2**63 - 1, -(2**63), -(2**62)]
INT32_EDGES = [2**31 - 1, -(2**31), 5, -6]


@needs_jax
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize("values", ["int64-extremes", "int32-extremes"])
def test_jax_jit_far_out_of_range_gives_the_fill_value(op: str, values: str) -> None:
    jax = _jax()
    import jax.numpy as jnp

    if values == "int64-extremes":
        if not jax.config.read("jax_enable_x64"):
            pytest.skip("int64 indices need jax_enable_x64")
        idx = jnp.array(HUGE, jnp.int64)
    else:
        idx = jnp.array(INT32_EDGES, jnp.int32)
    x = jnp.arange(5.0) + 10
    got = np.asarray(jax.jit(lambda a, i: apply(op, a, i, axis=0))(x, idx))
    assert got.shape == (4,)
    assert np.isnan(got).all(), got


@needs_jax
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_jax_jit_empty_axis(op: str) -> None:
    """An empty data axis: every index is out of range; the fill value, no raw JAX error."""
    jax = _jax()
    import jax.numpy as jnp

    x = jnp.zeros((2, 0), jnp.float32)
    idx = jnp.zeros((2, 3), jnp.int32)
    got = np.asarray(jax.jit(lambda a, i: apply(op, a, i, axis=1))(x, idx))
    assert got.shape == ((2, 2, 3) if op == GATHER else (2, 3))
    assert np.isnan(got).all(), got
    ints = np.asarray(jax.jit(lambda a, i: apply(op, a, i, axis=1))(x.astype(jnp.int32), idx))
    assert (ints == np.iinfo(np.int32).min).all(), ints
    # Nothing to read: empty indices on an empty axis give an empty result.
    empty = jax.jit(lambda a, i: apply(op, a, i, axis=1))(x, jnp.zeros((2, 0), jnp.int32))
    assert empty.shape == ((2, 2, 0) if op == GATHER else (2, 0))
