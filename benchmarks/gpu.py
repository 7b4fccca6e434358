"""GPU extras of ``python -m benchmarks --device cuda``: the bandwidth test.

The issue's target: large GatherElements with ``check_bounds=False`` reaches at least 80%
of the card's copy bandwidth. Every large workload (Gather too) is measured both ways,
checked (the default: one pass and one 8-byte read back with the Triton kernels) and
unchecked. A gather moves ``indices`` (read), the output (written) and one data element
per output element (read); its effective bandwidth is those bytes over its time. The copy bandwidth is a device-to-device copy of a 1 GiB buffer (read + write).
Both are medians of interleaved rounds, like the rest of the runner.
"""

from __future__ import annotations

import importlib
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks import timer
from benchmarks.workloads import Workload

Pair = tuple[Any, Any, Any]  # (checked gather, unchecked gather, copy)

COPY_BYTES = 1 << 30


@dataclass
class Bandwidth:
    workload: Workload
    backend: str
    checked: bool
    gather_gbs: float
    copy_gbs: float

    @property
    def fraction(self) -> float:
        return self.gather_gbs / self.copy_gbs


def _torch_pair(w: Workload, data: np.ndarray, indices: np.ndarray) -> Pair:
    torch = importlib.import_module("torch")
    d = torch.from_numpy(data).cuda()
    i = torch.from_numpy(indices).cuda()
    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)

    def checked() -> Any:
        out = w.call(d, i)
        torch.cuda.synchronize()
        return out

    def unchecked() -> Any:
        out = w.call(d, i, check_bounds=False)
        torch.cuda.synchronize()
        return out

    def copy() -> Any:
        dst.copy_(src)
        torch.cuda.synchronize()
        return dst

    return checked, unchecked, copy


def _jax_pair(w: Workload, data: np.ndarray, indices: np.ndarray) -> Pair:
    jax = importlib.import_module("jax")
    gpu = jax.devices("gpu")[0]
    d, i = jax.device_put(data, gpu), jax.device_put(indices, gpu)
    src = jax.device_put(np.zeros(COPY_BYTES // 4, np.float32), gpu)
    # An elementwise op that XLA cannot drop: one read and one write of every element.
    copy_kernel = jax.jit(lambda x: x + 1.0)

    def checked() -> Any:
        return w.call(d, i).block_until_ready()

    def unchecked() -> Any:
        return w.call(d, i, check_bounds=False).block_until_ready()

    def copy() -> Any:
        return copy_kernel(src).block_until_ready()

    return checked, unchecked, copy


PAIRS = {"torch": _torch_pair, "jax": _jax_pair}


def bandwidth(
    backends: list[str], workloads: tuple[Workload, ...], rounds: int, sample: float
) -> list[Bandwidth]:
    rows = []
    for w in workloads:
        if w.tiny:
            continue
        data, indices = w.inputs()
        out_elements = int(np.prod(w.plan().out_shape))
        moved = indices.nbytes + 2 * out_elements * data.itemsize
        for backend in backends:
            checked, unchecked, copy = PAIRS[backend](w, data, indices)
            times = timer.interleaved(
                {"checked": checked, "unchecked": unchecked, "copy": copy}, rounds, sample
            )
            copy_gbs = 2 * COPY_BYTES / statistics.median(times["copy"]) / 1e9
            for label in ("checked", "unchecked"):
                rows.append(
                    Bandwidth(
                        workload=w,
                        backend=backend,
                        checked=label == "checked",
                        gather_gbs=moved / statistics.median(times[label]) / 1e9,
                        copy_gbs=copy_gbs,
                    )
                )
                print(
                    f"{w.name:48s} {backend:6s} {label:9s} "
                    f"{rows[-1].fraction:.0%} of copy bandwidth"
                )
    return rows


def markdown(rows: list[Bandwidth]) -> str:
    lines = [
        "",
        "Our calls, checked and with `check_bounds=False`, against the device's copy "
        "bandwidth (target: at least 80% for large unchecked GatherElements):",
        "",
        "| workload | backend | check_bounds | gather GB/s | copy GB/s | fraction |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        target = not r.checked and r.workload.bandwidth_target
        mark = (" ✓" if r.fraction >= 0.8 else " ✗") if target else ""
        lines.append(
            f"| {r.workload.name} | {r.backend} | {r.checked} | {r.gather_gbs:.0f} "
            f"| {r.copy_gbs:.0f} | {r.fraction:.0%}{mark} |"
        )
    return "\n".join(lines) + "\n"


def describe() -> dict[str, str]:
    """The GPU, for the machine table."""
    try:
        torch = importlib.import_module("torch")
        return {"gpu": torch.cuda.get_device_name(0)}
    except Exception:  # jax-only environments
        jax = importlib.import_module("jax")
        return {"gpu": str(jax.devices("gpu")[0].device_kind)}
