"""Programs, not calls: ours against the same program written with native calls.

``python -m benchmarks.programs [--smoke] [--device cpu|cuda] [--rounds N] [--backends ...]
[--modes ...] [--programs ...] [--out DIR]``

A program calls the library many times, so its cost is judged per program. Two workloads,
each written twice, once with ``og.*`` and once with the native calls a careful user writes,
run in every mode users run (eager NumPy, torch on the CPU and JAX; ``torch.compile
(fullgraph=True)`` with the default inductor backend; ``jax.jit``), interleaved round by
round in this one process (``benchmarks.timer``); ratios are medians of the per-round ratios
ours / native. Before timing, ours and native are run once from identical inputs and must
agree bit for bit; a mismatch or an exception is reported in the table, not timed.

**converted graph**: what a converted ONNX graph does, ``calls`` (13) times each of
GatherElements on 8x4 float32 (axis 1, 8x4 indices, some negative), Gather of 2 rows of
8x4 (axis 0, one index negative) and GatherND of 2 index tuples into 8x4 (some coordinates
negative), each result feeding an elementwise op::

    y = y + gather_elements(y, ge[k], 1) * 0.5
    r = gather(y, g[k], 0) + gather_nd(y, nd[k])[:, None]
    acc = acc + r

Native forms: NumPy ``np.take_along_axis``, ``np.take`` and ``y[c[:, 0], c[:, 1]]`` (all
three count negatives from the end themselves); torch ``torch.gather`` and
``torch.index_select`` with the negatives wrapped inside the program by
``torch.where(i < 0, i + n, i)`` (both refuse negatives) and ``y[c[:, 0], c[:, 1]]``; JAX
``jnp.take_along_axis``, ``jnp.take`` and ``y[c[:, 0], c[:, 1]]``. The indices are inputs of
the program, as a graph's index tensors are.

**decode step**: ``layers`` (8) KV caches of (1, 8, 512, 64) float32; each layer writes
its new entry (1, 8, 1, 64) at a position held in an array, then reads that entry back
(``c[:, :, pos].sum((2, 3))``, summed over the layers; the same on both sides, so the
compiled step is not empty). The position arrays are made once, outside the step, as a
decoding loop updates them once per step for all layers: ours writes through an index
array of ScatterND coordinates ``(0, h, pos)`` (1, 8, 1, 3), or for ScatterElements one
of the update's shape filled with ``pos``, or for TensorScatter the write indices
``(pos,)`` (1,); native through ``pos`` of shape (1,), which both sides read with. Ours
writes with ``og.scatter_nd(c, idx, new, out=c)``, ``og.scatter_elements(c, idx_e, new,
axis=2, out=c)`` or ``og.tensor_scatter(c, new, starts, out=c)``; native with ``c[:, :, pos] = new`` (NumPy and torch) and torch's
``c.index_copy_(2, pos, new)``. JAX arrays are immutable: there both sides return new
caches, ours ``og.scatter_nd(c, idx, new)``, native ``c.at[:, :, pos].set(new)`` and
``lax.dynamic_update_slice``; under ``jax.jit`` with the caches donated
(``donate_argnums``), eagerly as copies. JAX results are waited for
(``block_until_ready``) on both sides.

``--device cuda`` puts torch's tensors on the GPU and makes each torch program wait for
its kernels (``torch.cuda.synchronize``); JAX's arrays go to JAX's default device (the GPU
where JAX has one); NumPy stays on the host.

For ``torch.compile`` and ``jax.jit`` the table also gives the compile time: the first
call's wall time, each contender in a fresh process of its own (:func:`cold_compile_s`;
``--smoke`` and ``--compile-in-process``: in the run's process). For ``torch.compile``,
also the recompiles: after the first calls, ours is called eagerly on NumPy and JAX arrays
and each compiled program is called again; a new Dynamo graph there is a recompile caused
by the library's state. ``torch.compile`` runs first in the process, before any eager
NumPy or JAX call of ours, so that probe sees the library's state as a fresh program does.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import importlib
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

import onnx_gather as og
from benchmarks import machine, timer

BACKENDS = ("numpy", "torch", "jax")
#: (backend, mode) in the order they run: the compiled modes first (see the docstring).
MODES = (
    ("torch", "compile"),
    ("jax", "jit"),
    ("torch", "eager"),
    ("jax", "eager"),
    ("numpy", "eager"),
)
MODE_NAMES = {
    ("torch", "compile"): "torch.compile",
    ("jax", "jit"): "jax.jit",
    ("torch", "eager"): "eager torch",
    ("jax", "eager"): "eager JAX",
    ("numpy", "eager"): "eager NumPy",
}
PROGRAMS = ("graph", "decode")
#: Where torch's tensors live (``--device``); NumPy's and JAX's arrays stay where their
#: library puts them.
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Sizes:
    """The workloads' sizes: the issue's, or a smoke run's (small, so it compiles fast)."""

    calls: int = 13
    layers: int = 8
    cache: tuple[int, int, int, int] = (1, 8, 512, 64)
    pos: int = 300


FULL = Sizes()
SMOKE = Sizes(calls=1, layers=1, cache=(1, 8, 32, 64), pos=20)


# --- the programs -------------------------------------------------------------------------
# Each is written out once per library, so that every compiled program is a code object of
# its own: Dynamo caches compiled code per code object, and two programs sharing one would
# evaluate each other's guards on every call.


def graph_ours(x: Any, ge: Sequence[Any], g: Sequence[Any], nd: Sequence[Any]) -> Any:
    """The converted graph with ``og.*`` (any library)."""
    y, acc = x, None
    for a, b, c in zip(ge, g, nd, strict=True):
        y = y + og.gather_elements(y, a, 1) * 0.5
        r = og.gather(y, b, 0) + og.gather_nd(y, c)[:, None]
        acc = r if acc is None else acc + r
    return y, acc


def graph_numpy(x: Any, ge: Sequence[Any], g: Sequence[Any], nd: Sequence[Any]) -> Any:
    """The converted graph with NumPy's calls (negatives count from the end in each)."""
    y, acc = x, None
    for a, b, c in zip(ge, g, nd, strict=True):
        y = y + np.take_along_axis(y, a, 1) * 0.5
        r = np.take(y, b, 0) + y[c[:, 0], c[:, 1]][:, None]
        acc = r if acc is None else acc + r
    return y, acc


def graph_torch(x: Any, ge: Sequence[Any], g: Sequence[Any], nd: Sequence[Any]) -> Any:
    """The converted graph with torch's calls; gather and index_select refuse negatives."""
    import torch

    y, acc = x, None
    for a, b, c in zip(ge, g, nd, strict=True):
        a = torch.where(a < 0, a + y.shape[1], a)
        b = torch.where(b < 0, b + y.shape[0], b)
        y = y + torch.gather(y, 1, a) * 0.5
        r = torch.index_select(y, 0, b) + y[c[:, 0], c[:, 1]][:, None]
        acc = r if acc is None else acc + r
    return y, acc


def graph_jax(x: Any, ge: Sequence[Any], g: Sequence[Any], nd: Sequence[Any]) -> Any:
    """The converted graph with jax.numpy's calls (negatives count from the end in each)."""
    import jax.numpy as jnp

    y, acc = x, None
    for a, b, c in zip(ge, g, nd, strict=True):
        y = y + jnp.take_along_axis(y, a, 1) * 0.5
        r = jnp.take(y, b, 0) + y[c[:, 0], c[:, 1]][:, None]
        acc = r if acc is None else acc + r
    return y, acc


def _read(c: Any, pos: Any) -> Any:
    # The entry just written, at a position only known at run time. (A static slice read
    # after the write, e.g. c[:, :, :16], makes XLA copy the whole cache for
    # dynamic_update_slice and .at[].set under jax.jit with donated caches, and not for
    # our scatter: the table would time XLA's copy, not the write.)
    return c[:, :, pos].sum((2, 3))


def _in_place(write: Callable[..., Any], caches: Sequence[Any], news: Sequence[Any],
              index: Any, pos: Any) -> Any:  # fmt: skip
    """One decoding step, NumPy or torch: ``write(c, index, new)`` per layer, then a read."""
    acc = None
    for c, new in zip(caches, news, strict=True):
        write(c, index, new)
        s = _read(c, pos)
        acc = s if acc is None else acc + s
    return acc


def _new_caches(write: Callable[..., Any], caches: Sequence[Any], news: Sequence[Any],
                index: Any, pos: Any) -> Any:  # fmt: skip
    """One decoding step, JAX: each layer's new cache ``write(c, index, new)``, then a read."""
    out, acc = [], None
    for c, new in zip(caches, news, strict=True):
        c = write(c, index, new)
        s = _read(c, pos)
        acc = s if acc is None else acc + s
        out.append(c)
    return out, acc


def _scatter_nd_in_place(c: Any, idx: Any, new: Any) -> None:
    og.scatter_nd(c, idx, new, out=c)


def _scatter_elements_in_place(c: Any, idx: Any, new: Any) -> None:
    og.scatter_elements(c, idx, new, axis=2, out=c)


def _tensor_scatter_in_place(c: Any, starts: Any, new: Any) -> None:
    og.tensor_scatter(c, new, starts, out=c)


def _slice_assignment(c: Any, pos: Any, new: Any) -> None:
    c[:, :, pos] = new


def _index_copy(c: Any, pos: Any, new: Any) -> None:
    c.index_copy_(2, pos, new)


def decode_ours_nd(caches: Sequence[Any], news: Sequence[Any], idx: Any, pos: Any) -> Any:
    """One decoding step, NumPy or torch: ScatterND in place, then a read."""
    return _in_place(_scatter_nd_in_place, caches, news, idx, pos)


def decode_ours_elements(caches: Sequence[Any], news: Sequence[Any], idx: Any, pos: Any) -> Any:
    """One decoding step, NumPy or torch: ScatterElements in place, then a read."""
    return _in_place(_scatter_elements_in_place, caches, news, idx, pos)


def decode_ours_tensor(caches: Sequence[Any], news: Sequence[Any], starts: Any, pos: Any) -> Any:
    """One decoding step, NumPy or torch: TensorScatter in place, then a read."""
    return _in_place(_tensor_scatter_in_place, caches, news, starts, pos)


def decode_native_slice(caches: Sequence[Any], news: Sequence[Any], _: Any, pos: Any) -> Any:
    """One decoding step, NumPy or torch: ``c[:, :, pos] = new``, then a read."""
    return _in_place(_slice_assignment, caches, news, pos, pos)


def decode_native_index_copy(caches: Sequence[Any], news: Sequence[Any], _: Any, pos: Any) -> Any:
    """One decoding step, torch: ``c.index_copy_(2, pos, new)``, then a read."""
    return _in_place(_index_copy, caches, news, pos, pos)


def decode_jax_ours_nd(caches: Sequence[Any], news: Sequence[Any], idx: Any, pos: Any) -> Any:
    """One decoding step, JAX: new caches from ScatterND, then a read."""
    return _new_caches(og.scatter_nd, caches, news, idx, pos)


def decode_jax_ours_elements(caches: Sequence[Any], news: Sequence[Any], idx: Any, pos: Any) -> Any:
    """One decoding step, JAX: new caches from ScatterElements, then a read."""
    return _new_caches(partial(og.scatter_elements, axis=2), caches, news, idx, pos)


def decode_jax_ours_tensor(
    caches: Sequence[Any], news: Sequence[Any], starts: Any, pos: Any
) -> Any:
    """One decoding step, JAX: new caches from TensorScatter, then a read."""
    return _new_caches(_tensor_scatter, caches, news, starts, pos)


def _tensor_scatter(c: Any, starts: Any, new: Any) -> Any:
    return og.tensor_scatter(c, new, starts)


def decode_jax_native_at(caches: Sequence[Any], news: Sequence[Any], _: Any, pos: Any) -> Any:
    """One decoding step, JAX: ``c.at[:, :, pos].set(new)``, then a read."""
    return _new_caches(lambda c, pos, new: c.at[:, :, pos].set(new), caches, news, pos, pos)


def decode_jax_native_dus(caches: Sequence[Any], news: Sequence[Any], _: Any, pos: Any) -> Any:
    """One decoding step, JAX: ``lax.dynamic_update_slice``, then a read."""
    from jax import lax

    def write(c: Any, pos: Any, new: Any) -> Any:
        return lax.dynamic_update_slice(c, new, (0, 0, pos[0], 0))

    return _new_caches(write, caches, news, pos, pos)


# --- inputs -------------------------------------------------------------------------------


def graph_inputs(sizes: Sizes) -> tuple[np.ndarray, list[Any], list[Any], list[Any]]:
    """x (8, 4) float32 and the index arrays (int64), some of them negative."""
    rng = np.random.default_rng(20261125)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    ge = [rng.integers(-4, 4, (8, 4)) for _ in range(sizes.calls)]
    g = [np.array([rng.integers(0, 8), rng.integers(-8, 0)]) for _ in range(sizes.calls)]
    nd = [
        np.stack([rng.integers(-8, 8, 2), rng.integers(-4, 4, 2)], -1) for _ in range(sizes.calls)
    ]
    return x, ge, g, nd


def decode_inputs(sizes: Sizes) -> dict[str, Any]:
    """Caches, new entries and the position as ScatterND, ScatterElements and plain indices.

    The values are small whole numbers in float32, so the step's read (a sum) is exact in
    any order: compiled programs sum in the order of their own fused kernels (inductor's
    CUDA reductions differ from one program to the next), and ours must still equal native
    bit for bit.
    """
    rng = np.random.default_rng(20261126)
    b, h, _, d = sizes.cache
    idx = np.zeros((b, h, 1, 3), np.int64)
    idx[..., 1] = np.arange(h)[None, :, None]
    idx[..., 2] = sizes.pos
    return {
        "caches": [
            rng.integers(-64, 64, sizes.cache).astype(np.float32) for _ in range(sizes.layers)
        ],
        "news": [
            rng.integers(-64, 64, (b, h, 1, d)).astype(np.float32) for _ in range(sizes.layers)
        ],
        "idx": idx,
        "idx_e": np.full((b, h, 1, d), sizes.pos, np.int64),
        "starts": np.full(b, sizes.pos, np.int64),
        "pos": np.array([sizes.pos]),
    }


# --- contenders ---------------------------------------------------------------------------


@dataclass
class Contender:
    """One program in one mode: ``call()`` runs it once; ``result()`` the last result as
    NumPy arrays (for an in-place step: the caches and the step's output)."""

    label: str
    call: Callable[[], Any]
    result: Callable[[], list[np.ndarray]]
    first_call_s: float | None = None
    graphs: list[int] = field(default_factory=list)
    #: jax.jit: how many copies of a whole cache XLA's optimised program makes.
    cache_copies: Callable[[], int] | None = None


@dataclass
class Pair:
    """A table row: ours against one native form of the same program."""

    program: str
    ours: str
    native: str
    native_form: str


@dataclass
class Group:
    """The contenders of one program in one mode, timed together."""

    program: str
    backend: str
    mode: str
    contenders: dict[str, Contender]
    pairs: list[Pair]


def _numpy_of(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu()
    return np.asarray(x)


def _apply(ready: Callable[[Any], Any], fn: Callable[..., Any], *args: Any) -> Any:
    return ready(fn(*args))


def _identity(out: Any) -> Any:
    return out


def _first(items: list[Any]) -> Any:
    return items[0]


def _holding(
    fn: Callable[[], Any], extra: Callable[[], list[Any]] = list
) -> tuple[Callable[[], Any], Callable[[], list[np.ndarray]]]:
    """``fn`` keeping its last output, and that output (plus ``extra()``) as NumPy arrays."""
    last: list[Any] = [None]

    def call() -> Any:
        last[0] = fn()
        return last[0]

    def result() -> list[np.ndarray]:
        out = last[0]
        items = list(out) if isinstance(out, (tuple, list)) else [out]
        return [_numpy_of(v) for v in (*items, *extra())]

    return call, result


def _torch_on(device: str) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """Tensors from NumPy arrays (copies) on ``device``, and what waits for a result there."""
    import torch

    def convert(a: Any) -> Any:
        return torch.from_numpy(np.array(a)).to(device)

    def ready(out: Any) -> Any:
        if device != "cpu":
            torch.cuda.synchronize(device)
        return out

    return convert, ready


def _graph_group(backend: str, mode: str, sizes: Sizes, device: str = "cpu") -> Group:
    x, ge, g, nd = graph_inputs(sizes)
    native: Callable[..., Any]
    if backend == "numpy":
        convert: Callable[[Any], Any] = np.asarray
        native, ready = graph_numpy, (lambda out: out)
        ours = graph_ours
    elif backend == "torch":
        import torch

        convert, ready = _torch_on(device)
        native, ours = graph_torch, graph_ours
        if mode == "compile":
            ours = torch.compile(graph_ours, fullgraph=True)
            native = torch.compile(graph_torch, fullgraph=True)
    else:
        import jax
        import jax.numpy as jnp

        convert, native, ours = jnp.asarray, graph_jax, graph_ours
        ready = jax.block_until_ready
        if mode == "jit":
            ours, native = jax.jit(graph_ours), jax.jit(graph_jax)
    args = (convert(x), [convert(a) for a in ge], [convert(b) for b in g], [convert(c) for c in nd])
    contenders = {}
    for label, fn in (("ours", ours), ("native", native)):
        call, result = _holding(partial(_apply, ready, fn, *args))
        contenders[label] = Contender(label, call, result)
    form = {
        "numpy": "np.take_along_axis, np.take, y[c[:, 0], c[:, 1]]",
        "torch": "torch.gather, index_select (torch.where for negatives), y[c[:, 0], c[:, 1]]",
        "jax": "jnp.take_along_axis, jnp.take, y[c[:, 0], c[:, 1]]",
    }[backend]
    name = f"converted graph: {3 * sizes.calls} small gathers"
    return Group(name, backend, mode, contenders, [Pair(name, "ours", "native", form)])


def _decode_group(backend: str, mode: str, sizes: Sizes, device: str = "cpu") -> Group:
    inputs = decode_inputs(sizes)
    steps: dict[str, tuple[Callable[..., Any], str]]
    contenders: dict[str, Contender] = {}
    if backend in ("numpy", "torch"):
        steps = {
            "ours ScatterND": (decode_ours_nd, "idx"),
            "ours ScatterElements": (decode_ours_elements, "idx_e"),
            "ours TensorScatter": (decode_ours_tensor, "starts"),
            "c[:, :, pos] = new": (decode_native_slice, "pos"),
        }
        convert: Callable[[Any], Any] = np.array  # a copy: every contender has its caches
        ready: Callable[[Any], Any] = _identity
        if backend == "torch":
            import torch

            steps["index_copy_"] = (decode_native_index_copy, "pos")
            convert, ready = _torch_on(device)

        for label, (step, where) in steps.items():
            caches = [convert(c) for c in inputs["caches"]]
            news = [convert(v) for v in inputs["news"]]
            index, pos = convert(inputs[where]), convert(inputs["pos"])
            if mode == "compile":
                step = torch.compile(step, fullgraph=True)
            call, result = _holding(
                partial(_apply, ready, step, caches, news, index, pos), partial(list, caches)
            )
            contenders[label] = Contender(label, call, result)
    else:
        import jax
        import jax.numpy as jnp

        steps = {
            "ours ScatterND": (decode_jax_ours_nd, "idx"),
            "ours ScatterElements": (decode_jax_ours_elements, "idx_e"),
            "ours TensorScatter": (decode_jax_ours_tensor, "starts"),
            "c.at[:, :, pos].set(new)": (decode_jax_native_at, "pos"),
            "lax.dynamic_update_slice": (decode_jax_native_dus, "pos"),
        }
        for label, (step, where) in steps.items():
            if mode == "jit":
                step = jax.jit(step, donate_argnums=0)
            state = [[jnp.array(c) for c in inputs["caches"]]]
            news = [jnp.asarray(v) for v in inputs["news"]]
            index, pos = jnp.asarray(inputs[where]), jnp.asarray(inputs["pos"])

            def one_step(
                step: Any = step,
                state: Any = state,
                news: Any = news,
                index: Any = index,
                pos: Any = pos,
            ) -> Any:
                state[0], acc = jax.block_until_ready(step(state[0], news, index, pos))
                return acc

            call, result = _holding(one_step, partial(_first, state))
            contenders[label] = Contender(label, call, result)
            if mode == "jit":
                contenders[label].cache_copies = partial(
                    _cache_copies, step, state, news, index, pos, sizes.cache
                )
    natives = [k for k in contenders if not k.startswith("ours")]
    pairs = []
    for ours in ("ours ScatterND", "ours ScatterElements", "ours TensorScatter"):
        for native in natives:
            name = f"decode step: {sizes.layers} layers, {ours.removeprefix('ours ')} out="
            if backend == "jax":
                name = f"decode step: {sizes.layers} layers, {ours.removeprefix('ours ')}"
            pairs.append(Pair(name, ours, native, native))
    return Group("decode step", backend, mode, contenders, pairs)


def _cache_copies(
    step: Any, state: list[Any], news: Any, index: Any, pos: Any, shape: tuple[int, ...]
) -> int:
    """The copies of a whole cache in the optimised program of a jitted step."""
    text = step.lower(state[0], news, index, pos).compile().as_text()
    cache = "f32[" + ",".join(map(str, shape)) + "]"
    return sum(1 for line in text.splitlines() if f"= {cache}" in line and " copy(" in line)


GROUPS = {"graph": _graph_group, "decode": _decode_group}


# --- the run ------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table (times in seconds; None where not timed)."""

    program: str
    mode: str
    native_form: str
    ours: float | None = None
    native: float | None = None
    ratio: float | None = None
    compile_ours: float | None = None
    compile_native: float | None = None
    recompiles: str = "—"
    note: str = ""


def _graphs_compiled() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _first_calls(group: Group) -> dict[str, str]:
    """Run every contender once (timed: a compiled one compiles); failures by label."""
    failed = {}
    for c in group.contenders.values():
        before = _graphs_compiled() if group.mode == "compile" else 0
        start = time.perf_counter()
        try:
            c.call()
        except Exception as exc:  # reported in the table, not raised
            failed[c.label] = f"{type(exc).__name__}: {_first_line(exc)}"
            continue
        c.first_call_s = time.perf_counter() - start
        if group.mode == "compile":
            c.graphs.append(_graphs_compiled() - before)
    return failed


def _compare(group: Group, failed: dict[str, str]) -> dict[tuple[str, str], str]:
    """Why a pair is not timed: a failure, or results that differ in a bit."""
    why = {}
    results = {label: c.result() for label, c in group.contenders.items() if label not in failed}
    for p in group.pairs:
        bad = [
            f"{label} fails ({failed[label]})" for label in (p.ours, p.native) if label in failed
        ]
        if bad:
            why[(p.ours, p.native)] = "; ".join(bad)
            continue
        a, b = results[p.ours], results[p.native]
        same = len(a) == len(b) and all(
            x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
            for x, y in zip(a, b, strict=False)
        )
        if not same:
            why[(p.ours, p.native)] = "results differ from native (not bit for bit): not timed"
    return why


def _warm_up_compilers(modes: set[str]) -> None:
    """Pay the compilers' one-time costs (imports, toolchain probes) on a program of no
    interest, so that no program's compile time includes them."""
    if "compile" in modes:
        import torch

        torch._dynamo.reset()
        torch.compile(lambda t: (t * 2).sum(), fullgraph=True)(torch.ones(3))
    if "jit" in modes:
        import jax

        jax.jit(lambda t: (t * 2).sum())(np.ones(3, np.float32)).block_until_ready()


def cold_compile_s(
    program: str, backend: str, mode: str, label: str, sizes: Sizes, device: str = "cpu"
) -> float | None:
    """The first call of one compiled contender, in a fresh process; None where it fails.

    What a user's new process pays: in the benchmark's own process a compile is faster or
    slower by what ran before it (the first of a kind pays lazy set-ups the others reuse;
    a heap that holds another library's objects makes each garbage collection longer):
    the 8-layer decode step compiled in 2.5-2.9 s there against 2.7-2.9 s alone, and the
    native one in 1.7-1.9 against 2.0-2.1 s (2-core AMD EPYC VM, 2026-11-28). The child
    warms its compiler up first, as the run does, with an empty inductor cache of its own.
    ``sizes``: :data:`FULL` or :data:`SMOKE` (what the child's command line can name).
    """
    if sizes not in (FULL, SMOKE):
        raise ValueError(f"a fresh process runs FULL or SMOKE sizes, not {sizes}")
    argv = [sys.executable, "-m", "benchmarks.programs", "--cold-child", program, backend,
            mode, label, "--device", device, *(["--smoke"] if sizes == SMOKE else [])]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="benchmarks-programs-cold-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, cwd=Path(__file__).parent.parent
        )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    return float(lines[-1])


def _cold_child(
    program: str, backend: str, mode: str, label: str, sizes: Sizes, device: str
) -> None:
    """:func:`cold_compile_s`'s process: prints the seconds of the contender's first call."""
    _warm_up_compilers({mode})
    contender = GROUPS[program](backend, mode, sizes, device).contenders[label]
    start = time.perf_counter()
    contender.call()
    print(time.perf_counter() - start)


def _call_again(groups: list[Group], which: list[int], failed: dict[int, dict[str, str]]) -> None:
    """Call each compiled contender once more, counting the Dynamo graphs it compiles."""
    for k in which:
        for c in groups[k].contenders.values():
            if c.label in failed[k]:
                continue
            before = _graphs_compiled()
            try:
                c.call()
            except Exception as exc:  # reported in the table, not raised
                failed[k][c.label] = f"{type(exc).__name__} on a later call: {_first_line(exc)}"
                continue
            c.graphs.append(_graphs_compiled() - before)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:120]


def _eager_calls_elsewhere(backends: Sequence[str]) -> list[str]:
    """Our calls on NumPy arrays and (if in this run) JAX arrays, eagerly: the library
    grows whatever per-library state it keeps."""
    done = []
    arrays: list[tuple[str, Callable[[Any], Any]]] = [("NumPy", np.asarray)]
    if "jax" in backends:
        import jax.numpy as jnp

        arrays.append(("JAX", jnp.asarray))
    for name, convert in arrays:
        try:
            _eager_calls(convert)
        except Exception as exc:  # reported in the notes, not raised
            name += f" (failed: {type(exc).__name__}: {_first_line(exc)})"
        done.append(name)
    return done


def _eager_calls(convert: Callable[[Any], Any]) -> None:
    """Each public function once, on arrays made by ``convert``."""
    x = convert(np.arange(32, dtype=np.float32).reshape(8, 4))
    i = convert(np.array([[1, -1, 0, 2]] * 8))
    og.gather_elements(x, i, 1)
    og.gather(x, convert(np.array([0, -1])), 0)
    og.gather_nd(x, convert(np.array([[0, 1], [-1, -2]])))
    og.scatter_nd(x, convert(np.array([[1], [6]])), convert(np.ones((2, 4), np.float32)))
    og.scatter_elements(x, i, convert(np.ones((8, 4), np.float32)), axis=1)


def _recompiles(c: Contender) -> str:
    """Graphs compiled after the first call; those of the plain second call named."""
    second, after = c.graphs[1], c.graphs[2]
    return f"{second + after}" + (f" ({second} on the 2nd call)" if second else "")


def _time(group: Group, skip: dict[tuple[str, str], str], rounds: int, sample: float) -> list[Row]:
    mode = MODE_NAMES[(group.backend, group.mode)]
    timed = {
        label for p in group.pairs if (p.ours, p.native) not in skip for label in (p.ours, p.native)
    }
    try:
        times = timer.interleaved(
            {label: c.call for label, c in group.contenders.items() if label in timed},
            rounds,
            sample,
        )
    except Exception as exc:  # reported in the table, not raised
        why = f"fails while timed: {type(exc).__name__}: {_first_line(exc)}"
        skip = {(p.ours, p.native): skip.get((p.ours, p.native), why) for p in group.pairs}
        times = {}
    rows = []
    for p in group.pairs:
        ours, native = group.contenders[p.ours], group.contenders[p.native]
        row = Row(p.program, mode, p.native_form)
        row.compile_ours, row.compile_native = ours.first_call_s, native.first_call_s
        if group.mode == "compile" and len(ours.graphs) == 3 and len(native.graphs) == 3:
            row.recompiles = f"{_recompiles(ours)} / {_recompiles(native)}"
        if (p.ours, p.native) in skip:
            row.note = skip[(p.ours, p.native)]
        else:
            row.ours = statistics.median(times[p.ours])
            row.native = statistics.median(times[p.native])
            row.ratio = timer.median_ratio(times[p.ours], times[p.native])
        rows.append(row)
    return rows


def run(
    backends: Sequence[str],
    modes: Sequence[str],
    programs: Sequence[str],
    sizes: Sizes,
    rounds: int,
    sample: float,
    log: Callable[[str], None] = print,
    device: str = "cpu",
    cold: bool = False,
) -> tuple[list[Row], list[str]]:
    """Every selected program in every selected mode; the rows and the notes.

    ``cold``: each compiled contender's compile time is measured again in a process of its
    own (:func:`cold_compile_s`), the one the table reports.
    """
    keys = [
        (program, backend, mode)
        for backend, mode in MODES
        if backend in backends and mode in modes
        for program in programs
    ]
    groups = [GROUPS[program](backend, mode, sizes, device) for program, backend, mode in keys]
    notes: list[str] = []
    checks: dict[int, dict[tuple[str, str], str]] = {}
    failed: dict[int, dict[str, str]] = {}
    # The torch.compile programs compile first, all of them, before anything else calls
    # ours; then ours is called on other libraries' arrays and they are called again.
    compiled = [k for k, g in enumerate(groups) if g.mode == "compile"]
    rest = [k for k, g in enumerate(groups) if g.mode != "compile"]
    _warm_up_compilers({g.mode for g in groups})
    for k in compiled:
        failed[k] = _first_calls(groups[k])
        checks[k] = _compare(groups[k], failed[k])
    if compiled:
        # A second call compiles nothing unless a guard already fails; a third one follows
        # our eager calls on other libraries' arrays.
        _call_again(groups, compiled, failed)
        elsewhere = _eager_calls_elsewhere(backends)
        _call_again(groups, compiled, failed)
        for k in compiled:  # the results once more, after any recompile
            checks[k] = _compare(groups[k], failed[k])
        notes.append(
            "recompiles (torch.compile): the Dynamo graphs compiled after the first call, "
            "by a plain second call and by a third one made after eager calls of ours on "
            f"{' and '.join(elsewhere)} arrays (ours / native); 0: no recompile."
        )
    for k in rest:
        failed[k] = _first_calls(groups[k])
        checks[k] = _compare(groups[k], failed[k])
    if cold:
        for k, (program, backend, mode) in enumerate(keys):
            if mode not in ("compile", "jit"):
                continue
            for c in groups[k].contenders.values():
                if c.label not in failed[k]:
                    c.first_call_s = cold_compile_s(program, backend, mode, c.label, sizes, device)
    for k in rest:
        for c in groups[k].contenders.values():
            copies = 0 if c.cache_copies is None or c.label in failed[k] else c.cache_copies()
            if copies:
                notes.append(
                    f"jax.jit decode step, {c.label}: XLA's optimised program (its HLO) holds "
                    f"{copies} copies of a whole cache per step; that row times them too."
                )
    if any(g.backend == "jax" and g.program == "decode step" for g in groups):
        notes.append(
            "JAX decode steps return new caches (JAX has no out=); under jax.jit the caches "
            "are donated (donate_argnums) on both sides."
        )
    rows = []
    # The timer collects garbage after every round; with torch and JAX loaded that walks
    # a large heap (about 0.5 s on a 2-core machine). Frozen, the collection sees only
    # what the programs allocate.
    gc.collect()
    gc.freeze()
    try:
        for k, group in enumerate(groups):
            new = _time(group, checks[k], rounds, sample)
            for r in new:
                log(
                    f"{r.program:44s} {r.mode:14s} vs {r.native_form[:40]:40s} "
                    + (f"{r.ratio:6.2f}x" if r.ratio is not None else r.note)
                )
            rows += new
    finally:
        gc.unfreeze()
    return rows, notes


def _us(t: float | None) -> str:
    return "—" if t is None else f"{t * 1e6:.1f}"


def _s(t: float | None) -> str:
    return "—" if t is None else f"{t:.1f}"


def markdown(rows: Sequence[Row], info: dict[str, str], command: str, notes: Sequence[str]) -> str:
    """The table, with the command and the conditions it was taken under (last)."""
    lines = [
        f"Command: `{command}`",
        "",
        "Ours: the program written with `og.*`; native: the same program written with the "
        "native calls named. Times are medians over interleaved rounds of one program call; "
        "ours/native is the median of the per-round ratios (below 1: ours is faster). "
        "compile s: the first call's wall time (torch.compile and jax.jit), ours / native.",
        "",
        "| program | mode | native | ours µs | native µs | ours/native | compile s ours / native "
        "| recompiles ours / native |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else r.note
        compiled = (
            "—"
            if r.compile_ours is None or r.mode.startswith("eager")
            else (f"{_s(r.compile_ours)} / {_s(r.compile_native)}")
        )
        lines.append(
            f"| {r.program} | {r.mode} | {r.native_form} | {_us(r.ours)} | {_us(r.native)} "
            f"| {ratio} | {compiled} | {r.recompiles} |"
        )
    if notes:
        lines += ["", *(f"- {n}" for n in notes)]
    lines += machine.table(info)
    return "\n".join(lines) + "\n"


def _info(
    backends: Sequence[str], rounds: int, sample: float, device: str = "cpu"
) -> dict[str, str]:
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores online",
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    # (machine.describe reads onnxruntime's version, which this table does not need)
    with contextlib.suppress(ImportError):
        info["cpu"] = machine.describe({}, {})["cpu"]
    for name in backends:
        if name != "numpy":
            info[name] = str(importlib.import_module(name).__version__)
    if device != "cpu":
        info["gpu"] = str(importlib.import_module("torch").cuda.get_device_name(device))
    if "jax" in backends:
        info["jax devices"] = str(importlib.import_module("jax").devices())
    if "torch" in backends:
        info["torch threads"] = str(importlib.import_module("torch").get_num_threads())
    info["rounds"] = str(rounds)
    info["seconds per sample"] = str(sample)
    info["load average (1/5/15 min) at start"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.programs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="small programs, few rounds")
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="torch's device")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--sample", type=float, default=None, help="seconds per sample")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated")
    parser.add_argument("--modes", default="eager,compile,jit", help="comma-separated")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=None,
        help="torch.set_num_threads for the run (default: torch's own setting)",
    )
    parser.add_argument("--out", type=Path, default=None, help="writes DIR/programs.md")
    parser.add_argument(
        "--compile-in-process",
        action="store_true",
        help="compile times of the run's own process (default: each in a fresh process; "
        "--smoke: in process)",
    )
    parser.add_argument("--cold-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold_child:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _cold_child(*args.cold_child, SMOKE if args.smoke else FULL, args.device)
        return 0
    backends = [b for b in args.backends.split(",") if b]
    modes = [m for m in args.modes.split(",") if m]
    programs = [p for p in args.programs.split(",") if p]
    choices = (
        (backends, BACKENDS, "backend"),
        (modes, ("eager", "compile", "jit"), "mode"),
        (programs, PROGRAMS, "program"),
    )
    for value, valid, what in choices:
        unknown = sorted(set(value) - set(valid))
        if unknown:
            parser.error(f"unknown {what} {', '.join(unknown)}: choose from {', '.join(valid)}")
    sizes = SMOKE if args.smoke else FULL
    rounds = args.rounds or (3 if args.smoke else 31)
    sample = args.sample or (0.002 if args.smoke else 0.02)
    if args.torch_threads is not None:
        importlib.import_module("torch").set_num_threads(args.torch_threads)
    # Compile times are cold: inductor's on-disk caches (compiled graphs, AOTAutograd,
    # Dynamo's profiles) start empty in every run, or a second run would time cache hits.
    cache = tempfile.mkdtemp(prefix="benchmarks-programs-inductor-")
    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    try:
        with warnings.catch_warnings():
            # torch.compile's and JAX's (unusable donations) would bury the table.
            warnings.simplefilter("ignore")
            info = _info(backends, rounds, sample, args.device)
            cold = not (args.smoke or args.compile_in_process)
            rows, notes = run(
                backends, modes, programs, sizes, rounds, sample, device=args.device, cold=cold
            )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if saved is None:
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved
    if "compile" in modes and "torch" in backends:
        where = (
            "in this run's process"
            if args.smoke or args.compile_in_process
            else "each contender in a fresh process of its own"
        )
        notes.append(
            f"compile s under torch.compile and jax.jit: cold, {where}, with an empty inductor "
            "cache directory, after one warm-up compile of an unrelated function (imports, "
            "toolchain)."
        )
    info["load average (1/5/15 min) at end"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    command = "python -m benchmarks.programs " + shlex.join(sys.argv[1:] if argv is None else argv)
    body = markdown(rows, info, command.strip(), notes)
    print(body)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "programs.md").write_text(body)
        print(f"wrote {args.out / 'programs.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
