"""Old code against new: the eager Gather and GatherElements workloads, A/B in one run.

A restructuring must leave the speed as it was. Two copies of ``onnx_gather`` cannot share
a process, so each round runs one child process per tree (in a fresh random order), each
timing every workload's call as ``python -m benchmarks`` does (a sample lasts about
``--sample`` seconds); the ratio new/old is taken within the round and the median over
rounds is reported, so load from elsewhere hits both alike.

Usage (the old tree a ``git worktree`` of the old commit, its compiled kernel built in
place)::

    git worktree add /tmp/old <commit>
    (cd /tmp/old && python setup.py build_ext --inplace)
    python -m benchmarks.ab /tmp/old/src src --backends numpy,torch --rounds 11

``--backends`` takes numpy, torch and jax (JAX's results each waited for).

The child imports only ``onnx_gather`` from its tree and the public functions both trees
have (``gather`` and ``gather_elements``), so any two commits compare.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

#: (name, public function, data shape, indices shape, axis, dtype, index dtype, mixed):
#: the eager CPU workloads of benchmarks/workloads.py that both trees run.
WORKLOADS: list[tuple[str, str, list[int], list[int], int, str, str, bool]] = [
    ("GatherElements 8x4 axis 1", "gather_elements", [8, 4], [8, 4], 1, "float32", "int64", False),
    ("GatherElements 8x4 axis 1 mixed-sign", "gather_elements", [8, 4], [8, 4], 1, "float32",
     "int64", True),
    ("Gather 2 of 8x4 axis 0", "gather", [8, 4], [2], 0, "float32", "int64", False),
    ("GatherElements 2000x2000 axis 0", "gather_elements", [2000, 2000], [2000, 2000], 0,
     "float32", "int64", False),
    ("GatherElements 2000x2000 axis 1 mixed-sign", "gather_elements", [2000, 2000],
     [2000, 2000], 1, "float32", "int64", True),
    ("GatherElements 32x1024x64 top-8 axis -1", "gather_elements", [32, 1024, 64],
     [32, 1024, 8], -1, "float32", "int64", False),
    ("Gather 4096 rows of 50000x256", "gather", [50000, 256], [4096], 0, "float32", "int64",
     False),
]  # fmt: skip


def _child(backend: str, sample: float) -> None:
    """Time every workload once with this process' ``onnx_gather``; print JSON."""
    import numpy as np

    import onnx_gather as og

    convert: Any = np.asarray
    sync: Any = None
    if backend == "torch":
        import torch

        convert = torch.from_numpy
    elif backend == "jax":  # (each result waited for: JAX dispatches asynchronously)
        import jax.numpy as jnp

        convert, sync = jnp.asarray, _ready
    times = {}
    for name, function, data_shape, indices_shape, axis, dtype, index_dtype, mixed in WORKLOADS:
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        data = rng.standard_normal(data_shape).astype(dtype)
        size = data_shape[axis]
        indices = rng.integers(-size if mixed else 0, size, indices_shape).astype(index_dtype)
        fn = getattr(og, function)
        d, i = convert(data), convert(indices)
        if sync is not None:  # (only then a frame around the call: both trees pay it)

            def fn(d: Any, i: Any, axis: int, call: Any = fn) -> Any:
                return sync(call(d, i, axis))

        fn(d, i, axis)  # first-call costs are not timed
        n = 1
        while True:
            start = time.perf_counter()
            for _ in range(n):
                fn(d, i, axis)
            elapsed = time.perf_counter() - start
            if elapsed >= sample:
                break
            n *= 2
        best = elapsed / n
        for _ in range(2):  # the best of three samples: a child runs alone for a moment
            start = time.perf_counter()
            for _ in range(n):
                fn(d, i, axis)
            best = min(best, (time.perf_counter() - start) / n)
        times[name] = best
    print(json.dumps(times))


def _ready(x: Any) -> Any:
    return x.block_until_ready()


def _run(tree: str, backend: str, sample: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tree, str(Path(__file__).parents[1])])}
    argv = [sys.executable, "-m", "benchmarks.ab", "--child", backend, "--sample", str(sample)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    times: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__)
    parser.add_argument("old", nargs="?", help="the old tree's import root (its src/)")
    parser.add_argument("new", nargs="?", default="src", help="the new tree's (default: src)")
    parser.add_argument("--backends", default="numpy,torch")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--sample", type=float, default=0.05, help="seconds per sample")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.sample)
        return 0
    if args.old is None:
        parser.error("the old tree is required")
    trees = {"old": str(Path(args.old).resolve()), "new": str(Path(args.new).resolve())}
    shuffle = random.Random(20261124).shuffle
    print(f"old: {trees['old']}\nnew: {trees['new']}\n")
    print("| workload | backend | old | new | new/old (median of rounds) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for backend in args.backends.split(","):
        rounds: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            order = list(trees)
            shuffle(order)
            for which in order:
                rounds[which].append(_run(trees[which], backend, args.sample))
        for name, *_ in WORKLOADS:
            old = [r[name] for r in rounds["old"]]
            new = [r[name] for r in rounds["new"]]
            ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
            print(
                f"| {name} | {backend} | {statistics.median(old) * 1e6:.1f} µs "
                f"| {statistics.median(new) * 1e6:.1f} µs | {ratio:.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
