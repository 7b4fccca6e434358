"""One in-place KV-cache write: a decode step's new entry, 8 rows of 64, into one cache.

Issue 32's target: one ``out=`` write of 8 rows at most 2x torch's ``index_copy_``. Each
contender writes the new entry (1, 8, 1, 64) float32 into a (1, 8, 512, 64) cache at
position 300, in place, in interleaved rounds (``python -m benchmarks``' timer)::

    python -m benchmarks.kv_write --rounds 21

- ours on torch CPU tensors and NumPy arrays: ``og.scatter_nd(c, idx, new, out=c)`` with
  the coordinates ``(0, h, 300)`` (1, 8, 1, 3), ``og.scatter_elements(c, idx, new,
  axis=2, out=c)`` with indices of the update's shape filled with 300, and
  ``og.tensor_scatter(c, new, starts, out=c)`` with the write indices ``(300,)``;
- the native writes: torch's ``c.index_copy_(2, pos, new)`` and ``c[:, :, pos] = new``
  with ``pos`` a tensor of shape (1,), NumPy's ``c[:, :, pos] = new``.

``benchmarks.programs`` times the whole decode step (8 layers, and a read); this times
the single call, where the library's per-call cost is all there is to see. Ratios are
medians over rounds of ours / theirs within a round.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_gather as og
from benchmarks.timer import interleaved, median_ratio, median_us

SHAPE, POSITION = (1, 8, 512, 64), 300


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20261128)
    heads = SHAPE[1]
    new = rng.random((1, heads, 1, SHAPE[3]), dtype=np.float32)
    coordinates = np.stack(
        [np.zeros(heads, np.int64), np.arange(heads), np.full(heads, POSITION)], -1
    ).reshape(1, heads, 1, 3)
    return {
        "cache": rng.random(SHAPE, dtype=np.float32),
        "new": new,
        "idx": coordinates,
        "idx_e": np.full(new.shape, POSITION, np.int64),
        "starts": np.array([POSITION], np.int64),
        "pos": np.array([POSITION], np.int64),
    }


def _writes(
    convert: Callable[[np.ndarray], Any], prefix: str
) -> tuple[dict[str, Callable[[], Any]], list[Any]]:
    """Ours and the native writes, each into its own cache; the caches."""
    inputs = _inputs()
    x = {name: convert(a) for name, a in inputs.items()}
    new, idx, idx_e, starts, pos = x["new"], x["idx"], x["idx_e"], x["starts"], x["pos"]
    c = {name: convert(np.array(inputs["cache"])) for name in ("nd", "e", "t", "slice", "copy")}
    writes: dict[str, Callable[[], Any]] = {
        f"{prefix} ours ScatterND": lambda: og.scatter_nd(c["nd"], idx, new, out=c["nd"]),
        f"{prefix} ours ScatterElements": lambda: og.scatter_elements(
            c["e"], idx_e, new, axis=2, out=c["e"]
        ),
        f"{prefix} ours TensorScatter": lambda: og.tensor_scatter(c["t"], new, starts, out=c["t"]),
        f"{prefix} c[:, :, pos] = new": lambda: c["slice"].__setitem__(
            (slice(None), slice(None), pos), new
        ),
    }
    if prefix == "torch":
        writes["torch index_copy_"] = lambda: c["copy"].index_copy_(2, pos, new)
    else:
        del c["copy"]
    return writes, list(c.values())


def contenders() -> dict[str, Callable[[], Any]]:
    """Every write, after each has run once and all caches came out bit for bit alike."""
    import torch

    everyone: dict[str, Callable[[], Any]] = {}
    for convert, prefix in ((torch.from_numpy, "torch"), (np.asarray, "numpy")):
        writes, caches = _writes(convert, prefix)
        for write in writes.values():
            write()
        native = f"{prefix} c[:, :, pos] = new"
        written = dict(zip(writes, (np.asarray(c).tobytes() for c in caches), strict=True))
        for name, cache in written.items():
            if cache != written[native]:
                msg = f"{name} wrote another cache than {native}"
                raise AssertionError(msg)
        everyone.update(writes)
    return everyone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--sample", type=float, default=0.05)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    times = interleaved(contenders(), args.rounds, args.sample)
    print("| ours | per call | native | its per call | ours / native |")
    print("| --- | ---: | --- | ---: | ---: |")
    for prefix, natives in (
        ("torch", ("torch index_copy_", "torch c[:, :, pos] = new")),
        ("numpy", ("numpy c[:, :, pos] = new",)),
    ):
        for op in ("ScatterND", "ScatterElements", "TensorScatter"):
            ours = f"{prefix} ours {op}"
            for native in natives:
                print(
                    f"| {ours} | {median_us(times[ours], 2)} | {native} | {median_us(times[native], 2)} "
                    f"| {median_ratio(times[ours], times[native]):.2f} |"
                )


if __name__ == "__main__":
    main()
