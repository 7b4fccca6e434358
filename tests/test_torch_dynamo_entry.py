"""What Dynamo sees of a call: one opaque step, installed when torch.compile arrives.

Each test runs in a fresh interpreter: what matters is the order in which the package,
torch and Dynamo are imported and first called.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.backend("torch")


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


#: A compiled program of three calls, called first, then again after eager calls of the
#: package on NumPy arrays (which grow the library's own caches), then once more.
PROGRAM = """
    import numpy as np
    from torch._dynamo.utils import counters
    x = torch.randn(8, 4)
    i = torch.tensor([[1, -1, 0, 3]] * 8)
    def f(x, i):
        y = og.gather_elements(x, i, axis=1) + og.gather(x, i[0], axis=1)
        return y + og.gather_nd(x, i[:, :2]).unsqueeze(-1)
    c = torch.compile(f, fullgraph=True)
    first = c(x, i)
    og.gather(np.arange(5.0), [1, -1])
    og.gather_elements(np.arange(6.0).reshape(2, 3), np.array([[0, -1, 2]]), axis=1)
    og.scatter_nd(np.zeros(3), np.array([[1]]), np.ones(1))
    assert bool((c(x, i) == first).all()) and bool((c(x, i) == f(x, i)).all())
    print("graphs", counters["stats"]["unique_graphs"])
"""


@pytest.mark.parametrize("order", ["package-first", "torch-first"])
def test_no_recompile_from_the_librarys_own_state(order: str) -> None:
    """Whichever is imported first, Dynamo compiles the program once: it guards on no cache."""
    imports = "import onnx_gather as og\nimport torch\n"
    if order == "torch-first":
        imports = "import torch\nimport onnx_gather as og\n"
    out = _run(imports + textwrap.dedent(PROGRAM))
    assert out.split()[-1] == "1"


def test_dynamos_graph_holds_one_step_per_call() -> None:
    """The library's Python is not traced: one opaque call per call, nothing of ours guarded."""
    out = _run(
        """
        import onnx_gather as og
        import torch
        graphs = []
        def backend(gm, example):
            graphs.append(gm)
            return gm.forward
        x, i = torch.randn(8, 4), torch.tensor([[1, -1, 0, 3]] * 8)
        torch.compile(lambda x, i: og.gather_elements(x, i, axis=1) * 2, fullgraph=True,
                      backend=backend)(x, i)
        (gm,) = graphs
        calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        print(len(calls), "|".join(getattr(t, "__name__", str(t)) for t in calls))
        """
    )
    count, names = out.split()
    assert count == "2"  # our step and the multiplication
    assert "_traced" in names


def test_an_eager_torch_program_never_imports_dynamo() -> None:
    """Installing the step imports ``torch._dynamo`` (as long as torch itself): only on use."""
    out = _run(
        """
        import sys
        import onnx_gather as og
        import torch
        og.gather_elements(torch.randn(8, 4), torch.tensor([[1, -1, 0, 3]] * 8), axis=1)
        og.scatter_nd(torch.zeros(3), torch.tensor([[1]]), torch.ones(1))
        print("torch._dynamo" in sys.modules)
        """
    )
    assert out.split()[-1] == "False"
