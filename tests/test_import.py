"""Importing onnx_gather imports no framework."""

from __future__ import annotations

import subprocess
import sys
import textwrap

HEAVY = ("torch", "jax", "jaxlib", "dask", "cupy", "distributed")


def _loaded_after(code: str) -> set[str]:
    script = textwrap.dedent(
        f"""
        import sys
        {code}
        heavy = {HEAVY!r}
        print(sorted({{m.split('.')[0] for m in sys.modules}} & set(heavy)))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(eval(out.stdout.strip()))


def test_import_loads_no_framework() -> None:
    assert _loaded_after("import onnx_gather, onnx_gather.openvino") == set()


def test_numpy_call_loads_no_framework() -> None:
    code = """
        import numpy as np, onnx_gather as og
        og.gather(np.arange(3), [0]); og.gather_elements(np.arange(3), [2])
        from onnx_gather import openvino
        openvino.gather_elements(np.arange(3), [1], 0)
        """
    assert _loaded_after(textwrap.dedent(code).strip().replace("\n", "; ")) == set()
