"""JAX probe: ours against the native calls, in the three settings issue 32 sets targets for.

    python -m benchmarks.jax_probe [--rounds N] [--sample S] [--only eager,jit,decode]

* **eager**: single tiny checked calls, each result waited for (``block_until_ready``) on
  both sides: GatherElements 8x4 (axis 1, some indices negative) against
  ``jnp.take_along_axis``, Gather of 2 rows of 8x4 against ``jnp.take`` (both jitted
  functions of jax.numpy), GatherND of 2 index tuples into 8x4 against ``y[c[:, 0],
  c[:, 1]]`` under ``jax.jit`` (eagerly that expression takes milliseconds: not a fair
  opponent).
* **jit**: ``jax.jit`` of the converted graph of ``benchmarks.programs`` (13 each of the
  three calls, chained through elementwise ops, the indices inputs of the program).
* **host-check** (not by default): where eager CPU GatherElements of 2**12, 2**16 and
  2**20 indices checks them: the jitted flag, and NumPy's check on the host
  (``_HOST_CHECK_FROM``), each against the compiled kernel's check in place
  (``_outside_at``, the default).
* **decode**: a ``jax.jit`` decoding step with donated caches: 8 layers of (1, 8, 512, 64)
  float32, the new entry written with ``og.scatter_nd(c, idx, new)`` against
  ``c.at[:, :, pos].set(new)``.

Ratios are ours / native, the median over interleaved rounds of the ratio within each round
(``benchmarks.timer``). ``JAX_ENABLE_X64=1`` runs with int64 indices. To compare two trees
of the library run the probe once per tree (``PYTHONPATH=/path/to/other/src``): the ratios
are within each run.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_gather as og
from benchmarks import timer


def _eager(
    jax: Any, jnp: Any, index: Any
) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    rng = np.random.default_rng(20261125)
    x = jnp.asarray(rng.standard_normal((8, 4)), jnp.float32)
    ge = jnp.asarray(rng.integers(-4, 4, (8, 4)), index)
    g = jnp.asarray([1, -2], index)
    nd = jnp.asarray([[1, -1], [-3, 2]], index)
    native_nd = jax.jit(lambda y, c: y[c[:, 0], c[:, 1]])
    return {
        "GatherElements 8x4": (
            lambda: og.gather_elements(x, ge, 1).block_until_ready(),
            lambda: jnp.take_along_axis(x, ge, axis=1).block_until_ready(),
        ),
        "Gather 2 of 8x4": (
            lambda: og.gather(x, g, 0).block_until_ready(),
            lambda: jnp.take(x, g, axis=0).block_until_ready(),
        ),
        "GatherND 2 tuples of 8x4": (
            lambda: og.gather_nd(x, nd).block_until_ready(),
            lambda: native_nd(x, nd).block_until_ready(),
        ),
    }


def _graph(fns: tuple[Any, Any, Any], y: Any, ge: Any, g: Any, nd: Any) -> Any:
    gather_elements, gather, gather_nd = fns
    acc = None
    for a, b, c in zip(ge, g, nd, strict=True):
        y = y + gather_elements(y, a) * 0.5
        r = gather(y, b) + gather_nd(y, c)[:, None]
        acc = r if acc is None else acc + r
    return y, acc


def _jit(jax: Any, jnp: Any, index: Any) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    rng = np.random.default_rng(20261125)
    x = jnp.asarray(rng.standard_normal((8, 4)), jnp.float32)
    ge = [jnp.asarray(rng.integers(-4, 4, (8, 4)), index) for _ in range(13)]
    g = [jnp.asarray(rng.integers(-8, 8, (2,)), index) for _ in range(13)]
    nd = [
        jnp.asarray(np.stack([rng.integers(-8, 8, 2), rng.integers(-4, 4, 2)], 1), index)
        for _ in range(13)
    ]
    ours_fns = (
        lambda y, i: og.gather_elements(y, i, 1),
        lambda y, i: og.gather(y, i, 0),
        og.gather_nd,
    )
    native_fns = (
        lambda y, i: jnp.take_along_axis(y, i, axis=1),
        lambda y, i: jnp.take(y, i, axis=0),
        lambda y, c: y[c[:, 0], c[:, 1]],
    )
    ours = jax.jit(lambda *a: _graph(ours_fns, *a))
    native = jax.jit(lambda *a: _graph(native_fns, *a))
    args = (x, ge, g, nd)
    for a, b in zip(ours(*args), native(*args), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return {
        "jax.jit converted graph (39 calls)": (
            lambda: jax.block_until_ready(ours(*args)),
            lambda: jax.block_until_ready(native(*args)),
        )
    }


def _decode(
    jax: Any, jnp: Any, index: Any
) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    rng = np.random.default_rng(20261126)
    b, h, t, d = 1, 8, 512, 64
    pos = 300
    idx = np.zeros((b, h, 1, 3), np.int64)
    idx[..., 1] = np.arange(h)[None, :, None]
    idx[..., 2] = pos
    news = [jnp.asarray(rng.standard_normal((b, h, 1, d)), jnp.float32) for _ in range(8)]

    def ours(caches: Any, news: Any, idx: Any) -> Any:
        return [og.scatter_nd(c, idx, new) for c, new in zip(caches, news, strict=True)]

    def native(caches: Any, news: Any, pos: Any) -> Any:
        return [c.at[:, :, pos].set(new) for c, new in zip(caches, news, strict=True)]

    calls = {}
    for name, step, where in (
        ("ours", ours, jnp.asarray(idx, index)),
        ("native", native, jnp.asarray([pos], index)),
    ):
        jitted = jax.jit(step, donate_argnums=0)
        state = [[jnp.asarray(rng.standard_normal((b, h, t, d)), jnp.float32) for _ in range(8)]]

        def call(jitted: Any = jitted, state: Any = state, where: Any = where) -> Any:
            state[0] = jax.block_until_ready(jitted(state[0], news, where))

        calls[name] = call
    return {"jax.jit decode step, 8 layers, donated": (calls["ours"], calls["native"])}


def _host_check(
    jax: Any, jnp: Any, index: Any
) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Not a target: where eager CPU calls should check their indices.

    "ours" is the jitted flag or NumPy's host check (the compiled kernel turned off, and
    ``_HOST_CHECK_FROM`` past or below the call), "native" the compiled kernel's check in
    place at every size (``_IN_PLACE_BELOW`` lifted), each with a call cache of its own
    (the binding reads these settings).
    """
    from onnx_gather import _api
    from onnx_gather._backends import _jax
    from onnx_gather._memo import Memo

    def setting(x: Any, i: Any, kernel: Any, start: int) -> Callable[[], Any]:
        calls = Memo(4)

        def call() -> Any:
            saved = _jax._outside_at, _jax._HOST_CHECK_FROM, _jax._IN_PLACE_BELOW, _api._CALLS
            _jax._outside_at, _jax._HOST_CHECK_FROM, _api._CALLS = kernel, start, calls
            _jax._IN_PLACE_BELOW = 1 << 62
            try:
                return og.gather_elements(x, i, 1).block_until_ready()
            finally:
                _jax._outside_at, _jax._HOST_CHECK_FROM, _jax._IN_PLACE_BELOW, _api._CALLS = saved

        return call

    rng = np.random.default_rng(20261125)
    pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}
    for n in (1 << 12, 1 << 16, 1 << 20):
        x = jnp.asarray(rng.standard_normal((n // 4, 4)), jnp.float32)
        i = jnp.asarray(rng.integers(-4, 4, (n // 4, 4)), index)
        kernel = setting(x, i, _jax._outside_at, _jax._HOST_CHECK_FROM)
        pairs[f"GatherElements {n} indices: flag / kernel"] = (
            setting(x, i, None, 1 << 62),
            kernel,
        )
        pairs[f"GatherElements {n} indices: NumPy / kernel"] = (setting(x, i, None, 1), kernel)
    return pairs


SETTINGS = {"eager": _eager, "jit": _jit, "decode": _decode, "host-check": _host_check}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--sample", type=float, default=0.02, help="seconds per sample")
    parser.add_argument("--only", default="eager,jit,decode", help=f"of {','.join(SETTINGS)}")
    args = parser.parse_args(argv)
    import jax
    import jax.numpy as jnp

    index = jnp.int64 if jax.config.read("jax_enable_x64") else jnp.int32
    x64 = jax.config.read("jax_enable_x64")
    print(f"onnx_gather from {og.__file__}; jax {jax.__version__}, x64 {x64}, {jax.devices()[0]}")
    for setting in args.only.split(","):
        for name, (ours, native) in SETTINGS[setting](jax, jnp, index).items():
            times = timer.interleaved({"ours": ours, "native": native}, args.rounds, args.sample)
            ratio = timer.median_ratio(times["ours"], times["native"])
            o, n = (statistics.median(times[k]) * 1e6 for k in ("ours", "native"))
            print(f"{name:40s} ours {o:8.1f} us  native {n:8.1f} us  ratio {ratio:5.2f}")


if __name__ == "__main__":
    main()
