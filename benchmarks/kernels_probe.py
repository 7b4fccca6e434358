"""Probe the compiled kernels against ONNX Runtime and NumPy.

    python benchmarks/kernels_probe.py [--rounds N] [--block BYTES] [--min-per-thread N]

Medians of interleaved rounds in one process. "ours" allocates its output on every call
(as ORT and NumPy do) on A-D; on E it is the raw call with a preallocated output.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from onnx_gather import _kernels

SPIN_OFF = True


def ort_session(op, data, indices, axis, threads):
    node = helper.make_node(op, ["data", "indices"], ["out"], axis=axis)
    out_shape = (
        list(indices.shape)
        if op == "GatherElements"
        else list(data.shape[:axis]) + list(indices.shape) + list(data.shape[axis + 1 :])
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, list(data.shape)),
            helper.make_tensor_value_info("indices", TensorProto.INT64, list(indices.shape)),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, out_shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    # ORT's pool threads otherwise spin after each run, on the core the next contender
    # (interleaved) wants: that slowed our 2-thread calls up to 10x in the probe.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0" if SPIN_OFF else "1")
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {"data": data, "indices": indices}
    return lambda: sess.run(None, feeds)


def case_fns(op, data, indices, axis, prealloc=False):
    if op == "GatherElements":
        kern = _kernels.gather_elements
        shape = indices.shape
        norm = np.where(indices < 0, indices + data.shape[axis], indices)

        def numpy_fn():
            # What a NumPy implementation has to do: normalise, then take_along_axis.
            return np.take_along_axis(
                data, np.where(indices < 0, indices + data.shape[axis], indices), axis
            )

    else:
        kern = _kernels.gather
        shape = data.shape[:axis] + indices.shape + data.shape[axis + 1 :]

        def numpy_fn():
            return np.take(data, indices, axis=axis)

        norm = indices
    del norm
    fns = {}
    for t in (1, 2):
        if prealloc:
            out = np.empty(shape, data.dtype)
            fns[f"ours t{t}"] = lambda t=t, out=out: kern(data, indices, axis, out, True, t)
        else:
            fns[f"ours t{t}"] = lambda t=t: kern(
                data, indices, axis, np.empty(shape, data.dtype), True, t
            )
    fns["ort t1"] = ort_session(op, data, indices, axis, 1)
    fns["ort t2"] = ort_session(op, data, indices, axis, 2)
    fns["numpy"] = numpy_fn
    return fns


def measure(fns, rounds, inner):
    times = {k: [] for k in fns}
    for f in fns.values():  # warm up
        f()
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            times[k].append((time.perf_counter() - t0) / inner)
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--block", type=int, default=-1, help="column-block bytes (tuning)")
    ap.add_argument("--min-per-thread", type=int, default=-1, help="elements (tuning)")
    ap.add_argument("--only", default="ABCDE")
    ap.add_argument(
        "--prealloc", action="store_true", help="ours writes into one preallocated out on A-D too"
    )
    ap.add_argument("--ort-spin", action="store_true", help="leave ORT's thread spinning on")
    args = ap.parse_args()
    global SPIN_OFF
    SPIN_OFF = not args.ort_spin
    print("tuning (min_per_thread, block_bytes):", _kernels._tune(args.min_per_thread, args.block))
    print("now:", _kernels._tune())
    rng = np.random.default_rng(0)
    d2k = rng.standard_normal((2000, 2000), dtype=np.float32)
    table = rng.standard_normal((50000, 256), dtype=np.float32)
    small = rng.standard_normal((8, 4), dtype=np.float32)
    cases = {
        "A GE 2000x2000 axis1": ("GatherElements", d2k, rng.integers(0, 2000, (2000, 2000)), 1, 1),
        "B GE 2000x2000 axis0": ("GatherElements", d2k, rng.integers(0, 2000, (2000, 2000)), 0, 1),
        "C GE axis0 mixed-sign": (
            "GatherElements",
            d2k,
            rng.integers(-2000, 2000, (2000, 2000)),
            0,
            1,
        ),
        "D Gather 4096 rows of 50000x256": ("Gather", table, rng.integers(0, 50000, 4096), 0, 1),
        "E GE 8x4 axis0": ("GatherElements", small, rng.integers(0, 8, (8, 4)), 0, 1000),
        "E Gather 2 rows of 8x4": ("Gather", small, np.array([5, 1]), 0, 1000),
    }
    cols = ["ours t1", "ours t2", "ort t1", "ort t2", "numpy"]
    print(f"{'case':34s}" + "".join(f"{c:>11s}" for c in cols) + "   t1/ort1  t2/ort2  t2/ort1")
    for name, (op, data, ind, axis, inner) in cases.items():
        if name[0] not in args.only:
            continue
        ind = np.ascontiguousarray(ind, dtype=np.int64)
        fns = case_fns(op, data, ind, axis, prealloc=args.prealloc or name.startswith("E"))
        med = measure(fns, args.rounds if inner == 1 else max(5, args.rounds // 3), inner)
        unit, scale = ("us", 1e6) if name.startswith("E") else ("ms", 1e3)
        row = f"{name:34s}" + "".join(f"{med[c] * scale:9.3f}{unit}" for c in cols)
        row += f"   {med['ours t1'] / med['ort t1']:6.2f}  {med['ours t2'] / med['ort t2']:6.2f}  {med['ours t2'] / med['ort t1']:6.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
