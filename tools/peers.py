"""What the peers do on the conformance campaign's inputs, side by side.

Generates the same kind of examples as the property tests (``onnx_gather._conformance``;
a fixed seed, so every run sees the same inputs), runs each one through

* ONNX Runtime's CPU provider and the ONNX reference evaluator (a single-node model with
  the example's opset and axis; OpenVINO GatherElements-6 examples as GatherElements-13),
* OpenVINO's own runtime (CPU plugin) on the OpenVINO GatherElements-6 examples,
* the naive native calls: ``np.take`` / ``np.take_along_axis``, ``torch.index_select`` /
  ``torch.gather``, ``jnp.take`` / ``jnp.take_along_axis`` (JAX with its default config),
  and for GatherND advanced indexing ``data[batch aranges, indices[..., 0], ...]``,
* and onnx_gather itself on NumPy, as a control,

and sorts each outcome into a class relative to the loop oracle: ``agrees``, ``WRONG
values/shape/dtype``, ``NaN payload changed``, ``ERROR on valid input``, ``gap`` (a type
the peer cannot take), ``rejects`` an invalid input, ``ACCEPTS`` it silently, or
``HANGS``: the peers run in a child process, and a call that gives no answer within
``--timeout`` seconds is killed with it (the reference evaluator's GatherElements loops
about ``|index| / s`` times per out-of-range index in ``np.choose(mode="wrap")``). Prints
markdown tables; with ``--minimal`` it also shrinks, with hypothesis, the smallest example
of every class in which ONNX Runtime or the reference evaluator is wrong.

Usage::

    python tools/peers.py --examples 2000 --minimal > peers.md
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import multiprocessing
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, find, given, seed, settings

from onnx_gather import _ops
from onnx_gather._conformance import libraries, onnx_peers
from onnx_gather._conformance.runner import Outcome, call, expected
from onnx_gather._conformance.strategies import DTYPES, Example, examples

OPS = _ops.OPS
#: Peers that run only some operators (the others run every one).
ONLY = {
    "openvino (CPU)": {
        _ops.OPENVINO_GATHER_ELEMENTS.name, _ops.OPENVINO_GATHER_ND.name,
        _ops.OPENVINO_GATHER.name,
    }
}  # fmt: skip
Peer = Callable[[Example], Outcome]
#: The naive native call of each operator per library: ``call(module, data, indices,
#: attributes)`` with the library's module (numpy, torch, jax.numpy). An operator without
#: an entry for a library has no such call there (a ``gap``).
Naive = Callable[[Any, Any, Any, dict[str, Any]], Any]


def _nd_index(module: Any, indices: Any, batch_dims: int) -> tuple[Any, ...]:
    """``data[...]``'s advanced index for GatherND: batch aranges, then the coordinates."""
    lead = indices.shape[:-1]
    batch = [
        module.arange(n).reshape([n if e == d else 1 for e in range(len(lead))])
        for d, n in enumerate(lead[:batch_dims])
    ]
    return (*batch, *(indices[..., j] for j in range(indices.shape[-1])))


_TAKE: Naive = lambda m, d, i, a: m.take(d, i, axis=a["axis"])  # noqa: E731
_ALONG: Naive = lambda m, d, i, a: m.take_along_axis(d, i, axis=a["axis"])  # noqa: E731
_INDEX_ND: Naive = lambda m, d, i, a: d[_nd_index(m, i, a["batch_dims"])]  # noqa: E731
NAIVE: dict[str, dict[str, Naive]] = {
    "gather": {
        "numpy": _TAKE, "jax": _TAKE,
        "torch": lambda m, d, i, a: m.index_select(d, a["axis"], i),
    },
    "gather_elements": {
        "numpy": _ALONG, "jax": _ALONG,
        "torch": lambda m, d, i, a: m.gather(d, a["axis"], i),
    },
    "gather_nd": {"numpy": _INDEX_ND, "jax": _INDEX_ND, "torch": _INDEX_ND},
}  # fmt: skip
NAIVE["openvino.gather_elements"] = NAIVE["gather_elements"]


def _guard(run: Callable[[], Any]) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = run()
    except Exception as exc:
        return Outcome(error=exc)
    return Outcome(value=np.asarray(value))


def _naive(example: Example, library: str) -> Naive | None:
    return NAIVE.get(example.op, {}).get(library)


def numpy_peer(example: Example) -> Outcome:
    """``np.take`` / ``np.take_along_axis`` / advanced indexing."""
    fn = _naive(example, "numpy")
    if fn is None:
        return Outcome(error=onnx_peers.Gap("no NumPy function"))
    return _guard(lambda: fn(np, example.data, example.indices, example.attributes))


def torch_peer() -> Peer:
    """``torch.index_select`` / ``torch.gather`` on CPU tensors."""
    (torch_lib,) = libraries.installed(["torch"])
    torch = torch_lib.module
    tensor, back = torch_lib.asarray, torch_lib.to_numpy

    def run(example: Example) -> Outcome:
        def go() -> Any:
            data, indices = tensor(example.data), tensor(example.indices)
            return back(fn(torch, data, indices, example.attributes))

        fn = _naive(example, "torch")
        if fn is None:
            return Outcome(error=onnx_peers.Gap("no torch function"))
        if example.dtype_name == "string":
            return Outcome(error=onnx_peers.Gap("no string tensors"))
        return _guard(go)

    return run


def jax_peer() -> Peer:
    """``jnp.take`` / ``jnp.take_along_axis`` with JAX's default config (no x64)."""
    jnp = importlib.import_module("jax.numpy")

    def run(example: Example) -> Outcome:
        def go() -> Any:
            data, indices = jnp.asarray(example.data), jnp.asarray(example.indices)
            return np.asarray(fn(jnp, data, indices, example.attributes))

        fn = _naive(example, "jax")
        if fn is None:
            return Outcome(error=onnx_peers.Gap("no jax.numpy function"))
        if example.dtype_name == "string":
            return Outcome(error=onnx_peers.Gap("no string arrays"))
        return _guard(go)

    return run


def openvino_peer() -> Peer:
    """OpenVINO's runtime, CPU plugin: a one-node GatherElements-6 model."""
    from onnx_gather._conformance.openvino_peer import OpenVINO

    runtime: Peer = OpenVINO()
    return runtime


def onnx_gather_peer(example: Example) -> Outcome:
    """onnx_gather on NumPy: the control row, always checked.

    As the spec is: the peers have no ``check_bounds=False``, under which an out-of-range
    index may give any value.
    """
    checked = dataclasses.replace(example, check_bounds=True)
    return _guard(lambda: call(checked.arrays, checked))


def peers() -> dict[str, tuple[Peer, Callable[[np.ndarray], np.ndarray] | None]]:
    """Every peer with the form it returns the oracle's value in (None: unchanged)."""
    found: dict[str, tuple[Peer, Callable[[np.ndarray], np.ndarray] | None]] = {
        "onnxruntime (CPU)": (onnx_peers.OnnxRuntime(), onnx_peers.comparable),
        "onnx.reference": (onnx_peers.ReferenceEvaluator(), onnx_peers.comparable),
        "numpy take / take_along_axis": (numpy_peer, None),
    }
    for name, make in (
        ("torch index_select / gather", torch_peer),
        ("jax take / take_along_axis", jax_peer),
        ("openvino (CPU)", openvino_peer),
    ):
        try:
            found[name] = (make(), None)
        except ImportError:
            print(f"{name}: not installed, left out", file=sys.stderr)
    found["onnx_gather (numpy)"] = (onnx_gather_peer, None)
    return found


def _serve(conn: Any) -> None:
    """Child process: build the peers once, then classify what the parent sends."""
    every = peers()
    while True:
        name, example, want = conn.recv()
        peer, form = every[name]
        got = peer(example)
        conn.send((onnx_peers.classify(example, got, want, form), _outcome(got)))


class Isolated:
    """The peers in a child process, so that a call that hangs can be killed."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.names = list(peers())
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()

    def run(self, name: str, example: Example, want: Outcome) -> tuple[str, str]:
        """``name``'s class and outcome on ``example``, or HANGS after the timeout."""
        self.conn.send((name, example, want))
        if self.conn.poll(self.timeout):
            answer: tuple[str, str] = self.conn.recv()
            return answer
        self.process.kill()
        self.process.join()
        self._start()
        return f"HANGS: no answer within {self.timeout:.0f} s", "killed"


def generate(op: str, count: int, at: int) -> list[Example]:
    """``count`` examples of ``op``, the same ones for the same ``at`` seed."""
    drawn: list[Example] = []

    @seed(at)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(examples(op, DTYPES))
    def collect(example: Example) -> None:
        drawn.append(example)

    collect()
    return drawn


def _size(example: Example) -> int:
    return int(example.data.size + example.indices.size + example.data.ndim)


def _array(a: np.ndarray) -> str:
    text = np.array2string(a, separator=",", threshold=12, edgeitems=2).replace("\n", "")
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:77] + "..."


def _show(example: Example) -> str:
    opset = "" if example.opset is None else f", opset={example.opset}"
    attributes = ", ".join(f"{k}={v}" for k, v in example.attributes.items())
    return (
        f"data={_array(example.data)} ({example.data.dtype}, shape {example.data.shape}), "
        f"indices={_array(example.indices)} ({example.indices.dtype}, shape "
        f"{example.indices.shape}), {attributes}{opset}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the peers and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=1000, help="examples per operator")
    parser.add_argument("--seed", type=int, default=20261122, help="generation seed")
    parser.add_argument(
        "--minimal", action="store_true", help="shrink ORT's and onnx.reference's divergences"
    )
    parser.add_argument(
        "--timeout", type=float, default=20.0, help="seconds before a peer call HANGS"
    )
    parser.add_argument(
        "--ops", nargs="+", choices=OPS, default=list(OPS), help="operators (default: all)"
    )
    args = parser.parse_args(argv)
    isolated = Isolated(args.timeout)
    counts: Counter[tuple[str, str, str]] = Counter()
    smallest: dict[tuple[str, str, str], Example] = {}
    started = time.perf_counter()
    for op in args.ops:
        for example in generate(op, args.examples, args.seed):
            want = expected(example)
            for name in isolated.names:
                if op not in ONLY.get(name, {op}):
                    continue
                cls, _ = isolated.run(name, example, want)
                key = (name, op, cls)
                counts[key] += 1
                if key not in smallest or _size(example) < _size(smallest[key]):
                    smallest[key] = example
    elapsed = time.perf_counter() - started

    print(f"{args.examples} examples per operator, seed {args.seed}, {elapsed:.0f} s\n")
    by_peer: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for (name, op, cls), n in counts.items():
        by_peer[name, op][cls] = n
    print(
        "| peer | operator | valid inputs: agrees | valid inputs: diverges "
        "| invalid inputs: rejects | invalid inputs: ACCEPTS | hangs |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (name, op), classes in by_peer.items():
        agrees = classes.get("agrees", 0)
        valid_bad = sum(n for c, n in classes.items() if c.startswith(_VALID_BAD))
        gaps = sum(n for c, n in classes.items() if c.startswith("gap"))
        rejects = sum(n for c, n in classes.items() if c.startswith("rejects"))
        accepts = sum(n for c, n in classes.items() if c.startswith("ACCEPTS"))
        hangs = sum(n for c, n in classes.items() if c.startswith("HANGS"))
        gap_note = f" (+{gaps} gaps)" if gaps else ""
        print(
            f"| {name} | {op} | {agrees} | {valid_bad}{gap_note} | {rejects} | {accepts} "
            f"| {hangs} |"
        )

    print("\n| peer | operator | class | examples | smallest example |")
    print("| --- | --- | --- | --- | --- |")
    for (name, op, cls), n in sorted(counts.items()):
        if cls == "agrees" or cls.startswith("rejects"):
            continue
        print(f"| {name} | {op} | {cls} | {n} | `{_show(smallest[name, op, cls])}` |")

    if args.minimal:
        print("\nMinimal examples (shrunk by hypothesis) where ONNX Runtime, the reference")
        print("evaluator or OpenVINO diverges from the spec:\n")
        for (name, op, cls), _ in sorted(counts.items()):
            if not name.startswith(("onnxruntime", "onnx.reference", "openvino")):
                continue
            if cls == "agrees" or cls.startswith(("rejects", "gap")):
                continue
            if cls.startswith("HANGS"):  # each hit costs a timeout: show the smallest seen
                least = smallest[name, op, cls]
                print(f"- {name}, {op}, **{cls}**: `{_show(least)}`")
                print(f"  - the spec gives: {_outcome(expected(least))}")
                continue
            try:
                least = find(
                    examples(op, DTYPES),
                    lambda e, n=name, c=cls: isolated.run(n, e, expected(e))[0] == c,
                    settings=settings(
                        max_examples=2000,
                        database=None,
                        deadline=None,
                        suppress_health_check=list(HealthCheck),
                    ),
                )
            except Exception:  # not found again within the budget: show the smallest seen
                least = smallest[name, op, cls]
            print(f"- {name}, {op}, **{cls}**: `{_show(least)}`")
            print(f"  - the peer gives: {isolated.run(name, least, expected(least))[1]}")
            print(f"  - the spec gives: {_outcome(expected(least))}")
    return 0


_VALID_BAD = ("WRONG", "NaN payload changed", "ERROR on valid input")


def _outcome(outcome: Outcome) -> str:
    if outcome.error is not None:
        return f"{type(outcome.error).__name__}: {str(outcome.error).splitlines()[0][:120]}"
    assert outcome.value is not None
    return f"{_array(outcome.value)} (shape {outcome.value.shape}, {outcome.value.dtype})"


if __name__ == "__main__":
    sys.exit(main())
