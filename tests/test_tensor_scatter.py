"""TensorScatter-24 beyond the case table: absent write indices, ``out=``, transforms.

The table (tests/scatter_cases.py) holds the values and the errors; these are the calls a
KV cache makes: in place, through views, compiled, traced, differentiated.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import assert_identical
from libs import LIBS, Library

import onnx_gather as og
from onnx_gather._conformance.oracle import tensor_scatter as oracle

CACHE = np.arange(24, dtype=np.float32).reshape(2, 1, 4, 3)
UPDATE = -np.arange(12, dtype=np.float32).reshape(2, 1, 2, 3) - 1
STARTS = np.array([2, 0], np.int64)
IMMUTABLE = ("jax", "dask")
#: The libraries under test whose arrays out= writes into.
WRITABLE = [lib for lib in LIBS if lib.name not in IMMUTABLE]
#: The libraries under test whose slices and reshapes are views of one memory.
VIEWED = [lib for lib in LIBS if lib.name in ("numpy", "torch")]


def _compile(fn: Callable[..., Any]) -> Callable[..., Any]:
    import torch

    with warnings.catch_warnings():
        # Importing inductor imports torch.utils.mkldnn, which warns about TorchScript.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        import torch._inductor.compile_fx
    return torch.compile(fn, fullgraph=True)


def test_absent_write_indices_are_zeros(lib: Library) -> None:
    got = og.tensor_scatter(lib.asarray(CACHE), lib.asarray(UPDATE))
    assert_identical(lib.to_numpy(got), oracle(CACHE, UPDATE, np.zeros(2, np.int64)))


def test_out_is_the_cache_updated_in_place(lib: Library) -> None:
    cache = lib.asarray(CACHE)
    if lib.name in IMMUTABLE:
        with pytest.raises(TypeError, match="out"):
            og.tensor_scatter(cache, lib.asarray(UPDATE), lib.indices(STARTS), out=cache)
        return
    got = og.tensor_scatter(cache, lib.asarray(UPDATE), lib.indices(STARTS), out=cache)
    assert got is cache
    assert_identical(lib.to_numpy(cache), oracle(CACHE, UPDATE, STARTS))


def test_a_failed_call_leaves_the_cache_untouched(lib: Library) -> None:
    cache = lib.asarray(CACHE)
    out = {} if lib.name in IMMUTABLE else {"out": cache}  # (immutable: no out=)
    with pytest.raises(IndexError, match="index 3 at position \\(0,\\) of write_indices"):
        # (Dask raises when the result is computed.)
        lib.to_numpy(
            og.tensor_scatter(cache, lib.asarray(UPDATE), lib.indices(np.array([3, 0])), **out)
        )
    assert_identical(lib.to_numpy(cache), CACHE)


@pytest.mark.backend("numpy")
def test_an_update_that_is_a_view_of_out_is_read_first() -> None:
    cache = CACHE.copy()
    update = cache[:, :, 1:3]  # the cache's own rows 1-2, written to rows 0-1
    want = oracle(CACHE, CACHE[:, :, 1:3].copy(), np.zeros(2, np.int64))
    assert og.tensor_scatter(cache, update, [0, 0], out=cache) is cache
    assert_identical(cache, want)


@pytest.mark.backend("numpy")
def test_write_indices_that_are_a_view_of_out_are_read_first() -> None:
    cache = np.zeros((2, 4), np.int64)
    out = np.array([[2, 0, 0, 0], [9, 9, 9, 9]], np.int64)
    starts = out[0, :2]  # (2, 0): overwritten by the cache's zeros when out receives it
    want = oracle(cache, np.full((2, 1), 5, np.int64), np.array([2, 0]), axis=1)
    got = og.tensor_scatter(cache, np.full((2, 1), 5, np.int64), starts, axis=1, out=out)
    assert got is out
    assert_identical(out, want)


@pytest.mark.backend("torch")
def test_torch_update_that_is_a_view_of_out_is_read_first() -> None:
    import torch

    cache = torch.from_numpy(CACHE.copy())
    update = cache[:, :, 1:3]
    want = oracle(CACHE, CACHE[:, :, 1:3].copy(), np.zeros(2, np.int64))
    assert og.tensor_scatter(cache, update, torch.zeros(2, dtype=torch.int64), out=cache) is cache
    assert_identical(cache.numpy(), want)


@pytest.mark.parametrize("viewed", VIEWED, ids=[lib.name for lib in VIEWED])
def test_a_c_ordered_update_that_shares_the_cache_is_read_first(viewed: Library) -> None:
    """One slice's write from an update that is C-ordered memory of the cache itself.

    (Its bytes are viewed as they are, not copied: the one assignment reads them first.)
    """
    lib = viewed
    flat = np.arange(36, dtype=np.float32)
    base = lib.asarray(flat.copy())
    cache, update = base[:24].reshape(2, 1, 4, 3), base[6:18].reshape(2, 1, 2, 3)
    want = oracle(flat[:24].reshape(2, 1, 4, 3), flat[6:18].reshape(2, 1, 2, 3).copy(),
                  np.array([1, 1]))  # fmt: skip
    got = og.tensor_scatter(cache, update, lib.indices(np.array([1, 1])), out=cache)
    assert got is cache
    assert_identical(lib.to_numpy(cache), want)


@pytest.mark.parametrize("viewed", VIEWED, ids=[lib.name for lib in VIEWED])
def test_write_indices_that_are_memory_of_the_cache_are_read_before_any_write(
    viewed: Library,
) -> None:
    """An int64 cache whose first two elements are the write indices themselves.

    Entry 0 writes rows 0-1 of its slab, over both indices: read after that write, entry
    1's start would be 101 (out of range). The compiled kernel declines indices that
    share the cache; the Python path reads every index first.
    """
    lib = viewed
    flat = np.arange(24, dtype=np.int64)
    flat[:2] = [0, 2]
    base = lib.asarray(flat.copy())
    cache, indices = base.reshape(2, 1, 4, 3), base[:2]
    update = np.arange(100, 112, dtype=np.int64).reshape(2, 1, 2, 3)
    want = oracle(flat.reshape(2, 1, 4, 3), update, np.array([0, 2]))
    got = og.tensor_scatter(cache, lib.asarray(update), indices, out=cache)
    assert got is cache
    assert_identical(lib.to_numpy(cache), want)


#: In-place writes of each form the compiled kernel serves or declines: (cache shape,
#: update length, write indices, mode, index dtype, cache C-ordered).
IN_PLACE = {
    "70 entries, own positions": ((70, 2, 9, 3), 2, [(7 * b) % 8 for b in range(70)],
                                  "linear", np.int64, True),
    "circular, a start past the end": ((3, 2, 6, 2), 2, [7, 0, 13], "circular", np.int64,
                                       True),
    "circular, one write wraps": ((3, 2, 6, 2), 2, [5, 0, 2], "circular", np.int64, True),
    "int32 indices": ((2, 3, 5, 2), 2, [3, 1], "linear", np.int32, True),
    "over 64 KB": ((2, 4, 64, 128), 32, [32, 5], "linear", np.int64, True),
    "cache not C-ordered": ((2, 3, 5, 4), 2, [0, 3], "linear", np.int64, False),
    "axis 1, rank 2": ((4, 6), 3, [3, 0, 1, 3], "linear", np.int64, True),
}  # fmt: skip


@pytest.mark.parametrize("form", IN_PLACE)
@pytest.mark.parametrize("viewed", VIEWED, ids=[lib.name for lib in VIEWED])
def test_in_place_writes_of_every_form(viewed: Library, form: str) -> None:
    """The compiled kernel's writes and each case it leaves to the Python path."""
    shape, length, starts, mode, index_dtype, c_ordered = IN_PLACE[form]
    axis = len(shape) - 2 if len(shape) > 2 else 1
    rng = np.random.default_rng(7)
    flat = rng.standard_normal(shape).astype(np.float32)
    update = rng.standard_normal((*shape[:axis], length, *shape[axis + 1 :])).astype(np.float32)
    indices = np.array(starts, index_dtype)
    want = oracle(flat, update, indices, axis=axis, mode=mode)
    lib = viewed
    if c_ordered:
        cache = lib.asarray(flat.copy())
    else:  # (every other element of a wider array's last axis)
        wide = np.zeros((*shape[:-1], 2 * shape[-1]), np.float32)
        cache = lib.asarray(wide)[..., ::2]
        cache[...] = lib.asarray(flat)
    got = og.tensor_scatter(cache, lib.asarray(update), lib.indices(indices), axis=axis,
                            mode=mode, out=cache)  # fmt: skip
    assert got is cache
    assert_identical(lib.to_numpy(cache), want)


@pytest.mark.parametrize("viewed", VIEWED, ids=[lib.name for lib in VIEWED])
def test_a_bad_last_entry_writes_nothing(viewed: Library) -> None:
    """Every write index is read before the first write, the last one too."""
    lib = viewed
    cache = lib.asarray(CACHE)
    with pytest.raises(IndexError, match="index 3 at position \\(1,\\) of write_indices"):
        og.tensor_scatter(cache, lib.asarray(UPDATE), lib.indices(np.array([0, 3])), out=cache)
    assert_identical(lib.to_numpy(cache), CACHE)


@pytest.mark.parametrize("circular", [False, True], ids=["linear", "circular"])
@pytest.mark.parametrize("writable", WRITABLE, ids=[lib.name for lib in WRITABLE])
def test_entries_at_their_own_positions_in_place(writable: Library, circular: bool) -> None:
    """Each entry's slice written by itself: an update that is a view of the cache is read
    before any entry is written; a write that wraps (circular) takes advanced indexing."""
    lib = writable
    mode = "circular" if circular else "linear"
    for starts, view in (([2, 0], False), ([1, 2], True), ([3, 0], False)):
        if starts[0] == 3 and not circular:
            continue  # (3 + 2 > 4: linear mode's error, in the table)
        cache = lib.asarray(CACHE)
        update = cache[:, :, 1:3, :] if view else lib.asarray(UPDATE)
        want = oracle(CACHE, CACHE[:, :, 1:3].copy() if view else UPDATE, np.array(starts),
                      mode=mode)  # fmt: skip
        got = og.tensor_scatter(cache, update, lib.indices(np.array(starts)), mode=mode, out=cache)
        assert got is cache
        assert_identical(lib.to_numpy(cache), want)


@pytest.mark.backend("torch")
def test_torch_gradients_reach_the_cache_and_the_update() -> None:
    import torch

    cache = torch.from_numpy(CACHE.astype(np.float64)).requires_grad_(True)
    update = torch.from_numpy(UPDATE.astype(np.float64)).requires_grad_(True)
    starts = torch.from_numpy(STARTS)
    assert torch.autograd.gradcheck(lambda c, u: og.tensor_scatter(c, u, starts), (cache, update))


@pytest.mark.backend("torch")
@pytest.mark.parametrize("check_bounds", [True, False])
def test_torch_compiled_decode_loop_writes_in_place(check_bounds: bool) -> None:
    import torch

    def step(cache: torch.Tensor, new: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        og.tensor_scatter(cache, new, pos, out=cache, check_bounds=check_bounds)
        return cache.sum()

    compiled = _compile(step)
    cache, want = torch.from_numpy(CACHE.copy()), CACHE.copy()
    for position in range(3):
        new = torch.full((2, 1, 1, 3), float(position + 100))
        pos = torch.tensor([position + 1, position])
        compiled(cache, new, pos)
        want = oracle(want, new.numpy(), pos.numpy())
    assert_identical(cache.numpy(), want)


@pytest.mark.backend("torch")
def test_torch_compiled_bad_index_raises_and_writes_nothing() -> None:
    import torch

    compiled = _compile(lambda c, u, w: og.tensor_scatter(c, u, w, out=c))
    cache = torch.from_numpy(CACHE.copy())
    compiled(cache, torch.from_numpy(UPDATE), torch.from_numpy(STARTS))  # (compiles)
    cache.copy_(torch.from_numpy(CACHE))
    with pytest.raises(RuntimeError, match="index out of bounds"):
        compiled(cache, torch.from_numpy(UPDATE), torch.tensor([3, 0]))
    assert_identical(cache.numpy(), CACHE)


@pytest.mark.backend("torch")
def test_torch_traced_graph_checks_when_it_runs() -> None:
    import torch

    with warnings.catch_warnings():
        # torch.jit.trace is deprecated (torch 2.13) and warns; so does tracing Python.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(
            lambda c, u, w: og.tensor_scatter(c, u, w),
            (torch.from_numpy(CACHE), torch.from_numpy(UPDATE), torch.from_numpy(STARTS)),
        )
    got = traced(torch.from_numpy(CACHE), torch.from_numpy(UPDATE), torch.tensor([1, 2]))
    assert_identical(got.numpy(), oracle(CACHE, UPDATE, np.array([1, 2])))
    # (TorchScript's interpreter wraps the library's IndexError, as for the gathers.)
    match = r"IndexError: TensorScatter-24: index 3 at position \(1,\) of write_indices"
    with pytest.raises(RuntimeError, match=match):
        traced(torch.from_numpy(CACHE), torch.from_numpy(UPDATE), torch.tensor([0, 3]))


@pytest.mark.backend("torch")
def test_torch_vmap_runs_each_entry() -> None:
    import torch

    caches = torch.from_numpy(np.stack([CACHE, CACHE + 100]))
    updates = torch.from_numpy(np.stack([UPDATE, UPDATE - 100]))
    starts = torch.from_numpy(np.stack([STARTS, STARTS[::-1].copy()]))
    got = torch.func.vmap(og.tensor_scatter)(caches, updates, starts)
    for n in range(2):
        want = oracle(caches[n].numpy(), updates[n].numpy(), starts[n].numpy())
        assert_identical(got[n].numpy(), want)


@pytest.mark.backend("jax")
def test_jax_jit_drops_a_bad_write_and_grad_flows() -> None:
    import jax
    import jax.numpy as jnp

    fn = jax.jit(lambda c, u, w: og.tensor_scatter(c, u, w))
    cache, update = jnp.asarray(CACHE), jnp.asarray(UPDATE)
    got = fn(cache, update, jnp.array([3, 0]))  # entry 0: position 3 kept, 4 dropped
    want = oracle(CACHE, UPDATE, np.array([3, 0]), check_bounds=False)
    assert_identical(np.asarray(got), want)
    grad = jax.grad(lambda u: fn(cache, u, jnp.asarray(STARTS)).sum())(update)
    assert_identical(np.asarray(grad), np.ones_like(UPDATE))


def _near_the_limits(dtype: type[np.signedinteger[Any]], batch: int) -> Any:
    """Write indices of ``dtype``, each near its largest or smallest value, or small."""
    from hypothesis import strategies as st

    info = np.iinfo(dtype)
    value = st.one_of(
        st.integers(int(info.max) - 8, int(info.max)),
        st.integers(int(info.min), int(info.min) + 8),
        st.integers(0, 8),
    )
    return st.lists(value, min_size=batch, max_size=batch).map(lambda v: np.array(v, dtype))


#: Three batch entries, a cache of 5 positions, an update of 3: a start within 2 of an
#: integer limit passes it at the last offset (where positions used to wrap).
LIMIT_CACHE = np.arange(30, dtype=np.float32).reshape(3, 5, 2)
LIMIT_UPDATE = -np.arange(18, dtype=np.float32).reshape(3, 3, 2) - 1


@pytest.mark.backend("torch")
@pytest.mark.parametrize(
    ("mode", "check_bounds", "dtype", "in_place"),
    [("circular", True, np.int64, False), ("circular", True, np.int64, True),
     ("circular", True, np.int32, True), ("circular", False, np.int64, True),
     ("linear", False, np.int64, True)],
)  # fmt: skip
def test_torch_compiled_writes_only_inside_the_cache_near_the_integer_limits(
    mode: str, check_bounds: bool, dtype: type[np.signedinteger[Any]], in_place: bool
) -> None:
    """Reliability round 5: a circular position that passed int64's limit wrapped, and the
    compiled write landed outside the cache (heap corruption, a process abort). In place,
    the cache is a view into a larger buffer whose other positions must stay as they
    were, whatever the index."""
    import torch
    from hypothesis import given, settings

    def call(c: torch.Tensor, u: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        out = {"out": c} if in_place else {}
        return og.tensor_scatter(c, u, w, axis=1, mode=mode, check_bounds=check_bounds, **out)

    compiled = _compile(call)
    update = torch.from_numpy(LIMIT_UPDATE)

    @settings(max_examples=30, deadline=None, database=None)
    @given(_near_the_limits(dtype, 3))
    def writes(starts: np.ndarray) -> None:
        buffer = torch.full((3, 7, 2), -100.0)
        cache = buffer[:, 1:6]
        cache.copy_(torch.from_numpy(LIMIT_CACHE))
        try:
            want = oracle(LIMIT_CACHE, LIMIT_UPDATE, starts, axis=1, mode=mode,
                          check_bounds=check_bounds)  # fmt: skip
        except IndexError:
            with pytest.raises(RuntimeError, match="index out of bounds"):
                compiled(cache, update, torch.from_numpy(starts))
            assert_identical(cache.numpy(), LIMIT_CACHE)
        else:
            got = compiled(cache, update, torch.from_numpy(starts))
            assert_identical(got.numpy(), want)
            assert_identical(cache.numpy(), want if in_place else LIMIT_CACHE)
        assert (buffer[:, 0] == -100).all()
        assert (buffer[:, 6] == -100).all()

    writes()


@pytest.mark.backend("jax")
@pytest.mark.parametrize("mode", ["circular", "linear"])
def test_jax_jit_positions_near_the_integer_limits(mode: str) -> None:
    """Under ``jax.jit`` nothing raises: a bad write is dropped, every other lands exactly."""
    import jax
    import jax.numpy as jnp
    from hypothesis import given, settings

    fn = jax.jit(lambda c, u, w: og.tensor_scatter(c, u, w, axis=1, mode=mode))
    dtype = np.int64 if jax.config.read("jax_enable_x64") else np.int32

    @settings(max_examples=30, deadline=None, database=None)
    @given(_near_the_limits(dtype, 3))
    def writes(starts: np.ndarray) -> None:
        got = fn(jnp.asarray(LIMIT_CACHE), jnp.asarray(LIMIT_UPDATE), jnp.asarray(starts))
        want = oracle(LIMIT_CACHE, LIMIT_UPDATE, starts, axis=1, mode=mode, check_bounds=False)
        assert_identical(np.asarray(got), want)

    writes()
