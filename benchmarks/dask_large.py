"""GatherElements along axis 1 of a 4 GiB float32 array: Dask cluster vs. NumPy in one process.

``python -m benchmarks.dask_large [--smoke] [--out docs/dask-benchmark.md]``

* Dask: a ``LocalCluster`` of ``--workers`` processes (one thread each) whose per-worker
  memory limit is well under the array's size. Data and indices are generated on the
  workers, block by block, from a formula of their coordinates (nothing large leaves the
  client), and the result is reduced on the workers to a checksum of its bits. Timed:
  generate + gather + checksum. As a yardstick, the same graph without the gather
  (generate + checksum of data and indices) runs on a fresh cluster of the same shape.
  Peak memory per worker is each worker process's peak RSS (``ru_maxrss``); each
  measurement gets a fresh cluster, so the peak is that measurement's.
* NumPy: a fresh subprocess builds the same arrays in memory (the formula, row block by
  row block) and times ``onnx_gather.gather_elements`` on them; its peak RSS is reported.

Both checksums (the sum of the result's float32 bit patterns, as uint64) must agree: the
two results are the same bits. Nothing is asserted about time.
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
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GIB = 2**30


def _data_values(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    rows = np.arange(r0, r1, dtype=np.int64)[:, None]
    cols = np.arange(c0, c1, dtype=np.int64)[None, :]
    return (((rows * 7919 + cols * 104729) % 1000003).astype(np.float32)) / np.float32(1000003)


def _index_values(r0: int, r1: int, k0: int, k1: int, size: int) -> np.ndarray:
    rows = np.arange(r0, r1, dtype=np.int64)[:, None]
    ks = np.arange(k0, k1, dtype=np.int64)[None, :]
    return (rows * 31 + ks * 977) % (2 * size) - size  # [-size, size): negatives included


def _data_block(block_info: Any = None) -> np.ndarray:
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    return _data_values(r0, r1, c0, c1)


def _index_block(size: int, block_info: Any = None) -> np.ndarray:
    (r0, r1), (k0, k1) = block_info[None]["array-location"]
    return _index_values(r0, r1, k0, k1, size)


def _bits_sum(block: np.ndarray) -> np.ndarray:
    bits = block.view(np.uint32) if block.dtype == np.float32 else block.view(np.uint64)
    return np.sum(bits, dtype=np.uint64).reshape(1, 1)


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


def run_dask(args: argparse.Namespace, gather: bool) -> dict[str, Any]:
    import dask.array as da
    from distributed import Client, LocalCluster

    import onnx_gather as og

    shape, ishape = (args.rows, args.cols), (args.rows, args.k)
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
        data = da.map_blocks(
            _data_block, chunks=da.core.normalize_chunks(args.chunks, shape), dtype=np.float32
        )
        indices = da.map_blocks(
            _index_block,
            args.cols,
            chunks=da.core.normalize_chunks((args.chunks[0], args.k), ishape),
            dtype=np.int64,
        )
        if gather:
            targets = [_checksum(og.gather_elements(data, indices, axis=1))]
        else:
            targets = [_checksum(data), _checksum(indices)]
        start = time.perf_counter()
        values = [int(v) for v in client.gather(client.compute(targets))]
        seconds = time.perf_counter() - start
        stats = client.run(_worker_stats)
        limit = next(iter(client.scheduler_info()["workers"].values()))["memory_limit"]
    return {
        "seconds": seconds,
        "checksum": values[0],
        "workers": list(stats.values()),
        "memory_limit": limit,
        "data_chunks": [list(c[:1]) for c in data.chunks],
    }


def _numpy_child(rows: int, cols: int, k: int) -> None:
    """In a fresh process: the same arrays in NumPy, timed gather, peak RSS, as JSON."""
    import onnx_gather as og

    step = 1024
    start = time.perf_counter()
    data = np.empty((rows, cols), np.float32)
    indices = np.empty((rows, k), np.int64)
    for r in range(0, rows, step):
        data[r : r + step] = _data_values(r, min(r + step, rows), 0, cols)
        indices[r : r + step] = _index_values(r, min(r + step, rows), 0, k, cols)
    generate = time.perf_counter() - start
    start = time.perf_counter()
    out = og.gather_elements(data, indices, axis=1)
    seconds = time.perf_counter() - start
    value = int(np.sum(out.view(np.uint32), dtype=np.uint64))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps({"seconds": seconds, "generate": generate, "checksum": value, "peak_rss": peak})
    )


def run_numpy(args: argparse.Namespace) -> dict[str, Any]:
    code = (
        "from benchmarks.dask_large import _numpy_child; "
        f"_numpy_child({args.rows}, {args.cols}, {args.k})"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def report(args: argparse.Namespace, results: dict[str, Any]) -> str:
    gathered, baseline, plain = results["dask"], results["dask_baseline"], results["numpy"]
    command = results["command"]
    block = args.chunks[0] * args.cols * 4
    data_bytes = args.rows * args.cols * 4
    idx_bytes = args.rows * args.k * 8
    peaks = ", ".join(_gib(w["peak_rss"]) for w in gathered["workers"])
    base_peaks = ", ".join(_gib(w["peak_rss"]) for w in baseline["workers"])
    spilled = sum(w["spilled_bytes"] for w in gathered["workers"])
    same = gathered["checksum"] == plain["checksum"]
    chunks = "x".join(str(c[0]) for c in gathered["data_chunks"])
    lines = [
        "# Dask benchmark: GatherElements on an array larger than any worker's memory",
        "",
        f"`gather_elements(data, indices, axis=1)` with `data` float32 {args.rows} x {args.cols} "
        f"({_gib(data_bytes)}, {data_bytes / 1e9:.2f} GB, chunks {chunks}) and `indices` int64 "
        f"{args.rows} x {args.k} ({_gib(idx_bytes)}, values in [-{args.cols}, {args.cols})); "
        f"the result is float32 {args.rows} x {args.k} ({_gib(args.rows * args.k * 4)}).",
        "",
        "| run | wall time | peak memory | result checksum |",
        "| --- | --- | --- | --- |",
        f"| Dask, {args.workers} worker processes x 1 thread, limit {_gib(gathered['memory_limit'])} "
        f"each: generate + gather + checksum | {gathered['seconds']:.1f} s | {peaks} per worker "
        f"| {gathered['checksum']} |",
        f"| Dask, same cluster shape: generate + checksum only (no gather) | "
        f"{baseline['seconds']:.1f} s | {base_peaks} per worker | - |",
        f"| NumPy, one process: `gather_elements` on arrays in memory (building them took "
        f"{plain['generate']:.1f} s more) | {plain['seconds']:.1f} s | "
        f"{_gib(plain['peak_rss'])} (process) | {plain['checksum']} |",
        "",
        f"The checksums (sum of the result's bit patterns) {'agree' if same else 'DIFFER'}. "
        f"Bytes the Dask workers spilled to disk: {spilled / 2**20:.0f} MiB.",
        "",
        "Dask's time includes generating both arrays on the workers (the NumPy row times only "
        "the gather, on arrays already in memory); the no-gather row separates the two. Peak "
        "memory is each process's peak resident set size, interpreter and libraries included.",
        "",
        f"The plan (see docs/guides/dask.md): data is rechunked to {args.chunks[0]} x "
        f"{args.cols} blocks, one chunk along the axis ({_gib(block)} each), and each task runs "
        f"`np.take_along_axis` on one such block with the {args.chunks[0]} x {args.k} indices "
        f"block of the same rows ({_gib(args.chunks[0] * args.k * 8)}), giving a "
        f"{_gib(args.chunks[0] * args.k * 4)} output block. The rechunk moves data blocks "
        "between the worker processes; data already chunked whole along the axis would skip "
        "it (not measured here).",
        "",
        f"Machine: {platform.machine()}, {_cpus()} CPU cores, {_ram()}, Python "
        f"{platform.python_version()}, NumPy {np.__version__}, {_versions()}. Shared with other "
        "jobs while it ran (other engineers' tests and builds compete for the 2 cores), so "
        "times are indicative; memory figures are not affected. Measured once.",
        "",
        "Reproduce (about two minutes here; the raw numbers are saved beside the report, and "
        "`--from-json` renders the report from them without running anything):",
        "",
        "```sh",
        command,
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dask_large", description=__doc__)
    parser.add_argument("--rows", type=int, default=32768)
    parser.add_argument("--cols", type=int, default=32768)
    parser.add_argument("--k", type=int, default=4096, help="indices' length along axis 1")
    parser.add_argument("--chunks", type=int, nargs=2, default=(2048, 8192), help="data chunks")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="3GiB", help="per worker")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check it runs")
    parser.add_argument(
        "--out", type=Path, help="write the Markdown report here, and the raw results beside it"
    )
    parser.add_argument(
        "--from-json", type=Path, help="render the report from saved raw results; run nothing"
    )
    args = parser.parse_args(argv)
    saved = None
    if args.from_json is not None:
        saved = json.loads(args.from_json.read_text())
        parser.parse_args(shlex.split(saved["command"])[3:], namespace=args)
    if args.smoke:
        args.rows, args.cols, args.k, args.chunks = 256, 512, 64, (64, 128)
        args.memory_limit = "1GiB"
    if saved is not None:
        results = saved
    else:
        command = "python -m benchmarks.dask_large " + shlex.join(argv or sys.argv[1:])
        results = {
            "command": command.strip(),
            "dask": run_dask(args, gather=True),
            "dask_baseline": run_dask(args, gather=False),
            "numpy": run_numpy(args),
        }
        print(json.dumps(results, indent=1))
    text = report(args, results)
    print(text)
    if args.out is not None:
        args.out.write_text(text)
        if saved is None:
            args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    return 0 if results["dask"]["checksum"] == results["numpy"]["checksum"] else 1


if __name__ == "__main__":
    sys.exit(main())
