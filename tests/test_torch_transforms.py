"""PyTorch transformations: autograd, torch.compile, torch.func and devices.

Runs when torch is among the backends of this run (ONNX_GATHER_BACKENDS); a run that
names torch fails in conftest if torch cannot be imported, so this never skips there.
Expected gradients come from grad_oracle's loops, never from a backend's output.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import oracle
import pytest
import torch
from grad_oracle import ELEMENTS, FUNCTIONS, GATHER, GRAD_CASES, GradCase, data, upstream
from torch.utils._python_dispatch import TorchDispatchMode

import onnx_gather as og
from onnx_gather import openvino

HAS_CUDA = torch.cuda.is_available()
gpu = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")]
CUDA = pytest.param("cuda", marks=gpu, id="cuda")


def apply(op: str, x: Any, idx: Any, axis: int, **kw: Any) -> Any:
    return FUNCTIONS[op](x, idx, axis, **kw)


def eager_error(fn: Any, *args: Any) -> str:
    with pytest.raises(IndexError) as info:
        fn(*args)
    return str(info.value)


# --------------------------------------------------------------------------- autograd


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_backward_is_scatter_add(case: GradCase, dtype: torch.dtype) -> None:
    x = torch.from_numpy(data(case)).to(dtype).requires_grad_()
    g = upstream(case)
    out = case.apply(x, torch.from_numpy(case.indices))
    out.backward(torch.from_numpy(g).to(dtype))
    assert x.grad is not None
    assert x.grad.dtype == dtype
    # Small integers: every sum is exact in each of these dtypes.
    np.testing.assert_array_equal(x.grad.double().numpy(), case.grad(g))


@pytest.mark.parametrize("form", ["list", "numpy", "int32 tensor"])
def test_backward_with_host_indices(form: str) -> None:
    case = GRAD_CASES[0]
    idx: Any = {
        "list": case.indices.tolist(),
        "numpy": case.indices,
        "int32 tensor": torch.from_numpy(case.indices.astype(np.int32)),
    }[form]
    x = torch.from_numpy(data(case)).requires_grad_()
    g = upstream(case)
    (grad,) = torch.autograd.grad(case.apply(x, idx), x, torch.from_numpy(g))
    np.testing.assert_array_equal(grad.numpy(), case.grad(g))


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
def test_gradcheck_and_double_backward(case: GradCase) -> None:
    x = torch.from_numpy(data(case)).requires_grad_()
    idx = torch.from_numpy(case.indices)

    def fn(t: torch.Tensor) -> torch.Tensor:
        # Squared, so the second derivative is not identically zero.
        return case.apply(t, idx) ** 2

    assert torch.autograd.gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


def test_double_backward_against_oracle() -> None:
    """d/dx of <grad(sum(u * gather(x)^2)), v> = 2 * scatter(u * gather(v))."""
    case = GRAD_CASES[3]
    x = torch.from_numpy(data(case)).requires_grad_()
    u = upstream(case)
    v = np.random.default_rng(7).integers(-3, 4, case.data_shape).astype(np.float64)
    idx = torch.from_numpy(case.indices)
    y = case.apply(x, idx)
    (g,) = torch.autograd.grad(y**2, x, torch.from_numpy(u), create_graph=True)
    (gg,) = torch.autograd.grad(g, x, torch.from_numpy(v))
    # g = scatter(2 u * gather(x)), so dg/dx applied to v is scatter(2 u * gather(v)).
    gathered_v = oracle.gather_elements(v, case.indices, **case.attributes)
    np.testing.assert_array_equal(gg.numpy(), case.grad(2 * u * gathered_v))


def test_openvino_backward() -> None:
    x = torch.arange(6.0, dtype=torch.float64).reshape(2, 3).requires_grad_()
    idx = np.array([[2, 2, 0], [1, 0, 1]])
    out = openvino.gather_elements(x, idx, 1)
    out.backward(torch.ones_like(out))
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 2], [1, 2, 0]])


# --------------------------------------------------------------------------- torch.compile

# Compiling is slow on small machines: two compiled functions (one per operator), fixed
# shapes, dynamic=False, shared by the module. Inputs always require grad, so that no
# test triggers a recompilation.
X = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
IDX_G = np.array([[0, -1], [4, 0], [-5, 2]], np.int64)
IDX_E = np.array([[0, -1], [4, 4], [-5, 2]], np.int64)
BAD = [(1, 1, 5), (2, 0, -6)]  # (row, column, value) put into the indices


def _gather_fn(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return og.gather(x, idx, axis=1) * 2


def _elements_fn(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return og.gather_elements(x, idx, axis=1) * 2


EAGER = {GATHER: _gather_fn, ELEMENTS: _elements_fn}
INDICES = {GATHER: IDX_G, ELEMENTS: IDX_E}


@pytest.fixture(scope="module")
def compiled() -> dict[str, Any]:
    with warnings.catch_warnings():
        # Importing inductor imports torch.utils.mkldnn, which warns about TorchScript.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        import torch._inductor.compile_fx
    torch._dynamo.reset()
    return {
        op: torch.compile(fn, fullgraph=True, dynamic=False, backend="inductor")
        for op, fn in EAGER.items()
    }


def _x() -> torch.Tensor:
    return torch.from_numpy(X.copy()).requires_grad_()


@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_compile_matches_eager_and_oracle_gradient(compiled: dict[str, Any], op: str) -> None:
    idx = torch.from_numpy(INDICES[op])
    x_eager, x_comp = _x(), _x()
    want = EAGER[op](x_eager, idx)
    got = compiled[op](x_comp, idx)
    assert torch.equal(got, want)
    g = torch.from_numpy(np.random.default_rng(3).integers(-4, 5, got.shape).astype(np.float32))
    got.backward(g)
    assert x_comp.grad is not None
    oracle = GradCase("", op, X.shape, INDICES[op], {"axis": 1}).grad(2 * g.numpy())
    np.testing.assert_array_equal(x_comp.grad.numpy(), oracle)


@pytest.mark.parametrize("bad", BAD, ids=["too-high", "too-negative"])
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_compile_raises_for_an_index_out_of_range(
    compiled: dict[str, Any], op: str, bad: tuple[int, int, int]
) -> None:
    """No graph break (fullgraph); the compiled kernel's own check raises (README).

    The eager call raises the IndexError naming the value and position; a compiled small
    call inductor's RuntimeError, which cannot name them.
    """
    row, col, value = bad
    idx = INDICES[op].copy()
    idx[row, col] = value
    want = eager_error(EAGER[op], _x(), torch.from_numpy(idx))
    assert f"index {value} at position ({row}, {col})" in want
    with pytest.raises(RuntimeError, match="index out of bounds"):
        compiled[op](_x(), torch.from_numpy(idx))


def test_compile_unchecked_and_indices_made_inside() -> None:
    """check_bounds=False compiles to the plain kernel; indices made in the graph work.

    (Lists, ints and NumPy arrays as indices: tests/test_transforms_table.py.)
    """

    def fn(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        a = og.gather_elements(x, idx, axis=1, check_bounds=False)
        b = og.gather(x, torch.tensor([[0, -1]]), axis=1)
        return a + b.sum()

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        c = torch.compile(fn, fullgraph=True, dynamic=False)
        got = c(_x(), torch.from_numpy(IDX_E))
    assert torch.equal(got, fn(_x(), torch.from_numpy(IDX_E)))


# --------------------------------------------------------------------------- torch.func


@pytest.mark.parametrize("case", GRAD_CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_func_grad_is_scatter_add(case: GradCase, dtype: torch.dtype) -> None:
    # float16 and bfloat16 are gathered as int16 bits when no gradient is wanted.
    g = torch.from_numpy(upstream(case)).to(dtype)
    idx = torch.from_numpy(case.indices)
    grad = torch.func.grad(lambda t: (case.apply(t, idx) * g).sum())(
        torch.from_numpy(data(case)).to(dtype)
    )
    assert grad.dtype == dtype
    np.testing.assert_array_equal(grad.double().numpy(), case.grad(upstream(case)))


def test_func_per_sample_grad() -> None:
    """vmap(grad) over a batch of data and indices: one oracle gradient per sample."""
    case = GRAD_CASES[3]
    batch_idx = np.stack([case.indices, -1 - case.indices[..., ::-1, :]])
    xs = torch.from_numpy(np.stack([data(case, seed=s) for s in (1, 2)]))
    g = torch.from_numpy(upstream(case))

    def loss(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return (og.gather_elements(t, i, axis=1) * g).sum()

    grads = torch.func.vmap(torch.func.grad(loss))(xs, torch.from_numpy(batch_idx))
    for b in range(2):
        want = GradCase("", ELEMENTS, case.data_shape, batch_idx[b], {"axis": 1}).grad(g.numpy())
        np.testing.assert_array_equal(grads[b].numpy(), want)


@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize("over", ["data", "indices", "both"])
def test_func_vmap_matches_a_loop(op: str, over: str) -> None:
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 3, 5))
    idx = np.stack([INDICES[op], -1 - INDICES[op], INDICES[op][::-1], INDICES[op] % 3])
    in_dims = {"data": (0, None), "indices": (None, 0), "both": (0, 0)}[over]
    x_arg = xs if in_dims[0] == 0 else xs[0]
    i_arg = idx if in_dims[1] == 0 else idx[0]
    out = torch.func.vmap(lambda x, i: apply(op, x, i, 1), in_dims=in_dims)(
        torch.from_numpy(x_arg), torch.from_numpy(i_arg)
    )
    for b in range(4):
        want = apply(
            op,
            torch.from_numpy(x_arg[b] if in_dims[0] == 0 else x_arg),
            torch.from_numpy(i_arg[b] if in_dims[1] == 0 else i_arg),
            1,
        )
        assert torch.equal(out[b], want)


@pytest.mark.parametrize("in_dim", [0, 1])
def test_func_vmap_over_indices_raises(in_dim: int) -> None:
    """The check runs on the batch: the message's position is (batch entry, position)."""
    x = torch.zeros(3, 5)
    idx = torch.tensor([[0, 1, 2], [3, -6, 4]])  # sample 1 holds -6 at position 1
    idx = idx if in_dim == 0 else idx.T.contiguous()
    with pytest.raises(IndexError) as info:
        torch.func.vmap(lambda i: og.gather(x, i, axis=1), in_dims=in_dim)(idx)
    assert str(info.value) == (
        "Gather-13: index -6 at position (1, 1) of indices is out of range for axis 1 "
        "of size 5; valid indices are [-5, 4]"
    )


def test_func_vmap_keeps_each_versions_range() -> None:
    """Gather-1 and OpenVINO count negative indices from the end, also under vmap: [-s, s-1]."""
    x = torch.arange(3.0)
    idx = torch.tensor([[0, 1], [2, -1]])
    assert torch.func.vmap(lambda i: og.gather(x, i, opset=1))(idx).tolist() == [[0, 1], [2, 2]]
    assert torch.func.vmap(lambda i: openvino.gather_elements(x, i, 0))(idx).tolist() == [
        [0, 1],
        [2, 2],
    ]
    bad = torch.tensor([[0, 1], [2, -4]])
    valid = re.escape("; valid indices are [-3, 2]")
    with pytest.raises(IndexError, match=r"Gather-1: index -4 at position \(1, 1\).*" + valid):
        torch.func.vmap(lambda i: og.gather(x, i, opset=1))(bad)
    with pytest.raises(
        IndexError, match=r"GatherElements-6: index -4 at position \(1, 1\).*" + valid
    ):
        torch.func.vmap(lambda i: openvino.gather_elements(x, i, 0))(bad)


def test_func_nested_vmap_raises_with_the_full_position() -> None:
    x = torch.arange(5.0)
    idx = torch.tensor([[[0, -1], [2, 3]], [[4, 4], [-5, 1]]])
    f = torch.func.vmap(torch.func.vmap(lambda i: og.gather(x, i)))
    assert f(idx).tolist() == [[[0, 4], [2, 3]], [[4, 4], [0, 1]]]
    idx[1, 1, 0] = 7
    with pytest.raises(IndexError, match=r"index 7 at position \(1, 1, 0\) of indices"):
        f(idx)


def test_compile_of_vmap() -> None:
    x = torch.arange(5.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        c = torch.compile(torch.func.vmap(lambda i: og.gather(x, i)), fullgraph=True)
        assert c(torch.tensor([[0, -1], [2, 3]])).tolist() == [[0, 4], [2, 3]]
        # (inductor's check: the compiled kernel's own RuntimeError)
        with pytest.raises(RuntimeError, match="index out of bounds"):
            c(torch.tensor([[0, -1], [-6, 3]]))


def test_check_is_kept_out_of_cuda_graphs() -> None:
    """The check synchronises with the host, which a CUDA graph cannot capture."""
    if not hasattr(torch.Tag, "cudagraph_unsafe"):
        pytest.skip("this torch has no cudagraph_unsafe tag")
    import onnx_gather._backends._torch  # noqa: F401 (registers the operator)

    assert torch.Tag.cudagraph_unsafe in torch.ops.onnx_gather.checked_indices_v1.default.tags


def test_func_vmap_unchecked() -> None:
    idx = torch.tensor([[0, -1], [2, -3]])
    out = torch.func.vmap(lambda i: og.gather(torch.arange(3.0), i, check_bounds=False))(idx)
    assert out.tolist() == [[0.0, 2.0], [2.0, 0.0]]


# --------------------------------------------------------------------------- devices


class CrossDeviceOps(TorchDispatchMode):
    """Records every operator whose tensor inputs and output sit on different devices."""

    def __init__(self) -> None:
        super().__init__()
        self.moves: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        inputs = {a.device for a in args if isinstance(a, torch.Tensor)}
        if isinstance(out, torch.Tensor) and inputs and inputs != {out.device}:
            self.moves.append(str(func))
        return out


INDEX_FORMS = {
    "list": lambda a: a.tolist(),
    "numpy": lambda a: a,
    "cpu int64 tensor": torch.from_numpy,
    "cpu int32 tensor": lambda a: torch.from_numpy(a.astype(np.int32)),
}


@pytest.mark.parametrize("form", INDEX_FORMS)
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize(
    ("device", "check_bounds"),
    [
        ("meta", False),
        pytest.param("cuda", False, marks=gpu),
        pytest.param("cuda", True, marks=gpu),
    ],
)
def test_host_indices_move_once(op: str, form: str, device: str, check_bounds: bool) -> None:
    """Host indices go to the data's device in one copy; all else runs there.

    ``meta`` stands in for an accelerator where there is none (it cannot read values, so
    only unchecked calls run on it).
    """
    x = torch.zeros(3, 5, device=device)
    with CrossDeviceOps() as mode:
        out = apply(op, x, INDEX_FORMS[form](INDICES[op]), 1, check_bounds=check_bounds)
    assert out.device == x.device
    assert len(mode.moves) == 1, mode.moves


@pytest.mark.parametrize("device", ["cpu", CUDA])
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_result_on_data_device(op: str, device: str) -> None:
    x = torch.from_numpy(X).to(device)
    idx = torch.from_numpy(INDICES[op]).to(device)
    out = apply(op, x, idx, 1)
    assert out.device == x.device
    assert torch.equal(out.cpu(), apply(op, x.cpu(), idx.cpu(), 1))


@pytest.fixture
def sync_debug_mode() -> Iterator[Callable[[str], None]]:
    """Set torch.cuda's sync debug mode for one test; the teardown restores it, always.

    The mode is process-wide: left set by a failing test it would fail later ones. Its
    "prototype feature" warning is not ours to fail on (filterwarnings = error).
    """
    saved = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*prototype feature.*")
        yield torch.cuda.set_sync_debug_mode
        torch.cuda.set_sync_debug_mode(saved)


def _count_syncs(fn: Any, set_mode: Callable[[str], None]) -> int:
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        set_mode("warn")
        try:
            fn()
        finally:
            set_mode("default")
    return sum("synchroniz" in str(w.message) for w in seen)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_cuda_unchecked_makes_no_host_sync(
    op: str, index_dtype: torch.dtype, sync_debug_mode: Callable[[str], None]
) -> None:
    x = torch.from_numpy(X).cuda()
    idx = torch.from_numpy(INDICES[op]).to("cuda", index_dtype)
    torch.cuda.synchronize()
    sync_debug_mode("error")
    try:
        out = apply(op, x, idx, 1, check_bounds=False)
    finally:
        sync_debug_mode("default")
    assert torch.equal(out.cpu(), apply(op, x.cpu(), idx.cpu(), 1))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_cuda_checked_syncs_once(op: str, sync_debug_mode: Callable[[str], None]) -> None:
    x = torch.from_numpy(X).cuda()
    idx = torch.from_numpy(INDICES[op]).cuda()
    assert _count_syncs(lambda: apply(op, x, idx, 1), sync_debug_mode) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_cuda_out_of_range(op: str) -> None:
    """An IndexError, not a device assert; unchecked, no crash and the context survives."""
    x = torch.from_numpy(X).cuda()
    idx = torch.from_numpy(INDICES[op]).cuda()
    idx[1, 1] = 5
    want = eager_error(apply, op, x.cpu(), idx.cpu(), 1)
    with pytest.raises(IndexError) as info:
        apply(op, x, idx, 1)
    assert str(info.value) == want
    apply(op, x, idx, 1, check_bounds=False)
    torch.cuda.synchronize()
    assert (x + 1).sum().item() == pytest.approx(float(X.sum() + X.size))


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_cuda_compile(op: str) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        c = torch.compile(EAGER[op], fullgraph=True, dynamic=False)
        x = torch.from_numpy(X).cuda().requires_grad_()
        idx = torch.from_numpy(INDICES[op]).cuda()
        assert torch.equal(c(x, idx), EAGER[op](x, idx))
        bad = idx.clone()
        bad[2, 0] = -6
        want = eager_error(EAGER[op], x, bad)
        with pytest.raises(IndexError) as info:
            c(x, bad)
    assert str(info.value) == want


def test_openvino_gather_nd_5_flattens_the_batch_dims_under_every_transform() -> None:
    """GatherND-5's result shape holds under compile, autograd and vmap (its own reshape)."""
    from onnx_gather._conformance.oracle import gather_nd

    d = np.arange(2 * 3 * 4 * 2, dtype=np.float32).reshape(2, 3, 4, 2)
    i = np.array([[[1], [0], [-1]], [[0], [2], [3]]])
    want = gather_nd(d, i, 2).reshape(6, 2)  # GatherND-13's (2, 3) batch dims as one

    def f(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return openvino.gather_nd(x, idx, batch_dims=2, version=5)

    x = torch.from_numpy(d).requires_grad_()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        importlib.import_module("torch._inductor.compile_fx")
    got = torch.compile(f, fullgraph=True)(x, torch.from_numpy(i))
    np.testing.assert_array_equal(got.detach().numpy(), want)
    got.backward(torch.ones_like(got))
    counts = np.zeros_like(d)
    for b0, b1 in np.ndindex(2, 3):
        counts[b0, b1, i[b0, b1, 0]] += 1
    np.testing.assert_array_equal(x.grad.numpy(), counts)
    batched = torch.func.vmap(lambda y: f(y, torch.from_numpy(i)))(torch.stack([x.detach()] * 2))
    np.testing.assert_array_equal(batched.numpy(), np.stack([want] * 2))


def test_openvino_gather_zeros_and_batches_under_every_transform() -> None:
    """Gather-8 with a batch dim before the axis: compile, autograd (zero gradient where an
    index is out of range), vmap; and complex data compiled (one recorded operator)."""
    from onnx_gather._conformance.oracle import openvino_gather

    d = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    i = np.array([[1, -1, 9], [-5, 0, 3]])
    want = openvino_gather(d, i, axis=2, batch_dims=1)

    def f(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        return openvino.gather(x, idx, axis=2, batch_dims=1)

    x = torch.from_numpy(d).requires_grad_()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        importlib.import_module("torch._inductor.compile_fx")
    got = torch.compile(f, fullgraph=True)(x, torch.from_numpy(i))
    np.testing.assert_array_equal(got.detach().numpy(), want)
    got.backward(torch.ones_like(got))
    counts = np.zeros_like(d)
    for b, j in np.ndindex(2, 3):
        if -4 <= i[b, j] < 4:
            counts[b, :, i[b, j]] += 1
    np.testing.assert_array_equal(x.grad.numpy(), counts)
    batched = torch.func.vmap(lambda y: f(y, torch.from_numpy(i)))(torch.stack([x.detach()] * 2))
    np.testing.assert_array_equal(batched.numpy(), np.stack([want] * 2))
    z = torch.complex(torch.from_numpy(d), -torch.from_numpy(d))
    compiled = torch.compile(f, fullgraph=True)(z, torch.from_numpy(i))
    np.testing.assert_array_equal(compiled.numpy(), openvino_gather(z.numpy(), i, 2, 1))


#: OpenVINO's scatters, each with a call that takes several ONNX scatters in a row (mean,
#: use_init_val=False, bool XOR) and one plain: (function, data, indices, updates).
_OV_DATA = np.arange(12, dtype=np.float32).reshape(3, 4)
OV_SCATTERS: dict[str, tuple[Callable[..., Any], np.ndarray, np.ndarray, np.ndarray]] = {
    "scatter_update": (
        lambda d, i, u: openvino.scatter_update(d, i, u, axis=1),
        _OV_DATA, np.array([3, 0, 3]), np.arange(9, dtype=np.float32).reshape(3, 3),
    ),
    "elements_mean": (
        lambda d, i, u: openvino.scatter_elements_update(d, i, u, axis=1, reduction="mean"),
        _OV_DATA, np.array([[1, 1], [0, -1], [2, 2]]), np.arange(6, dtype=np.float32).reshape(3, 2),
    ),
    "elements_max_no_init": (
        lambda d, i, u: openvino.scatter_elements_update(
            d, i, u, axis=0, reduction="max", use_init_val=False
        ),
        _OV_DATA, np.array([[2, 0, 0, -1]]), -np.ones((1, 4), np.float32),
    ),
    "nd_sub": (
        lambda d, i, u: openvino.scatter_nd_update(d, i, u, reduction="sub"),
        _OV_DATA, np.array([[0], [-1], [0]]), np.ones((3, 4), np.float32),
    ),
}  # fmt: skip


def _ov_want(name: str) -> np.ndarray:
    fn, d, i, u = OV_SCATTERS[name]
    return fn(d, i, u)  # (NumPy's call, checked against the oracle by the case table)


@pytest.mark.parametrize("name", list(OV_SCATTERS))
@pytest.mark.parametrize("form", ["tensor", "numpy", "list"])
def test_openvino_scatters_under_compile_and_vmap(name: str, form: str) -> None:
    """Each OpenVINO scatter compiled (one recorded operator, fullgraph) and under vmap.

    In every index form; an index out of range raises the eager IndexError when the
    compiled graph runs.
    """
    from onnx_gather._conformance import oracle as ov_oracle

    torch._dynamo.reset()  # (one lambda's code for every parameter: a fresh count each)
    fn, d, i, u = OV_SCATTERS[name]
    indices: Any = {"tensor": torch.from_numpy(i), "numpy": i, "list": i.tolist()}[form]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        importlib.import_module("torch._inductor.compile_fx")
    compiled = torch.compile(lambda x, y: fn(x, indices, y), fullgraph=True)
    got = compiled(torch.from_numpy(d), torch.from_numpy(u))
    want = _ov_want(name)
    np.testing.assert_array_equal(got.numpy(), want)
    assert ov_oracle is not None
    batched = torch.func.vmap(lambda x: fn(x, torch.from_numpy(i), torch.from_numpy(u)))(
        torch.stack([torch.from_numpy(d)] * 2)
    )
    np.testing.assert_array_equal(batched.numpy(), np.stack([want] * 2))
    if form == "tensor":
        bad = torch.from_numpy(i).clone()
        bad.view(-1)[0] = 9
        want_error = eager_error(fn, torch.from_numpy(d), bad, torch.from_numpy(u))
        c = torch.compile(lambda x, y, z: fn(x, y, z), fullgraph=True)
        with pytest.raises(IndexError) as info:
            c(torch.from_numpy(d), bad, torch.from_numpy(u))
        assert str(info.value) == want_error


def test_openvino_scatter_eager_gradient_and_out() -> None:
    """Eagerly, torch's operations carry the gradient (mean: 1/n to each update landed);
    ``out=data`` writes in place after the last step; compiled with a gradient: a clear error."""
    d = torch.zeros(3, requires_grad=True)
    u = torch.ones(4, requires_grad=True)
    i = torch.tensor([0, 0, 0, 2])
    got = openvino.scatter_elements_update(d, i, u, axis=0, reduction="mean")
    got.sum().backward()
    np.testing.assert_array_equal(u.grad.numpy(), [0.25, 0.25, 0.25, 0.5])
    np.testing.assert_array_equal(d.grad.numpy(), [0.25, 1.0, 0.5])
    data = torch.arange(4.0)
    out = openvino.scatter_nd_update(
        data, [[1], [1]], torch.tensor([1.0, 2.0]), reduction="sub", out=data
    )
    assert out is data
    np.testing.assert_array_equal(data.numpy(), [0, -2, 2, 3])
    compiled = torch.compile(
        lambda x: openvino.scatter_update(x, [0], torch.ones(1), axis=0), fullgraph=True
    )
    # (AOT autograd traces the backward as it compiles: the error comes then.)
    with pytest.raises(Exception, match="OpenVINO ScatterUpdate-3 has no gradient inside"):
        compiled(torch.zeros(2, requires_grad=True)).sum().backward()
