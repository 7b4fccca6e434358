"""JAX eager calls after the first of a plan (the backend's per-plan short path), and its layout.

Every test calls the same plan more than once: the first call of a plan takes the full path
and binds the call that serves the next (``JaxBackend.bind``). Expected values come from the
loop oracle or from NumPy.
Passes with JAX_ENABLE_X64=0 and =1.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_identical

import onnx_gather as og
from onnx_gather import _api
from onnx_gather._backends._numpy import _kernels
from onnx_gather._conformance import oracle
from onnx_gather._memo import Memo

X = np.arange(32, dtype=np.float32).reshape(8, 4) / 7
#: Per operator: our call, the oracle's, good indices and the same shape with one bad
#: index, and the text the IndexError gives for it.
OPS: dict[str, tuple[Any, Any, np.ndarray, np.ndarray, str]] = {
    "gather": (
        lambda x, i, **kw: og.gather(x, i, 0, **kw),
        lambda x, i, **kw: oracle.gather(x, i, 0, **kw),
        np.array([1, -2], np.int32),
        np.array([1, -9], np.int32),
        r"index -9 at position \(1,\) of indices is out of range for axis 0 of size 8",
    ),
    "gather_elements": (
        lambda x, i, **kw: og.gather_elements(x, i, 1, **kw),
        lambda x, i, **kw: oracle.gather_elements(x, i, 1, **kw),
        np.tile(np.array([0, -1, 3, -4], np.int32), (8, 1)),
        np.tile(np.array([0, -1, 4, -4], np.int32), (8, 1)),
        r"index 4 at position \(0, 2\) of indices is out of range for axis 1 of size 4",
    ),
    # Coordinate 0 addresses 8 rows, coordinate 1 four columns: 5 is good for the first
    # and bad for the second, so the check must compare each with its own axis' size.
    "gather_nd": (
        lambda x, i, **kw: og.gather_nd(x, i, **kw),
        lambda x, i, **kw: oracle.gather_nd(x, i, **kw),
        np.array([[5, -1], [-3, 2]], np.int32),
        np.array([[5, -1], [-3, 5]], np.int32),
        r"index 5 at position \(1, 1\) of indices is out of range for axis 1 of size 4",
    ),
}


def _count_binds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The methods the JAX backend binds from now on (a fresh call cache is the caller's)."""
    from onnx_gather._backends._jax import JaxBackend

    binds: list[str] = []
    bind = JaxBackend.bind

    def counting(self: Any, method: str, *args: Any) -> Any:
        binds.append(method)
        return bind(self, method, *args)

    monkeypatch.setattr(JaxBackend, "bind", counting)
    return binds


@pytest.mark.parametrize("op", list(OPS))
def test_later_calls_of_a_plan_check_and_compute_as_the_first(
    op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_api, "_CALLS", Memo(16))
    binds = _count_binds(monkeypatch)
    ours, loop, good, bad, message = OPS[op]
    x = jnp.asarray(X)
    for _ in range(3):
        assert_identical(np.asarray(ours(x, jnp.asarray(good))), loop(X, good))
        with pytest.raises(IndexError, match=message):
            ours(x, jnp.asarray(bad))
    assert binds == [op]  # the later calls took the bound call


#: Per operator: our call, NumPy's own (negatives counted from the end by NumPy), and one
#: call site's indices in turn: non-negative, negative, mixed, out of range (with the text
#: its IndexError gives), and good again. Expected values come from NumPy.
SITE: dict[str, tuple[Any, Any, list[np.ndarray], str]] = {
    "gather": (
        lambda x, i, **kw: og.gather(x, i, 0, **kw),
        lambda x, i: np.take(x, i, 0),
        [np.array(v, np.int32) for v in ([1, 7], [-1, -8], [-3, 6], [2, 8], [0, -2])],
        r"index 8 at position \(1,\) of indices is out of range for axis 0 of size 8",
    ),
    "gather_elements": (
        lambda x, i, **kw: og.gather_elements(x, i, 1, **kw),
        lambda x, i: np.take_along_axis(x, np.where(i < 0, i + 4, i), 1),
        [
            np.array(v, np.int32)
            for v in (
                [[0, 3]] * 8,
                [[-1, -4]] * 8,
                [[-2, 1]] * 8,
                [[1, 1]] * 7 + [[-5, 0]],
                [[3, -3]] * 8,
            )
        ],
        r"index -5 at position \(7, 0\) of indices is out of range for axis 1 of size 4",
    ),
    "gather_nd": (
        lambda x, i, **kw: og.gather_nd(x, i, **kw),
        lambda x, i: x[i[:, 0], i[:, 1]],
        [
            np.array(v, np.int32)
            for v in (
                [[7, 3], [0, 0]],
                [[-8, -1], [-1, -4]],
                [[-8, 3], [6, -2]],
                [[7, 3], [0, -5]],
                [[2, -1], [-2, 1]],
            )
        ],
        r"index -5 at position \(1, 1\) of indices is out of range for axis 1 of size 4",
    ),
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", list(SITE))
def test_one_call_site_whose_indices_change_sign_and_range(
    op: str, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One bound call serves them all; the bad one raises and the next call is good again."""
    if dtype == np.int64 and not jax.config.read("jax_enable_x64"):
        pytest.skip("int64 needs jax_enable_x64")
    monkeypatch.setattr(_api, "_CALLS", Memo(16))
    binds = _count_binds(monkeypatch)
    ours, numpy, indices, message = SITE[op]
    indices = [i.astype(dtype) for i in indices]
    x = jnp.asarray(X)
    for _ in range(2):
        for k, i in enumerate(indices):
            if k == 3:
                with pytest.raises(IndexError, match=message):
                    ours(x, jnp.asarray(i))
                continue
            got = ours(x, jnp.asarray(i))
            assert type(got) is type(x)
            assert got.devices() == x.devices()
            assert_identical(np.asarray(got), numpy(X, i))
    assert binds == [op]


@pytest.mark.parametrize("op", list(SITE))
def test_jit_vmap_and_grad_after_eager_calls_of_the_same_shapes(op: str) -> None:
    """Tracers are not the bound call's arrays: the traced path, checkify's check included."""
    from jax.experimental import checkify

    ours, numpy, indices, message = SITE[op]
    x = jnp.asarray(X)
    good, bad = indices[2], indices[3]
    for _ in range(2):  # (eager calls first: bound for these shapes)
        ours(x, jnp.asarray(good))
    jitted = jax.jit(lambda x, i: ours(x, i))
    assert_identical(np.asarray(jitted(x, jnp.asarray(good))), numpy(X, good))
    checked = jax.jit(checkify.checkify(lambda x, i: ours(x, i)))
    error, _ = checked(x, jnp.asarray(bad))
    with pytest.raises(checkify.JaxRuntimeError, match=message):
        error.throw()
    batch = np.stack([good, indices[0]])
    got = jax.vmap(lambda i: ours(x, i))(jnp.asarray(batch))
    assert_identical(np.asarray(got), np.stack([numpy(X, i) for i in batch]))
    grad = jax.grad(lambda x: ours(x, jnp.asarray(good)).sum())(x)
    want = np.zeros_like(X)
    np.add.at(want, *_positions(op, good))
    assert_identical(np.asarray(grad), want)


def _positions(op: str, i: np.ndarray) -> tuple[Any, float]:
    """Where ``op`` reads ``X`` for indices ``i`` (NumPy counting negatives), and 1 each."""
    if op == "gather":
        return (np.where(i < 0, i + 8, i),), 1.0
    if op == "gather_elements":
        rows = np.broadcast_to(np.arange(i.shape[0])[:, None], i.shape)
        return (rows, np.where(i < 0, i + 4, i)), 1.0
    return (
        np.where(i[:, 0] < 0, i[:, 0] + 8, i[:, 0]),
        np.where(i[:, 1] < 0, i[:, 1] + 4, i[:, 1]),
    ), 1.0


@pytest.mark.parametrize("op", list(OPS))
def test_later_unchecked_calls_give_the_fill_value(op: str) -> None:
    ours, loop, _, bad, _ = OPS[op]
    x = jnp.asarray(X)
    want = loop(X, bad, check_bounds=False, fill=True)
    for _ in range(3):
        assert_identical(np.asarray(ours(x, jnp.asarray(bad), check_bounds=False)), want)


@pytest.mark.parametrize("op", list(OPS))
def test_concrete_arrays_inside_a_trace_after_eager_calls(op: str) -> None:
    """Arrays closed over by a jitted function are known while it traces: checked then."""
    ours, loop, good, bad, message = OPS[op]
    x, i, b = jnp.asarray(X), jnp.asarray(good), jnp.asarray(bad)
    ours(x, i)
    ours(x, i)
    assert_identical(np.asarray(jax.jit(lambda: ours(x, i))()), loop(X, good))
    with pytest.raises(IndexError, match=message):
        jax.jit(lambda: ours(x, b))()


def test_jit_of_int32_indices_adds_nothing_to_the_native_fill_gather() -> None:
    """Under jit a checked call with int32 indices lowers to jnp's own fill-mode gather.

    The check is an identity for checkify (nothing in plain jit), and fill mode counts
    negatives and fills the rest: no pass of ours is left in the program.
    """
    x, i = jnp.asarray(X), jnp.asarray(OPS["gather_elements"][2])

    def ops(fn: Any) -> list[str]:
        text = jax.jit(fn).lower(x, i).as_text()
        return sorted(word for word in text.split() if word.startswith("stablehlo."))

    ours = ops(lambda x, i: og.gather_elements(x, i, 1))
    native = ops(lambda x, i: jnp.take_along_axis(x, i, axis=1, mode="fill", fill_value=np.nan))
    assert ours == native


def test_jit_of_gather_nd_compiles_to_as_many_kernels_as_native_indexing() -> None:
    """A checked GatherND under jit: the tuples' rows, check and fill fuse with the gather.

    As for ``x[c[:, 0], c[:, 1]]`` (whose bad tuples read clamped elements instead).
    """
    x, c = jnp.asarray(X), jnp.asarray(OPS["gather_nd"][2])

    def fusions(fn: Any) -> int:
        text = jax.jit(fn).lower(x, c).compile().as_text()
        return text[text.index("ENTRY") :].count(" fusion(")

    assert fusions(og.gather_nd) <= fusions(lambda x, c: x[c[:, 0], c[:, 1]])


@pytest.mark.skipif(not jax.config.read("jax_enable_x64"), reason="int64 needs jax_enable_x64")
def test_jit_of_int64_indices_beyond_int32_gives_the_fill_value() -> None:
    """jnp narrows int64 indices to int32 for small axes: 2**32 + 1 must not read element 1."""
    values = [2**32 + 1, -(2**32) - 1, 2**63 - 1, -(2**63), -1]
    got = jax.jit(lambda x, i: og.gather(x, i))(jnp.arange(8.0), jnp.asarray(values, jnp.int64))
    assert np.isnan(np.asarray(got)[:4]).all()
    assert float(got[4]) == 7.0


@pytest.mark.skipif(not jax.config.read("jax_enable_x64"), reason="int64 needs jax_enable_x64")
def test_eager_int64_indices_beyond_int32_raise_from_the_bound_call() -> None:
    """2**32 + 1 is out of range, not element 1, once the call is bound as well."""
    x = jnp.asarray(X)
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(og.gather(x, jnp.asarray([1, -1]))), X[[1, -1]])
        with pytest.raises(IndexError, match=r"index 4294967297 at position \(1,\)"):
            og.gather(x, jnp.asarray([1, 2**32 + 1]))


def test_result_on_data_device_when_indices_are_committed_elsewhere() -> None:
    """Two CPU devices (a child process: the device count is fixed when JAX starts)."""
    code = textwrap.dedent(
        """
        import jax, jax.numpy as jnp, numpy as np
        import onnx_gather as og
        d0, d1 = jax.devices()
        i = np.array([[0, -1, 2, 3]] * 2, np.int32)
        cases = [
            (jax.device_put(jnp.arange(8.0).reshape(2, 4), d1), jax.device_put(i, d0), d1),
            (jnp.arange(8.0).reshape(2, 4), jax.device_put(i, d1), d0),
        ]
        for x, idx, device in cases:
            for _ in range(3):
                out = og.gather_elements(x, idx, 1)
                assert out.devices() == {device}, (out.devices(), device)
                assert np.asarray(out).tolist() == [[0, 3, 2, 3], [4, 7, 6, 7]]
                try:
                    og.gather_elements(x, idx + 4, 1)
                except IndexError as e:
                    assert "index 4 at position (0, 0)" in str(e), e
                else:
                    raise AssertionError("no IndexError")
        print("ok")
        """
    )
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` (module ``name``) imports, but under TYPE_CHECKING.

    ``from package import thing``: the module ``package.thing`` where there is one, else
    the package itself (its ``__init__`` runs for the thing).
    """
    tree = ast.parse(path.read_text())
    hidden = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else base)
    return {m for m in found if m.split(".")[0] == "onnx_gather"}


def test_the_jax_backend_imports_nothing_above_the_backends() -> None:
    """No path of imports leads from the JAX backend back to the dispatch (no import cycle).

    The modules it reaches, transitively, never include ``_api``, ``_dispatch``, ``_ops``
    or the package's public module.
    """
    root = Path(og.__file__).parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    names = set(modules) | {f"onnx_gather.{p.name.split('.')[0]}" for p in root.glob("*.so")}
    seen, todo = set(), ["onnx_gather._backends._jax"]
    while todo:
        name = todo.pop()
        if name not in seen and name in modules:
            seen.add(name)
            todo += _imports(modules[name], name, names)
    assert "onnx_gather._backends._jax._scatter" in seen
    above = {"onnx_gather", "onnx_gather._api", "onnx_gather._dispatch", "onnx_gather._ops"}
    assert not seen & above, sorted(seen & above)


@pytest.mark.parametrize("op", list(OPS))
def test_large_cpu_indices_are_checked_on_the_host(
    op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From ``_HOST_CHECK_FROM`` indices on, NumPy reads CPU indices in place (lowered here).

    Where the compiled kernel checks them in place at every size (one size bounds every
    index: Gather, GatherElements), it is turned off here to reach NumPy's check.
    """
    from onnx_gather._backends import _jax

    monkeypatch.setattr(_jax, "_HOST_CHECK_FROM", 1)
    monkeypatch.setattr(_jax, "_outside_at", None)
    monkeypatch.setattr(_api, "_CALLS", Memo(16))  # (no bound call from earlier tests)
    checks = []
    host_check = _jax._spec.check_range
    monkeypatch.setattr(_jax._spec, "check_range", lambda *a: checks.append(1) or host_check(*a))
    ours, loop, good, bad, message = OPS[op]
    cpu = jax.devices("cpu")[0]  # (on a GPU machine too: the default device is the GPU)
    x = jax.device_put(X, cpu)
    for _ in range(2):
        assert_identical(np.asarray(ours(x, jax.device_put(good, cpu))), loop(X, good))
        with pytest.raises(IndexError, match=message):
            ours(x, jax.device_put(bad, cpu))
    assert len(checks) == 4  # (checked on the host, every call)


@pytest.mark.skipif(_kernels is None, reason="built without the compiled kernel")
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", list(OPS))
def test_cpu_indices_are_checked_in_place_by_the_compiled_kernel(
    op: str, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked calls on CPU indices bounded by one size read them where they lie.

    Gather and GatherElements, int32 and (with x64) int64 indices: every call asks the
    compiled kernel, which finds the bad index, and the jitted call computes no flag.
    GatherND's coordinates address axes of different sizes (8 and 4): its flag stays.
    """
    from onnx_gather._backends import _jax

    monkeypatch.setattr(_api, "_CALLS", Memo(16))
    asked = []

    def counting(*args: Any) -> bool:
        asked.append(args)
        return _kernels.outside_at(*args)

    monkeypatch.setattr(_jax, "_outside_at", counting)
    ours, loop, good, bad, message = OPS[op]
    cpu = jax.devices("cpu")[0]
    x = jax.device_put(X, cpu)
    good_j, bad_j = jax.device_put(good.astype(dtype), cpu), jax.device_put(bad.astype(dtype), cpu)
    for _ in range(3):
        assert_identical(np.asarray(ours(x, good_j)), loop(X, good))
        with pytest.raises(IndexError, match=message):
            ours(x, bad_j)
    if op == "gather_nd":
        assert asked == []
        return
    assert len(asked) == 6
    itemsize = good_j.dtype.itemsize  # (int32 without x64)
    assert {a[1:] for a in asked} == {(good.size, itemsize, X.shape[OPS_AXIS[op]])}


OPS_AXIS = {"gather": 0, "gather_elements": 1}


@pytest.mark.skipif(_kernels is None, reason="built without the compiled kernel")
def test_indices_still_being_computed_are_read_once_ready() -> None:
    """The check in place waits for indices a jitted computation is still writing.

    An array's address is known before its values are (jax 0.10.2 gave the old bytes of
    the buffer); the indices here come from a computation that runs for tens of
    milliseconds, and the call is made at once.
    """
    cpu = jax.devices("cpu")[0]
    heavy = jax.device_put(jnp.ones((1000, 1000), jnp.float32), cpu)
    x = jax.device_put(X, cpu)

    @jax.jit
    def late(a: jax.Array, value: int) -> jax.Array:
        for _ in range(4):
            a = a @ a / 1000.0
        zero = (a[0, :2] * 0).astype(jnp.int32)  # (depends on the whole computation)
        return zero + jnp.array([1, value], jnp.int32)

    late(heavy, 0).block_until_ready()  # (compiled before the calls)
    for _ in range(3):
        with pytest.raises(IndexError, match="index 8 at position"):
            og.gather(x, late(heavy, 8), 0)
        assert_identical(np.asarray(og.gather(x, late(heavy, -8), 0)), X[[1, 0]])


@pytest.mark.parametrize("op", list(OPS))
def test_deleted_indices_raise_as_the_native_call_does(op: str) -> None:
    """Deleted (or donated) indices: JAX's own RuntimeError from later calls too.

    (The check in place must not ask a deleted array whether it is ready: jaxlib 0.10.2
    crashes the process.)
    """
    ours, _, good, _, _ = OPS[op]
    x = jnp.asarray(X)
    for _ in range(2):  # (the second call is the bound one)
        ours(x, jnp.asarray(good))
    gone = jnp.asarray(good)
    gone.delete()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="deleted"):
            ours(x, gone)


def test_indices_of_host_memory_changed_after_the_call_leave_its_result_as_checked() -> None:
    """A call returns a finished result: changing the indices' memory afterwards is harmless.

    ``jax.device_put`` of an aligned NumPy array shares its memory. With data still being
    computed, a gather dispatched but not yet run would read the changed index (100: out
    of range, the fill value NaN) although the check had passed; the call waits for its
    gather before it returns.
    """
    cpu = jax.devices("cpu")[0]
    heavy = jax.device_put(jnp.ones((1000, 1000), jnp.float32), cpu)

    @jax.jit
    def late(a: jax.Array) -> jax.Array:
        for _ in range(4):
            a = a @ a / 1000.0
        return a[:8, :4]

    buf = np.zeros(64, np.int32)
    at = (-buf.ctypes.data % 64) // 4
    host = buf[at : at + 2]
    host[:] = [1, 2]
    indices = jax.device_put(host, cpu)
    if indices.unsafe_buffer_pointer() != host.ctypes.data:
        pytest.skip("this jax copies the NumPy array: nothing shared to change")
    late(heavy).block_until_ready()
    for _ in range(3):
        host[1] = 2
        got = og.gather(late(heavy), indices, 0)
        host[1] = 100
        assert not np.isnan(np.asarray(got)).any()
