"""The indexing operators on a 4 GiB float32 array: Dask cluster vs. NumPy on the same cores.

``python -m benchmarks.dask_large [--smoke] [--only NAME ...] [--plan move-data] [--out FILE]``

Workloads (:data:`WORKLOADS`), all on ``data`` float32 ``rows x cols`` in ``--chunks``:
GatherElements along axis 1 with random indices and with indices local to each output
block's data block, ScatterElements ``reduction="add"`` along axis 1, ScatterND of whole
rows, and GatherND of ``(row, col)`` coordinates.

* Dask: a ``LocalCluster`` of ``--workers`` processes (one thread each) whose per-worker
  memory limit is well under data's size. Inputs are generated on the workers, block by
  block, from a formula of their coordinates (nothing large leaves the client), and the
  result is reduced on the workers to a checksum of its bits. Timed: generate + operator
  + checksum; and, on a fresh cluster of the same shape, generate + checksum of the inputs
  only (the *baseline*). The operator's cost is the difference. Each measurement gets a
  fresh cluster, so each worker's peak RSS is that measurement's; the scheduler's
  cumulative worker metrics give the time breakdown (compute per task kind, transfer,
  (de)serialisation, idle).
* NumPy: one fresh subprocess builds the same arrays in memory and times the same
  ``onnx_gather`` call on them, workload after workload.

The checksums (the sum of the result's bit patterns, as uint64) must agree: the results
are the same bits. Nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import resource
import shlex
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GIB = 2**30
#: In the report file, what follows this line is written by hand (the analysis of a run)
#: and kept when the report is written again.
KEPT = "<!-- Below: written by hand, kept when the benchmark rewrites this page. -->"


# --- input formulas: the same values on the workers (per block) and in NumPy -------------


def _hash(r0: int, r1: int, c0: int, c1: int, salt: int) -> np.ndarray:
    """A uint32 hash of each (row, col) of a region: cheap, and the same in any blocking."""
    rows = np.arange(r0, r1, dtype=np.uint32)[:, None] * np.uint32(2654435761)
    cols = np.arange(c0, c1, dtype=np.uint32)[None, :] * np.uint32(2246822519)
    h = rows ^ (cols + np.uint32(salt))
    h ^= h >> np.uint32(15)
    h *= np.uint32(2654435761)
    return h ^ (h >> np.uint32(13))


def _data_values(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    # (a cheaper mix than _hash: generating 4 GiB is in both timings, and is noise)
    rows = np.arange(r0, r1, dtype=np.uint32)[:, None] * np.uint32(2654435761)
    cols = np.arange(c0, c1, dtype=np.uint32)[None, :] * np.uint32(40503)
    return ((rows + cols) >> np.uint32(8)).astype(np.float32) * np.float32(2**-24)


def _random_indices(r0: int, r1: int, c0: int, c1: int, size: int, dtype: Any) -> np.ndarray:
    """Values in ``[-size, size)``: negatives counted from the end included."""
    h = _hash(r0, r1, c0, c1, 7).astype(np.int64)
    return (h % (2 * size) - size).astype(dtype)


def _local_indices(
    r0: int, r1: int, c0: int, c1: int, size: int, width: int, chunk: int
) -> np.ndarray:
    """Indices column ``c`` points into data's column chunk ``c // width``; half negative."""
    h = _hash(r0, r1, c0, c1, 11).astype(np.int64)
    start = np.arange(c0, c1, dtype=np.int64)[None, :] // width * chunk
    return start + h % chunk - size * (h % 2)


def _row_indices(r0: int, r1: int, rows: int) -> np.ndarray:
    """Distinct rows of data (7919 and a power of two are coprime), one per index tuple."""
    return (np.arange(r0, r1, dtype=np.int64)[:, None] * 7919) % rows


def _coordinates(r0: int, r1: int, rows: int, cols: int) -> np.ndarray:
    h = _hash(r0, r1, 0, 2, 13).astype(np.int64)
    return h % np.array([rows, cols], np.int64)


@dataclass(frozen=True)
class Workload:
    """One operator call: its inputs (name -> shape, dtype, chunks, formula) and the call."""

    name: str
    title: str
    target: float  # the bound on (Dask's cost) / (NumPy's time)
    inputs: Callable[[argparse.Namespace], dict[str, tuple[tuple[int, int], Any, Any, Any]]]
    call: Callable[[Any, dict[str, Any]], Any]  # (onnx_gather, inputs) -> result


def _data(a: argparse.Namespace) -> tuple[tuple[int, int], Any, Any, Any]:
    return (a.rows, a.cols), np.float32, tuple(a.chunks), _data_values


def _ge_inputs(a: argparse.Namespace) -> dict[str, Any]:
    fill = lambda r0, r1, c0, c1: _random_indices(r0, r1, c0, c1, a.cols, np.int64)  # noqa: E731
    return {"data": _data(a), "indices": ((a.rows, a.k), np.int64, (a.chunks[0], a.k), fill)}


def _local_inputs(a: argparse.Namespace) -> dict[str, Any]:
    n = a.cols // a.chunks[1]  # data's column chunks: one indices column block each
    width = a.k // n
    fill = lambda r0, r1, c0, c1: _local_indices(  # noqa: E731
        r0, r1, c0, c1, a.cols, width, a.chunks[1]
    )
    return {"data": _data(a), "indices": ((a.rows, a.k), np.int64, (a.chunks[0], width), fill)}


def _scatter_elements_inputs(a: argparse.Namespace) -> dict[str, Any]:
    shape, chunks = (a.rows, a.updates_cols), (a.chunks[0], a.updates_cols)
    fill = lambda r0, r1, c0, c1: _random_indices(r0, r1, c0, c1, a.cols, np.int32)  # noqa: E731
    return {
        "data": _data(a),
        "indices": (shape, np.int32, chunks, fill),
        "updates": (shape, np.float32, chunks, _data_values),
    }


def _scatter_nd_inputs(a: argparse.Namespace) -> dict[str, Any]:
    m = a.updated_rows
    fill = lambda r0, r1, c0, c1: _row_indices(r0, r1, a.rows)  # noqa: E731
    step = max(1, a.chunks[0] // 4)
    return {
        "data": _data(a),
        "indices": ((m, 1), np.int64, (step, 1), fill),
        "updates": ((m, a.cols), np.float32, (step, a.cols), _data_values),
    }


def _gather_nd_inputs(a: argparse.Namespace) -> dict[str, Any]:
    fill = lambda r0, r1, c0, c1: _coordinates(r0, r1, a.rows, a.cols)  # noqa: E731
    return {"data": _data(a), "indices": ((a.points, 2), np.int64, (a.points_chunk, 2), fill)}


WORKLOADS = [
    Workload(
        "gather_elements", "GatherElements, axis 1, random indices", 2.0, _ge_inputs,
        lambda og, x: og.gather_elements(x["data"], x["indices"], axis=1),
    ),
    Workload(
        "gather_elements_local", "GatherElements, axis 1, indices local to each block", 1.3,
        _local_inputs, lambda og, x: og.gather_elements(x["data"], x["indices"], axis=1),
    ),
    Workload(
        "scatter_elements_add", "ScatterElements add, axis 1", 3.0, _scatter_elements_inputs,
        lambda og, x: og.scatter_elements(
            x["data"], x["indices"], x["updates"], axis=1, reduction="add"
        ),
    ),
    Workload(
        "scatter_nd_rows", "ScatterND of whole rows", 2.0, _scatter_nd_inputs,
        lambda og, x: og.scatter_nd(x["data"], x["indices"], x["updates"]),
    ),
    Workload(
        "gather_nd", "GatherND of (row, col) coordinates", 2.5, _gather_nd_inputs,
        lambda og, x: og.gather_nd(x["data"], x["indices"]),
    ),
]  # fmt: skip


# --- Dask ----------------------------------------------------------------------------------


def _block(fill: Callable[..., np.ndarray], dtype: Any, block_info: Any = None) -> np.ndarray:
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    return np.asarray(fill(r0, r1, c0, c1), dtype)


def _bits_sum(block: np.ndarray) -> np.ndarray:
    bits = block.view(f"u{block.dtype.itemsize}")
    return np.sum(bits, dtype=np.uint64).reshape((1,) * block.ndim)


def _checksum(x: Any) -> Any:
    import dask.array as da

    partial = x.map_blocks(_bits_sum, chunks=tuple((1,) * n for n in x.numblocks), dtype=np.uint64)
    return da.sum(partial, dtype=np.uint64)


def _worker_stats(dask_worker: Any) -> dict[str, float]:
    metrics = getattr(dask_worker.data, "cumulative_metrics", {})
    return {
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "spilled_bytes": metrics.get(("disk-write", "bytes"), 0.0),
    }


def _lazy_inputs(spec: dict[str, Any]) -> dict[str, Any]:
    import dask.array as da

    return {
        name: da.map_blocks(
            _block, fill, dtype, chunks=da.core.normalize_chunks(chunks, shape), dtype=dtype
        )
        for name, (shape, dtype, chunks, fill) in spec.items()
    }


def _breakdown(metrics: dict[Any, float], wall: float, workers: int) -> dict[str, float]:
    """Seconds summed over the workers: compute per task kind, transfers, idle."""
    out: dict[str, float] = defaultdict(float)
    for key, value in metrics.items():
        if key == ("get-data", "memory-read", "bytes"):
            out["GiB sent between workers"] = value / GIB
        if not isinstance(key, tuple) or key[-1] != "seconds":
            continue
        if key[0] == "execute":  # ("execute", task prefix, activity, "seconds")
            prefix, activity = str(key[1]), str(key[2])
            label = (
                f"compute {prefix} ({activity})"
                if activity.startswith("thread")
                else f"task {activity}"
            )
            out[label] += value
        elif key[0] in ("gather-dep", "get-data"):  # receiving and sending dependencies
            out[f"{key[0]} {key[-2]}"] += value
    busy = sum(v for k, v in out.items() if k.startswith(("compute", "task")))
    out["idle (no task running)"] = max(0.0, wall * workers - busy)
    return dict(sorted(out.items(), key=lambda kv: (not kv[0].startswith("GiB"), -kv[1])))


def run_dask(args: argparse.Namespace, work: Workload, operator: bool) -> dict[str, Any]:
    from distributed import Client, LocalCluster

    import onnx_gather as og

    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=args.memory_limit,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        inputs = _lazy_inputs(work.inputs(args))
        layers: list[str] = []
        if operator:
            result = work.call(og, inputs)
            layers = sorted({_layer_kind(n) for n in result.__dask_graph__().layers})
            targets = [_checksum(result)]
        else:
            targets = [_checksum(x) for x in inputs.values()]
        start = time.perf_counter()
        values = [int(v) for v in client.gather(client.compute(targets))]
        seconds = time.perf_counter() - start
        time.sleep(2.5)  # the workers report their metrics with their heartbeats
        metrics = client.run_on_scheduler(
            lambda dask_scheduler: dict(dask_scheduler.cumulative_worker_metrics)
        )
        stats = client.run(_worker_stats)
        limit = next(iter(client.scheduler_info()["workers"].values()))["memory_limit"]
    return {
        "seconds": seconds,
        "checksum": values[0],
        "workers": list(stats.values()),
        "memory_limit": limit,
        "layers": layers,
        "breakdown": _breakdown(metrics, seconds, args.workers),
    }


def _layer_kind(name: str) -> str:
    """A graph layer's name without its token."""
    head, _, tail = name.rpartition("-")
    return head if len(tail) >= 16 else name


# --- NumPy ---------------------------------------------------------------------------------


def _numpy_child(argv: list[str]) -> None:
    """In a fresh process: each workload's arrays in NumPy, its timed call, as JSON lines."""
    import onnx_gather as og

    args = _parse(argv)
    results: dict[str, Any] = {}
    data = None
    for work in _selected(args):
        spec = work.inputs(args)
        arrays: dict[str, np.ndarray] = {}
        for name, (shape, dtype, _, fill) in spec.items():
            if name == "data" and data is not None:
                arrays[name] = data
                continue
            x = np.empty(shape, dtype)
            for r in range(0, shape[0], 1024):
                x[r : r + 1024] = fill(r, min(r + 1024, shape[0]), 0, shape[1])
            arrays[name] = x
        data = arrays["data"]
        start = time.perf_counter()
        out = work.call(og, arrays)
        seconds = time.perf_counter() - start
        value = int(np.sum(out.view(f"u{out.dtype.itemsize}"), dtype=np.uint64))
        results[work.name] = {"seconds": seconds, "checksum": value}
        del out, arrays
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"workloads": results, "peak_rss": peak}))


def run_numpy(argv: list[str]) -> dict[str, Any]:
    code = f"from benchmarks.dask_large import _numpy_child; _numpy_child({argv!r})"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- report --------------------------------------------------------------------------------


def _gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def _ratio(work: str, results: dict[str, Any]) -> float:
    run = results["dask"][work]
    cost = run["operator"]["seconds"] - run["baseline"]["seconds"]
    return cost / results["numpy"]["workloads"][work]["seconds"]


def report(args: argparse.Namespace, results: dict[str, Any]) -> str:
    lines = [
        "# Dask benchmark: the indexing operators on an array larger than any worker's memory",
        "",
        f"`data` float32 {args.rows} x {args.cols} ({_gib(args.rows * args.cols * 4)}, chunks "
        f"{args.chunks[0]} x {args.chunks[1]}); {args.workers} worker processes x 1 thread, "
        f"memory limit {args.memory_limit} each. *Cost* = Dask's generate + operator + "
        "checksum minus generate + checksum of the same inputs (the baseline), both on a "
        "fresh cluster; NumPy = the same `onnx_gather` call on arrays in memory, one process "
        "on the same cores.",
        "",
        "| workload | Dask with operator | baseline | cost | NumPy | cost / NumPy | target "
        "| peak RSS per worker | spilled | checksums |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for work in _selected(args):
        if work.name not in results["dask"]:
            continue
        run = results["dask"][work.name]
        op, base = run["operator"], run["baseline"]
        plain = results["numpy"]["workloads"][work.name]
        ratio = _ratio(work.name, results)
        peaks = ", ".join(_gib(w["peak_rss"]) for w in op["workers"])
        spilled = sum(w["spilled_bytes"] for w in op["workers"])
        same = "agree" if op["checksum"] == plain["checksum"] else "**DIFFER**"
        met = "met" if ratio <= work.target else "**missed**"
        lines.append(
            f"| {work.title} | {op['seconds']:.1f} s | {base['seconds']:.1f} s | "
            f"{op['seconds'] - base['seconds']:.1f} s | {plain['seconds']:.2f} s | "
            f"{ratio:.1f}x | <= {work.target}x ({met}) | {peaks} | {spilled / 2**20:.0f} MiB "
            f"| {same} |"
        )
    lines += ["", "## Where the time goes (seconds summed over the workers)", ""]
    for work in _selected(args):
        if work.name not in results["dask"]:
            continue
        run = results["dask"][work.name]
        lines += [f"### {work.title}", "", "Graph layers: " + ", ".join(
            f"`{n}`" for n in run["operator"]["layers"]) + ".", "",
            "| activity | with operator | baseline |", "| --- | --- | --- |"]  # fmt: skip
        op, base = run["operator"]["breakdown"], run["baseline"]["breakdown"]
        for label in [*op, *(k for k in base if k not in op)]:
            if max(op.get(label, 0.0), base.get(label, 0.0)) >= 0.05:
                lines.append(f"| {label} | {op.get(label, 0.0):.1f} | {base.get(label, 0.0):.1f} |")
        lines.append("")
    lines += [
        f"Machine: {platform.machine()}, {_cpus()} CPU cores, {_ram()}, Python "
        f"{platform.python_version()}, NumPy {np.__version__}, {_versions()}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(results.get('time', 0)))}. "
        f"NumPy's process peaked at {_gib(results['numpy']['peak_rss'])}. Shared with other "
        "jobs while it ran, so times are indicative; memory figures are not affected. "
        "Measured once.",
        "",
        "Reproduce (the raw numbers are saved beside the report; `--from-json` renders the "
        "report from them without running anything):",
        "",
        "```sh",
        results["command"],
        "```",
        "",
    ]
    return "\n".join(lines)


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


def _ram() -> str:
    with open("/proc/meminfo") as f:
        kib = int(f.readline().split()[1])
    return f"{kib / 2**20:.0f} GiB RAM"


def _versions() -> str:
    import dask
    import distributed

    return f"dask {dask.__version__}, distributed {distributed.__version__}"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dask_large", description=__doc__)
    parser.add_argument("--rows", type=int, default=32768)
    parser.add_argument("--cols", type=int, default=32768)
    parser.add_argument("--k", type=int, default=4096, help="GatherElements indices' columns")
    parser.add_argument("--updates-cols", type=int, default=8192, help="ScatterElements'")
    parser.add_argument("--updated-rows", type=int, default=8192, help="ScatterND's rows")
    parser.add_argument("--points", type=int, default=2**26, help="GatherND's coordinates")
    parser.add_argument("--points-chunk", type=int, default=2**22)
    parser.add_argument("--chunks", type=int, nargs=2, default=(2048, 8192), help="data chunks")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="3GiB", help="per worker")
    parser.add_argument("--only", nargs="*", default=None, help="workload names")
    parser.add_argument(
        "--plan",
        choices=["auto", "move-data"],
        default="auto",
        help="move-data: the plans that move data (rechunk, reshape, records), for comparison",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check it runs")
    parser.add_argument("--out", type=Path, help="write the report here, raw results beside it")
    parser.add_argument(
        "--from-json", type=Path, help="render the report from saved raw results; run nothing"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.rows, args.cols, args.k, args.chunks = 256, 512, 64, (64, 128)
        args.updates_cols, args.updated_rows, args.points, args.points_chunk = 128, 64, 4096, 1024
        args.memory_limit = "1GiB"
    return args


def _force_plan(plan: str) -> None:
    """Make the client build the plans that move data instead of indices (``move-data``)."""
    if plan == "auto":
        return
    from onnx_gather._backends import _dask as backend
    from onnx_gather._backends._dask import _scatter

    backend._by_block = lambda *_: False  # type: ignore[assignment]
    backend._nd_by_block = lambda *_: False  # type: ignore[assignment]
    backend._gather_elements_by_block = lambda *_: None  # type: ignore[assignment]
    _scatter.by_block = lambda *_: None  # type: ignore[assignment]


def _selected(args: argparse.Namespace) -> list[Workload]:
    return [w for w in WORKLOADS if args.only is None or w.name in args.only]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parse(argv)
    if args.from_json is not None:
        results = json.loads(args.from_json.read_text())
        args = _parse(shlex.split(results["command"])[3:])
    else:
        results = {
            "command": ("python -m benchmarks.dask_large " + shlex.join(argv)).strip(),
            "time": time.time(),
            "dask": {},
        }
        _force_plan(args.plan)
        for work in _selected(args):
            results["dask"][work.name] = {
                "operator": run_dask(args, work, operator=True),
                "baseline": run_dask(args, work, operator=False),
            }
            print(json.dumps({work.name: results["dask"][work.name]}, indent=1), flush=True)
        results["numpy"] = run_numpy(argv)
    text = report(args, results)
    print(text)
    if args.out is not None and args.from_json is None:
        old = args.out.read_text() if args.out.exists() else ""
        if KEPT in old:
            text += "\n" + KEPT + old.split(KEPT, 1)[1]
        args.out.write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    same = all(
        results["dask"][w]["operator"]["checksum"] == results["numpy"]["workloads"][w]["checksum"]
        for w in results["dask"]
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
