"""Run the benchmarks: ``python -m benchmarks [--smoke] [--device cpu|cuda] [--out DIR]``.

For every workload and backend, our call, the backend's plain native call, ONNX Runtime's
CPU session and (where it is correct and quick enough) the ONNX reference evaluator run
interleaved round by round in this one process; the report gives medians of the
per-round ratios. All results are first checked to agree bit for bit. On the CPU, the
programs benchmark (``python -m benchmarks.programs``: many calls, compiled steps, a KV
cache) follows with the same settings and writes ``programs.md`` beside the report.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import contenders, machine, report, timer
from benchmarks.workloads import WORKLOADS, Workload, smoke

ROOT = Path(__file__).resolve().parent.parent


def _same(a: Any, b: np.ndarray) -> bool:
    a = np.asarray(a)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _reference(
    w: Workload, data: np.ndarray, indices: np.ndarray, want: np.ndarray, limit_s: float
) -> tuple[contenders.Call | None, str]:
    """The reference evaluator's call if it is right and takes at most ``limit_s``."""
    try:
        call = contenders.reference_call(w, data, indices)
        start = time.perf_counter()
        got = call()
        took = time.perf_counter() - start
    except Exception as exc:  # any failure is reported, not raised
        return None, f"reference evaluator fails ({type(exc).__name__})"
    if not _same(got, want):
        return None, "reference evaluator gives a wrong result"
    if took > limit_s:
        return None, f"reference evaluator not timed ({took:.1f} s per call)"
    return call, ""


#: What the benchmarks import beyond the package: ONNX Runtime and onnx build its contender.
NEEDS = ("onnx", "onnxruntime")


def _missing() -> list[str]:
    missing = []
    for module in NEEDS:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, few rounds")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--backends", default=None, help="comma-separated (default: all)")
    parser.add_argument(
        "--mode",
        default="all",
        choices=["all", "eager", "jit", "compile"],
        help="eager calls, jax.jit, torch.compile(fullgraph=True); all: every mode each "
        "backend has (default)",
    )
    parser.add_argument("--only", default="", help="run the workloads whose name has this")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--sample", type=float, default=None, help="seconds per sample")
    parser.add_argument("--reference-limit", type=float, default=1.0, help="seconds per call")
    parser.add_argument("--out", type=Path, default=None, help="where the .md and .png go")
    args = parser.parse_args(argv)
    missing = _missing()
    if missing:
        print(
            f"python -m benchmarks needs {' and '.join(missing)}, not installed here (every "
            f"workload is timed against ONNX Runtime). Install them with: "
            f"pip install {' '.join(missing)}",
            file=sys.stderr,
        )
        return 2

    cuda = args.device == "cuda"
    backends = (args.backends or ("torch,jax" if cuda else "numpy,torch,jax")).split(",")
    workloads = smoke() if args.smoke else WORKLOADS
    workloads = tuple(w for w in workloads if args.only in w.name)
    # The GPU-only workloads (too large for the CPU) run only with --device cuda.
    workloads = tuple(w for w in workloads if cuda or not w.gpu)
    rounds = args.rounds or (3 if args.smoke else 31)
    sample = args.sample or (0.002 if args.smoke else 0.02)
    out = args.out if args.out is not None else (None if args.smoke else ROOT / "docs")

    versions = contenders.backend_versions(backends)
    load_at_start = machine.load_now()
    extra: dict[str, Any] = {"device": args.device, "rounds": rounds, "seconds per sample": sample}
    if cuda:
        from benchmarks import gpu

        extra.update(gpu.describe())
    if "torch" in backends:
        extra["torch threads"] = importlib.import_module("torch").get_num_threads()
    if "jax" in backends:
        jax = importlib.import_module("jax")
        extra["jax x64"] = jax.config.read("jax_enable_x64")
    rows: list[report.Row] = []
    notes: list[str] = []
    for w in workloads:
        data, indices = w.inputs()
        want = contenders.expected(w, data, indices)
        ort, ort_info = contenders.ort_call(w, data, indices, args.device)
        if ort is None:
            notes.append(f"ONNX Runtime not timed: {ort_info['why']}.")
        else:
            got = ort()
            assert _same(got.numpy() if hasattr(got, "numpy") else got, want), w.name
        if "intra_op_num_threads" in ort_info:
            extra["onnxruntime intra_op_num_threads"] = ort_info["intra_op_num_threads"] or (
                "0 (its default: one per physical core)"
            )
        ref, why = (None, "") if cuda else _reference(w, data, indices, want, args.reference_limit)
        if why:
            notes.append(f"{w.name}: {why}.")
        runs = [
            (backend, mode)
            for backend in backends
            for mode in contenders.MODES[backend]
            if args.mode in ("all", mode)
        ]
        for backend, mode in runs:
            ours, native, to_numpy = contenders.PAIRS[backend](w, data, indices, args.device, mode)
            group = {"ours": ours, "native": native}
            eager = mode == "eager"
            if eager:
                group.update(contenders.variants(w, backend, args.device, ours))
            careful = contenders.careful(w, backend, data, indices, args.device) if eager else None
            if careful is not None:
                group["careful"] = careful
            for label, fn in group.items():
                assert _same(to_numpy(fn()), want), f"{label} {backend} wrong on {w.name}"
            if ort is not None:
                group["ort"] = ort
            if ref is not None:
                group["reference"] = ref
            times = timer.interleaved(group, rounds, sample)
            med = {k: statistics.median(v) for k, v in times.items()}

            def vs(name: str, times: dict[str, list[float]] = times) -> float | None:
                return timer.median_ratio(times["ours"], times[name]) if name in times else None

            row = report.Row(
                workload=w,
                backend=backend,
                mode=mode,
                ours=med["ours"],
                native=med["native"],
                ort=med.get("ort"),
                reference=med.get("reference"),
                vs_native=timer.median_ratio(times["ours"], times["native"]),
                vs_ort=vs("ort"),
                vs_reference=vs("reference"),
                one_thread_vs_all=(
                    timer.median_ratio(times["one thread"], times["ours"])
                    if "one thread" in times
                    else None
                ),
                fallback=med.get("fallback"),
                fallback_vs_ort=(
                    timer.median_ratio(times["fallback"], times["ort"])
                    if "fallback" in times and "ort" in times
                    else None
                ),
            )
            rows.append(row)
            if "careful" in times:
                notes.append(
                    f"{w.name}, {backend}: ours (checked) / careful user's checked call "
                    f"(aminmax, one read back, native call) = {vs('careful'):.2f}."
                )
            print(
                f"{w.name:48s} {backend:6s} {mode:7s} ours {report.format_time(row.ours):>10s}  "
                f"/native {row.vs_native:5.2f}"
                + ("" if row.vs_ort is None else f"  /ORT {row.vs_ort:5.2f}")
                + (
                    ""
                    if row.fallback_vs_ort is None
                    else f"  fallback/ORT {row.fallback_vs_ort:5.2f}"
                )
                + ("" if row.vs_reference is None else f"  /ref {row.vs_reference:.2g}"),
                flush=True,
            )
    if "jax" in backends and not extra["jax x64"]:
        notes.append(
            "jax runs with x64 off (its default): int64 indices arrive as int32 in JAX, "
            "for our call and the native one alike."
        )
    bandwidth = ""
    if cuda:
        bandwidth = gpu.markdown(gpu.bandwidth(backends, workloads, rounds, sample))
    info = machine.describe(versions, extra)
    info["load average (1/5/15 min) at start"] = load_at_start
    info["load average (1/5/15 min) at end"] = machine.load_now()
    command = "python -m benchmarks " + shlex.join(sys.argv[1:] if argv is None else argv)
    body = report.markdown(rows, info, command.strip(), notes) + bandwidth
    print(body)
    if out is not None:
        stem = "benchmarks-cuda" if cuda else "benchmarks"
        out.mkdir(parents=True, exist_ok=True)
        report.write_markdown(out / f"{stem}.md", body)
        report.chart(rows, out / f"{stem}.png", f"{info['cpu']}; {info['date']}")
        print(f"wrote {out / f'{stem}.md'} and {out / f'{stem}.png'}")
    if cuda or (args.only and args.only not in "programs"):
        return 0
    return _programs(args, backends, rounds, sample, out)


def _programs(
    args: argparse.Namespace, backends: list[str], rounds: int, sample: float, out: Path | None
) -> int:
    """``python -m benchmarks.programs`` with this run's settings, in a process of its own:
    its recompile probe needs a process in which no eager call of ours came first."""
    command = [sys.executable, "-m", "benchmarks.programs", "--rounds", str(rounds)]
    command += ["--sample", str(sample), "--backends", ",".join(backends)]
    command += ["--modes", "eager,compile,jit" if args.mode == "all" else args.mode]
    command += ["--smoke"] if args.smoke else []
    command += ["--out", str(out)] if out is not None else []
    print("$ python " + shlex.join(command[1:]), flush=True)
    return subprocess.run(command, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
