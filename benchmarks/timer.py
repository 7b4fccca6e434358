"""Interleaved timing: every contender once per round, in a rotating order.

Each round times one sample of every contender back to back, so a burst of load from
other processes hits all of them alike; the ratio is taken within the round and the
median over rounds is reported. The order within a round is a fresh (seeded) random
permutation: a fixed or rotated order would always run the same contender right after
ONNX Runtime, whose worker threads keep spinning for a while after a run and take a core
from whoever comes next. A sample is as many calls as it takes to last about
``sample_s`` (at least one), so per-call overhead on tiny inputs is measured too.
"""

from __future__ import annotations

import gc
import math
import random
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any


def _calls_per_sample(fn: Callable[[], Any], sample_s: float) -> int:
    fn()  # warm up: first-call costs (JIT compilation, caches) are not measured
    n, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= sample_s / 4 or n >= 1 << 20:
            break
        n *= 4
    return max(1, math.ceil(n * sample_s / max(elapsed, 1e-9)))


def interleaved(
    contenders: Mapping[str, Callable[[], Any]], rounds: int, sample_s: float
) -> dict[str, list[float]]:
    """Seconds per call of each contender, one entry per round."""
    names = list(contenders)
    counts = {name: _calls_per_sample(contenders[name], sample_s) for name in names}
    shuffle = random.Random(20261122).shuffle
    times: dict[str, list[float]] = {name: [] for name in names}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(rounds):
            order = list(names)
            shuffle(order)
            for name in order:
                fn, n = contenders[name], counts[name]
                start = time.perf_counter()
                for _ in range(n):
                    fn()
                times[name].append((time.perf_counter() - start) / n)
            gc.collect()
    finally:
        if was_enabled:
            gc.enable()
    return times


def median_ratio(ours: list[float], other: list[float]) -> float:
    """The median over rounds of ``ours / other`` taken within each round."""
    return statistics.median(a / b for a, b in zip(ours, other, strict=True))


def median_us(seconds: list[float], digits: int = 1) -> str:
    """The median of per-call times, in microseconds, as a table cell (``"2.6 µs"``)."""
    return f"{statistics.median(seconds) * 1e6:.{digits}f} µs"
