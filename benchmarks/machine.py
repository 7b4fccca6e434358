"""A description of the machine and conditions a run was taken under, for the report."""

from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.0f} GiB"
    except OSError:
        pass
    return "unknown"


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def describe(backends: dict[str, str], extra: dict[str, Any]) -> dict[str, str]:
    """Machine, software and load, as label -> text."""
    import numpy as np
    import onnxruntime

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{_cpu_model()}, {cores} cores usable ({os.cpu_count()} online)",
        "memory": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnxruntime": onnxruntime.__version__,
        **backends,
    }
    info.update({k: str(v) for k, v in extra.items()})
    return info


def load_now() -> str:
    return _load()


def table(info: dict[str, str]) -> list[str]:
    """The conditions as markdown lines, closing a report (its results come first)."""
    return ["", "| machine and conditions | |", "| --- | --- |",
            *(f"| {k} | {v} |" for k, v in info.items())]  # fmt: skip
