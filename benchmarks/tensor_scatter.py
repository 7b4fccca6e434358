"""TensorScatter against ONNX Runtime's kernel and the native writes, in place and copying.

Issue 34's target: ``og.tensor_scatter(..., out=cache)`` at most 1.0x ONNX Runtime's
TensorScatter-24 kernel, and at the speed of ``index_copy_`` / a slice assignment. Each
workload runs, in interleaved rounds (``python -m benchmarks``' timer)::

    python -m benchmarks.tensor_scatter --rounds 11

- ours in place (``out=cache``) and copying (a new cache), on NumPy arrays and torch CPU
  tensors;
- ONNX Runtime's CPU kernel: ``session.run`` (a new output, the cache copied into it), and
  through I/O binding with the output bound to the input's own buffer (its kernel then
  writes in place: what a runtime that shares the KV cache does);
- the native writes: NumPy's slice assignment, torch's ``index_copy_``.

Ratios are medians over rounds of ours / theirs within a round.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_gather as og
from benchmarks.timer import interleaved, median_ratio, median_us
from onnx_gather import _ops

#: (name, cache shape, update length along axis 2, write indices)
WORKLOADS: list[tuple[str, tuple[int, ...], int, list[int]]] = [
    ("decode: (4, 8, 2048, 64), one position for every entry", (4, 8, 2048, 64), 1,
     [1000] * 4),
    ("decode: (4, 8, 2048, 64), each entry at its own position", (4, 8, 2048, 64), 1,
     [100, 700, 1300, 1900]),
    ("prefill chunk: 128 positions of (4, 8, 2048, 64)", (4, 8, 2048, 64), 128, [512] * 4),
]  # fmt: skip


def _ort(cache: np.ndarray, update: np.ndarray, starts: np.ndarray) -> dict[str, Callable[[], Any]]:
    """ONNX Runtime's kernel: ``run`` (copying), and in place through I/O binding."""
    try:
        import onnxruntime as ort
    except ImportError:
        return {}
    op = _ops.TENSOR_SCATTER
    model = op.onnx_model(
        24, ["float32", "float32", "int64"], [cache.shape, update.shape, starts.shape],
        {"axis": -2, "mode": "linear"},
    )  # fmt: skip
    options = ort.SessionOptions()
    options.log_severity_level = 3  # (run copies the cache and warns so, on every call)
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]
    feed = dict(zip(names, (cache, update, starts), strict=True))
    contenders: dict[str, Callable[[], Any]] = {"ORT run": lambda: session.run(None, feed)}
    shared = ort.OrtValue.ortvalue_from_numpy(cache.copy())
    binding = session.io_binding()
    binding.bind_ortvalue_input(names[0], shared)
    binding.bind_cpu_input(names[1], update)
    binding.bind_cpu_input(names[2], starts)
    binding.bind_ortvalue_output(session.get_outputs()[0].name, shared)
    contenders["ORT in place"] = lambda: session.run_with_iobinding(binding)
    return contenders


def _contenders(
    shape: tuple[int, ...], length: int, starts: list[int], rng: np.random.Generator
) -> dict[str, Callable[[], Any]]:
    import torch

    cache = rng.random(shape, dtype=np.float32)
    update = rng.random((*shape[:2], length, shape[3]), dtype=np.float32)
    host = np.array(starts, np.int64)
    np_cache, t_cache = cache.copy(), torch.from_numpy(cache.copy())
    t_update, t_starts = torch.from_numpy(update), torch.from_numpy(host)
    contenders: dict[str, Callable[[], Any]] = {
        "ours numpy out=cache": lambda: og.tensor_scatter(np_cache, update, host, out=np_cache),
        "ours numpy": lambda: og.tensor_scatter(cache, update, host),
        "ours torch out=cache": lambda: og.tensor_scatter(t_cache, t_update, t_starts, out=t_cache),
        "ours torch": lambda: og.tensor_scatter(t_cache, t_update, t_starts),
    }
    if len(set(starts)) == 1:  # the native write of one slice, one position for all
        p = starts[0]
        positions = torch.arange(p, p + length)
        target = np_cache[:, :, p : p + length]
        contenders["numpy c[:, :, p:p+n] = new"] = lambda: target.__setitem__(..., update)
        contenders["torch index_copy_"] = lambda: t_cache.index_copy_(2, positions, t_update)
    contenders.update(_ort(cache, update, host))
    return contenders


#: Each of ours against each contender that is not ours.
PAIRS = {
    "ours numpy out=cache": ("ORT in place", "ORT run", "numpy c[:, :, p:p+n] = new"),
    "ours numpy": ("ORT run",),
    "ours torch out=cache": ("ORT in place", "ORT run", "torch index_copy_"),
    "ours torch": ("ORT run",),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--sample", type=float, default=0.2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(20261128)
    print("| workload | ours | ours per call | contender | its per call | ours / it |")
    print("| --- | --- | ---: | --- | ---: | ---: |")
    for name, shape, length, starts in WORKLOADS:
        times = interleaved(_contenders(shape, length, starts, rng), args.rounds, args.sample)
        for ours, others in PAIRS.items():
            for other in (o for o in others if o in times):
                print(
                    f"| {name} | {ours} | {median_us(times[ours])} | {other} | {median_us(times[other])} "
                    f"| {median_ratio(times[ours], times[other]):.2f} |"
                )


if __name__ == "__main__":
    main()
